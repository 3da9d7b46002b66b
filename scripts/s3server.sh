#!/usr/bin/env bash
# Installs (once) and starts the real S3 servers for tests and benchmarks, each on loopback with
# a temp data dir and generated credentials:
#   versitygw  Versity S3 Gateway, posix backend
#   minio      MinIO, single drive
#   ceph       Ceph RADOS Gateway 16.2.15 from Debian's packages, one-node cluster (BlueStore on a file)
#              (scripts/ceph.sh; installing needs root and apt-get, first run about 1.5 min)
#   s3rver     the Node fake S3 server (npm s3rver, pinned), installed with npm into bin/s3rver.
#              A smoke server only: it lacks ListParts, ListMultipartUploads and abort, so it is
#              not in SAFEPUT_S3_SERVERS (the full suite does not run on it); the CLI's
#              TestS3rverSmoke reads SAFEPUT_S3RVER_ENDPOINT, _ACCESS_KEY, _SECRET_KEY, _REGION
#              and _BUCKET instead.
# Sourced by test.sh, with-s3.sh and bench.sh.
#
# What the Go tests see (storetest/s3test reads it):
#   SAFEPUT_S3_SERVERS="versitygw,minio,ceph"               the servers up, in order
#   SAFEPUT_S3_<NAME>_ENDPOINT, _ACCESS_KEY, _SECRET_KEY, _REGION   per server (NAME upper-cased)
#   SAFEPUT_S3_ENDPOINT, _ACCESS_KEY, _SECRET_KEY, _REGION          the first server again, for
#                                                  code that uses one server (the benchmark)
#   SAFEPUT_S3_TLS_DIR                              a throw-away CA and a server certificate for
#                                                  127.0.0.1 made for this run (ca.pem, ca.key,
#                                                  server.pem, server.key; storetest/testcerts)
#   SAFEPUT_S3_KMS_KEY_ID                           the KMS key made for this run, known to MinIO's
#                                                  built-in KMS (MINIO_KMS_SECRET_KEY) and to RGW's
#                                                  testing KMS backend (scripts/ceph.sh), for SSE-KMS
#   SAFEPUT_S3_<NAME>_TLS_ENDPOINT                  https://127.0.0.1:PORT serving that certificate:
#                                                  the gateway a second process on the same
#                                                  directory, MinIO a second instance (its own
#                                                  drive), RGW a second beast endpoint
#   SAFEPUT_S3_<NAME>_TLS_PID, _TLS_TRASH            that TLS server's process and (MinIO) trash
#                                                  directory, for the benchmark's TLS tables
#
# Settings:
#   SAFEPUT_S3_START="versitygw ceph"    which servers to start (default: all, s3rver included; quick local loops
#                                        may pick one). Under CI=true a server that cannot be
#                                        installed or started fails the command; elsewhere the
#                                        tests run on the servers that did start.
#   SAFEPUT_S3_ENDPOINT, SAFEPUT_S3_ACCESS_KEY, SAFEPUT_S3_SECRET_KEY (and SAFEPUT_S3_REGION)
#                                        exported beforehand: test against that one endpoint
#                                        instead; nothing is started.
#   SAFEPUT_KEEP_S3_DATA=1               keep the servers' data dirs after stop.
#   SAFEPUT_S3_TLS=0                     no TLS endpoints (the TLS tests then use their relay).
#
# Adding a server: a start_server_<name> function below (see its contract) and its name in
# SAFEPUT_S3_ALL_SERVERS.

VERSITYGW_VERSION="v1.8.0"
MINIO_VERSION="v0.0.0-20260212201848-7aac2a2c5b7c"
GOLANGCI_LINT_VERSION="v2.15.0"
S3RVER_VERSION="3.7.1"

SAFEPUT_S3_ALL_SERVERS="versitygw minio ceph s3rver"

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
	mkdir -p "$safeput_bin" || return 1
	local start=$SECONDS
	# Explicit returns: callers may run this where set -e does not apply (inside an if).
	GOBIN="$safeput_bin" GOFLAGS=-mod=mod go install "$module@$version" || return 1
	echo "$version" >"$stamp"
	# The first run's cost, printed by the run itself (docs/testing.md quotes no figure).
	echo "installed $name in $((SECONDS - start)) s" >&2
}

