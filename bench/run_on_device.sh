#!/usr/bin/env bash
# ci-gate's GPU checks, as run on a lent H200 (commands and results are in docs/PERF.md).
#
#   bench/run_on_device.sh main      GPU tests, env, 5 x `ci-gate local`, PyTorch SDPA timings,
#                                    and the first baseline of the PR config
#   bench/run_on_device.sh stability 5 x `ci-gate local` and the baseline only
#   bench/run_on_device.sh selftest  `ci-gate selftest` over the PR config
#   bench/run_on_device.sh selftest-bg   the same, started in its own session (setsid) so it
#                                        outlives this command; then:
#   bench/run_on_device.sh collect       wait for it (up to $WAIT_S s) and copy its results
#
# Binaries are built elsewhere and carried in .carry/bin: ci-gate (cargo build --release) and
# it-tests (the integration tests, cargo test --release --test it --no-run; the GPU tests of
# tests/it/gpu.rs run from it).
# Results go to $OUT (default /tmp/ci-gate-out).
set -uo pipefail
phase=${1:?usage: bench/run_on_device.sh main|selftest}
out=${OUT:-/tmp/ci-gate-out}
mkdir -p "$out"
bin=$PWD/.carry/bin
export NO_COLOR=1 PYTHONUNBUFFERED=1

# The machine's own NVRTC (the CUDA toolkit's, else the one in Python's site-packages).
nvrtc=$(ls /usr/local/cuda/lib64/libnvrtc.so.1* 2>/dev/null | head -1)
[ -n "$nvrtc" ] || nvrtc=$(find / -xdev -name 'libnvrtc.so.1*' 2>/dev/null | grep -v builtins | head -1)
export LD_LIBRARY_PATH="$(dirname "$nvrtc")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export CI_GATE_GOLDEN_DIR=$PWD/.carry/golden
echo "NVRTC: $nvrtc"

case "$phase" in
main)
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw,clocks_throttle_reasons.active --format=csv
  "$bin/ci-gate" env
  echo "== GPU tests"
  "$bin/it-tests" --ignored --test-threads=1 --nocapture gpu:: --skip adversarial_gpu:: 2>&1 | tee "$out/gpu-tests.log" | grep -E "^test |test result|max_abs|panicked"
  ;;&
main|stability)
  echo "== ci-gate local x5 (the first with an empty compile cache)"
  export CI_GATE_CACHE_DIR=/tmp/ci-gate-cache-$$
  for i in 1 2 3 4 5; do
    t0=$(date +%s.%N)
    "$bin/ci-gate" local --config configs/pr.yaml --baselines /tmp/no-baselines --out "/tmp/local$i.json" > "/tmp/local$i.txt"
    rc=$?
    t1=$(date +%s.%N)
    echo "local run $i: exit $rc, wall $(awk "BEGIN{print $t1 - $t0}") s"
  done
  cat /tmp/local1.txt
  ;;&
main)
  echo "== PyTorch SDPA on the same shapes"
  python3 bench/sdpa_bench.py configs/pr.yaml --out "$out/sdpa.json"
  ;;&
main|stability)
  echo "== first baseline"
  "$bin/ci-gate" baseline update --config configs/pr.yaml --reason "first H200 baseline of the PR config" \
    && cp baselines/nvidia-h200/pr.json "$out/baseline-pr.json"
  "$bin/ci-gate" baseline show
  tar czf "$out/local-runs.tgz" -C /tmp local1.json local2.json local3.json local4.json local5.json local1.txt
  ;;
selftest)
  "$bin/ci-gate" selftest --config configs/pr.yaml --trials "${TRIALS:-10}" --inject 0.05 --inject 0.03 --out "$out/selftest.json"
  ;;
selftest-bg)
  rm -f /tmp/selftest.done
  setsid nohup bash -c "'$bin/ci-gate' selftest --config configs/pr.yaml --trials '${TRIALS:-10}' --inject 0.05 --inject 0.03 --out /tmp/selftest.json > /tmp/selftest.txt 2> /tmp/selftest.log; echo \$? > /tmp/selftest.done" > /dev/null 2>&1 < /dev/null &
  sleep "${WAIT_S:-0}"
  cat /tmp/selftest.log
  ;;
collect)
  for _ in $(seq "${WAIT_S:-570}"); do [ -f /tmp/selftest.done ] && break; sleep 1; done
  cat /tmp/selftest.log
  if [ -f /tmp/selftest.done ]; then
    echo "selftest exit $(cat /tmp/selftest.done)"
    cat /tmp/selftest.txt
    cp /tmp/selftest.json /tmp/selftest.txt /tmp/selftest.log "$out/"
  else
    echo "selftest still running"
  fi
  ;;
*)
  echo "unknown phase $phase" >&2
  exit 2
  ;;
esac
