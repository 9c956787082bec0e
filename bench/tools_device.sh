#!/usr/bin/env bash
# compute-sanitizer and Nsight Compute on a lent GPU (results in docs/PERF.md).
#
#   bench/tools_device.sh plants    the planted-bug kernels, each under its tool (logs kept)
#   bench/tools_device.sh profile   --profile and a real regression profiled, raw CSV kept
#   bench/tools_device.sh shipped   ci-gate sanitize over configs/sanitize.yaml (all tools)
#   bench/tools_device.sh tests     tests/it/gpu_tools.rs (planted bugs and --profile)
#
# Binaries are built elsewhere and carried in .carry: ci-gate (cargo build --release) and
# it-tests (the integration tests, cargo test --release --test it --no-run), stripped.
set -uo pipefail
. "$(dirname "$0")/device_env.sh"
export CI_GATE_BIN=$bin
st3=/tmp/kernels-st3
mkdir -p $st3 && cp kernels/*.cu $st3/
sed -i -E 's/^(CG_ATTN_KERNEL\(attention_fwd_b?f16_d64, 64, 128, 64, 4, 2, true, )2,/\13,/; s/^(CG_ATTN_KERNEL\(attention_fwd_b?f16_d128, 128, 128, 32, 4, 2, false, )2,/\13,/' $st3/attention.cu

for phase in "$@"; do
case "$phase" in
plants)
  which compute-sanitizer ncu; compute-sanitizer --version | tail -1; ncu --version | tail -1
  for c in "oob memcheck b1h2s77d64_causal_f16" "race racecheck b1h2s300d64_causal_bf16" "misaligned memcheck b1h1s129d128_causal_f16"; do
    set -- $c
    echo "== planted $1 under $2 on $3"
    mkdir -p "$out/logs-$1"
    timed "$bin" sanitize --kernels tests/sanitize/$1 --harness kernels --tool $2 --shape $3 --logs "$out/logs-$1" --out "$out/plant-$1.json"
  done
  echo "== planted bugs, all tools, all shapes (counts only)"
  for p in oob race misaligned; do
    timed "$bin" sanitize --kernels tests/sanitize/$p --harness kernels --out "$out/plant-$p-all.json" | head -1
  done
  ;;
profile)
  echo "== --profile on an A/A run"
  timed "$bin" local --base-kernels kernels --ab-always --no-compare --rounds 3 --shape b2h8s512d64_f16 --profile b2h8s512d64_f16 --profile-dir "$out/prof-aa" --out "$out/prof-aa.json"
  ncu --import "$out/prof-aa/b2h8s512d64_f16-candidate.ncu-rep" --csv --page raw --print-units base > "$out/raw-page.csv"
  echo "== a real regression: shipped kernel as candidate, ST=3 as base (profiled by itself)"
  timed "$bin" local --base-kernels $st3 --kernels kernels --no-compare --shape b1h8s512d64_causal_f16 --shape b8h16s512d64_causal_f16 --shape b2h16s4096d128_causal_f16 --profile-dir "$out/prof-reg" --out "$out/prof-reg.json"
  "$bin" local --base-kernels $st3 --kernels kernels --no-compare --shape b1h8s512d64_causal_f16 --profile-dir "$out/prof-md" --format markdown > "$out/prof-reg-comment.md" 2>/dev/null
  echo "== the other way round"
  timed "$bin" local --base-kernels kernels --kernels $st3 --no-compare --shape b1h8s512d64_causal_f16 --shape b8h16s512d64_causal_f16 --shape b2h16s4096d128_causal_f16 --profile-dir "$out/prof-reg2" --out "$out/prof-reg2.json"
  ;;
shipped)
  echo "== sanitize, shipped kernels, configs/sanitize.yaml"
  mkdir -p "$out/logs-shipped"
  timed "$bin" sanitize --logs "$out/logs-shipped" --out "$out/sanitize-shipped.json" --timeout-s 300
  ;;
tests)
  timed "$it_tests" --ignored --test-threads=1 gpu_tools:: 2>&1 | grep -E "^test |test result|panicked|assert" | tee "$out/gpu-tools.log"
  ;;
esac
done
