// Attack: write outside out as well (just past its end, where another buffer could lie),
// besides computing the output correctly.
#define ATTACK_END()                                                                 \
    if (blockIdx.x == 0 && blockIdx.y == 0 && threadIdx.x == 0)                      \
        out[(size_t)gridDim.y * seq_len * D + 7] = 1.0f;
