#!/usr/bin/env bash
# The benchmark command (`make bench`): starts the real S3 server, uploads the same generated
# bytes through safeput and its peers, checks every object by reading it back, and writes the
# table to BENCHMARKS.md. Settings come from the environment (defaults shown) or from flags
# passed through to the Go program (bench/cmd/bench -h):
#   SIZES="256MiB 1GiB"  RUNS=5  PART=16MiB  CONC=4  SOURCES="stream readerat"
#   IMPLS=""             all implementations; e.g. IMPLS="safeput/aws raw-put"
#   PEER_SIGNING=unsigned  or sdk-default (the SDKs' plain-HTTP SHA-256 payload signing)
#   OUT=BENCHMARKS.md    where the report goes ("-" prints only)
#   BENCH_GO=1           also run the go test -bench suite (-count 6) and print benchstat
#   BENCH_GO_SIZE=64MiB  object size for that suite
#   PROFILE_DIR=dir      also write a CPU profile of every upload there, with the binary
#                        (go tool pprof -top dir/bench dir/safeput_aws-stream-...-run1.pprof);
#                        profiling costs a little, so don't publish figures from such a run
#   BENCH_SERVERS="versitygw minio"  the servers started and measured on, one after the other
#   CLI_MEM_SIZES="1GiB 4GiB"  the CLI memory section: peak RSS (GNU time) of `safeput put -`
#                        on stdin streams of these sizes, at the CLI's defaults, through both
#                        backends on every server started; "" skips it
#   CLI_MEM_RUNS=1       runs per server, backend and size
#   MEMORY_ONLY=1        run only the CLI memory section (a few minutes) and replace just that
#                        section of BENCHMARKS.md
#   TLS=1                measure over TLS instead: each server also serves TLS with a throw-away
#                        private CA made for the run, every uploader (the CLI with --ca-bundle)
#                        trusts that CA, and only the TLS block of BENCHMARKS.md is replaced
#                        (with a table against the plain-HTTP tables already there); no CLI
#                        memory section
#   WAN_ONLY=1           run only the WAN section and replace just that section of BENCHMARKS.md:
#                        every uploader at its own defaults, each write on a cold connection,
#                        through the benchmark's link emulator (bench/internal/link) in front of
#                        one server, with the round trips the relay counted beside each time
#   WAN_SIZES="1MiB 8MiB 64MiB 512MiB"  WAN_RTT=40ms  WAN_RATE=1Gbit  WAN_WINDOW=4MiB
#   WAN_RUNS=3           WAN_SERVER=minio  WAN_IMPLS=""  (all: safeput-defaults/aws,
#                        safeput-defaults/minio, safeput-cli, safeput-cached/aws, transfermanager,
#                        manager, minio-go)
#                        (extra flags pass through: -wan-trace prints every request line and
#                        the MB carried per 100 ms)
#   WAN_FAR=1            with WAN_ONLY=1: write the WAN section's far-link part instead (give it
#                        its round trip: WAN_FAR=1 WAN_RTT=200ms WAN_SIZES="64MiB 512MiB")
#   FLUSH_ONLY=1         run only the flush section and replace just that section of BENCHMARKS.md:
#                        FLUSH_WORKERS workers share one client per implementation (safeput's
#                        Uploader through both adapters, Upload and the io.Writer path; minio-go,
#                        manager, transfermanager, s3.PutObject) and write many small objects, on
#                        loopback and over the emulated link (WAN_RTT, WAN_RATE, WAN_WINDOW; its
#                        relay in a process of its own); objects/s, p50/p99 latency, CPU and
#                        allocation per object; then the CLI row: a FLUSH_CLI_SIZE file put by the
#                        CLI over the link against the peers' upload plus the CLI's start-up
#   FLUSH_SIZES="4KiB 64KiB 1MiB"  FLUSH_WORKERS=16  FLUSH_RUNS=3  FLUSH_SERVER=minio  FLUSH_IMPLS=""
#   FLUSH_OBJECTS=1000   objects per timed batch on loopback; FLUSH_LINK_OBJECTS=400 over the link
#                        (a batch of large objects is cut to 256 MiB)
#   FLUSH_CLI_SIZE=1MiB  FLUSH_CLI_RUNS=9
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
# shellcheck source=s3server.sh
source scripts/s3server.sh

