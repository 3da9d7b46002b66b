#!/usr/bin/env bash
# Runs one command with the test S3 servers up and SAFEPUT_S3_* exported (see s3server.sh), e.g.
#   bash scripts/with-s3.sh go test -race -count=1 ./writer/...
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=s3server.sh
source scripts/s3server.sh
trap stop_s3_server EXIT
start_s3_server
"$@"
