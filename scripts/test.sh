#!/usr/bin/env bash
# The test command: lint, then every module's tests with -race against the real S3 servers
# (Versity S3 Gateway, MinIO and Ceph RGW; see s3server.sh), then a table of where the time went.
# Needs Go; installs its pinned tools into bin/ on first run, and (as root, with apt-get)
# Debian's Ceph RGW, valgrind and (when no rustc is on PATH) rustc at pinned versions.
#   SAFEPUT_SKIP_LINT=1   skip gofmt/vet/golangci-lint (quick local loops; CI never sets it)
#   SAFEPUT_TEST_ARGS     extra arguments for go test (e.g. "-run Contract")
#   SAFEPUT_TEST_JOBS     modules tested at once (default 2)
#
# Why modules run side by side, and tests on the three servers in parallel (s3test.ForEach):
# most of an integration test's time is spent waiting on a server (its answers, stall windows,
# backoff), so one test at a time left a core idle for most of the run. Every module still runs
# under -race, on every server, through both adapters.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=s3server.sh
source scripts/s3server.sh
# No test reaches a real instance metadata service (a link-local address, not this machine's):
# the SDK's default chain ends there. Tests of the instance-role path run their own emulator on
# 127.0.0.1 and set both variables themselves.
export AWS_EC2_METADATA_DISABLED=true AWS_EC2_METADATA_SERVICE_ENDPOINT=http://127.0.0.1:9
# shellcheck source=valgrind.sh
source scripts/valgrind.sh
# shellcheck source=rustc.sh
source scripts/rustc.sh

# The longest module first, so it is never the one left running alone at the end.
modules=$(find . -name go.mod -not -path './bin/*' -not -path './.tmp/*' -exec dirname {} \; |
	awk '{print ($0 == "." ? 0 : ($0 == "./cmd/safeput" ? 1 : 2)) " " $0}' | sort | cut -d' ' -f2)

if [[ "${SAFEPUT_SKIP_LINT:-}" != "1" ]]; then
	bash scripts/lint.sh
fi

if ! install_valgrind; then
	if [[ -n "${CI:-}" && "${CI:-}" != "false" ]]; then
		echo "FAIL: valgrind is needed for the C ABI's memcheck test" >&2
		exit 1
	fi
	echo "test.sh: without valgrind, TestSharedLibraryValgrind skips (it fails under CI=true)" >&2
fi

if ! install_rustc; then
	if [[ -n "${CI:-}" && "${CI:-}" != "false" ]]; then
		echo "FAIL: rustc is needed for the C ABI's Rust reference caller" >&2
		exit 1
	fi
	echo "test.sh: without rustc, TestRustCaller skips (it fails under CI=true)" >&2
fi

out=.tmp/test
rm -rf "$out"
mkdir -p "$out"
go build -o "$out/testreport" ./internal/testreport

trap stop_s3_server EXIT
start_s3_server

# test_module DIR NAME RACE MATRIX: go test -json of one module (with -race unless RACE is
# "norace"), its server matrix narrowed to MATRIX ("all": every server); its plain-go-test output
# goes to NAME.log, the JSON to NAME.json, its wall seconds to NAME.time.
test_module() {
	local m=$1 name=$2 race=-race matrix=$4 start=$SECONDS rc=0
	[[ "$3" == "norace" ]] && race=""
	[[ "$matrix" == "all" ]] && matrix=""
	# -timeout: a package that hangs is caught by it; each test has bounds of its own, sooner.
	# -parallel: a matrix test's server × adapter subtests (6) at once.
	# shellcheck disable=SC2086
	(cd "$m" && SAFEPUT_S3_MATRIX=$matrix go test $race -count=1 -timeout 20m -parallel 6 -json ${SAFEPUT_TEST_ARGS:-} ./... 2>&1) |
		"$out/testreport" stream "$out/$name.json" >"$out/$name.log" || rc=1
	echo "$m${race:+ -race}${matrix:+ on $matrix} $((SECONDS - start))" >"$out/$name.time"
	return $rc
}

# The root module (the library: writer, adapters, fault proxy) runs twice. Under -race its
# server matrix (every testkit/s3test.ForEach test, through both adapters) runs on one real
# server, $race_server; without -race the same tests run on the other servers. The writer's
# goroutines (part senders, the memory budget, fences, stall watchdogs, retries) are the same
# whichever server answers; what a server changes is which answers they get, and the in-memory
# store plays each server's answers (memstore rules minio-like, ceph-like, refusing, opaque
# ETags) in the unit tests, which run under -race. Every other module runs under -race on
# every server. The race-free pass also holds the tighter allocation bounds that -race loosens.
race_server=${SAFEPUT_RACE_SERVER:-minio}
other_servers=$(echo "${SAFEPUT_S3_SERVERS:-}" | tr ',' '\n' | grep -vx "$race_server" | paste -sd, || true)
jobs=()
for m in $modules; do
	name=$(basename "$m")
	if [[ "$m" == "." ]]; then
		if [[ ",${SAFEPUT_S3_SERVERS:-}," == *",$race_server,"* && -n "$other_servers" ]]; then
			jobs+=(". root-race race $race_server" ". root norace $other_servers")
		else
			jobs+=(". root race all") # one server, or an external endpoint: all of it under -race
		fi
	else
		jobs+=("$m $name race all")
	fi
done

status=0
jobs_max=${SAFEPUT_TEST_JOBS:-2}
declare -A names=()
finish_one() {
	local pid name
	wait -n -p pid || status=1
	name=${names[$pid]}
	echo "== go test $(cut -d' ' -f1- "$out/$name.time") s"
	cat "$out/$name.log"
	unset "names[$pid]"
}
for job in "${jobs[@]}"; do
	while [[ ${#names[@]} -ge $jobs_max ]]; do
		finish_one
	done
	read -r dir name race matrix <<<"$job"
	test_module "$dir" "$name" "$race" "$matrix" &
	names[$!]=$name
done
while [[ ${#names[@]} -gt 0 ]]; do
	finish_one
done

cat "$out"/*.time >"$out/times"
"$out/testreport" summary "$out/times" "$out"/*.json

if [[ $status -ne 0 ]]; then
	echo "FAIL: tests failed (server logs:${safeput_s3_logs:- external endpoint})" >&2
	for log in ${safeput_s3_logs:-}; do
		echo "== tail $log" >&2
		tail -50 "$log" >&2 || true
	done
fi
exit $status
