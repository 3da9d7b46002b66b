#!/usr/bin/env bash
# gofmt, go vet and golangci-lint (pinned) over every module.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=s3server.sh
source scripts/s3server.sh
install_tool golangci-lint github.com/golangci/golangci-lint/v2/cmd/golangci-lint "$GOLANGCI_LINT_VERSION"

# Build outputs never enter git: no tracked file over 1 MiB, no tracked executable (ELF) or
# cgo-built library.
if git rev-parse --git-dir >/dev/null 2>&1; then
	bad=$(git ls-files -z | xargs -0 -r stat -c '%s %n' 2>/dev/null | awk '$1 > 1048576 {print $2}')
	for f in $(git ls-files); do
		[[ -f "$f" ]] && [[ "$(head -c 4 "$f" 2>/dev/null | od -An -c | tr -d ' ')" == '177ELF' ]] && bad+=" $f"
	done
	if [[ -n "${bad// /}" ]]; then
		echo "tracked build outputs or files over 1 MiB (git rm --cached them and extend .gitignore):$bad" >&2
		exit 1
	fi
fi

unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './bin/*'))
if [[ -n "$unformatted" ]]; then
	echo "gofmt would change:" >&2
	echo "$unformatted" >&2
	exit 1
fi
# Every go.mod is exactly what go mod tidy makes of it (scripts/tidyfn.sh says how, with the
# workspace's own modules): a hand-ordered or stale requirement fails here, not in the hands of
# the next person who runs tidy. scripts/tidy.sh fixes them.
# shellcheck source=tidyfn.sh
source scripts/tidyfn.sh
untidy=""
for m in $(find . -name go.mod -not -path './bin/*' -not -path './.tmp/*' -exec dirname {} \; | sort); do
	tidy_module "$m" check || untidy+=" $m"
done
if [[ -n "$untidy" ]]; then
	echo "go mod tidy would change the go.mod or go.sum of:$untidy (bash scripts/tidy.sh fixes it)" >&2
	exit 1
fi
for m in $(find . -name go.mod -not -path './bin/*' -not -path './.tmp/*' -exec dirname {} \; | sort); do
	echo "== vet + golangci-lint $m" >&2
	(cd "$m" && go vet ./... && "$safeput_root/bin/golangci-lint" run --config "$safeput_root/.golangci.yml" ./...)
done
# The test build of the CLI (its fault and pause hooks, behind a tag the release build lacks).
echo "== vet + golangci-lint ./cmd/safeput -tags safeput_faults" >&2
(cd cmd/safeput && go vet -tags safeput_faults ./... &&
	"$safeput_root/bin/golangci-lint" run --build-tags safeput_faults --config "$safeput_root/.golangci.yml" ./...)
echo "lint clean" >&2
