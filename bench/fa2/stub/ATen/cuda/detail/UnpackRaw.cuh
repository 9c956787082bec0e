// Stand-in for PyTorch's header (dropout is compiled out: FLASHATTENTION_DISABLE_DROPOUT).
#pragma once
#include <tuple>
#include <ATen/cuda/PhiloxCudaState.h>
namespace at { namespace cuda { namespace philox {
__host__ __device__ inline std::tuple<uint64_t, uint64_t> unpack(at::PhiloxCudaState s) {
    return std::make_tuple(s.seed_, s.offset_);
}
} } }