# free_port: sets free_port to a port nothing listens on, never one handed out before (two
# ports picked before either server binds must differ).
free_port() {
	local p
	for _ in $(seq 1 50); do
		# Below Linux's ephemeral range (32768-60999), where outgoing connections take their
		# local ports and could hold the one picked before the server binds it.
		p=$((10000 + RANDOM % 22000))
		# 13333 is MinIO's built-in console port: with the browser off it ignores
		# --console-address, keeps 13333 and refuses to start when --address has that port.
		if [[ " ${safeput_ports_taken:-} 13333 " == *" $p "* ]]; then
			continue
		fi
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
			safeput_ports_taken="${safeput_ports_taken:-} $p"
			free_port=$p
			return 0
		fi
	done
	echo "no free port found" >&2
	return 1
}

ci_mode() {
	[[ -n "${CI:-}" && "${CI:-}" != "false" ]]
}

# tcp_ready PORT: something accepts connections on 127.0.0.1:PORT.
tcp_ready() {
	(exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# http_ok PORT PATH: GET answers 200 (bash only: the test command needs nothing but Go).
http_ok() {
	local port=$1 path=$2
	(
		exec 3<>"/dev/tcp/127.0.0.1/$port" || exit 1
		printf 'GET %s HTTP/1.0\r\nHost: 127.0.0.1:%s\r\n\r\n' "$path" "$port" >&3
		read -r -t 5 status <&3 || exit 1
		[[ "$status" == *" 200 "* || "$status" == *" 200" ]]
	) 2>/dev/null
}

# wait_ready NAME SECONDS CHECK...: polls CHECK until it succeeds; fails when the server
# process ($srv_pid) exits or SECONDS pass, printing its log.
wait_ready() {
	local name=$1 seconds=$2
	shift 2
	local i
	for ((i = 0; i < seconds * 10; i++)); do
		if "$@"; then
			return 0
		fi
		if ! kill -0 "$srv_pid" 2>/dev/null; then
			echo "$name exited during start-up:" >&2
			cat "$srv_log" >&2
			return 1
		fi
		sleep 0.1
	done
	echo "$name did not become ready within ${seconds}s:" >&2
	cat "$srv_log" >&2
	kill "$srv_pid" 2>/dev/null || true
	return 1
}

# A start_server_<name> DATA_DIR function installs and starts one server in the background with
# its data under DATA_DIR and returns once it serves requests. It sets srv_endpoint, srv_access,
# srv_secret, srv_region, srv_pid, srv_log and srv_version (new_server does most), or returns
# non-zero after printing why (leaving no process behind). A server made of several processes
# also adds its stop function to safeput_s3_stoppers.

# new_server NAME VERSION DATA_DIR: what every start shares: a free port (srv_port) and the
# endpoint on it, generated credentials, the region, the log file, the data dir.
new_server() {
	local name=$1 version=$2 data=$3
	free_port || return 1
	srv_port=$free_port
	srv_endpoint="http://127.0.0.1:$srv_port"
	srv_access="safeput$RANDOM$RANDOM"
	srv_secret="$(od -An -N20 -tx1 /dev/urandom | tr -d ' \n')"
	srv_region="us-east-1"
	srv_version=$version
	srv_log="$data/$name.log"
	mkdir -p "$data" || return 1
}

start_server_versitygw() {
	local data=$1
	install_tool versitygw github.com/versity/versitygw/cmd/versitygw "$VERSITYGW_VERSION" || return 1
	new_server versitygw "$VERSITYGW_VERSION" "$data" || return 1
	mkdir -p "$data/objects" || return 1
	"$safeput_bin/versitygw" --access "$srv_access" --secret "$srv_secret" --region "$srv_region" \
		--port "127.0.0.1:$srv_port" --keep-alive --quiet posix "$data/objects" >"$srv_log" 2>&1 &
	srv_pid=$!
	wait_ready versitygw 10 tcp_ready "$srv_port" || return 1
	# TLS: the gateway serves one scheme per process; a second one on the same directory.
	if [[ -n "${SAFEPUT_S3_TLS_DIR:-}" ]]; then
		local plain_pid=$srv_pid plain_log=$srv_log tls_port
		free_port || return 1
		tls_port=$free_port
		srv_log="$data/versitygw-tls.log"
		"$safeput_bin/versitygw" --access "$srv_access" --secret "$srv_secret" --region "$srv_region" \
			--port "127.0.0.1:$tls_port" --cert "$SAFEPUT_S3_TLS_DIR/server.pem" --key "$SAFEPUT_S3_TLS_DIR/server.key" \
			--keep-alive --quiet posix "$data/objects" >"$srv_log" 2>&1 &
		srv_pid=$!
		if wait_ready versitygw-tls 10 tcp_ready "$tls_port"; then
			srv_tls_endpoint="https://127.0.0.1:$tls_port"
			srv_extra_pids="$srv_pid" srv_tls_pid=$srv_pid
		fi
		srv_pid=$plain_pid srv_log=$plain_log
	fi
}

# start_minio_tls DATA_DIR: a second MinIO serving TLS with the run's certificate (MinIO serves
# one scheme; its drive cannot be shared), for SAFEPUT_S3_MINIO_TLS_ENDPOINT.
start_minio_tls() {
	local data=$1 port console plain_pid=$srv_pid plain_log=$srv_log
	mkdir -p "$data/tls-drive" "$data/tls-certs" || return 1
	cp "$SAFEPUT_S3_TLS_DIR/server.pem" "$data/tls-certs/public.crt" || return 1
	cp "$SAFEPUT_S3_TLS_DIR/server.key" "$data/tls-certs/private.key" || return 1
	free_port || return 1
	port=$free_port
	free_port || return 1
	console=$free_port
	srv_log="$data/minio-tls.log"
	MINIO_KMS_SECRET_KEY="$SAFEPUT_S3_KMS_KEY_ID:$safeput_kms_secret" MINIO_ROOT_USER="$srv_access" MINIO_ROOT_PASSWORD="$srv_secret" MINIO_SITE_REGION="$srv_region" \
		MINIO_BROWSER=off MINIO_UPDATE=off MINIO_CALLHOME_ENABLE=off \
		"$safeput_bin/minio" server --quiet --anonymous --address "127.0.0.1:$port" \
		--console-address "127.0.0.1:$console" --certs-dir "$data/tls-certs" "$data/tls-drive" >"$srv_log" 2>&1 &
	srv_pid=$!
	if wait_ready minio-tls 60 tcp_ready "$port"; then
		srv_tls_endpoint="https://127.0.0.1:$port"
		srv_extra_pids="$srv_pid" srv_tls_pid=$srv_pid
		srv_tls_trash="$data/tls-drive/.minio.sys/tmp/.trash"
	fi
	srv_pid=$plain_pid srv_log=$plain_log
}

start_server_minio() {
	local data=$1 console
	install_tool minio github.com/minio/minio "$MINIO_VERSION" || return 1
	new_server minio "$MINIO_VERSION" "$data" || return 1
	free_port || return 1
	console=$free_port
	mkdir -p "$data/drive" || return 1
	# Browser off and the console on its own loopback port; no update checks or call-home. The
	# built-in KMS holds the run's key (SSE-S3 and SSE-KMS need a KMS on MinIO).
	MINIO_KMS_SECRET_KEY="$SAFEPUT_S3_KMS_KEY_ID:$safeput_kms_secret" MINIO_ROOT_USER="$srv_access" MINIO_ROOT_PASSWORD="$srv_secret" MINIO_SITE_REGION="$srv_region" \
		MINIO_BROWSER=off MINIO_UPDATE=off MINIO_CALLHOME_ENABLE=off \
		"$safeput_bin/minio" server --quiet --anonymous --address "127.0.0.1:$srv_port" \
		--console-address "127.0.0.1:$console" "$data/drive" >"$srv_log" 2>&1 &
	srv_pid=$!
	# Deleted objects wait here until MinIO's first sweep, 5 minutes after start: the benchmark,
	# which deletes a GiB every few seconds, empties it itself (tmpfs would fill).
	srv_trash="$data/drive/.minio.sys/tmp/.trash"
	# /ready answers 200 once the object layer is up, not just the listener.
	wait_ready minio 60 http_ok "$srv_port" /minio/health/ready || return 1
	if [[ -n "${SAFEPUT_S3_TLS_DIR:-}" ]]; then
		start_minio_tls "$data"
	fi
}

start_server_ceph() {
	local data=$1
	# shellcheck source=ceph.sh
	source "$safeput_root/scripts/ceph.sh" || return 1
	new_server ceph "$CEPH_VERSION" "$data" || return 1
	start_ceph_rgw "$data/cluster" || return 1
	safeput_s3_stoppers="${safeput_s3_stoppers:-} stop_ceph_rgw"
	srv_endpoint=$CEPH_RGW_ENDPOINT
	srv_tls_endpoint=${CEPH_RGW_TLS_ENDPOINT:-}
	srv_access=$CEPH_RGW_ACCESS_KEY
	srv_secret=$CEPH_RGW_SECRET_KEY
	srv_region=$CEPH_RGW_REGION
	# The gateway is the last daemon started; the others are stop_ceph_rgw's.
	srv_pid=${ceph_pids[${#ceph_pids[@]} - 1]}
	srv_log="$data/cluster/log/ceph-client.rgw.a.log"
}

# install_s3rver: npm install of the pinned s3rver into bin/s3rver (gitignored), reused while
# the version matches.
install_s3rver() {
	local dir="$safeput_bin/s3rver" stamp="$safeput_bin/.s3rver.version"
	if [[ -x "$dir/node_modules/.bin/s3rver" && -f "$stamp" && "$(cat "$stamp")" == "$S3RVER_VERSION" ]]; then
		return 0
	fi
	if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
		echo "s3rver needs node and npm on PATH" >&2
		return 1
	fi
	echo "installing s3rver $S3RVER_VERSION into bin/s3rver with npm (first run only)" >&2
	local start=$SECONDS
	mkdir -p "$dir" || return 1
	npm install --prefix "$dir" --no-audit --no-fund --loglevel=error "s3rver@$S3RVER_VERSION" >&2 || return 1
	echo "$S3RVER_VERSION" >"$stamp"
	echo "installed s3rver in $((SECONDS - start)) s" >&2
}

# start_server_s3rver: s3rver takes fixed credentials (S3RVER/S3RVER) and is given one bucket at
# start, so the smoke test needs no CreateBucket.
start_server_s3rver() {
	local data=$1
	install_s3rver || return 1
	new_server s3rver "$S3RVER_VERSION" "$data" || return 1
	srv_access=S3RVER
	srv_secret=S3RVER
	srv_bucket=safeput-smoke
	mkdir -p "$data/objects" || return 1
	node "$safeput_bin/s3rver/node_modules/.bin/s3rver" -d "$data/objects" -a 127.0.0.1 -p "$srv_port" \
		--silent --configure-bucket "$srv_bucket" >"$srv_log" 2>&1 &
	srv_pid=$!
	wait_ready s3rver 30 tcp_ready "$srv_port"
}

# start_with_retry NAME DATA_DIR: start_server_NAME, again on a fresh port (up to 3 times) when
# the port it picked was taken before the server could bind it (another process got there first).
start_with_retry() {
	local name=$1 data=$2 attempt
	for attempt in 1 2 3; do
		srv_pid="" srv_log="" srv_trash="" srv_bucket="" srv_tls_endpoint="" srv_extra_pids="" srv_tls_pid="" srv_tls_trash=""
		if "start_server_$name" "$data"; then
			return 0
		fi
		if [[ -z "$srv_log" || ! -f "$srv_log" ]] || ! grep -qiE "address already in use|port is already in use" "$srv_log"; then
			return 1
		fi
		echo "$name: its port was taken before it could bind it (attempt $attempt of 3): another port" >&2
		mv "$srv_log" "$srv_log.attempt$attempt" 2>/dev/null || true
	done
	return 1
}

# start_s3_server [DATA_DIR]: starts the servers (SAFEPUT_S3_START, default all) unless
# SAFEPUT_S3_ENDPOINT is already set; each keeps its data under DATA_DIR/<name>.
start_s3_server() {
	if [[ -n "${SAFEPUT_S3_ENDPOINT:-}" ]]; then
		echo "using external S3 endpoint $SAFEPUT_S3_ENDPOINT" >&2
		return 0
	fi
	local data=${1:-}
	if [[ -z "$data" ]]; then
		data=$(mktemp -d "${TMPDIR:-/tmp}/safeput-s3.XXXXXX") || return 1
	fi
	safeput_s3_data=$data
	safeput_s3_pids=""
	safeput_s3_logs=""
	# A CA and a certificate for the servers' TLS endpoints, made in Go for this run
	# (SAFEPUT_S3_TLS=0: none, as the benchmark wants: no second server beside the one measured).
	if [[ "${SAFEPUT_S3_TLS:-1}" == "0" ]]; then
		unset SAFEPUT_S3_TLS_DIR
	elif (cd "$safeput_root" && go run ./storetest/testcerts/gencerts "$data/tls"); then
		export SAFEPUT_S3_TLS_DIR="$data/tls"
	else
		unset SAFEPUT_S3_TLS_DIR
		echo "WARNING: no test certificates: the TLS tests use their in-process relay" >&2
	fi
	# One KMS key per run (base64 of 32 random bytes) for the servers that take a static one.
	export SAFEPUT_S3_KMS_KEY_ID="safeput-kms-key"
	safeput_kms_secret=$(head -c 32 /dev/urandom | base64) || return 1
	local name var started=()
	local list=${SAFEPUT_S3_START:-$SAFEPUT_S3_ALL_SERVERS}
	for name in ${list//,/ }; do
		if ! declare -F "start_server_$name" >/dev/null; then
			echo "unknown S3 server '$name' in SAFEPUT_S3_START (known: $SAFEPUT_S3_ALL_SERVERS)" >&2
			return 1
		fi
		if ! start_with_retry "$name" "$data/$name"; then
			if ci_mode; then
				echo "FAIL: S3 server $name could not be installed or started (CI=true needs every server: $SAFEPUT_S3_ALL_SERVERS)" >&2
				return 1
			fi
			echo "WARNING: S3 server $name could not be installed or started; the tests run without it" >&2
			continue
		fi
		safeput_s3_pids="$safeput_s3_pids $srv_pid ${srv_extra_pids:-}"
		safeput_s3_logs="$safeput_s3_logs $srv_log"
		if [[ "$name" == s3rver ]]; then
			# Smoke only: not one of the servers the suite runs on.
			export SAFEPUT_S3RVER_ENDPOINT="$srv_endpoint" SAFEPUT_S3RVER_ACCESS_KEY="$srv_access" \
				SAFEPUT_S3RVER_SECRET_KEY="$srv_secret" SAFEPUT_S3RVER_REGION="$srv_region" SAFEPUT_S3RVER_BUCKET="$srv_bucket"
			echo "s3rver $srv_version listening on $srv_endpoint (smoke tests only; data $data/$name, pid $srv_pid)" >&2
			continue
		fi
		started+=("$name")
		var="SAFEPUT_S3_$(echo "$name" | tr '[:lower:]' '[:upper:]' | tr -c 'A-Z0-9\n' '_')"
		export "${var}_ENDPOINT=$srv_endpoint" "${var}_ACCESS_KEY=$srv_access" \
			"${var}_SECRET_KEY=$srv_secret" "${var}_REGION=$srv_region" "${var}_PID=$srv_pid" "${var}_TRASH=$srv_trash"
		if [[ -n "${srv_tls_endpoint:-}" ]]; then
			# The TLS server's own pid and trash (the benchmark's TLS tables read its CPU): the
			# gateway and MinIO serve TLS from a second process, RGW from the same one.
			export "${var}_TLS_ENDPOINT=$srv_tls_endpoint" "${var}_TLS_PID=${srv_tls_pid:-$srv_pid}" "${var}_TLS_TRASH=${srv_tls_trash:-}"
			echo "$name also serves TLS on $srv_tls_endpoint" >&2
		elif [[ -n "${SAFEPUT_S3_TLS_DIR:-}" ]]; then
			echo "WARNING: $name serves no TLS endpoint: its TLS tests use the in-process relay" >&2
		fi
		if [[ ${#started[@]} -eq 1 ]]; then
			# The first server is also the single-server default (the benchmark uses it).
			safeput_s3_pid=$srv_pid
			safeput_s3_log=$srv_log
			export SAFEPUT_S3_ENDPOINT="$srv_endpoint" SAFEPUT_S3_ACCESS_KEY="$srv_access" \
				SAFEPUT_S3_SECRET_KEY="$srv_secret" SAFEPUT_S3_REGION="$srv_region"
		fi
		echo "$name $srv_version listening on $srv_endpoint (data $data/$name, pid $srv_pid)" >&2
	done
	if [[ ${#started[@]} -eq 0 ]]; then
		echo "FAIL: no S3 server started" >&2
		return 1
	fi
	export SAFEPUT_S3_SERVERS
	SAFEPUT_S3_SERVERS=$(
		IFS=,
		echo "${started[*]}"
	)
}

stop_s3_server() {
	local pid stop
	for stop in ${safeput_s3_stoppers:-}; do
		"$stop"
	done
	safeput_s3_stoppers=""
	for pid in ${safeput_s3_pids:-} ${srv_pid:-}; do
		kill "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	done
	safeput_s3_pids=""
	srv_pid=""
	safeput_s3_pid=""
	if [[ -n "${safeput_s3_data:-}" && "${SAFEPUT_KEEP_S3_DATA:-}" != "1" ]]; then
		rm -rf "$safeput_s3_data"
	fi
}
