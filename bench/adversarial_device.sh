#!/usr/bin/env bash
# Issue 18 on a lent GPU: the GPU tests (tests/it/gpu.rs), every attack of tests/adversarial/
# through `ci-gate local` (tests/it/adversarial_gpu.rs), and the PR gate on the shipped kernels
# against a comment-only change of them (timed from a cold compile cache, peers on).
# Modes: tests, attacks, aa, change (the d64 kernel with its softmax/PV overlap off, both
# ways round), record (baseline update of the PR config into $OUT/baselines).
# Carried: .carry/ci-gate, .carry/it-tests (see bench/device_env.sh), .carry/golden.
set -uo pipefail
. "$(dirname "$0")/device_env.sh"
"$bin" env 2>&1 | head -12
"$bin" compile 2>&1 | tail -4
for mode in "$@"; do case $mode in
tests)
  echo "== GPU tests"
  CI_GATE_GOLDEN_DIR=$PWD/.carry/golden CI_GATE_BIN=$bin timed "$it_tests" --ignored --test-threads=1 gpu:: --skip adversarial_gpu:: > "$out/gpu-tests.log" 2>&1
  grep -hE "^test |test result|panicked|assert" "$out/gpu-tests.log" | head -30 ;;
attacks)
  echo "== attacks"
  CI_GATE_BIN=$bin timed "$it_tests" --ignored --nocapture --test-threads=1 adversarial_gpu:: > "$out/attacks.log" 2>&1
  grep -vE "^\s*$" "$out/attacks.log" | cut -c1-420 | tail -40 ;;
aa)
  echo "== PR gate: shipped kernels against a comment-only change (cold compile cache, peers on)"
  rm -rf /tmp/k-comment && cp -r kernels /tmp/k-comment && echo "// a comment" >> /tmp/k-comment/attention.cu
  export CI_GATE_CACHE_DIR=/tmp/ci-gate-cache-cold-$$
  timed "$bin" local --base-kernels kernels --kernels /tmp/k-comment --no-profile --wide --out "$out/aa.json" > "$out/aa.txt" 2>&1
  cat "$out/aa.txt" | cut -c1-200 | tail -40
  export CI_GATE_CACHE_DIR=/tmp/ci-gate-cache ;;
change)
  echo "== a real change: d64 softmax/PV overlap off, both ways round"
  rm -rf /tmp/k-nooverlap && cp -r kernels /tmp/k-nooverlap
  # (since 2026-11-26 the d64 kernel is the warp-specialised one: its INTRA option)
  sed -i -E 's/^(CG_ATTN_WS_KERNEL_DYN\(attention_fwd_(f16|bf16)_d64, 64, 128, 2, 1, (false|true), )true,/\1false,/' /tmp/k-nooverlap/attention.cu
  grep -c "^CG_ATTN_WS_KERNEL_DYN(attention_fwd_b\?f16_d64, 64, 128, 2, 1, [a-z]*, false," /tmp/k-nooverlap/attention.cu
  timed "$bin" local --base-kernels kernels --kernels /tmp/k-nooverlap --no-peers --no-profile --wide --out "$out/slower.json" > "$out/slower.txt" 2>&1
  grep -E "│ b|PASS|FAIL" "$out/slower.txt" | cut -c1-200
  timed "$bin" local --base-kernels /tmp/k-nooverlap --kernels kernels --no-peers --no-profile --wide --out "$out/faster.json" > "$out/faster.txt" 2>&1
  grep -E "│ b|PASS|FAIL" "$out/faster.txt" | cut -c1-200 ;;
record)
  echo "== baseline update (3 processes) of the PR config"
  rm -rf "$out/baselines" && cp -r baselines "$out/baselines"
  timed "$bin" baseline update --baselines "$out/baselines" --reason "${REASON:-re-recorded}" --force > "$out/record.txt" 2>&1
  tail -5 "$out/record.txt"
  (cd "$out" && tar czf baselines.tgz baselines && rm -rf baselines) ;;
esac; done
