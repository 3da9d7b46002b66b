#!/usr/bin/env bash
# The test command: lint, then every module's tests with -race against the real S3 servers
# (Versity S3 Gateway, MinIO and Ceph RGW; see s3server.sh), then a table of where the time went.
# Needs Go; installs its pinned tools into bin/ on first run, and (as root, with apt-get)
# Debian's Ceph RGW, valgrind and (when no rustc is on PATH) rustc at pinned versions.
#   SAFEPUT_SKIP_LINT=1   skip gofmt/vet/golangci-lint (quick local loops; CI never sets it)
#   SAFEPUT_TEST_ARGS     extra arguments for go test (e.g. "-run Contract")
#   SAFEPUT_TEST_JOBS     test jobs at once (default 2): modules, or shares of a long package
#
# Why jobs run side by side, and tests on the three servers in parallel (s3test.ForEach):
# most of an integration test's time is spent waiting on a server (its answers, stall windows,
# backoff), so one test at a time left a core idle for most of the run. Every module still runs
# under -race, on every server, through both adapters. Two jobs by default: with three, the
# machine was busy 98 % of the run and tests with sub-second stall windows on Ceph failed; the
# table at the end says how busy the machine was.
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

modules=$(find . -name go.mod -not -path './bin/*' -not -path './.tmp/*' -exec dirname {} \; | sort)
out=.tmp/test
rm -rf "$out"
mkdir -p "$out"
# times: one line per step, "LABEL<TAB>WALL<TAB>CPU" (seconds; CPU "-" where not counted), for
# the table at the end.

# The lint runs in the background from the start: beside the tools installing and the servers
# starting (mostly waiting on the servers), then as one of the test jobs below (it takes one of
# their places until it ends). Its output is printed when it ends; a lint failure fails the
# command as a test failure does.
lint_pid=""
if [[ "${SAFEPUT_SKIP_LINT:-}" != "1" ]]; then
	(
		start=$SECONDS rc=0
		bash scripts/lint.sh >"$out/lint.log" 2>&1 || rc=$?
		printf 'lint (gofmt, go mod tidy, go vet, golangci-lint), from the start\t%d\t-\n' $((SECONDS - start)) >"$out/lint.time"
		exit $rc
	) &
	lint_pid=$!
fi
# Beside them, the writer's test binaries (with and without -race), which its shares below
# share: built once here, not twice side by side. A build error shows in the jobs.
(go test -race -c -o /dev/null ./writer/ >/dev/null 2>&1 && go test -c -o /dev/null ./writer/ >/dev/null 2>&1 || true) &
prebuild_pid=$!

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

go build -o "$out/testreport" ./internal/testreport

trap stop_s3_server EXIT
step_start=$SECONDS
start_s3_server
printf 'install (first run) and start the servers\t%d\t-\n' $((SECONDS - step_start)) >>"$out/times"
wait "$prebuild_pid" || true

# busy_jiffies: "BUSY TOTAL" of all CPUs from /proc/stat (nothing where there is none), to say
# at the end how busy the machine was while the tests ran.
busy_jiffies() {
	[[ -r /proc/stat ]] && awk '/^cpu / {print $2 + $3 + $4 + $7 + $8 + $9, $2 + $3 + $4 + $5 + $6 + $7 + $8 + $9}' /proc/stat
}

