#!/usr/bin/env bash
# The issue-18 contention figures in one run: forward_bench (GPT-2-124M preset, batch 1 and 8) idle and beside
# each neighbour of bench/with_neighbour.sh, ROUNDS rounds interleaved (this kind of machine drifts by 10-20%
# over minutes, so the kinds take turns), then the median of each kind and its ratio to the idle median.
#   bench/contention_matrix.sh [ROUNDS] [KINDS...]     defaults: 3 rounds; idle busy replica omp2 pinned cgroup
# Environment: BUILD_DIR (default build). A kind that cannot run here (cgroup on a read-only cgroupfs) is
# reported and skipped. Targets (issue 18): busy <= 2.2x, replica <= 2.3x, omp2 <= 3x, pinned <= 1.8x.
set -uo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
shift || true
kinds=("$@")
[ ${#kinds[@]} -eq 0 ] && kinds=(idle busy replica omp2 pinned cgroup)
build=${BUILD_DIR:-build}
results=$(mktemp)
trap 'rm -f "$results"' EXIT
for ((round = 1; round <= rounds; ++round)); do
  for kind in "${kinds[@]}"; do
    # "batch ms/step tok/s" per batch size.
    # The exit status is not checked: with `replica` the neighbour copy is killed at the end; a kind that printed
    # no result line is reported instead.
    out=$(BUILD_DIR=$build bench/with_neighbour.sh "$kind" -- "$build/bench/forward_bench" --presets gpt2/124m \
      --fixtures= --batches 1,8 --decode_steps 32 --repeats 5 2>&1)
    if ! echo "$out" | grep -q '^gpt2-124m'; then
      echo "round $round: $kind could not run: $(echo "$out" | tail -1)" >&2
      continue
    fi
    echo "$out" | awk -v kind="$kind" '$1 == "gpt2-124m" { print kind, $3, $5, $6 }' | tee -a "$results" |
      sed "s/^/round $round: /"
  done
done
echo
echo "kind      bs1 ms/step (x idle)   bs8 tok/s (idle / this)   [median of $rounds rounds]"
# median KIND BATCH COLUMN: the median of that column over the rounds (empty when the kind has no result).
median() {
  awk -v kind="$1" -v batch="$2" -v col="$3" '$1 == kind && $2 == batch { print $col }' "$results" | sort -g |
    awk '{ v[NR] = $1 } END { if (NR) printf "%.2f", NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
idle1=$(median idle 1 3)
idle8=$(median idle 8 4)
for kind in "${kinds[@]}"; do
  ms=$(median "$kind" 1 3)
  tok=$(median "$kind" 8 4)
  if [ -z "$ms" ]; then
    printf "%-9s (no result)\n" "$kind"
    continue
  fi
  awk -v kind="$kind" -v ms="$ms" -v tok="$tok" -v i1="${idle1:-0}" -v i8="${idle8:-0}" 'BEGIN {
    r1 = i1 > 0 ? sprintf("%.2fx", ms / i1) : "-"; r8 = (i8 > 0 && tok > 0) ? sprintf("%.2fx", i8 / tok) : "-"
    printf "%-9s %8.1f (%s)          %8.1f (%s)\n", kind, ms, r1, tok, r8 }'
done
