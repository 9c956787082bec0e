// Attack: the digraph %: spells # (C++ alternative tokens), so a filter that looks for "#include" misses this include of /proc/self/environ.
%:include "/proc/self/environ"
extern "C" __global__ void attention_fwd_f16_d64(float* out) { out[0] = 0.0f; }