# test_module DIR NAME RACE MATRIX PACKAGES [RUN|-skip:SKIP]: go test -json of PACKAGES in module
# DIR (with -race unless RACE is "norace"), its server matrix narrowed to MATRIX ("all": every
# server), only the top-level tests RUN matches (or all but those SKIP matches). Its plain-go-test
# output goes to NAME.log, the JSON to NAME.json, "LABEL<TAB>WALL<TAB>CPU" to NAME.time: CPU is
# what go test and everything it ran used (build, test binaries, the CLI they start), not the
# servers.
test_module() {
	local m=$1 name=$2 race=-race matrix=$4 pkgs=$5 sel=${6:-} start=$SECONDS rc=0 label filter=()
	[[ "$3" == "norace" ]] && race=""
	[[ "$matrix" == "all" ]] && matrix=""
	case "$sel" in
	"") ;;
	-skip:*) filter=(-skip "${sel#-skip:}") ;;
	*) filter=(-run "$sel") ;;
	esac
	# -timeout: a package that hangs is caught by it; each test has bounds of its own, sooner.
	# -parallel: a matrix test's server × adapter subtests (6) at once, and beside them the
	# parallel tests that only wait (a throttle allowance, stall windows, a killed process).
	# shellcheck disable=SC2086
	# SAFEPUT_S3_ASKED_LOG: the top-level tests that asked s3test for a server (the check of the
	# writer's race-free shares at the end).
	(cd "$m" && SAFEPUT_S3_MATRIX=$matrix SAFEPUT_S3_ASKED_LOG="$root_dir/$out/$name.asked" go test $race -count=1 -timeout 20m -parallel 12 -json "${filter[@]}" ${SAFEPUT_TEST_ARGS:-} $pkgs 2>&1) |
		"$out/testreport" stream "$out/$name.json" >"$out/$name.log" || rc=1
	label=$m
	if [[ "$pkgs" == ./?* && "$pkgs" != "./..." && "$pkgs" != *" "* ]]; then
		label=$pkgs # one package
	elif [[ "$pkgs" != "./..." ]]; then
		label+=" ($(echo "$pkgs" | wc -w) packages)"
	fi
	label+="${race:+ -race}${matrix:+ on $matrix}"
	[[ -n "$sel" ]] && label+=" (${shard_label[$name]:-some tests})"
	# times' second line: the CPU this job's children (go test and all it waited for) used. Into
	# a file: in a command substitution it would speak for the substitution's own subshell.
	times >"$out/$name.cpu"
	printf '%s\t%d\t%s\n' "$label" $((SECONDS - start)) "$(awk 'NR == 2 {
		split($1, u, /[ms]/); split($2, s, /[ms]/); printf "%d", u[1] * 60 + u[2] + s[1] * 60 + s[2] }' "$out/$name.cpu")" >"$out/$name.time"
	return $rc
}

# The root module (the library: writer, adapters) runs twice. Under -race its
# server matrix (every testkit/s3test.ForEach test, through both adapters) runs on one real
# server, $race_server; without -race the same tests run on the other servers. The writer's
# goroutines (part senders, the memory budget, fences, stall watchdogs, retries) are the same
# whichever server answers; what a server changes is which answers they get, and the in-memory
# store plays each server's answers (memstore rules minio-like, ceph-like, refusing, opaque
# ETags) in the unit tests, which run under -race. Every other module runs under -race on
# every server. The race-free pass runs only the packages whose tests reach a server (they
# import storetest's s3test, testkit or wirekit): the others' tests run whole under -race
# already. It also holds the tighter allocation bounds that -race loosens.
# The checks of the sources themselves (doccheck: no hand-typed figures, cited files exist;
# apilist: the API listings) read files and run go list; they start none of the library's
# goroutines, and -race made them the root job's slowest tests, so they run in the race-free job.
race_server=${SAFEPUT_RACE_SERVER:-minio}
other_servers=$(echo "${SAFEPUT_S3_SERVERS:-}" | tr ',' '\n' | grep -vx "$race_server" | paste -sd, || true)
static_pkgs=github.com/safeput/safeput/internal/doccheck,github.com/safeput/safeput/internal/apilist
root_pkgs=$(go list ./... | grep -vx github.com/safeput/safeput/writer | grep -vxF -e "${static_pkgs%,*}" -e "${static_pkgs#*,}" | paste -sd,)
server_pkgs=$(go list -f '{{.ImportPath}}{{range .TestImports}} {{.}}{{end}}{{range .XTestImports}} {{.}}{{end}}' ./... |
	grep -E ' github.com/safeput/safeput/storetest/(s3test|testkit|wirekit)( |$)' |
	cut -d' ' -f1 | grep -vx github.com/safeput/safeput/writer | paste -sd,)

