#!/usr/bin/env bash
# Issue 23 on a lent GPU (docs/PERF.md, 2026-11-26 evening). Modes, in order given:
#   tests      the GPU tests (golden, random shapes) with energy windows in the pipeline
#   energy     the PR config measured by 3 fresh processes (`local`, no peers; the kernels
#              are byte-identical to the base, so the candidate alone), then the 3 results
#              recorded as a baseline in a scratch store (`baseline update --from`)
#   resources  `local --base-kernels <variant>` for the ST-3-ring and no-overlap d128
#              variants (.carry/variants/) against the shipped kernels, d128 shapes
#   bisect     `ci-gate bisect good bad` in .carry/bisect-repo (bench/make_bisect_repo.sh)
# Everything lands in $OUT/i23-results.tgz. Carried: .carry/ci-gate, .carry/it-tests,
# .carry/golden, .carry/variants, .carry/bisect-repo.
set -uo pipefail
. "$(dirname "$0")/device_env.sh"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu,power.draw,power.limit --format=csv,noheader
d128=(--shape b2h16s4096d128_f16 --shape b2h16s4096d128_causal_f16 --shape b2h16s2048d128_causal_bf16)
for arg in "$@"; do case $arg in
tests)
  echo "== GPU tests on kernels/"
  CI_GATE_GOLDEN_DIR=$PWD/.carry/golden CI_GATE_BIN=$bin timed timeout 240 "$it_tests" --ignored --test-threads=1 gpu:: --skip adversarial_gpu:: > "$out/gpu-tests.log" 2>&1
  grep -ahE "^test |test result|panicked" "$out/gpu-tests.log" | cut -c1-200 | head -20 ;;
energy)
  for i in 1 2 3; do
    echo "== energy, process $i (PR config, no peers)"
    timed timeout 150 "$bin" local --base-kernels kernels --kernels kernels --no-peers --no-profile --wide --out "$out/energy-$i.json" > "$out/energy-$i.txt" 2>&1
    sed -n '/^Energy per call/,/^ci-gate:/p' "$out/energy-$i.txt" | cut -c1-160
  done
  rm -rf "$out/baselines" && cp -r baselines "$out/baselines"
  echo "== the three recorded as a baseline (scratch store)"
  timed timeout 60 "$bin" baseline update --baselines "$out/baselines" --from "$out/energy-1.json" --from "$out/energy-2.json" --from "$out/energy-3.json" --reason "issue 23: energy per call" --force > "$out/record.txt" 2>&1
  tail -3 "$out/record.txt" ;;
resources)
  for v in st3 nooverlap; do
    echo "== resources: shipped kernels against the $v variant (d128 shapes, no peers)"
    timed timeout 200 "$bin" local --base-kernels .carry/variants/$v --kernels kernels "${d128[@]}" --no-peers --no-profile --wide --out "$out/res-$v.json" > "$out/res-$v.txt" 2>&1
    grep -avE "^\s*$" "$out/res-$v.txt" | cut -c1-180 | tail -40
  done ;;
bisect)
  echo "== bisect good bad (first parent, 10 commits) on the d128 shapes"
  (cd .carry/bisect-repo && timed timeout 560 "$bin" bisect good bad --shape b2h16s4096d128_f16 --shape b2h16s2048d128_causal_bf16 --out "$out/bisect.json" > "$out/bisect.txt" 2>&1)
  cut -c1-200 "$out/bisect.txt" | tail -60 ;;
esac; done
tar czf /tmp/i23-results.tgz -C "$out" . && find "$out" -mindepth 1 -delete && mv /tmp/i23-results.tgz "$out/"
