// Stand-in for PyTorch's c10 header, for building FlashAttention-2's forward kernel outside
// PyTorch (bench/fa2_tiles.cu): the two checks it uses, on the CUDA runtime alone.
#pragma once
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>
#define C10_CUDA_CHECK(expr)                                                        \
    do {                                                                            \
        cudaError_t e_ = (expr);                                                    \
        if (e_ != cudaSuccess) {                                                    \
            fprintf(stderr, "fa2_tiles: %s: %s\n", #expr, cudaGetErrorString(e_));  \
            abort();                                                                \
        }                                                                           \
    } while (0)
#define C10_CUDA_KERNEL_LAUNCH_CHECK() C10_CUDA_CHECK(cudaGetLastError())
