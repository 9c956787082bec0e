#!/usr/bin/env bash
# The perf-gate workflow's shard → merge → history path on one lent GPU, as the jobs run it:
# `ci --shard K/N` per shard (GitHub's step files set), `merge --ci`, `history append`.
set -uo pipefail
. "$(dirname "$0")/device_env.sh"
for k in 1 2; do
  mkdir -p "$out/shard$k"
  GITHUB_ACTIONS=true GITHUB_OUTPUT="$out/shard$k/outputs" GITHUB_STEP_SUMMARY="$out/shard$k/summary.md" \
    "$bin" ci --base-kernels kernels --shard $k/2 --out "$out/shard$k/results.json" > "$out/shard$k/stdout.txt" 2>&1
  echo "shard $k/2: rc=$? $(grep verdict "$out/shard$k/outputs")"
done
GITHUB_ACTIONS=true GITHUB_OUTPUT="$out/merge-outputs" GITHUB_STEP_SUMMARY="$out/merge-summary.md" \
  "$bin" merge --ci --config configs/pr.yaml --baselines baselines --out "$out/merged.json" -- "$out"/shard*/results.json > "$out/merge-stdout.txt" 2>&1
echo "merge: rc=$? $(tr '\n' ' ' < "$out/merge-outputs")"
tail -4 "$out/merge-stdout.txt"
"$bin" history append --results "$out/merged.json" --history "$out/history.jsonl"; echo "append rc=$?"
"$bin" history append --results "$out/merged.json" --history "$out/history.jsonl"; echo "append again rc=$?"
"$bin" history --history "$out/history.jsonl" | head -8
