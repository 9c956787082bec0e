// Stand-in for PyTorch's header (dropout is compiled out: FLASHATTENTION_DISABLE_DROPOUT).
#pragma once
#include <cstdint>
namespace at { struct PhiloxCudaState { uint64_t seed_, offset_; }; }
