#!/usr/bin/env bash
# Tidies every module's go.mod and go.sum as scripts/lint.sh checks them: go mod tidy with the
# workspace's replacements of this repository's own modules given for the run, then dropped.
#   bash scripts/tidy.sh            tidy every module
#   bash scripts/tidy.sh objstore   tidy one
set -euo pipefail
cd "$(dirname "$0")/.."
safeput_root=$PWD
# shellcheck source=tidyfn.sh
source scripts/tidyfn.sh
for m in ${@:-$(find . -name go.mod -not -path './bin/*' -not -path './.tmp/*' -exec dirname {} \; | sort)}; do
	tidy_module "$m" fix
done
