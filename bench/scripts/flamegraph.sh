#!/usr/bin/env bash
# A flame graph of where ferry's CPU goes in one bench scenario: runs
# `ferry-bench --targets ferry --scenarios SCENARIO --reps 1`, samples the ferry process it
# starts with `perf record` (cpu-clock, DWARF call graphs: the release build keeps line tables,
# not frame pointers) and renders an SVG with inferno (pinned, installed once per machine into
# ~/.cache/ferry/tools). Writes SCENARIO.svg and the stacks (SCENARIO.folded.gz, for
# bench/scripts/profile_table.py) to OUT_DIR, and prints the kernel's share and the top
# user-space functions by self time.
#
#   bench/scripts/flamegraph.sh SCENARIO OUT_DIR [FERRY_BENCH]
#   e.g. bench/scripts/flamegraph.sh h1_saturation bench/results/2026-12-05-profile
#
# Sampling shows proportions, so unlike CPU-per-request ratios it holds up on a busy machine;
# the SVG's widths are shares of ferry's sampled CPU in that scenario (user and kernel).
set -euo pipefail
scenario="$1"
out="$2"
root="$(cd "$(dirname "$0")/../.." && pwd)"
bench="${3:-$root/target/release/ferry-bench}"
inferno_version=0.12.3
tools="${XDG_CACHE_HOME:-$HOME/.cache}/ferry/tools/inferno-$inferno_version"
if [ ! -x "$tools/bin/inferno-flamegraph" ]; then
    cargo install --locked --quiet inferno --version "$inferno_version" --root "$tools"
fi
command -v perf > /dev/null || { echo "perf is missing (Debian: linux-perf)" >&2; exit 1; }
mkdir -p "$out"
work="$(mktemp -d)"
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT

"$bench" --targets ferry --scenarios "$scenario" --reps 1 --out "$work/bench" > "$work/bench.log" 2>&1 &
driver=$!
# The driver starts ferry (`ferry run --config …`) once the upstream is up; sample it from
# then until it exits (the scenario's warm-up and measured runs).
# Only the driver's own ferry: other ferries may run on the machine.
descendants() { local c; for c in $(pgrep -P "$1"); do echo "$c"; descendants "$c"; done; }
pid=""
for _ in $(seq 600); do
    for p in $(descendants "$driver"); do
        if tr '\0' ' ' < "/proc/$p/cmdline" 2>/dev/null | grep -q "ferry run"; then pid="$p"; fi
    done
    [ -n "$pid" ] && break
    kill -0 "$driver" 2>/dev/null || break
    sleep 0.05
done
[ -n "$pid" ] || { cat "$work/bench.log" >&2; echo "ferry never started" >&2; exit 1; }
perf record -q -e cpu-clock -F 1999 --call-graph dwarf,32768 -p "$pid" -o "$work/perf.data" 2> "$work/perf.log" || true
wait "$driver" || { cat "$work/bench.log" >&2; exit 1; }
perf script -i "$work/perf.data" 2> /dev/null > "$work/perf.txt"
# --all marks kernel frames `_[k]`, so user space can be told apart below.
"$tools/bin/inferno-collapse-perf" --all "$work/perf.txt" > "$work/folded"
# Frames under 0.2 % of the width are left out of the picture (a quarter of the size).
"$tools/bin/inferno-flamegraph" --minwidth 0.2 --title "ferry: $scenario (cpu-clock samples)" \
    < "$work/folded" > "$out/$scenario.svg"
gzip -9 -c "$work/folded" > "$out/$scenario.folded.gz"
echo "$scenario: $out/$scenario.svg"
# Self time by leaf function (the last frame of each stack): the kernel's share, then the top
# user-space functions as shares of user-space time.
awk '{
    n = $NF; $NF = ""; k = split($0, f, ";"); leaf = f[k]; sub(/ +$/, "", leaf);
    total += n
    if (leaf ~ /_\[k\]$/) { kernel += n } else { user += n; self[leaf] += n }
} END {
    printf "kernel %.1f%% of samples, user space %.1f%%; top user-space self time:\n", 100 * kernel / total, 100 * user / total
    for (l in self) printf "%6.2f%%  %s\n", 100 * self[l] / user, l
}' "$work/folded" | { IFS= read -r head; echo "$head"; sort -rn | head -15; }
