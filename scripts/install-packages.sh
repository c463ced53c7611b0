#!/usr/bin/env bash
# Installs what the tests need from Debian and the machine lacks:
# qemu-user-static, whose qemu-aarch64-static runs the arm64 unit tests
# (make test-arm64), and binfmt-support, which registers it with the kernel
# so that a test binary can run itself again (queue's Azure tests do); and
# for the real-node tests (internal/testenv's Node) containerd, runc, the CNI
# plugins and iptables. Their services are never started: the tests start
# containerd themselves, inside a namespace of their own.
# Safe to run again: it installs only what is missing, runs apt-get update
# only when there is something to install, and registers the format only
# when it is not registered.
#
#   scripts/install-packages.sh
#
# It needs root (or sudo) only when something is missing.
set -euo pipefail

# package:command it provides (or, starting with /, a file it installs)
wanted=(
	qemu-user-static:qemu-aarch64-static binfmt-support:update-binfmts
	containerd:containerd runc:runc containernetworking-plugins:/usr/lib/cni/bridge
	iptables:iptables
)

sudo=()
if [ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null 2>&1; then
	sudo=(sudo)
fi

missing=()
for w in "${wanted[@]}"; do
	pkg="${w%%:*}" cmd="${w#*:}"
	case $cmd in
	/*) [ -e "$cmd" ] || missing+=("$pkg") ;;
	*) command -v "$cmd" >/dev/null 2>&1 || missing+=("$pkg") ;;
	esac
done
if [ ${#missing[@]} -gt 0 ]; then
	command -v apt-get >/dev/null 2>&1 || { echo "install-packages: missing ${missing[*]}, and no apt-get here to install them" >&2; exit 1; }
	echo "install-packages: installing ${missing[*]}" >&2
	export DEBIAN_FRONTEND=noninteractive
	"${sudo[@]}" apt-get update -q
	"${sudo[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

binfmt=/proc/sys/fs/binfmt_misc
if [ ! -e "$binfmt/qemu-aarch64" ]; then
	# Without a systemd to do it at boot (a container), mount and register
	# by hand; where that is not allowed, say so: only the tests that run
	# their own binary again fail under make test-arm64.
	[ -e "$binfmt/register" ] || "${sudo[@]}" mount -t binfmt_misc binfmt_misc "$binfmt" 2>/dev/null || true
	"${sudo[@]}" update-binfmts --enable qemu-aarch64 2>/dev/null || true
	[ -e "$binfmt/qemu-aarch64" ] || echo "install-packages: could not register qemu-aarch64 with binfmt_misc" >&2
fi
exit 0
