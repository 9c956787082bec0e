#!/usr/bin/env bash
# Issue 30 (items 1, 2, 7) on a lent H100/H200, in one call of about 2.5 minutes:
#  1. the PR gate as a pull request runs it (configs/pr.yaml, peers on, cold compile cache):
#     the shipped kernels against a comment-only copy; its wall and the results' breakdown;
#  2. the independent harness (bench/sdpa_bench.py: CUDA graphs of ~2 ms of back-to-back
#     calls, median of 40 replays, 25% duty, no lead-in) on the same shapes, right after;
#  3. ci-gate's PyTorch worker alone, once per variant of its method (bench/peers_variants.py:
#     alone, no-lead-in, warmup-sizing, fresh, legacy, qpool);
#  4. per shape and peer: gate µs, harness µs, difference, each variant's difference, calls
#     per replay, and "max |diff| X%";
#  5. the PR gate again from the warm compile cache (its wall).
# Carried: .carry/ci-gate (the release binary of this branch, merged into main). Needs
# python3 with torch and yaml. Results in $OUT (or /tmp/ci-gate-out).
#   bash bench/peers_agreement_device.sh
set -uo pipefail
. "$(dirname "$0")/device_env.sh"
nvidia-smi --query-gpu=name,uuid,driver_version,clocks.sm,temperature.gpu,power.draw --format=csv,noheader
echo "compute processes before: $(nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv,noheader | tr '\n' ';')"
python3 -c "import torch; print('torch', torch.__version__, 'CUDA', torch.version.cuda, 'cuDNN', torch.backends.cudnn.version())"
cand=/tmp/k-comment-$$
rm -rf "$cand" && cp -r kernels "$cand" && echo "// a comment-only change" >> "$cand/attention.cu"

gate() {  # gate NAME: the PR config's A/B with peers; prints rc and wall, leaves $out/NAME.*
  local t0=$EPOCHREALTIME
  timeout 110 "$bin" local --config configs/pr.yaml --base-kernels kernels --kernels "$cand" \
    --no-profile --wide --out "$out/$1.json" > "$out/$1.txt" 2> "$out/$1.err"
  local rc=$?
  wall=$(python3 -c "print(round($EPOCHREALTIME - $t0, 1))")
  echo "rc=$rc wall=$wall s"
  grep -E "PASS|FAIL|error" "$out/$1.txt" | cut -c1-200 | head -5
  grep -vE "^\s*$" "$out/$1.err" | cut -c1-200 | tail -5
}

echo "== 1. the PR gate, peers on, cold compile cache"
export CI_GATE_CACHE_DIR=/tmp/ci-gate-cache-cold-$$
gate R
cold_wall=$wall

echo "== 2. the independent harness"
timed timeout 90 python3 bench/sdpa_bench.py configs/pr.yaml --backends flash,cudnn \
  --replay-ms 2 --samples 40 --duty 0.25 --out "$out/H.json" > "$out/H.txt" 2>&1
cat "$out/H.txt"

echo "== 3. the worker's variants, alone on the GPU"
timed timeout 200 python3 bench/peers_variants.py configs/pr.yaml --out "$out/V.json" ${VARIANTS_EXTRA:-}

echo "== 4. gate against harness, and the variants"
python3 bench/peers_compare.py "$out/R.json" "$out/H.json" "$out/V.json" \
  --wall "$cold_wall" --label "PR gate, cold compile cache" | tee "$out/compare.txt"

echo "== 5. the PR gate again, warm compile cache"
gate R2
python3 bench/peers_compare.py "$out/R2.json" "$out/H.json" --wall "$wall" \
  --label "PR gate, warm compile cache" | tee "$out/compare-warm.txt"
echo "compute processes after: $(nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv,noheader | tr '\n' ';')"
