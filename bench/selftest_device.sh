#!/usr/bin/env bash
# Issue 19 on a lent GPU. `probe`: the PR gate on the shipped kernels against a comment-only
# change (no peers), with the results' timing breakdown, and one selftest trial;
# `selftest`: `ci-gate selftest` (SELFTEST_TRIALS, default 10) with its report;
# `change`: the d64 kernel with its softmax/PV overlap off, both ways round.
set -uo pipefail
. "$(dirname "$0")/device_env.sh"
rm -rf /tmp/k-comment && cp -r kernels /tmp/k-comment && echo "// a comment" >> /tmp/k-comment/attention.cu
for mode in "$@"; do case $mode in
probe)
  timed "$bin" local --base-kernels kernels --kernels /tmp/k-comment --no-peers --no-profile --out "$out/probe.json" > "$out/probe.txt" 2>&1
  tail -3 "$out/probe.txt"
  python3 -c "
import json; r=json.load(open('$out/probe.json')); t=r['timing']
print({k: round(v,2) for k,v in t.items()})
print('pairs', sum(s['measurement']['rounds'] for s in r['shapes']), 'remeasured', sum(len(s.get('remeasured',[])) for s in r['shapes']))
print('clock events per side', [ (sum(s['clock_events'][0]), sum(s['clock_events'][1])) for s in r['shapes'] if s.get('clock_events')])
print([s['verdict'] for s in r['shapes']])"
  timed "$bin" selftest --trials 1 --out "$out/selftest1.json" > "$out/selftest1.txt" 2>&1
  tail -4 "$out/selftest1.txt" ;;
selftest)
  timed "$bin" selftest --trials "${SELFTEST_TRIALS:-10}" --wide --out "$out/selftest.json" > "$out/selftest.txt" 2>&1
  cat "$out/selftest.txt" ;;
change)
  rm -rf /tmp/k-nooverlap && cp -r kernels /tmp/k-nooverlap
  sed -i -E 's/^(CG_ATTN_WG_KERNEL\(attention_fwd_(f16|bf16)_d64, 64, 128, 1, (false|true), 3, )true\)/\1false)/' /tmp/k-nooverlap/attention.cu
  timed "$bin" local --base-kernels kernels --kernels /tmp/k-nooverlap --no-peers --no-profile --wide --out "$out/slower.json" > "$out/slower.txt" 2>&1
  grep -E "│ b|PASS|FAIL" "$out/slower.txt" | cut -c1-220
  timed "$bin" local --base-kernels /tmp/k-nooverlap --kernels kernels --no-peers --no-profile --wide --out "$out/faster.json" > "$out/faster.txt" 2>&1
  grep -E "│ b|PASS|FAIL" "$out/faster.txt" | cut -c1-220 ;;
esac; done
