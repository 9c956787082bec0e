#!/usr/bin/env bash
# The L4's d128 tiles (CG_ADA_TILES) on a lent GPU through configs/pr-ada.yaml: parity and
# timing next to the sm_90 tiles, compute-sanitizer over configs/sanitize.yaml with the same
# define, and (with `record`) a baseline from 3 processes into $OUT/baselines.
set -uo pipefail
out=${OUT:-/tmp/ci-gate-out}
mkdir -p "$out"
bin=$PWD/.carry/ci-gate
export NO_COLOR=1 CI_GATE_CACHE_DIR=/tmp/ci-gate-cache PATH="$PATH:/usr/local/cuda/bin"
nvrtc=$(ls /usr/local/cuda/lib64/libnvrtc.so.1* 2>/dev/null | head -1)
export LD_LIBRARY_PATH="$(dirname "$nvrtc")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
timed() { local t0=$EPOCHREALTIME; "$@"; local rc=$?; echo "rc=$rc wall=$(python3 -c "print(round($EPOCHREALTIME - $t0, 1))") s"; }
echo "== configs/pr-ada.yaml (Ada tiles)"
timed "$bin" local --config configs/pr-ada.yaml --no-base --no-compare --out "$out/ada.json" --wide | grep -v "^note"
echo "== the same shapes with the sm_90 tiles"
timed "$bin" local --no-base --no-compare --out "$out/hopper.json" --shape b2h16s4096d128_f16 \
  --shape b2h16s4096d128_causal_f16 --shape b2h16s2048d128_causal_bf16 | tail -8
echo "== compute-sanitizer with CG_ADA_TILES"
{ cat configs/sanitize.yaml; printf 'compile:\n  defines: [CG_ADA_TILES]\n'; } > /tmp/sanitize-ada.yaml
timed "$bin" sanitize --config /tmp/sanitize-ada.yaml --out "$out/sanitize-ada.json" | head -2
if [ "${1:-}" = record ]; then
  mkdir -p "$out/baselines" && cp -r baselines/. "$out/baselines/"
  timed "$bin" baseline update --config configs/pr-ada.yaml --baselines "$out/baselines" \
    --reason "first baseline of the Ada (L4) d128 tiles on this GPU (configs/pr-ada.yaml)" | tail -2
fi
