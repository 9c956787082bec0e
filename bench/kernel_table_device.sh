#!/usr/bin/env bash
# Issue 40's table on a lent GPU, in one call (~1.5 minutes): the shipped kernel's p50 per PR
# shape from the gate's own A/A (`ci-gate local`, the shipped kernel against a comment-only
# copy, no peers), then cuDNN and FlashAttention-2 through PyTorch's SDPA timed by the
# independent harness (bench/sdpa_bench.py: CUDA graphs of ~2 ms, 25% duty) on the same
# shapes, right after; prints one table (ours µs, TFLOP/s, / cuDNN, / FA2).
#   bash bench/kernel_table_device.sh [configs/pr.yaml]
# Carried: .carry/ci-gate. Needs python3 with torch and yaml. Results in $OUT.
set -uo pipefail
. "$(dirname "$0")/device_env.sh"
cfg=${1:-configs/pr.yaml}
name=$(basename "$cfg" .yaml)
cand=/tmp/kt-cand && rm -rf $cand && mkdir -p $cand && cp kernels/attention.cu $cand/ && echo "// a comment-only change" >> $cand/attention.cu
timed timeout 150 "$bin" local --config "$cfg" --base-kernels kernels --kernels $cand --no-peers --no-profile \
  --out "$out/ours-$name.json" > "$out/ours-$name.txt" 2>&1
grep -E "PASS|FAIL" "$out/ours-$name.txt" | tail -1
timed timeout 150 python3 bench/sdpa_bench.py "$cfg" --backends flash,cudnn --replay-ms 2 --samples 40 --duty 0.25 \
  --out "$out/sdpa-$name.json" > "$out/sdpa-$name.txt" 2>&1
python3 - "$out/ours-$name.json" "$out/sdpa-$name.json" <<'PY'
import json, sys
ours = json.load(open(sys.argv[1]))
peers = {s["name"]: s for s in json.load(open(sys.argv[2]))["shapes"]}
print("| shape | ours µs | TF/s | / cuDNN | / FA2 |")
print("| --- | --- | --- | --- | --- |")
for s in ours["shapes"]:
    p50 = (s.get("summary") or {}).get("p50")
    p = peers.get(s["name"], {})
    c, f = p.get("cudnn_us"), p.get("flash_us")
    r = lambda x: f"{p50 / x:.2f}" if p50 and x else "—"
    tf = s.get("tflops")
    print(f"| {s['name']} | {p50:.2f} | {tf:.0f} | {r(c)} | {r(f)} |" if p50 else f"| {s['name']} | — | | | |")
PY
