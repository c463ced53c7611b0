#!/usr/bin/env bash
# Runs govulncheck (make vulncheck) on every package with the offline
# database scripts/build-tools.sh lint puts in .tools/bin/vulndb.
#
#   scripts/vulncheck.sh [govulncheck flags]
#
# It fails on any vulnerability the code reaches in a module it requires:
# those are fixed here, by bumping the module. One reached only in the
# standard library is printed in full but does not fail the run unless
# VULNCHECK_STRICT=1: it is fixed by a newer Go, which the machine provides
# (the Makefile builds with GOTOOLCHAIN=local), and the release image
# (Dockerfile) builds with the newest Go patch release.
set -uo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bin="$root/.tools/bin"
[ -x "$bin/govulncheck" ] && [ -d "$bin/vulndb" ] || {
	echo "vulncheck: $bin/govulncheck or its vulndb missing: scripts/build-tools.sh lint builds them" >&2
	exit 1
}
# The link's target: govulncheck does not walk a folder through a symlink.
db="$(cd "$bin/vulndb" && pwd -P)"

cd "$root"
out="$("$bin/govulncheck" -db "file://$db" "$@" ./... 2>&1)"
rc=$?
echo "$out"
[ $rc -eq 3 ] || exit $rc # 0: none found; anything else but 3: govulncheck failed
if [ "${VULNCHECK_STRICT:-0}" != 1 ] && ! grep -E '^ +Found in: ' <<<"$out" | grep -vqE '@go[0-9]'; then
	echo "vulncheck: every vulnerability above is in the Go standard library: build with the Go release that fixes it ($(go version | cut -d' ' -f3) here)" >&2
	exit 0
fi
exit $rc
