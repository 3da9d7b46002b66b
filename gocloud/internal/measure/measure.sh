#!/usr/bin/env bash
# Writes gocloud/measurements.txt (and its copy in gocloud/README.md): the same objects written through s3:// (gocloud's s3blob) and
# safes3:// (safeblob) on one MinIO, each write in its own process, ROUNDS rounds. Rerun with:
#   bash gocloud/internal/measure/measure.sh
set -euo pipefail
cd "$(dirname "$0")/../../.."
size=${SIZE:-$((256 << 20))}
rounds=${ROUNDS:-2}
out=gocloud/measurements.txt
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
(cd gocloud && go build -o "$bin/measure" ./internal/measure)
{
	echo "# gocloud's s3blob (s3://) vs safeblob (safes3://), the same URL but for its scheme, one MinIO"
	echo "# (scripts/with-s3.sh, SAFEPUT_S3_START=minio), $rounds rounds, one write per process, under nice -n 19;"
	echo "# $(nproc) cores, load average $(cut -d' ' -f1 /proc/loadavg) at the start: the figures are relative, not a benchmark."
	echo "# $(date -u +%Y-%m-%d) $(go env GOVERSION)"
	echo "# Command: bash gocloud/internal/measure/measure.sh (SIZE=$size ROUNDS=$rounds)"
	echo "# impl	source	size	time	throughput	client CPU	peak RSS	verified"
} > "$out"
SAFEPUT_S3_START=minio SAFEPUT_S3_TLS=0 bash scripts/with-s3.sh bash -c '
	set -euo pipefail
	m=$1; size=$2; rounds=$3; out=$4
	nice -n 19 "$m" -make-file -size "$size"
	for _ in $(seq "$rounds"); do
		for impl in s3blob safeblob; do
			nice -n 19 "$m" -impl "$impl" -source stream -size "$size" >> "$out"
			nice -n 19 "$m" -impl "$impl" -source file -size "$size" >> "$out"
		done
	done
	rm -f /tmp/safeput-measure-gocloud.bin
' _ "$bin/measure" "$size" "$rounds" "$out"
# The README's block between the markers is this file, as generated.
python3 - "$out" gocloud/README.md <<'PY'
import sys
out, readme = sys.argv[1], sys.argv[2]
table = open(out).read()
s = open(readme).read()
begin, end = "<!-- measure:begin -->\n", "<!-- measure:end -->"
i, j = s.index(begin) + len(begin), s.index(end)
open(readme, "w").write(s[:i] + "```\n" + table + "```\n" + s[j:])
PY
cat "$out"
