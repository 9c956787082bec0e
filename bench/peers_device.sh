#!/usr/bin/env bash
# The PyTorch peer columns on a lent GPU (results in docs/PERF.md).
#
#   bench/peers_device.sh    the PR config with peers [torch-sdpa, torch-sdpa-flash]: A/B
#                            (A/A) with and without peers (wall time), and the old
#                            bench/sdpa_bench.py harness on the same shapes as a cross-check
#
# The binary is built elsewhere and carried in .carry/ci-gate (cargo build --release).
set -uo pipefail
. "$(dirname "$0")/device_env.sh"
python3 -c "import torch; print('torch', torch.__version__, torch.version.cuda, torch.cuda.get_device_name(0))"
cfg=/tmp/pr-peers.yaml
{ grep -v '^name:' configs/pr.yaml; echo "peers: [torch-sdpa, torch-sdpa-flash]"; } | sed '1i name: pr' > $cfg
echo "== warm the NVRTC cache"
"$bin" local --base-kernels kernels --ab-always --no-compare --shape b1h8s512d64_f16 --rounds 2 --format json > /dev/null
echo "== PR config, A/A, no peers"
timed "$bin" local --base-kernels kernels --ab-always --no-compare --out "$out/aa-nopeers.json" | tail -2
echo "== PR config, A/A, with peers"
timed "$bin" local --config $cfg --base-kernels kernels --ab-always --no-compare --out "$out/aa-peers.json" --wide
echo "== the old harness (bench/sdpa_bench.py), same shapes"
timed python3 bench/sdpa_bench.py configs/pr.yaml --out "$out/sdpa-bench.json" | tail -16
