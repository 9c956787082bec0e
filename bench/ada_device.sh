#!/usr/bin/env bash
# The L4's d128 tiles (CG_ADA_TILES) on a lent GPU through configs/pr-ada.yaml: parity and
# timing next to the sm_90 tiles, compute-sanitizer over configs/sanitize.yaml with the same
# define, and (with `record`) a baseline from 3 processes into $OUT/baselines.
set -uo pipefail
. "$(dirname "$0")/device_env.sh"
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
