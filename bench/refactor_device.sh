#!/usr/bin/env bash
# Issue 20 on a lent GPU, in one call: the one integration-test binary's GPU tests and attacks
# (bench/adversarial_device.sh tests attacks), the kernels with the shared attention helpers
# (issue 20, item 7) against the kernels before them (.carry/kernels-prerefactor, made here with
# `mkdir -p .carry/kernels-prerefactor && git archive 1ebfa78:kernels | tar -x -C .carry/kernels-prerefactor`) in A/A over
# the PR config with the peers, from a cold compile cache (also the PR gate's wall time on
# this GPU, issue 21 item 3), and compute-sanitizer's four tools over configs/sanitize.yaml.
# Carried: .carry/ci-gate, .carry/it-tests, .carry/golden, .carry/kernels-prerefactor.
set -uo pipefail
. "$(dirname "$0")/device_env.sh"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu,power.draw --format=csv,noheader
bash "$(dirname "$0")/adversarial_device.sh" tests attacks 2>&1 | tail -25
echo "== A/A: shared helpers (kernels) against .carry/kernels-prerefactor, PR config, peers on, cold cache"
export CI_GATE_CACHE_DIR=/tmp/ci-gate-cache-cold-$$
timed "$bin" local --base-kernels .carry/kernels-prerefactor --kernels kernels --no-profile --wide --out "$out/refactor-aa.json" > "$out/refactor-aa.txt" 2>&1
cut -c1-230 "$out/refactor-aa.txt" | grep -vE "^\s*$" | tail -30
python3 -c "import json; r=json.load(open('$out/refactor-aa.json')); print({k: round(v,1) for k,v in r['timing'].items()})"
export CI_GATE_CACHE_DIR=/tmp/ci-gate-cache
echo "== sanitize (configs/sanitize.yaml, all four tools)"
timed "$bin" sanitize --logs "$out/logs-sanitize" --out "$out/sanitize.json" --timeout-s 240 > "$out/sanitize.txt" 2>&1
tail -6 "$out/sanitize.txt"
(cd "$out" && tar czf logs-sanitize.tgz logs-sanitize && rm -rf logs-sanitize)
