#!/usr/bin/env bash
# Runs a second kube-state-push beside the one `go run ./bench -only agent`
# starts, against the same kube-apiserver, objects and churn, and prints the
# CPU time (utime + stime from /proc) each used over the same stretch of the
# window. Two agent-alone runs one after the other differ by up to a fifth on
# a shared machine; two agents measured side by side see the same machine.
# The second agent pushes to a receiver of its own (bench/nullreceiver,
# which answers 204 at once) with a disk buffer of its own; the bench's
# receiver decodes every request before it answers, which costs the agent
# sending to it CPU of its own, so compare two binaries or settings in both
# places (swap them in a second run).
#
#   go run ./bench -agent bin/A -only agent -window 5m -keep -out "" > bench.log &
#   scripts/paired-cpu.sh bench.log bin/B ['queue_config: {max_samples_per_send: 10000}']
#
# The optional third argument is added to the second agent's remote_write
# entry. Everything listens on 127.0.0.1; the script stops what it started.
# PAIRED_PORT_OFFSET (default 0) moves the paired agent's and its receiver's
# ports, so that two copies can run beside one bench, e.g. a build with a
# change and one without, both to null receivers:
#
#   scripts/paired-cpu.sh bench.log bin/A > a.out &
#   PAIRED_PORT_OFFSET=100 scripts/paired-cpu.sh bench.log bin/B > b.out &
#
# PAIRED_TOP holds top-level keys for the paired agent's configuration,
# e.g. PAIRED_TOP='kube_api_read_batching: 0s' to pair one build with and
# without a setting.
set -euo pipefail

log=$1 bin=$2 extra=${3:-}
measure=${PAIRED_SECONDS:-240}
off=${PAIRED_PORT_OFFSET:-0}
web=$((19101 + off)) pull=$((19102 + off)) recv=$((19291 + off))
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dir=$(mktemp -d /tmp/paired-cpu.XXXXXX)
go build -o "$dir/nullreceiver" "$root/bench/nullreceiver"

# The bench's agent, by its configuration file; [.] keeps the pattern from
# matching another copy's pgrep, whose command line holds the pattern.
for _ in $(seq 600); do
	pgrep -f -- '--config[.]file=.*/kube-state-push[.]yaml' >/dev/null && break
	sleep 1
done
hpid=$(pgrep -f -- '--config[.]file=.*/kube-state-push[.]yaml' | head -1)
cfg=$(tr '\0' '\n' < "/proc/$hpid/cmdline" | sed -n 's/^--config.file=//p')
entry="    disk_buffer: {directory: \"$dir/buffer\"}"
[ -n "$extra" ] && entry+=$'\n'"    $extra"
{
	[ -n "${PAIRED_TOP:-}" ] && printf '%s\n' "$PAIRED_TOP"
	sed -e "s#^listen_address: .*#listen_address: \"127.0.0.1:$web\"#" \
		-e "s#^pull: .*#pull: {listen_address: \"127.0.0.1:$pull\"}#" \
		-e "s#^  - url: .*#  - url: \"http://127.0.0.1:$recv/api/v1/write\"#" \
		-e '/disk_buffer:/d' "$cfg"
	printf '%s\n' "$entry"
} > "$dir/agent.yaml"

"$dir/nullreceiver" "127.0.0.1:$recv" & rpid=$!
"$bin" --config.file="$dir/agent.yaml" > "$dir/agent.log" 2>&1 & npid=$!
trap 'kill $npid $rpid 2>/dev/null || true' EXIT

# Both agents started together; measure from half an interval into the
# bench's window, when both have delivered their first snapshots.
for _ in $(seq 900); do
	grep -q "measuring for" "$log" && break
	sleep 2
done
sleep 30
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
hz=$(getconf CLK_TCK)
h0=$(ticks "$hpid") n0=$(ticks "$npid")
sleep "$measure"
h1=$(ticks "$hpid") n1=$(ticks "$npid")
echo "over ${measure} s: the bench's agent ($(readlink "/proc/$hpid/exe")) $(awk -v t=$((h1 - h0)) -v hz="$hz" 'BEGIN{printf "%.2f", t/hz}') s of CPU; the paired agent ($bin${extra:+, $extra}${PAIRED_TOP:+, $PAIRED_TOP}) $(awk -v t=$((n1 - n0)) -v hz="$hz" 'BEGIN{printf "%.2f", t/hz}') s"
