#!/usr/bin/env bash
# Issue 22 on a lent GPU: the warp-specialised Hopper kernel, one step at a time, each step
# judged by the gate against the step before it (`ci-gate local --base-kernels PREV`, PR
# config, peers on), plus the GPU tests (golden and random shapes) on the working tree's
# kernels. Steps are kernel directories carried in .carry/steps/<name> (s0 = the kernels
# before issue 22, `git archive <commit>:kernels`); pairs are given as PREV:CUR arguments.
#   bench/ws_device.sh tests s0:s1:np s1:s2 ...   (:np = without the peers)
# Carried: .carry/ci-gate, .carry/it-tests, .carry/golden, .carry/steps.
set -uo pipefail
. "$(dirname "$0")/device_env.sh"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu,power.draw --format=csv,noheader
for arg in "$@"; do case $arg in
tests)
  echo "== GPU tests on kernels/"
  CI_GATE_GOLDEN_DIR=$PWD/.carry/golden CI_GATE_BIN=$bin timed timeout 200 "$it_tests" --ignored --test-threads=1 gpu:: --skip adversarial_gpu:: > "$out/gpu-tests.log" 2>&1
  grep -ahE "^test |test result|panicked|assert|left|right" "$out/gpu-tests.log" | cut -c1-300 | head -30 ;;
sanitize)
  echo "== sanitize (configs/sanitize.yaml, all four tools)"
  timed timeout 280 "$bin" sanitize --logs "$out/logs-sanitize" --out "$out/sanitize.json" --timeout-s 240 > "$out/sanitize.txt" 2>&1
  tail -8 "$out/sanitize.txt"
  (cd "$out" && tar czf logs-sanitize.tgz logs-sanitize && rm -rf logs-sanitize) ;;
*:*)
  # PREV:CUR, PREV:CUR:np for a run without the peers (PyTorch), PREV:CUR:np:CONFIG (a
  # config file in .carry/steps) for other shapes
  IFS=: read -r prev cur np cfg <<< "$arg"
  peers=(); [ "$np" = np ] && peers=(--no-peers)
  [ -n "$cfg" ] && peers+=(--config ".carry/steps/$cfg")
  echo "== $cur against $prev (${cfg:-PR config}${np:+, no peers})"
  timed timeout ${AB_TIMEOUT:-200} "$bin" local --base-kernels .carry/steps/$prev --kernels .carry/steps/$cur "${peers[@]}" --no-profile --wide --out "$out/ab-$cur-vs-$prev.json" > "$out/ab-$cur-vs-$prev.txt" 2>&1
  grep -aE "│ b|PASS|FAIL|rror|ci-gate:" "$out/ab-$cur-vs-$prev.txt" | cut -c1-130,190-290 | tail -34 ;;
esac; done
