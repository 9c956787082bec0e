#!/usr/bin/env bash
# Issue 38 on a lent GPU (H200): `ci-gate eval`, in one call (about 8 minutes; each mode
# alone is shorter):
#
#   bench/eval_device.sh [throughput4] [throughput1] [prdesign] [attacks] [evolve] [diag]
#
#   throughput4  configs/eval.yaml (4 shapes): 40 candidates, each a source the evaluator has
#                not compiled before (the shipped kernel plus a line of its own), from a cold
#                compile cache: candidates a minute, the time breakdown, and the verdicts (all
#                must be `same`: an A/A of the design on the device);
#   throughput1  the same with one shape (--shape b4h16s2048d64_f16), 40 candidates;
#   prdesign     the same 4 shapes with the PR config's measuring design (8 -> 28 pairs of
#                10 x 2 ms at duty 0.25), 10 candidates: what the eval design saves;
#   attacks      one stream: each GPU-side attack of tests/adversarial/gpu followed by an
#                honest candidate (the shipped kernel with a comment), then the honest
#                controls; every attack must end `error`/`parity-fail`, every honest one after
#                it must be measured as if the attack never ran (`same`);
#   evolve       examples/evolve for 3 minutes against the shipped kernel, with a leaderboard;
#   diag         one measuring run of configs/eval.yaml (`ci-gate local`, the shipped kernel
#                against a comment-only copy) with CI_GATE_SYNC_SPANS=1: the GPU time of each
#                step of a sample's preparation and checks (timing.detail_s; its timings mean
#                nothing, the waits slow every sample).
#
# EVAL_TIMEOUT (s, 400) bounds each eval run, EVOLVE_MINUTES (3) the evolve loop.
# Carried: .carry/ci-gate (cargo build --release). Results go to $OUT: each mode's JSON lines,
# stderr and summary (bench/eval_summary.py), for docs/PERF.md.
set -uo pipefail
. "$(dirname "$0")/device_env.sh"
modes=("$@")
[ ${#modes[@]} -eq 0 ] && modes=(throughput4 throughput1 prdesign attacks evolve)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu,power.draw --format=csv,noheader
nproc
work=/tmp/ci-gate-eval-bench
rm -rf "$work" && mkdir -p "$work"

# N candidates: the shipped kernel with a comment line of its own each (a new source, so a
# new compile), as JSON lines.
fresh() {
  python3 - "$1" "$2" <<'PY'
import json, sys
n, tag = int(sys.argv[1]), sys.argv[2]
src = open("kernels/attention.cu").read()
for i in range(n):
    print(json.dumps({"id": f"{tag}-{i}", "source": f"{src}\n// candidate {tag} {i}\n"}))
PY
}

# Runs `ci-gate eval ARGS` on stdin $1, output and summary under $out/$2.
run_eval() {
  local input=$1 name=$2; shift 2
  export CI_GATE_CACHE_DIR=$work/cache-$name
  local t0=$EPOCHREALTIME
  timeout "${EVAL_TIMEOUT:-400}" "$bin" eval "$@" < "$input" > "$out/$name.jsonl" 2> "$out/$name.stderr"
  local rc=$?
  local wall
  wall=$(python3 -c "print(round($EPOCHREALTIME - $t0, 2))")
  echo "== $name: exit $rc, wall $wall s"
  tail -2 "$out/$name.stderr"
  python3 bench/eval_summary.py "$out/$name.jsonl" "$wall" --title "$name" | tee "$out/$name.summary.md" | head -40
}

for mode in "${modes[@]}"; do case $mode in
throughput4)
  fresh 40 t4 > "$work/t4.jsonl"
  run_eval "$work/t4.jsonl" throughput4 --config configs/eval.yaml --base-kernels kernels ;;
throughput1)
  fresh 40 t1 > "$work/t1.jsonl"
  run_eval "$work/t1.jsonl" throughput1 --config configs/eval.yaml --base-kernels kernels --shape b4h16s2048d64_f16 ;;
