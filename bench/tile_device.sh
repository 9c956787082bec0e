#!/usr/bin/env bash
# A kernel change on a lent GPU, measured by the gate (used for the d64 small-grid tile and
# the shared-memory epilogue): GPU tests (golden and random shapes), compute-sanitizer over
# configs/sanitize.yaml, A/B of the PR config against the previous kernels
# (.carry/base-kernels), the peers on the S=512 shapes, then with `record REASON`
# `baseline update` from 3 processes into $OUT/baselines (as after an approved win).
set -uo pipefail
. "$(dirname "$0")/device_env.sh"
export CI_GATE_GOLDEN_DIR=$PWD/.carry/golden
echo "== GPU tests"
"$it_tests" --ignored --test-threads=1 gpu:: --skip adversarial_gpu:: 2>&1 | grep -E "^test |test result|panicked"
echo "== compute-sanitizer"
PATH="$PATH:/usr/local/cuda/bin" "$bin" sanitize --out "$out/sanitize.json" | head -2
echo "== A/B against the previous kernels, PR config"
timed "$bin" local --base-kernels .carry/base-kernels --out "$out/ab.json"
echo "== peers on the S=512 shapes"
cfg=/tmp/pr-peers.yaml
{ grep -v '^name:' configs/pr.yaml; echo "peers: [torch-sdpa, torch-sdpa-flash]"; } | sed '1i name: pr' > $cfg
timed "$bin" local --config $cfg --no-base --no-compare --out "$out/peers.json" \
  --shape b1h8s512d64_f16 --shape b1h8s512d64_causal_f16 --shape b2h8s512d64_f16 --shape b2h8s512d64_causal_f16 \
  --shape b4h16s512d64_f16 --shape b8h16s512d64_f16 | sed -n '/Against PyTorch/,$p'
if [ "${1:-}" = record ]; then
  echo "== baseline update, 3 processes"
  mkdir -p "$out/baselines" && cp -r baselines/. "$out/baselines/"
  timed "$bin" baseline update --baselines "$out/baselines" --reason "${2:?record REASON}" | tail -5
fi
