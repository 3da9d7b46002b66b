#!/usr/bin/env bash
# apt_install_pinned WHO VERSION PACKAGE...: apt-get install of each PACKAGE at VERSION (Debian's
# packages the tests need), after an apt-get update when the first one is not in the package lists
# at that version. apt-get's output is shown only when it fails; then it returns 1. Needs root.
apt_install_pinned() {
	local who=$1 version=$2
	shift 2
	local p pinned=()
	for p in "$@"; do
		pinned+=("$p=$version")
	done
	if [[ "$(apt-cache policy "$1" 2>/dev/null)" != *"$version"* ]]; then
		echo "$who: $1 $version not in the package lists, running apt-get update" >&2
		DEBIAN_FRONTEND=noninteractive apt-get update -q >&2 || true
	fi
	echo "$who: installing $* $version (first run only)" >&2
	local log start=$SECONDS
	log=$(mktemp "${TMPDIR:-/tmp}/safeput-apt-install.XXXXXX")
	if ! DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
		"${pinned[@]}" >"$log" 2>&1; then
		tail -20 "$log" >&2
		rm -f "$log"
		return 1
	fi
	rm -f "$log"
	# The first run's cost, printed by the run itself (docs/testing.md quotes no figure).
	echo "$who: installed in $((SECONDS - start)) s" >&2
}
