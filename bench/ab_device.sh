#!/usr/bin/env bash
# ci-gate's A/B checks on a lent GPU (commands and results are in docs/PERF.md).
#
#   bench/ab_device.sh smoke      env, GPU tests, the PR gate in A/B mode (A/A, wall time),
#                                 the 3-stage-ring kernel as candidate and as base, the stored
#                                 baseline alone, and --base REF read with git
#   bench/ab_device.sh selftest N selftest over the PR config, N trials (A/B conditions)
#                                 plus 3 fresh processes against a stored baseline
#   bench/ab_device.sh selftest-bg N   the same in the background (setsid), then
#   bench/ab_device.sh collect         wait for it (up to $WAIT_S s) and fetch its report
#   bench/ab_device.sh record     baseline update from 3 processes into $OUT/baselines
#   bench/ab_device.sh first      a first run on a GPU with no stored baseline, then record one
#   bench/ab_device.sh creep      a drift traced to code that crept on the default branch
#   bench/ab_device.sh final      the PR gate's wall time from a cold compile cache, --base REF
#                                 with git, and a drift traced to the runner (as `drift`)
#
# Binaries are built elsewhere and carried in .carry: ci-gate (cargo build --release) and
# it-tests (the integration tests, cargo test --release --test it --no-run; the GPU tests
# of tests/it/gpu.rs run from it), stripped; .carry/golden is
# tests/golden; .carry/repo.bundle is `git bundle create .carry/repo.bundle main`.
set -uo pipefail
phase=${1:?usage: bench/ab_device.sh smoke|selftest N|record|first}
out=${OUT:-/tmp/ci-gate-out}
mkdir -p "$out"
bin=$PWD/.carry/ci-gate
export NO_COLOR=1 CI_GATE_GOLDEN_DIR=$PWD/.carry/golden CI_GATE_CACHE_DIR=/tmp/ci-gate-cache
nvrtc=$(ls /usr/local/cuda/lib64/libnvrtc.so.1* 2>/dev/null | head -1)
[ -n "$nvrtc" ] || nvrtc=$(find / -xdev -name 'libnvrtc.so.1*' 2>/dev/null | grep -v builtins | head -1)
export LD_LIBRARY_PATH="$(dirname "$nvrtc")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

# The shipped kernel with the 3-stage K/V ring (ST = 3) in the four shipped configurations:
# a real code change, measured in docs/KERNEL_NOTES.md as 1-7% apart depending on the shape.
st3=/tmp/kernels-st3
mkdir -p $st3 && cp kernels/*.cu $st3/
sed -i -E 's/^(CG_ATTN_KERNEL\(attention_fwd_b?f16_d64, 64, 128, 64, 4, 2, true, )2,/\13,/; s/^(CG_ATTN_KERNEL\(attention_fwd_b?f16_d128, 128, 128, 32, 4, 2, false, )2,/\13,/' $st3/attention.cu
timed() { local t0=$EPOCHREALTIME; "$@"; local rc=$?; echo "rc=$rc wall=$(python3 -c "print(round($EPOCHREALTIME - $t0, 1))") s"; }

case "$phase" in
smoke)
  "$bin" env | tee "$out/env.txt"
  echo "== GPU tests"
  .carry/it-tests --ignored --test-threads=1 gpu:: --skip adversarial_gpu:: 2>&1 | grep -E "^test |test result|panicked" | tee "$out/gpu-tests.log"
  echo "== A/A in A/B mode, PR config (cold compile cache, then warm)"
  rm -rf $CI_GATE_CACHE_DIR
  timed "$bin" local --base-kernels kernels --ab-always --out "$out/aa1.json"
  timed "$bin" local --base-kernels kernels --ab-always --out "$out/aa2.json" >/dev/null
  echo "== candidate ST=3 against the shipped kernel"
  timed "$bin" local --base-kernels kernels --kernels $st3 --out "$out/st3-cand.json"
  echo "== swapped: shipped kernel against ST=3 as base"
  timed "$bin" local --base-kernels $st3 --kernels kernels --out "$out/st3-base.json"
  echo "== identical kernels: no A/B, the stored H200 baseline (schema 1) decides"
  timed "$bin" local --base-kernels kernels --out "$out/stored-only.json"
  echo "== --base REF with git: a commit that changes the kernel to ST=3"
  rm -rf /tmp/repo && git clone -q -b main .carry/repo.bundle /tmp/repo && cp $st3/attention.cu /tmp/repo/kernels/ \
    && git -C /tmp/repo -c user.name=t -c user.email=t@t commit -qam "ST=3" \
    && (cd /tmp/repo && timed "$bin" local --base HEAD~1 --shape b2h8s512d64_f16 --shape b2h16s4096d128_f16 --out "$out/git-base.json")
  ;;
selftest)
  "$bin" selftest --trials "${2:-5}" --out "$out/selftest.json" 2>&1 | tee "$out/selftest.txt"
  ;;
selftest-bg)
  # Started in its own session so it outlives this command, from a copy of what it needs
  # (each call re-sends the working tree); `collect` waits for it and fetches its report.
  rm -rf /tmp/st && mkdir -p /tmp/st/repo && cp -r kernels configs "$bin" /tmp/st/repo/
  (cd /tmp/st/repo && setsid nohup bash -c "./ci-gate selftest --trials '${2:-5}' --out /tmp/st/selftest.json > /tmp/st/selftest.txt 2>&1; touch /tmp/st/done" </dev/null >/dev/null 2>&1 &)
  sleep 20; cat /tmp/st/selftest.txt
  ;;
collect)
  end=$((SECONDS + ${WAIT_S:-540}))
  while [ ! -f /tmp/st/done ] && [ $SECONDS -lt $end ]; do sleep 10; done
  cp /tmp/st/selftest.* "$out/" 2>/dev/null; cat /tmp/st/selftest.txt
  ;;
record)
  mkdir -p "$out/baselines" && cp -r baselines/* "$out/baselines/"
  timed "$bin" baseline update --baselines "$out/baselines" --reason "${REASON:-A/B landing: spread from 3 processes}" --force
  "$bin" baseline show --baselines "$out/baselines"
  ;;
final)
  # The PR gate as CI runs it, cold compile cache: the 3-stage-ring kernel as candidate.
  rm -rf $CI_GATE_CACHE_DIR
  timed "$bin" local --base-kernels kernels --kernels $st3 --out "$out/pr-gate-cold.json" | tail -3
  echo "== --base REF with git: a commit that changes the kernel to ST=3"
  rm -rf /tmp/repo && git clone -q -b main .carry/repo.bundle /tmp/repo && cp $st3/attention.cu /tmp/repo/kernels/ \
    && git -C /tmp/repo -c user.name=t -c user.email=t@t commit -qam "ST=3" \
    && (cd /tmp/repo && timed "$bin" local --base HEAD~1 --shape b2h8s512d64_causal_f16 --shape b2h16s4096d128_f16 --out "$out/git-base.json")
  ;;&
final|drift)
  # A runner that got 5% slower since its baseline was recorded: the stored numbers scaled
  # by 0.95, the baseline's commit set to a commit of this clone (so its kernels can be
  # measured as a third side); the candidate is the shipped kernel plus one comment line
  # (byte-different, so A/B runs, and shows no change).
  rm -rf /tmp/repo && git clone -q -b main .carry/repo.bundle /tmp/repo
  head=$(git -C /tmp/repo rev-parse HEAD)
  mkdir -p /tmp/kc && cp kernels/*.cu /tmp/kc/ && echo "// one more line" >> /tmp/kc/attention.cu
  python3 - "${BASELINES:-baselines}" /tmp/drift-baselines "$head" <<'PY'
import json, pathlib, sys
src, dst, head = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2]), sys.argv[3]
for f in src.glob("*/pr.json"):
    b = json.loads(f.read_text())
    b["provenance"]["commit"] = head
    for s in b["shapes"]:
        s["samples_us"] = [[x * 0.95 for x in r] for r in s["samples_us"]]
        for k in ("p50", "p90", "mean", "min", "max", "stdev"):
            s["summary"][k] *= 0.95
        if s.get("tflops"):
            s["tflops"] /= 0.95
    out = dst / f.parent.name / "pr.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(b))
