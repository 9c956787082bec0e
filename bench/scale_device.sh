#!/usr/bin/env bash
# Several GPUs of one host (results in docs/PERF.md).
#
#   bench/scale_device.sh nightly N    the nightly config, no A/B, no stored baseline: on
#                                      GPU 0 alone, then on N GPUs at once (--devices)
#   bench/scale_device.sh neighbours   A/A on the PR config on GPU 0, twice alone and twice
#                                      while the other GPUs run the nightly config
#
# The binary is built elsewhere and carried in .carry/ci-gate (cargo build --release).
set -uo pipefail
. "$(dirname "$0")/device_env.sh"
ngpu=$(nvidia-smi -L | wc -l)
nvidia-smi -L
case "$1" in
nightly)
  n=${2:-$ngpu}
  devs=$(seq -s, 0 $((n - 1)))
  # Compile once so that neither timing includes NVRTC.
  CUDA_VISIBLE_DEVICES=0 "$bin" local --config configs/nightly.yaml --no-base --no-compare --shape b1h8s128d64_f16 --format json > /dev/null
  echo "== nightly config on $n GPUs at once (--devices $devs)"
  timed "$bin" local --config configs/nightly.yaml --no-base --no-compare --devices "$devs" --out "$out/nightly-x$n.json" | tail -3
  if [ "${3:-}" != skip1 ]; then
    echo "== nightly config on GPU 0 alone"
    CUDA_VISIBLE_DEVICES=0 timed "$bin" local --config configs/nightly.yaml --no-base --no-compare --out "$out/nightly-x1.json" | tail -3
  fi
  ;;
neighbours)
  others=$(seq -s, 1 $((ngpu - 1)))
  for i in 1 2; do
    echo "== A/A on GPU 0, alone ($i)"
    CUDA_VISIBLE_DEVICES=0 timed "$bin" local --base-kernels kernels --ab-always --no-compare --format json --out "$out/aa-alone-$i.json" > /dev/null
  done
  for i in 1 2; do
    echo "== A/A on GPU 0, GPUs $others busy with the nightly config ($i)"
    for d in $(seq 1 $((ngpu - 1))); do
      CUDA_VISIBLE_DEVICES=$d "$bin" local --config configs/nightly.yaml --no-base --no-compare --format json > /dev/null 2>&1 &
    done
    sleep 3
    CUDA_VISIBLE_DEVICES=0 timed "$bin" local --base-kernels kernels --ab-always --no-compare --format json --out "$out/aa-busy-$i.json" > /dev/null
    kill $(jobs -p) 2>/dev/null; wait 2>/dev/null
  done
  python3 - "$out" <<'PY'
import json, sys, glob, os
out = sys.argv[1]
for f in sorted(glob.glob(os.path.join(out, "aa-*.json"))):
    r = json.load(open(f))
    d = [s["ab"]["ratio"] - 1 for s in r["shapes"] if s.get("ab")]
    hw = [(s["ab"]["ci_high"] - s["ab"]["ci_low"]) / 2 for s in r["shapes"] if s.get("ab")]
    v = [s["verdict"] for s in r["shapes"]]
    print(f"{os.path.basename(f)}: max |Δ| {max(abs(x) for x in d)*100:.2f}%, mean CI half-width {sum(hw)/len(hw)*100:.2f}%, verdicts {sorted(set(v))}, regressions {v.count('regression')}")
PY
  ;;
esac
