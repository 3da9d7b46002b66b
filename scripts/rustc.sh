#!/usr/bin/env bash
# Debian's rustc at a pinned version, for the C ABI's Rust reference caller
# (cabi/rust_test.go: TestRustCaller, which compiles cabi/internal/rustcaller with rustc alone:
# no cargo, no crates). Source it, then:
#
#   install_rustc   # a rustc already on PATH is used as it is (the caller builds with 1.63 and
#                   # later); else apt-get install rustc=$RUSTC_VERSION; prints why and returns 1
#                   # when it cannot (the test command fails under CI=true, as the test does)

# shellcheck source=apt.sh
source "$(dirname "${BASH_SOURCE[0]}")/apt.sh"

RUSTC_VERSION="1.63.0+dfsg1-2"

install_rustc() {
	if command -v rustc >/dev/null; then
		return 0
	fi
	if [[ $(id -u) -ne 0 ]] || ! command -v apt-get >/dev/null; then
		echo "rustc.sh: rustc is not installed and installing Debian's rustc $RUSTC_VERSION needs root and apt-get" >&2
		return 1
	fi
	if ! apt_install_pinned rustc.sh "$RUSTC_VERSION" rustc; then
		echo "rustc.sh: apt-get install of rustc $RUSTC_VERSION failed (output above)" >&2
		return 1
	fi
}
