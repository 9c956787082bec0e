#!/usr/bin/env bash
# The last two device calls of 2026-11-27 (issues 29 and 30), back to back on one machine:
#   call 1: bash bench/final_device.sh tests attacks
#   call 2: bash bench/final_device.sh aa change peers selftest
# tests, attacks, aa, change: bench/issue29_device.sh; peers: bench/peers_agreement_device.sh
# (the PR gate cold and warm with peers, the independent harness, the worker's variants);
# selftest: `ci-gate selftest --trials ${SELFTEST_TRIALS:-2}` of the PR config.
# Carried: .carry/ci-gate, .carry/ci-gate-old, .carry/it-tests, .carry/golden,
# .carry/kernels-old.
set -uo pipefail
here=$(dirname "$0")
. "$here/device_env.sh"
for mode in "$@"; do case $mode in
tests|attacks|aa|change) bash "$here/issue29_device.sh" "$mode" ;;
peers) timeout 280 bash "$here/peers_agreement_device.sh" ;;
recheck)
  echo "== attacks re-run after a fix: $ATTACKS"
  CI_GATE_ATTACKS="$ATTACKS" CI_GATE_BIN=$bin timed timeout 200 "$it_tests" --ignored --nocapture --test-threads=1 adversarial_gpu:: > "$out/recheck.log" 2>&1
  grep -E "^[a-z_ -]+: exit|attacks not stopped|test result" "$out/recheck.log" | cut -c1-300 ;;
wall)
  rm -rf /tmp/k-wall && cp -r kernels /tmp/k-wall && echo "// a comment" >> /tmp/k-wall/attention.cu
  export CI_GATE_CACHE_DIR=/tmp/ci-gate-cache-wall-$$
  for run in cold warm; do
    echo "== the PR gate with peers, $run compile cache"
    timed timeout 110 "$bin" local --base-kernels kernels --kernels /tmp/k-wall --no-profile --out "$out/wall-$run.json" > "$out/wall-$run.txt" 2>&1
    tail -2 "$out/wall-$run.txt" | cut -c1-200
    python3 -c "import json; t=json.load(open('$out/wall-$run.json'))['timing']; print({k: round(v,1) for k,v in t.items() if isinstance(v,(int,float))})"
  done ;;
selftest)
  echo "== selftest"
  timed timeout 240 "$bin" selftest --trials "${SELFTEST_TRIALS:-2}" --wide --out "$out/selftest.json" > "$out/selftest.txt" 2>&1
  tail -40 "$out/selftest.txt" ;;
esac; done
# At most 8 files come back from $OUT: everything in one archive.
tag=$(echo "$*" | tr ' ' '-')
(cd "$out" && tar czf "/tmp/final-$tag.tgz" --exclude='*.tgz' . && find . -mindepth 1 -delete && mv "/tmp/final-$tag.tgz" .) || true
ls -la "$out" 
