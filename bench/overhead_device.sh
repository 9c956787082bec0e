#!/usr/bin/env bash
# The PR gate's wall time before and after issue 18's checks, on one GPU in one call: the
# shipped gate of 935c327 (.carry/ci-gate-old) and this one (.carry/ci-gate), each on the
# shipped kernels against a comment-only change of them, peers on, from a cold compile cache;
# alternated, so that drift of the machine hits both alike. Also the cold
# compile of the four sources alone.
set -uo pipefail
. "$(dirname "$0")/device_env.sh"
rm -rf /tmp/k-comment && cp -r kernels /tmp/k-comment && echo "// a comment" >> /tmp/k-comment/attention.cu
run() { # NAME BIN CACHE
  local t0=$EPOCHREALTIME
  CI_GATE_CACHE_DIR=$3 "$2" local --base-kernels kernels --kernels /tmp/k-comment --no-profile --out "$out/$1.json" > "$out/$1.txt" 2>&1
  local rc=$?
  grep TIMING "$out/$1.txt"
  echo "$1 rc=$rc wall=$(python3 -c "print(round($EPOCHREALTIME - $t0, 1))") s $(grep -oE 'PASS[^(]*|FAIL[^(]*' "$out/$1.txt" | head -1)"
}
run old-cold-1 .carry/ci-gate-old /tmp/cache-old-1
run new-cold-1 .carry/ci-gate /tmp/cache-new-1
run new-cold-2 .carry/ci-gate /tmp/cache-new-2
run old-cold-2 .carry/ci-gate-old /tmp/cache-old-2
t0=$EPOCHREALTIME; CI_GATE_CACHE_DIR=/tmp/cache-compile .carry/ci-gate compile --arch sm_90a > "$out/compile.txt" 2>&1
echo "compile (cold, sm_90a, 3 files) rc=$? wall=$(python3 -c "print(round($EPOCHREALTIME - $t0, 1))") s"; head -3 "$out/compile.txt"
python3 - "$out" <<'PY'
import json, sys, glob, os
for f in sorted(glob.glob(os.path.join(sys.argv[1], "*-[12].json"))):
    r = json.load(open(f))
    w = sum(s["measurement"]["wall_s"] for s in r["shapes"] if s.get("measurement"))
    t = r.get("timing") or {}
    print(os.path.basename(f), "shapes", round(w, 1), "s;", "probes", len(r.get("probes", [])), ";", [s["verdict"] for s in r["shapes"]].count("pass"), "pass;", {k: round(v, 1) for k, v in t.items()})
PY
cd "$out" && tar czf runs.tgz *.json *.txt && rm -f *.json *-[12].txt
