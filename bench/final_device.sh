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
selftest)
  echo "== selftest"
  timed timeout 240 "$bin" selftest --trials "${SELFTEST_TRIALS:-2}" --wide --out "$out/selftest.json" > "$out/selftest.txt" 2>&1
  tail -40 "$out/selftest.txt" ;;
esac; done
# At most 8 files come back from $OUT: everything in one archive.
tag=$(echo "$*" | tr ' ' '-')
(cd "$out" && tar czf "/tmp/final-$tag.tgz" --exclude='*.tgz' . && find . -mindepth 1 -delete && mv "/tmp/final-$tag.tgz" .) || true
ls -la "$out" 