prdesign)
  sed -E -e 's/^  warmup_ms: .*/  warmup_ms: 25/' -e 's/^  sample_ms: .*/  sample_ms: 2.0/' \
    -e 's/^  samples_per_round: .*/  samples_per_round: 10/' -e 's/^  min_rounds: .*/  min_rounds: 8/' \
    -e 's/^  max_rounds: .*/  max_rounds: 28/' -e 's/^  duty_cycle: .*/  duty_cycle: 0.25/' \
    -e 's/^name: eval/name: eval-prdesign/' configs/eval.yaml > "$work/prdesign.yaml"
  grep -E "^  (warmup_ms|sample_ms|samples_per_round|min_rounds|max_rounds|duty_cycle):" "$work/prdesign.yaml"
  fresh 10 pr > "$work/pr.jsonl"
  run_eval "$work/pr.jsonl" prdesign --config "$work/prdesign.yaml" --base-kernels kernels ;;
attacks)
  python3 - "$work/attacks.jsonl" <<'PY'
import json, sys
adv = "tests/adversarial/gpu"
template = open(f"{adv}/template.cu").read()
shipped = open("kernels/attention.cu").read()
attacks = ["hang", "write_outside", "smem_stash", "const_bank_stash", "skip_after_poison",
           "memo_every_launch", "zero_inputs", "one_in_ten", "copy_ahead", "special_case_shapes"]
with open(sys.argv[1], "w") as f:
    for i, a in enumerate(attacks):
        attack = open(f"{adv}/attacks/{a}.cu").read()
        f.write(json.dumps({"id": f"attack-{a}", "source": f"{attack}\n{template}"}) + "\n")
        f.write(json.dumps({"id": f"honest-after-{a}", "source": f"{shipped}\n// honest {i}\n"}) + "\n")
    f.write(json.dumps({"id": "control-plain-template", "source": template}) + "\n")
    f.write(json.dumps({"id": "control-tiled-smem", "source": open(f"{adv}/honest/tiled_smem.cu").read()}) + "\n")
PY
  run_eval "$work/attacks.jsonl" attacks --config tests/adversarial/gpu/config.yaml --base-kernels kernels
  python3 - "$out/attacks.jsonl" <<'PY'
import json, sys
bad = []
for l in map(json.loads, open(sys.argv[1])):
    if l["id"].startswith("attack-") and l["verdict"] in ("faster", "same", "slower"):
        bad.append(f"{l['id']}: {l['verdict']} (its timings were believed)")
    if l["id"].startswith("honest-after-") and l["verdict"] != "same":
        bad.append(f"{l['id']}: {l['verdict']}: {l['reason'][:200]}")
print("attack stream:", "OK" if not bad else "WRONG: " + "; ".join(bad))
PY
  ;;
evolve)
  export CI_GATE_CACHE_DIR=$work/cache-evolve
  timed timeout 300 python3 examples/evolve/evolve.py --ci-gate "$bin" --config configs/eval.yaml \
    --kernels kernels --minutes "${EVOLVE_MINUTES:-3}" --population 6 --leaderboard "$out/evolve-board.json" \
    --work "$work/evolve" > "$out/evolve.txt" 2>&1
  tail -40 "$out/evolve.txt" ;;
diag)
  cand=$work/diag-kernels && mkdir -p "$cand" && cp kernels/attention.cu "$cand/" && echo "// diag" >> "$cand/attention.cu"
  CI_GATE_SYNC_SPANS=1 timed timeout 120 "$bin" local --config configs/eval.yaml --base-kernels kernels \
    --kernels "$cand" --no-peers --no-profile --out "$out/diag.json" > "$out/diag.txt" 2>&1
  tail -3 "$out/diag.txt"
  python3 - "$out/diag.json" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))["timing"]
print({k: round(v, 3) for k, v in t.items() if isinstance(v, float)})
for k, v in sorted(t.get("detail_s", {}).items(), key=lambda kv: -kv[1]):
    print(f"  {k:<24} {v:8.3f} s")
PY
  ;;
*) echo "unknown mode $mode" ;;
esac; done
