#!/usr/bin/env bash
# Runs one command with the test S3 servers up and SAFEPUT_S3_* exported (see s3server.sh), e.g.
#   bash scripts/with-s3.sh go test -race -count=1 ./writer/...
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=s3server.sh
source scripts/s3server.sh
# No test reaches a real instance metadata service (a link-local address, not this machine's):
# the SDK's default chain ends there. Tests of the instance-role path run their own emulator on
# 127.0.0.1 and set both variables themselves.
export AWS_EC2_METADATA_DISABLED=true AWS_EC2_METADATA_SERVICE_ENDPOINT=http://127.0.0.1:9
trap stop_s3_server EXIT
start_s3_server
"$@"
