#!/usr/bin/env bash
# The Hopper wgmma kernels on a lent H100/H200: bench/kernel_check.py (golden, random shapes
# with poisoned outputs and guard zones, tile variants, timing next to torch SDPA); Nsight
# Compute's pipe utilisation of the shipped kernels on two shapes (`ncu`); `tests`: the GPU
# tests (golden and random shapes through the gate, the planted sanitizer bugs, --profile) and
# `ci-gate sanitize` on the shipped kernels; `oob`: the planted out-of-bounds write under
# memcheck, logs kept; `selftest`: `ci-gate selftest` (SELFTEST_TRIALS trials, default 2,
# stopped after SELFTEST_LIMIT_S seconds, default 400); `inject`: one selftest-style run per
# injected slowdown (none, +3%, +2.5%) with the per-shape table; `power`: the two long shapes that
# hit the power cap, +3% injected, at other duty cycles and sample lengths;
# `l4`: the mma.sync tile variants (the L4's candidates) timed at the
# CTAs per SM the L4 would run them at; `ada`: configs/pr-ada.yaml against its stored baseline; `record`:
# `baseline update` of the PR config from 3 processes into $OUT/baselines; `ab`: the gate's
# A/B of the PR config (peers included) against the previous kernels (.carry/base-kernels).
set -uo pipefail
. "$(dirname "$0")/device_env.sh"
[ "${1:-}" = nokc ] && shift || { echo "== kernel_check (sm_90a)"
timed python3 bench/kernel_check.py --variants --golden .carry/golden --out "$out/kc.json" > "$out/kc.log" 2>&1
grep -E "^FAIL|^\[|TF/s|variants|attnv_.*(us|n=)|attnv_[a-z0-9_]+ +b" "$out/kc.log" | head -150; }
for mode in "$@"; do case $mode in
ncu)
  echo "== ncu"
  for shape in b8h16s512d64_f16 b2h16s4096d128_f16; do
    ncu --clock-control none -k regex:attention_fwd --launch-count 1 \
      --section SpeedOfLight --section ComputeWorkloadAnalysis --section WarpStateStats \
      --section Occupancy --section InstructionStats --metrics \
      sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active,sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active,sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active,sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_active \
      "$bin" kernel-run --config configs/pr.yaml --kernels kernels --harness kernels \
      --shape $shape --no-reference > "$out/ncu-$shape.txt" 2>&1
    grep -E "Duration|Throughput|Pipe|pipe|Issue|Stall|Occupancy|Registers|Warp Cycles|Eligible|xu|gmma|fma|alu" "$out/ncu-$shape.txt" | head -60
  done ;;
tests)
  export CI_GATE_GOLDEN_DIR=$PWD/.carry/golden CI_GATE_BIN=$bin
  echo "== GPU tests"
  "$it_tests" --ignored --test-threads=1 gpu:: --skip adversarial_gpu:: > "$out/gpu-tests.log" 2>&1
  "$it_tests" --ignored --test-threads=1 gpu_tools:: > "$out/gpu-tools.log" 2>&1
  grep -hE "^test |test result|panicked|assert" "$out"/gpu-tests.log "$out"/gpu-tools.log
  echo "== compute-sanitizer, shipped kernels"
  timed "$bin" sanitize --out "$out/sanitize.json" 2>&1 | head -3 ;;
selftest)
  echo "== selftest of the gate on the new kernels (A/A, +2.0%, +2.5%, +3.0%)"
  timeout "${SELFTEST_LIMIT_S:-400}" "$bin" selftest --trials "${SELFTEST_TRIALS:-2}" \
    --inject 0.02 --inject 0.025 --inject 0.03 --out "$out/selftest.json" > "$out/selftest.log" 2>&1
  echo "rc=$?"; tail -40 "$out/selftest.log" ;;
inject)
  echo "== one A/A-with-injection run per slowdown, per-shape table (what selftest counts)"
  for f in 0 0.03 0.025; do
    inj=(); [ "$f" = 0 ] || inj=(--inject "$f")
    timed "$bin" local --base-kernels kernels --ab-always --no-compare --no-parity --no-peers \
      --no-profile "${inj[@]}" --wide --out "$out/inject-$f.json" > "$out/inject-$f.txt" 2>&1
    grep -E "│ b|rc=|FAIL|PASS" "$out/inject-$f.txt" | cut -c1-40,60-200
  done ;;
power)
  echo "== the two power-capped long shapes at +3%: duty cycle and sample length"
  for v in "0.25 2.0" "0.15 2.0" "0.25 1.0" "0.10 1.0"; do
    set -- $v
    sed -e "s/^  duty_cycle: .*/  duty_cycle: $1/" -e "s/^  sample_ms: .*/  sample_ms: $2/" configs/pr.yaml > /tmp/power.yaml
    echo "-- duty_cycle $1, sample_ms $2"
    "$bin" local --config /tmp/power.yaml --base-kernels kernels --ab-always --no-compare --no-parity \
      --no-peers --no-profile --inject 0.03 --wide --shape b4h16s2048d64_f16 --shape b2h16s4096d128_f16 \
      --out "$out/power-$1-$2.json" 2>&1 | grep -E "b4h16|b2h16|clock|wall"
  done ;;
oob)
  echo "== the planted out-of-bounds write under memcheck"
  "$bin" sanitize --kernels tests/sanitize/oob --harness kernels --tool memcheck \
    --shape b1h2s77d64_causal_f16 --logs "$out/logs-oob"; echo "rc=$?"
  for f in "$out"/logs-oob/*; do echo "-- $f"; head -40 "$f"; done ;;
l4)
  echo "== L4 candidate tiles (mma.sync) at the L4's CTAs per SM"
  timed python3 bench/kernel_check.py --variants --l4-occupancy --golden .carry/golden \
    --out "$out/kc-l4.json" > "$out/kc-l4.log" 2>&1
  grep -E "^FAIL|CTAs/SM|attnv_[a-z0-9_]+ +b" "$out/kc-l4.log" | grep -v "_wg" ;;
ada)
  echo "== the L4's tiles against their stored H200 baseline"
  timed "$bin" local --config configs/pr-ada.yaml --no-base 2>&1 | tail -25 ;;
record)
  echo "== baseline update, 3 processes (PR config, with peers)"
  mkdir -p "$out/baselines" && cp -r baselines/. "$out/baselines/"
  timed "$bin" baseline update --baselines "$out/baselines" \
    --reason "wgmma kernels on sm_90a (Hopper), issue 10" 2>&1 | tail -30 ;;
ab)
  echo "== A/B against the previous kernels, PR config"
  timed "$bin" local --base-kernels .carry/base-kernels --out "$out/ab.json" 2>&1 | tail -45 ;;
esac; done
