#!/usr/bin/env bash
# Issue 29 on a lent GPU: the GPU tests (every launch's own q, scale and reference among
# them), the attack suite, and the PR config before/after (the binary at 720f20f against
# this one, the shipped kernels against a comment-only change of them, in one call).
# Modes: tests, attacks, aa (before and after), change (a real change both ways).
# Carried: .carry/ci-gate, .carry/ci-gate-old, .carry/it-tests, .carry/golden.
set -uo pipefail
. "$(dirname "$0")/device_env.sh"
old=$PWD/.carry/ci-gate-old
nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu,power.draw --format=csv,noheader
for mode in "$@"; do case $mode in
tests)
  echo "== GPU tests"
  CI_GATE_GOLDEN_DIR=$PWD/.carry/golden CI_GATE_BIN=$bin timed timeout 180 "$it_tests" --ignored --test-threads=1 gpu:: --skip adversarial_gpu:: --skip gpu_tools:: > "$out/gpu-tests.log" 2>&1
  grep -hE "^test |test result|panicked|assert|off by" "$out/gpu-tests.log" | head -40 ;;
attacks)
  echo "== attacks"
  CI_GATE_BIN=$bin timed timeout 560 "$it_tests" --ignored --nocapture --test-threads=1 adversarial_gpu:: > "$out/attacks.log" 2>&1
  grep -vE "^\s*$" "$out/attacks.log" | cut -c1-300 | tail -45 ;;
aa)
  # The binary at 720f20f reads its harness from the kernel directories: it gets its own
  # (.carry/kernels-old, git archive 720f20f kernels; attention.cu is the same file).
  for who in old new; do
    b=$bin; k=kernels; [ $who = old ] && b=$old && k=.carry/kernels-old
    rm -rf /tmp/k-comment-$who && cp -r $k /tmp/k-comment-$who && echo "// a comment" >> /tmp/k-comment-$who/attention.cu
    echo "== PR config, shipped kernels vs a comment-only change, $who binary (cold compile cache, peers on)"
    export CI_GATE_CACHE_DIR=/tmp/ci-gate-cache-$who-$$
    timed timeout 200 "$b" local --base-kernels $k --kernels /tmp/k-comment-$who --no-profile --wide --out "$out/aa-$who.json" > "$out/aa-$who.txt" 2>&1
    grep -E "│ b|PASS|FAIL|error" "$out/aa-$who.txt" | cut -c1-180 | head -20
    python3 - "$out/aa-$who.json" <<'PY'
import json,sys
r=json.load(open(sys.argv[1]))
t=r.get("timing") or {}
print("timing:", {k: round(v,1) for k,v in t.items() if isinstance(v,(int,float))})
for s in r.get("shapes",[]):
    su=s.get("summary") or {}; bs=s.get("base_summary") or {}
    peers={p.get("peer"): p.get("p50_us") for p in s.get("peers",[])}
    print(f'{s["name"]:32} {s.get("verdict"):12} base {bs.get("p50")} cand {su.get("p50")} peers {peers}')
PY
  done
  export CI_GATE_CACHE_DIR=/tmp/ci-gate-cache ;;
change)
  echo "== a real change: the d64 kernel's softmax/PV overlap off, both ways round (no peers)"
  rm -rf /tmp/k-nooverlap && cp -r kernels /tmp/k-nooverlap
  sed -i -E 's/^(CG_ATTN_WS_KERNEL_DYN\(attention_fwd_(f16|bf16)_d64, 64, 128, 2, 1, (false|true), )true,/\1false,/' /tmp/k-nooverlap/attention.cu
  grep -c "^CG_ATTN_WS_KERNEL_DYN(attention_fwd_b\?f16_d64, 64, 128, 2, 1, [a-z]*, false," /tmp/k-nooverlap/attention.cu
  timed timeout 150 "$bin" local --base-kernels kernels --kernels /tmp/k-nooverlap --no-peers --no-profile --wide --out "$out/slower.json" > "$out/slower.txt" 2>&1
  grep -E "│ b|PASS|FAIL|error" "$out/slower.txt" | cut -c1-150
  timed timeout 150 "$bin" local --base-kernels /tmp/k-nooverlap --kernels kernels --no-peers --no-profile --wide --out "$out/faster.json" > "$out/faster.txt" 2>&1
  grep -E "│ b|PASS|FAIL|error" "$out/faster.txt" | cut -c1-150 ;;
esac; done
