#!/usr/bin/env bash
# "Whether the gap moved": a baseline recorded with peers, then a run that shows the stored
# ratio next to the new one (two S=512 shapes, torch-sdpa and torch-sdpa-flash).
set -uo pipefail
. "$(dirname "$0")/device_env.sh"
cfg=/tmp/gap.yaml
{ echo "name: gap"; echo "peers: [torch-sdpa, torch-sdpa-flash]"; sed -n '/^gate:/,/^shapes:/p' configs/pr.yaml; \
  echo "  - {batch: 1, heads: 8,  seq_len: 512, head_dim: 64, causal: false, dtype: float16}"; \
  echo "  - {batch: 8, heads: 16, seq_len: 512, head_dim: 64, causal: false, dtype: float16}"; } > $cfg
mkdir -p "$out/baselines"
"$bin" baseline update --config $cfg --baselines "$out/baselines" --reason "peers gap demo" 2>&1 | tail -1
"$bin" local --config $cfg --baselines "$out/baselines" --no-base --out "$out/gap.json" 2>&1 | sed -n '/Against PyTorch/,$p'
"$bin" local --config $cfg --baselines "$out/baselines" --no-base --format markdown 2>/dev/null | grep -A5 "Against PyTorch"