SIZES=${SIZES:-256MiB 1GiB}
RUNS=${RUNS:-5}
PART=${PART:-16MiB}
CONC=${CONC:-4}
SOURCES=${SOURCES:-stream readerat}
IMPLS=${IMPLS:-}
PEER_SIGNING=${PEER_SIGNING:-unsigned}
OUT=${OUT:-BENCHMARKS.md}
CLI_MEM_SIZES=${CLI_MEM_SIZES-1GiB 4GiB}
CLI_MEM_RUNS=${CLI_MEM_RUNS:-1}
MEMORY_ONLY=${MEMORY_ONLY:-}
TLS=${TLS:-}
WAN_ONLY=${WAN_ONLY:-}
WAN_SIZES=${WAN_SIZES:-1MiB 8MiB 64MiB 512MiB}
WAN_RTT=${WAN_RTT:-40ms}
WAN_RATE=${WAN_RATE:-1Gbit}
WAN_WINDOW=${WAN_WINDOW:-4MiB}
WAN_RUNS=${WAN_RUNS:-3}
WAN_SERVER=${WAN_SERVER:-minio}
WAN_IMPLS=${WAN_IMPLS:-}
WAN_FAR=${WAN_FAR:-}
FLUSH_ONLY=${FLUSH_ONLY:-}
FLUSH_SIZES=${FLUSH_SIZES:-4KiB 64KiB 1MiB}
FLUSH_WORKERS=${FLUSH_WORKERS:-16}
FLUSH_RUNS=${FLUSH_RUNS:-3}
FLUSH_SERVER=${FLUSH_SERVER:-minio}
FLUSH_IMPLS=${FLUSH_IMPLS:-}
FLUSH_OBJECTS=${FLUSH_OBJECTS:-1000}
FLUSH_LINK_OBJECTS=${FLUSH_LINK_OBJECTS:-400}
FLUSH_CLI_SIZE=${FLUSH_CLI_SIZE:-1MiB}
FLUSH_CLI_RUNS=${FLUSH_CLI_RUNS:-9}
if [[ "$WAN_ONLY" == "1" ]]; then
	[[ "$TLS" == "1" || "$MEMORY_ONLY" == "1" ]] && { echo "WAN_ONLY=1 goes with neither TLS=1 nor MEMORY_ONLY=1" >&2; exit 2; }
	# Only the server behind the link, and the sizes that matter for the room needed.
	BENCH_SERVERS=$WAN_SERVER
	SIZES=$WAN_SIZES
	CLI_MEM_SIZES=""
fi
if [[ "$FLUSH_ONLY" == "1" ]]; then
	[[ "$TLS" == "1" || "$MEMORY_ONLY" == "1" || "$WAN_ONLY" == "1" ]] && { echo "FLUSH_ONLY=1 goes with none of TLS=1, MEMORY_ONLY=1, WAN_ONLY=1" >&2; exit 2; }
	BENCH_SERVERS=$FLUSH_SERVER
	SIZES=$FLUSH_CLI_SIZE # the CLI row's file; the batches are generated in memory
	CLI_MEM_SIZES=""
fi
BENCH_SERVERS=${BENCH_SERVERS:-versitygw minio}
export SAFEPUT_S3_START=$BENCH_SERVERS
# The measured server runs alone: no second (TLS) instance beside it, except in a TLS run, where
# the plain instance beside the measured TLS one idles.
if [[ "$TLS" == "1" ]]; then
	export SAFEPUT_S3_TLS=1
	CLI_MEM_SIZES=""
	[[ "$MEMORY_ONLY" == "1" ]] && { echo "TLS=1 and MEMORY_ONLY=1 do not go together" >&2; exit 2; }
else
	export SAFEPUT_S3_TLS=${SAFEPUT_S3_TLS:-0}
fi

# to_bytes 256MiB -> 268435456 (KiB/MiB/GiB or plain bytes).
to_bytes() {
	local s=$1
	case $s in
	*GiB) echo $((${s%GiB} << 30)) ;;
	*MiB) echo $((${s%MiB} << 20)) ;;
	*KiB) echo $((${s%KiB} << 10)) ;;
	*) echo "$s" ;;
	esac
}

# Room needed: one source file per size at a time, plus the server holding one object and,
# during a multipart upload, its parts beside it (the posix backend assembles from them): about
# 3 × the largest size, plus slack.
max=0
for s in $SIZES; do
	b=$(to_bytes "$s")
	((b > max)) && max=$b
done
need=$((4 * max + (512 << 20)))
if [[ "$MEMORY_ONLY" == "1" ]]; then
	need=0
	[[ -n "$CLI_MEM_SIZES" ]] || { echo "MEMORY_ONLY=1 needs CLI_MEM_SIZES" >&2; exit 2; }
