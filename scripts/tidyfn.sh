#!/usr/bin/env bash
# tidy_module DIR [check|fix]: go mod tidy of the module in DIR as a user of it gets it. The
# sub-modules require this repository's modules at their first release tag, which go.work
# replaces with the working tree; go mod tidy ignores go.work, so the module is tidied in a
# scratch copy of its go.mod and go.sum (-modfile) given the same replacements, which are
# dropped again before comparing (check: return 1 and show the diff when they differ) or
# copying back (fix). Needs $safeput_root. Sourced by lint.sh and tidy.sh.
tidy_module() {
	local m=$1 mode=${2:-check} tmp r mods rc=0
	tmp=$(mktemp -d)
	cp "$m/go.mod" "$tmp/go.mod"
	if [[ -f "$m/go.sum" ]]; then cp "$m/go.sum" "$tmp/go.sum"; else : >"$tmp/go.sum"; fi
	mods=$(grep -oE 'github.com/safeput/safeput(/[A-Za-z0-9_/.-]+)? v0\.1\.0' "$m/go.mod" | awk '{print $1}' | sort -u || true)
	for r in $mods; do
		go mod edit -modfile="$tmp/go.mod" -replace "$r@v0.1.0=$safeput_root${r#github.com/safeput/safeput}"
	done
	if ! (cd "$m" && GOWORK=off GOFLAGS=-mod=mod go mod tidy -modfile="$tmp/go.mod" >"$tmp/log" 2>&1); then
		grep -v '^go: downloading' "$tmp/log" >&2
		rm -rf "$tmp"
		echo "go mod tidy failed in $m" >&2
		return 1
	fi
	for r in $mods; do
		go mod edit -modfile="$tmp/go.mod" -dropreplace "$r@v0.1.0"
	done
	if [[ "$mode" == fix ]]; then
		cp "$tmp/go.mod" "$m/go.mod"
		if [[ -s "$tmp/go.sum" ]]; then cp "$tmp/go.sum" "$m/go.sum"; else rm -f "$m/go.sum"; fi
	elif ! cmp -s "$m/go.mod" "$tmp/go.mod" || ! cmp -s <(cat "$m/go.sum" 2>/dev/null) "$tmp/go.sum"; then
		diff -u "$m/go.mod" "$tmp/go.mod" >&2 || true
		diff -u <(cat "$m/go.sum" 2>/dev/null) "$tmp/go.sum" | head -20 >&2 || true
		rc=1
	fi
	rm -rf "$tmp"
	return $rc
}
