#!/usr/bin/env bash
# Issues 36 and 37 on a lent GPU, in as few calls as the device allows (written 2026-12-01
# when no device was lent; nothing here has run yet: docs/PERF.md says so).
#   bash bench/issue36_device.sh tests        GPU tests: the mixture on the device, the shipped
#                                             kernel's error on every input class, every
#                                             launch's own reference (tests/it/gpu.rs)
#   bash bench/issue36_device.sh attacks      the attack suite with this binary (new) ...
#   bash bench/issue36_device.sh attacks-old  ... and with the binary before issue 36 (old),
#                                             on the same attack files
#   bash bench/issue36_device.sh aa           the PR config: shipped kernels against a
#                                             comment-only change, old binary then new, in one
#                                             call (A/A verdicts and the honest p50s)
#   bash bench/issue36_device.sh stored       (STORED_CONFIGS="pr pr-ada") issue 37: a stored-only A/A (`local --no-base
#                                             --no-peers`) against baselines/, before and after
#                                             re-recording pr and pr-ada with this binary
# Carried: .carry/ci-gate (cargo build --release), .carry/ci-gate-old (the same at c09918f),
# .carry/it-tests (cargo test --release --test it --no-run). Each binary carries its own
# harness kernels (built in), so the old one needs no kernels of its own.
# CI_GATE_ATTACKS=a,b (attacks) and OLD_ATTACKS=a,b (attacks-old) run those attacks only.
set -uo pipefail
here=$(dirname "$0")
. "$here/device_env.sh"
old=$PWD/.carry/ci-gate-old
nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu,power.draw --format=csv,noheader
for mode in "$@"; do case $mode in
tests)
  echo "== GPU tests"
  CI_GATE_GOLDEN_DIR=$PWD/tests/golden CI_GATE_BIN=$bin timed timeout 400 "$it_tests" --ignored --nocapture --test-threads=1 gpu:: --skip adversarial_gpu:: --skip gpu_tools:: > "$out/gpu-tests.log" 2>&1
  grep -hE "^test |test result|panicked|class|/|off by" "$out/gpu-tests.log" | head -80 ;;
attacks|attacks-old)
  b=$bin; only=${CI_GATE_ATTACKS:-}
  [ $mode = attacks-old ] && { b=$old; only=${OLD_ATTACKS:-}; }
  echo "== attacks ($mode${only:+: $only})"
  CI_GATE_ATTACKS=$only CI_GATE_BIN=$b timed timeout 580 "$it_tests" --ignored --nocapture --test-threads=1 adversarial_gpu:: > "$out/$mode.log" 2>&1
  grep -vE "^\s*$" "$out/$mode.log" | cut -c1-300 | tail -60 ;;
aa)
  for who in old new; do
    b=$bin; [ $who = old ] && b=$old
    rm -rf /tmp/k-comment && cp -r kernels /tmp/k-comment && echo "// a comment" >> /tmp/k-comment/attention.cu
    echo "== PR config, shipped kernels vs a comment-only change, $who binary (no peers)"
    export CI_GATE_CACHE_DIR=/tmp/ci-gate-cache-$who-$$
    timed timeout 200 "$b" local --base-kernels kernels --kernels /tmp/k-comment --no-peers --no-profile --wide --out "$out/aa-$who.json" > "$out/aa-$who.txt" 2>&1
    tail -3 "$out/aa-$who.txt" | cut -c1-200
    python3 - "$out/aa-$who.json" <<'PY'
import json,sys
r=json.load(open(sys.argv[1]))
t=r.get("timing") or {}
print("timing:", {k: round(v,1) for k,v in t.items() if isinstance(v,(int,float))})
for s in r.get("shapes",[]):
    su=s.get("summary") or {}; bs=s.get("base_summary") or {}
    print(f'{s["name"]:32} {s.get("verdict"):14} base p50 {bs.get("p50")} cand p50 {su.get("p50")}')
PY
  done
  export CI_GATE_CACHE_DIR=/tmp/ci-gate-cache ;;
stored)
  for cfg in ${STORED_CONFIGS:-pr pr-ada}; do
    echo "== stored-only A/A before re-recording, $cfg"
    timed timeout 150 "$bin" local --no-base --no-peers --no-profile --config configs/$cfg.yaml --out "$out/stored-before-$cfg.json" > "$out/stored-before-$cfg.txt" 2>&1
    tail -2 "$out/stored-before-$cfg.txt" | cut -c1-200
    echo "== re-record $cfg (${PROCESSES:-5} processes)"
    timed timeout 400 "$bin" baseline update --processes "${PROCESSES:-5}" --config configs/$cfg.yaml --reason "the method of issue 36 (m3): re-recorded" > "$out/record-$cfg.txt" 2>&1
    tail -4 "$out/record-$cfg.txt" | cut -c1-200
    echo "== stored-only A/A after, $cfg"
    timed timeout 150 "$bin" local --no-base --no-peers --no-profile --config configs/$cfg.yaml --out "$out/stored-after-$cfg.json" > "$out/stored-after-$cfg.txt" 2>&1
    tail -2 "$out/stored-after-$cfg.txt" | cut -c1-200
  done
  cp -r baselines "$out/baselines" ;;
esac; done
tag=$(echo "$*" | tr ' ' '-')
(cd "$out" && tar czf "/tmp/i36-$tag.tgz" --exclude='*.tgz' . && find . -mindepth 1 -delete && mv "/tmp/i36-$tag.tgz" .) || true
ls -la "$out"
