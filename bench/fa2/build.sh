#!/usr/bin/env bash
# Builds libfa2_tiles.so (bench/fa2/fa2_tiles.cu: FlashAttention-2's forward kernel at either
# of its d128 tiles, for bench/fa2_tiles.py) from FA2's own source, which this repository does
# not carry. On a machine with network access (the GPU machines have none: build here, carry
# the .so):
#   git clone https://github.com/Dao-AILab/flash-attention fa && git -C fa checkout 0251105a
#   git clone https://github.com/NVIDIA/cutlass cutlass && git -C cutlass checkout 7127592
#     (the commit fa pins as its csrc/cutlass submodule)
#   pip download --no-deps "nvidia-cuda-nvcc==13.0.*" "nvidia-cuda-runtime==13.0.*" \
#     "nvidia-cuda-cccl==13.0.*" "nvidia-nvvm==13.0.*" "nvidia-cuda-crt==13.0.*" -d whl
#   (cd whl && for w in *.whl; do python3 -m zipfile -e "$w" x/; done)
#   chmod +x whl/x/nvidia/cu13/bin/* whl/x/nvidia/cu13/nvvm/bin/*
#   ln -sf libcudart.so.13 whl/x/nvidia/cu13/lib/libcudart.so
#   bash bench/fa2/build.sh fa/csrc/flash_attn/src cutlass/include whl/x/nvidia/cu13 libfa2_tiles.so
# FA2's setup.py flags, sm_90 code only (mma.sync; what PyTorch's FA2 runs on an H100/H200),
# the features the comparison does not use compiled out. About 2 minutes on 2 cores.
# FA2_FAST_MATH= (empty) builds without --use_fast_math (PyTorch's own build of FA2 has none).
set -euo pipefail
if [ $# -ne 4 ]; then
  echo "usage: $0 FA2_SRC_DIR CUTLASS_INCLUDE_DIR CUDA_ROOT OUT.so" >&2
  exit 2
fi
src=$1 cutlass=$2 cuda=$3 out=$4
here=$(cd "$(dirname "$0")" && pwd)
for f in "$src/flash_fwd_launch_template.h" "$cutlass/cute/tensor.hpp" "$cuda/bin/nvcc"; do
  [ -e "$f" ] || { echo "$0: $f not found" >&2; exit 2; }
done
PATH=$cuda/bin:$PATH "$cuda/bin/nvcc" -O3 -std=c++17 --shared -Xcompiler -fPIC \
  -gencode arch=compute_90,code=sm_90 \
  -U__CUDA_NO_HALF_OPERATORS__ -U__CUDA_NO_HALF_CONVERSIONS__ -U__CUDA_NO_HALF2_OPERATORS__ \
  -U__CUDA_NO_BFLOAT16_CONVERSIONS__ --expt-relaxed-constexpr --expt-extended-lambda \
  ${FA2_FAST_MATH-"--use_fast_math"} -DFLASHATTENTION_DISABLE_DROPOUT -DFLASHATTENTION_DISABLE_ALIBI \
  -DFLASHATTENTION_DISABLE_SOFTCAP -DFLASHATTENTION_DISABLE_UNEVEN_K \
  -DFLASHATTENTION_DISABLE_LOCAL \
  -I "$here/stub" -I "$src" -I "$cutlass" -I "$cuda/include" -I "$cuda/include/cccl" \
  -L "$cuda/lib" -lcudart "$here/fa2_tiles.cu" -o "$out"
echo "$out"
