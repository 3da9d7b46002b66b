#!/usr/bin/env bash
# The quick local loop (make test-quick): the unit tests, the in-memory store and the fakes of the
# library, the CLI and the shared front end; no server, no lint, no race detector. Tests that need
# a real server skip here (they fail only under CI=true). It is not the CI command: that is
# scripts/test.sh, which runs everything under -race against the three real servers.
#   SAFEPUT_TEST_ARGS   extra arguments for go test (e.g. "-race" or "-run Writer")
set -euo pipefail
cd "$(dirname "$0")/.."
# No server: whatever a shell exported for the real suite is dropped.
while IFS= read -r v; do unset "$v"; done < <(env | grep -oE '^SAFEPUT_S3_[A-Z0-9_]*' || true)
unset CI
status=0
for m in . ./storetest ./cmd/safeput ./frontend; do
	# shellcheck disable=SC2086
	(cd "$m" && go test -count=1 ${SAFEPUT_TEST_ARGS:-} ./...) || status=1
done
exit $status
