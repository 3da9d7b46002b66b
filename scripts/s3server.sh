#!/usr/bin/env bash
# Installs (once) and starts a real S3 server for tests and benchmarks: Versity S3 Gateway,
# posix backend on a temp dir, loopback only, generated credentials. Sourced by test.sh and
# bench.sh; exports SAFEPUT_S3_* for the Go tests.
#
# To test against another endpoint instead, export SAFEPUT_S3_ENDPOINT, SAFEPUT_S3_ACCESS_KEY,
# SAFEPUT_S3_SECRET_KEY (and SAFEPUT_S3_REGION) before running the test command.

VERSITYGW_VERSION="v1.8.0"
GOLANGCI_LINT_VERSION="v2.15.0"

safeput_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
safeput_bin="$safeput_root/bin"

# install_tool NAME MODULE_PATH VERSION: go install into bin/, reused while the version matches.
install_tool() {
	local name=$1 module=$2 version=$3
	local stamp="$safeput_bin/.$name.version"
	if [[ -x "$safeput_bin/$name" && -f "$stamp" && "$(cat "$stamp")" == "$version" ]]; then
		return 0
	fi
	echo "installing $name $version into bin/ (first run only)" >&2
	mkdir -p "$safeput_bin"
	GOBIN="$safeput_bin" GOFLAGS=-mod=mod go install "$module@$version"
	echo "$version" >"$stamp"
}

free_port() {
	local p
	for _ in $(seq 1 50); do
		p=$((20000 + RANDOM % 40000))
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
			echo "$p"
			return 0
		fi
	done
	echo "no free port found" >&2
	return 1
}

# start_s3_server [DATA_DIR]: starts versitygw unless SAFEPUT_S3_ENDPOINT is already set.
start_s3_server() {
	if [[ -n "${SAFEPUT_S3_ENDPOINT:-}" ]]; then
		echo "using external S3 endpoint $SAFEPUT_S3_ENDPOINT" >&2
		return 0
	fi
	install_tool versitygw github.com/versity/versitygw/cmd/versitygw "$VERSITYGW_VERSION"
	local data=${1:-}
	if [[ -z "$data" ]]; then
		data=$(mktemp -d "${TMPDIR:-/tmp}/safeput-s3.XXXXXX")
	fi
	safeput_s3_data=$data
	local port access secret
	port=$(free_port)
	access="safeput$RANDOM$RANDOM"
	secret="$(od -An -N20 -tx1 /dev/urandom | tr -d ' \n')"
	mkdir -p "$data/objects"
	safeput_s3_log="$data/versitygw.log"
	"$safeput_bin/versitygw" --access "$access" --secret "$secret" --region us-east-1 \
		--port "127.0.0.1:$port" --keep-alive --quiet posix "$data/objects" >"$safeput_s3_log" 2>&1 &
	safeput_s3_pid=$!
	for _ in $(seq 1 100); do
		if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
			export SAFEPUT_S3_ENDPOINT="http://127.0.0.1:$port"
			export SAFEPUT_S3_ACCESS_KEY="$access"
			export SAFEPUT_S3_SECRET_KEY="$secret"
			export SAFEPUT_S3_REGION="us-east-1"
			echo "versitygw $VERSITYGW_VERSION listening on $SAFEPUT_S3_ENDPOINT (data $data, pid $safeput_s3_pid)" >&2
			return 0
		fi
		if ! kill -0 "$safeput_s3_pid" 2>/dev/null; then
			echo "versitygw exited during start-up:" >&2
			cat "$safeput_s3_log" >&2
			return 1
		fi
		sleep 0.1
	done
	echo "versitygw did not answer on port $port" >&2
	cat "$safeput_s3_log" >&2
	return 1
}

stop_s3_server() {
	if [[ -n "${safeput_s3_pid:-}" ]]; then
		kill "$safeput_s3_pid" 2>/dev/null || true
		wait "$safeput_s3_pid" 2>/dev/null || true
		safeput_s3_pid=""
	fi
	if [[ -n "${safeput_s3_data:-}" && "${SAFEPUT_KEEP_S3_DATA:-}" != "1" ]]; then
		rm -rf "$safeput_s3_data"
	fi
}