fi
if [[ -n "$CLI_MEM_SIZES" ]]; then
	if [[ ! -x /usr/bin/time ]]; then
		echo "the CLI memory section needs GNU time (apt-get install time), or set CLI_MEM_SIZES=\"\"" >&2
		exit 2
	fi
	# A streamed object on the server: its parts, then the assembled object beside them.
	for s in $CLI_MEM_SIZES; do
		b=$(to_bytes "$s")
		((2 * b + (512 << 20) > need)) && need=$((2 * b + (512 << 20)))
	done
fi

# tmpfs keeps the server's disk out of the figures; fall back to a temp dir when it lacks room.
base=""
if [[ -d /dev/shm && -w /dev/shm ]]; then
	avail=$(($(df -Pk /dev/shm | awk 'NR==2 {print $4}') << 10))
	if ((avail >= need)); then
		base=/dev/shm
	else
		echo "/dev/shm has $((avail >> 20)) MiB free, need $((need >> 20)) MiB: using a temp dir" >&2
	fi
fi
work=$(mktemp -d "${base:-${TMPDIR:-/tmp}}/safeput-bench.XXXXXX")
fstype=$(df -PT "$work" | awk 'NR==2 {print $2}')

bin="$work/bench"
cleanup() {
	stop_s3_server
	rm -rf "$work"
}
trap cleanup EXIT

(cd bench && go build -o "$bin" ./cmd/bench)
# The CLI, measured as a user runs it (the safeput-cli rows) and for the memory section. Static,
# as a release build would be: with cgo the C library is mapped too (about 1.4 MiB of RSS).
(cd cmd/safeput && CGO_ENABLED=0 go build -o "$work/safeput" .)
# The tables and the CLI memory section measure on each server in turn (each server's CPU
# column reads that server's process).
start_s3_server "$work/s3"
server_versions="versitygw $VERSITYGW_VERSION"
[[ " $BENCH_SERVERS " == *" minio "* ]] && server_versions="$server_versions, minio $MINIO_VERSION"

rev=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
if [[ -n "$(git status --porcelain -- . ':!BENCHMARKS.md' 2>/dev/null)" ]]; then rev="$rev+dirty"; fi

cmdline="BENCH_SERVERS=\"$BENCH_SERVERS\" SIZES=\"$SIZES\" RUNS=$RUNS PART=$PART CONC=$CONC SOURCES=\"$SOURCES\" PEER_SIGNING=$PEER_SIGNING bash scripts/bench.sh"
[[ -n "$IMPLS" ]] && cmdline="IMPLS=\"$IMPLS\" $cmdline"
tlsflag=()
if [[ "$TLS" == "1" ]]; then
	cmdline="TLS=1 $cmdline"
	tlsflag=(-tls)