# shards NAME RACE MATRIX DIR N [ONLY]: N jobs for the one package DIR (relative to the root
# module), each a share of its top-level tests, fuzz targets and examples (every Nth in source
# order): a package whose tests run one after another gets N processes side by side. The last
# job runs all that the others do not (-skip), so a test the list misses still runs; a caller's
# own -run (SAFEPUT_TEST_ARGS) would undo the shares, so then it is one job. ONLY, a file of
# test names, narrows the shares to those tests, and the last one runs the rest of them (-run).
declare -A shard_label=()
shards() {
	local name=$1 race=$2 matrix=$3 dir=$4 n=$5 only=${6:-} i taken="" share list
	if [[ -n "${SAFEPUT_TEST_ARGS:-}" || $n -lt 2 ]]; then
		jobs+=(". $name $race $matrix $dir")
		return
	fi
	list=$(grep -hoE '^func (Test|Fuzz|Example)[A-Za-z0-9_]*\(' "$dir"/*_test.go | sed -E 's/^func //; s/\($//')
	if [[ -n "$only" ]]; then
		list=$(grep -xFf "$only" <<<"$list" || true)
	fi
	for ((i = 0; i < n - 1; i++)); do
		share=$(awk -v n="$n" -v i="$i" '(NR - 1) % n == i' <<<"$list" | paste -sd'|')
		jobs+=(". $name-$((i + 1)) $race $matrix $dir ^($share)\$")
		shard_label[$name-$((i + 1))]="share $((i + 1)) of $n"
		taken+="${taken:+|}$share"
	done
	if [[ -n "$only" ]]; then
		share=$(awk -v n="$n" '(NR - 1) % n == n - 1' <<<"$list" | paste -sd'|')
		jobs+=(". $name-$n $race $matrix $dir ^($share)\$")
	else
		jobs+=(". $name-$n $race $matrix $dir -skip:^($taken)\$")
	fi
	shard_label[$name-$n]="share $n of $n"
}

# The jobs, DIR NAME RACE MATRIX PACKAGES [RUN|-skip:SKIP] (PACKAGES comma-separated), longest
# first as the last runs measured them: the long ones start at once, and the short ones fill in
# at the end beside whichever long one finishes last. The writer package is the longest by far:
# under -race it keeps a CPU busy (two shares), without it it mostly waits (on servers, stall
# windows, backoff: two shares), so the two kinds alternate.
jobs=()
server_tests=""
root_dir=$PWD
if [[ ",${SAFEPUT_S3_SERVERS:-}," == *",$race_server,"* && -n "$other_servers" ]]; then
	shards writer-race race "$race_server" ./writer 2
	race_shares=("${jobs[@]}")
	jobs=()
	# Without -race, only the writer's tests that reach a server (or read raceEnabled): the others
	# play in-memory answers the -race shares have already played. The list is a static search
	# (testreport servertests); the check after the jobs holds it against the tests that asked
	# s3test for a server under -race.
	server_tests="$out/writer.servertests"
	"$out/testreport" servertests ./writer >"$server_tests"
	shards writer norace "$other_servers" ./writer 2 "$server_tests"
	# Each -race share beside a race-free one: one keeps a CPU busy, the other mostly waits.
	free_shares=("${jobs[@]}")
	jobs=()
	for ((i = 0; i < ${#race_shares[@]}; i++)); do
		jobs+=("${race_shares[$i]}" "${free_shares[$i]}")
	done
	root_rest=". root-race race $race_server $root_pkgs"
	jobs+=(". root norace $other_servers $server_pkgs,$static_pkgs")
else
	# One server, or an external endpoint: all of it under -race.
	shards writer-race race all ./writer 2
	root_rest=". root-race race all $root_pkgs,$static_pkgs"
fi
for m in ./cmd/safeput ./examples ./cabi "$root_rest" ./storetest ./frontend ./objstore ./gocloud ./bench ./otel; do
	if [[ "$m" == ". "* ]]; then
		jobs+=("$m")
	elif [[ -f "$m/go.mod" ]]; then
		jobs+=("$m $(basename "$m") race all ./...")
	fi
done
# A module not named above (a new one) runs last, under -race on every server.
for m in $modules; do
	case " . ./cmd/safeput ./examples ./cabi ./storetest ./frontend ./objstore ./gocloud ./bench ./otel " in
	*" $m "*) ;;
	*) jobs+=("$m $(basename "$m") race all ./...") ;;
	esac
done

status=0
lint_failed="" tests_failed=""
jobs_max=${SAFEPUT_TEST_JOBS:-2}
declare -A names=()
finish_one() {
	local pid name rc=0
	wait -n -p pid || rc=$?
	name=${names[$pid]:-}
	[[ -z "$name" ]] && return 0 # not a job of ours (a server that ended)
	unset "names[$pid]"
	if [[ "$name" == lint ]]; then
		cat "$out/lint.log" >&2
		[[ $rc -eq 0 ]] || { status=1 lint_failed=1; }
		return 0
	fi
	[[ $rc -eq 0 ]] || { status=1 tests_failed=1; }
	echo "== go test $(cut -f1 "$out/$name.time") $(cut -f2 "$out/$name.time") s"
	cat "$out/$name.log"
}
[[ -n "$lint_pid" ]] && names[$lint_pid]=lint
read -r busy0 total0 <<<"$(busy_jiffies)"
tests_start=$SECONDS
for job in "${jobs[@]}"; do
	while [[ ${#names[@]} -ge $jobs_max ]]; do
		finish_one
	done
	read -r dir name race matrix pkgs sel <<<"$job"
	test_module "$dir" "$name" "$race" "$matrix" "${pkgs//,/ }" "$sel" &
	names[$!]=$name
done
while [[ ${#names[@]} -gt 0 ]]; do
	finish_one
done
# The writer's race-free shares ran the tests the static search listed: every test that asked
# s3test for a server in the -race shares must be among them, or it ran on one server only.
if [[ -n "$server_tests" && -z "${SAFEPUT_TEST_ARGS:-}" ]]; then
	asked=$(cat "$out"/writer-race-*.asked 2>/dev/null | sort -u || true)
	missed=$(grep -vxFf "$server_tests" <<<"$asked" || true)
	if [[ -z "$asked" ]]; then
		echo "FAIL: no writer test recorded asking for a server under -race (SAFEPUT_S3_ASKED_LOG): the race-free shares' list cannot be checked" >&2
		status=1 tests_failed=1
	elif [[ -n "$missed" ]]; then
		echo "FAIL: these writer tests asked for a server under -race but are not in testreport servertests' list, so they did not run on $other_servers: $(paste -sd' ' <<<"$missed")" >&2
		status=1 tests_failed=1
	fi
fi
read -r busy1 total1 <<<"$(busy_jiffies)"
busy=-
if [[ -n "${total0:-}" && -n "${total1:-}" && $((total1 - total0)) -gt 0 ]]; then
	busy=$((100 * (busy1 - busy0) / (total1 - total0)))
fi

[[ -n "$lint_pid" ]] && cat "$out/lint.time" >>"$out/times"
for job in "${jobs[@]}"; do
	read -r _ name _ <<<"$job"
	cat "$out/$name.time" >>"$out/times"
done
printf 'the tests, %d jobs at a time on %s CPUs (busy %s %%)\t%d\t-\n' "$jobs_max" "$(nproc 2>/dev/null || echo '?')" "$busy" $((SECONDS - tests_start)) >>"$out/times"
"$out/testreport" summary "$out/times" "$out"/*.json

if [[ -n "$lint_failed" ]]; then
	echo "FAIL: lint (its output is above)" >&2
fi
if [[ -n "$tests_failed" ]]; then
	echo "FAIL: tests failed (server logs:${safeput_s3_logs:- external endpoint})" >&2
	for log in ${safeput_s3_logs:-}; do
		echo "== tail $log" >&2
		tail -50 "$log" >&2 || true
	done
fi
exit $status
