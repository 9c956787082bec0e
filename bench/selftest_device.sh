#!/usr/bin/env bash
# Issue 19 on a lent GPU. `probe`: the PR gate on the shipped kernels against a comment-only
# change (no peers), with the results' timing breakdown, and one selftest trial;
# `selftest`: `ci-gate selftest` (SELFTEST_TRIALS, default 10) with its report, in one call (556 s on
# an H100 on 2026-11-26; `selftest-bg` and `collect` spread it over two calls where it would not fit);
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
selftest-bg)
  # In its own session, so that it outlives this call (the device tool keeps the machine
  # for the next call); `collect` waits for it and copies its files.
  # A copy of the binary: the next call sends the working tree again, replacing .carry/.
  rm -rf /tmp/st && mkdir -p /tmp/st && cp "$bin" /tmp/st/ci-gate && cp -r kernels configs baselines /tmp/st/
  setsid bash -c "cd /tmp/st && ./ci-gate selftest --config configs/pr.yaml --kernels kernels --baselines baselines --trials ${SELFTEST_TRIALS:-10} --wide --out /tmp/st/selftest.json > /tmp/st/selftest.txt 2>&1; echo \$? > /tmp/st/rc" < /dev/null > /dev/null 2>&1 &
  sleep "${WAIT_S:-560}"; tail -3 /tmp/st/selftest.txt ;;
collect)
  for _ in $(seq 1 "${WAIT_S:-300}"); do [ -f /tmp/st/rc ] && break; sleep 1; done
  cp /tmp/st/selftest.json /tmp/st/selftest.txt "$out/" 2>/dev/null; echo "rc=$(cat /tmp/st/rc 2>/dev/null)"
  cat /tmp/st/selftest.txt ;;
record)
  echo "== baseline update (5 processes) of the PR config"
  rm -rf "$out/baselines" && cp -r baselines "$out/baselines"
  timed "$bin" baseline update --baselines "$out/baselines" --reason "${REASON:-re-recorded}" --force > "$out/record.txt" 2>&1
  tail -5 "$out/record.txt"
  (cd "$out" && tar czf baselines.tgz baselines && rm -rf baselines) ;;
change)
  rm -rf /tmp/k-nooverlap && cp -r kernels /tmp/k-nooverlap
  # (since 2026-11-26 the d64 kernel is the warp-specialised one: its INTRA option)
  sed -i -E 's/^(CG_ATTN_WS_KERNEL_DYN\(attention_fwd_(f16|bf16)_d64, 64, 128, 2, 1, (false|true), )true,/\1false,/' /tmp/k-nooverlap/attention.cu
  timed "$bin" local --base-kernels kernels --kernels /tmp/k-nooverlap --no-peers --no-profile --wide --out "$out/slower.json" > "$out/slower.txt" 2>&1
  grep -E "│ b|PASS|FAIL" "$out/slower.txt" | cut -c1-220
  timed "$bin" local --base-kernels /tmp/k-nooverlap --kernels kernels --no-peers --no-profile --wide --out "$out/faster.json" > "$out/faster.txt" 2>&1
  grep -E "│ b|PASS|FAIL" "$out/faster.txt" | cut -c1-220 ;;
esac; done