PY
  (cd /tmp/repo && timed "$bin" local --base-kernels kernels --kernels /tmp/kc --baselines /tmp/drift-baselines \
     --shape b2h8s512d64_f16 --shape b4h16s2048d64_causal_f16 --out "$out/drift.json")
  ;;
creep)
  # Code that crept on the default branch: a baseline recorded (3 processes) at a commit whose
  # kernels have the faster 3-stage ring, then a commit that goes back to the 2-stage kernels.
  # A pull request on top changes nothing (one comment line): A/B shows no change, the stored
  # baseline says slower, and the baseline commit's kernels measured alongside say the code.
  rm -rf /tmp/repo /tmp/creep-baselines /tmp/kc2 && git clone -q -b main .carry/repo.bundle /tmp/repo
  cd /tmp/repo && cp $st3/attention.cu kernels/ && git -c user.name=t -c user.email=t@t commit -qam "ST=3: the baseline's code"
  timed "$bin" baseline update --baselines /tmp/creep-baselines --reason "baseline of the ST=3 commit" | tail -2
  git checkout -q HEAD~1 -- kernels/attention.cu && git -c user.name=t -c user.email=t@t commit -qam "ST=2 again: the creep"
  mkdir -p /tmp/kc2 && cp kernels/*.cu /tmp/kc2/ && echo "// one more line" >> /tmp/kc2/attention.cu
  timed "$bin" local --base-kernels kernels --kernels /tmp/kc2 --baselines /tmp/creep-baselines \
    --shape b1h8s512d64_causal_f16 --shape b2h8s512d64_causal_f16 --shape b4h16s512d64_f16 --out "$out/creep.json"
  ;;
first)
  "$bin" env | tee "$out/env.txt"
  echo "== first run on this GPU model: no stored baseline, A/B decides"
  timed "$bin" local --base-kernels $st3 --out "$out/first-run.json"
  echo "== record its first baseline (3 processes)"
  mkdir -p "$out/baselines"
  timed "$bin" baseline update --baselines "$out/baselines" --reason "first baseline of this GPU model"
  "$bin" baseline show --baselines "$out/baselines"
  echo "== and the next run compares with it"
  timed "$bin" local --base-kernels kernels --kernels $st3 --baselines "$out/baselines" --out "$out/second-run.json"
  ;;
esac