fi
[[ $# -gt 0 ]] && cmdline="$cmdline $*"

outflag=(-out "$root/$OUT")
[[ "$OUT" == "-" ]] && outflag=()
if [[ -n "${PROFILE_DIR:-}" ]]; then
	mkdir -p "$PROFILE_DIR"
	cp "$bin" "$PROFILE_DIR/bench"
	outflag+=(-cpuprofile-dir "$(cd "$PROFILE_DIR" && pwd)")
fi

memflags=()
if [[ -n "$CLI_MEM_SIZES" ]]; then
	memflags=(-cli-mem-sizes "$CLI_MEM_SIZES" -cli-mem-runs "$CLI_MEM_RUNS" -server-name versitygw)
	if [[ "$MEMORY_ONLY" == "1" ]]; then
		memflags+=(-cli-mem-only)
		cmdline="MEMORY_ONLY=1 CLI_MEM_SIZES=\"$CLI_MEM_SIZES\" CLI_MEM_RUNS=$CLI_MEM_RUNS bash scripts/bench.sh"
	else
		cmdline="CLI_MEM_SIZES=\"$CLI_MEM_SIZES\" CLI_MEM_RUNS=$CLI_MEM_RUNS $cmdline"
	fi
fi

if [[ "$WAN_ONLY" == "1" ]]; then
	wanfar=()
	cmdline="WAN_ONLY=1"
	if [[ "$WAN_FAR" == "1" ]]; then
		wanfar=(-wan-far)
		cmdline="$cmdline WAN_FAR=1"
	fi
	cmdline="$cmdline WAN_SERVER=$WAN_SERVER WAN_SIZES=\"$WAN_SIZES\" WAN_RTT=$WAN_RTT WAN_RATE=$WAN_RATE WAN_WINDOW=$WAN_WINDOW WAN_RUNS=$WAN_RUNS PEER_SIGNING=$PEER_SIGNING"
	[[ -n "$WAN_IMPLS" ]] && cmdline="$cmdline WAN_IMPLS=\"$WAN_IMPLS\""
	cmdline="$cmdline bash scripts/bench.sh"
	[[ $# -gt 0 ]] && cmdline="$cmdline $*"
	wan_version="versitygw $VERSITYGW_VERSION"
	[[ "$WAN_SERVER" == "minio" ]] && wan_version="minio $MINIO_VERSION"
	"$bin" -wan-only -wan-server "$WAN_SERVER" -wan-sizes "$WAN_SIZES" -wan-rtt "$WAN_RTT" -wan-rate "$WAN_RATE" \
		-wan-window "$WAN_WINDOW" -wan-runs "$WAN_RUNS" -wan-impls "$WAN_IMPLS" -peer-signing "$PEER_SIGNING" \
		-cli-binary "$work/safeput" -dir "$work" "${outflag[@]}" -server-versions "$wan_version" -revision "$rev" \
		-command "$cmdline" "${wanfar[@]}" "$@"
	exit 0 # the rest is the other sections'
fi

if [[ "$FLUSH_ONLY" == "1" ]]; then
	cmdline="FLUSH_ONLY=1 FLUSH_SERVER=$FLUSH_SERVER FLUSH_SIZES=\"$FLUSH_SIZES\" FLUSH_WORKERS=$FLUSH_WORKERS FLUSH_OBJECTS=$FLUSH_OBJECTS FLUSH_LINK_OBJECTS=$FLUSH_LINK_OBJECTS FLUSH_RUNS=$FLUSH_RUNS FLUSH_CLI_SIZE=$FLUSH_CLI_SIZE FLUSH_CLI_RUNS=$FLUSH_CLI_RUNS WAN_RTT=$WAN_RTT WAN_RATE=$WAN_RATE WAN_WINDOW=$WAN_WINDOW PEER_SIGNING=$PEER_SIGNING"
	[[ -n "$FLUSH_IMPLS" ]] && cmdline="$cmdline FLUSH_IMPLS=\"$FLUSH_IMPLS\""
	cmdline="$cmdline bash scripts/bench.sh"
	[[ $# -gt 0 ]] && cmdline="$cmdline $*"
	flush_version="versitygw $VERSITYGW_VERSION"
	[[ "$FLUSH_SERVER" == "minio" ]] && flush_version="minio $MINIO_VERSION"
	"$bin" -flush-only -flush-server "$FLUSH_SERVER" -flush-sizes "$FLUSH_SIZES" -flush-workers "$FLUSH_WORKERS" \
		-flush-objects "$FLUSH_OBJECTS" -flush-link-objects "$FLUSH_LINK_OBJECTS" -flush-runs "$FLUSH_RUNS" -flush-impls "$FLUSH_IMPLS" \
		-flush-cli-size "$FLUSH_CLI_SIZE" -flush-cli-runs "$FLUSH_CLI_RUNS" -wan-rtt "$WAN_RTT" -wan-rate "$WAN_RATE" -wan-window "$WAN_WINDOW" \
		-peer-signing "$PEER_SIGNING" -cli-binary "$work/safeput" -dir "$work" "${outflag[@]}" -server-versions "$flush_version" -revision "$rev" \
		-command "$cmdline" "$@"
	exit 0 # the rest is the other sections'
fi

"$bin" "${memflags[@]}" "${tlsflag[@]}" -sizes "$SIZES" -runs "$RUNS" -part "$PART" -conc "$CONC" -sources "$SOURCES" -impls "$IMPLS" \
	-peer-signing "$PEER_SIGNING" -cli-binary "$work/safeput" -dir "$work" "${outflag[@]}" -servers "$BENCH_SERVERS" -server-versions "$server_versions" \
	-command "$cmdline" -versitygw "$VERSITYGW_VERSION" -revision "$rev" -server-pid "${safeput_s3_pid:-0}" "$@" \
	-data-desc "$work ($fstype)"

if [[ "${BENCH_GO:-}" == "1" ]]; then
	install_tool benchstat golang.org/x/perf/cmd/benchstat v0.0.0-20260908200009-22c9c6c9d4da
	echo "== go test -bench (count 6, ${BENCH_GO_SIZE:-64MiB}, $PART × $CONC)" >&2
	(cd bench && SAFEPUT_BENCH_SIZE="${BENCH_GO_SIZE:-64MiB}" SAFEPUT_BENCH_PART="$PART" SAFEPUT_BENCH_CONC="$CONC" \
		go test -run '^$' -bench 'Upload' -benchmem -count 6 -timeout 60m . | tee "$work/gobench.txt")
	(cd "$work" && "$safeput_bin/benchstat" gobench.txt)
fi
