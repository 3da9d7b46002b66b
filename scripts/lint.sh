#!/usr/bin/env bash
# gofmt, go vet and golangci-lint (pinned) over every module.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=s3server.sh
source scripts/s3server.sh
install_tool golangci-lint github.com/golangci/golangci-lint/v2/cmd/golangci-lint "$GOLANGCI_LINT_VERSION"

unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './bin/*'))
if [[ -n "$unformatted" ]]; then
	echo "gofmt would change:" >&2
	echo "$unformatted" >&2
	exit 1
fi
for m in $(find . -name go.mod -not -path './bin/*' -not -path './.tmp/*' -exec dirname {} \; | sort); do
	echo "== vet + golangci-lint $m" >&2
	(cd "$m" && go vet ./... && "$safeput_root/bin/golangci-lint" run --config "$safeput_root/.golangci.yml" ./...)
done
echo "lint clean" >&2
