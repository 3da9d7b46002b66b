#!/usr/bin/env bash
# Debian's valgrind at a pinned version, for the C ABI's memcheck test
# (cabi/sharedlib_test.go: TestSharedLibraryValgrind). Source it, then:
#
#   install_valgrind   # apt-get install valgrind=$VALGRIND_VERSION unless it is installed;
#                      # prints why and returns 1 when it cannot (the test command fails under
#                      # CI=true, as the test itself does without valgrind)

# shellcheck source=apt.sh
source "$(dirname "${BASH_SOURCE[0]}")/apt.sh"

VALGRIND_VERSION="1:3.19.0-1"

install_valgrind() {
	local v
	v=$(dpkg-query -W -f='${Status} ${Version}' valgrind 2>/dev/null) || v=""
	if [[ "$v" == "install ok installed $VALGRIND_VERSION" ]]; then
		return 0
	fi
	if [[ $(id -u) -ne 0 ]] || ! command -v apt-get >/dev/null; then
		echo "valgrind.sh: valgrind $VALGRIND_VERSION is not installed and installing it needs root and apt-get" >&2
		return 1
	fi
	if ! apt_install_pinned valgrind.sh "$VALGRIND_VERSION" valgrind; then
		echo "valgrind.sh: apt-get install of valgrind $VALGRIND_VERSION failed (output above)" >&2
		return 1
	fi
}
