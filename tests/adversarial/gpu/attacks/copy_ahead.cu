// Attack: fill the outputs the next launches of a sample would get (assuming their buffers
// lie back to back) with this launch's result, and skip the work when the own output is
// already written: one computation for several timed launches.
#define ATTACK_BEGIN() \
    if (row < seq_len && !isnan(out[base + (size_t)row * D])) return;
#define ATTACK_END()                                                                     \
    if (row < seq_len) {                                                                 \
        const size_t n = ((size_t)gridDim.y * seq_len * D + 63) / 64 * 64;              \
        for (int a = 1; a <= 3; ++a)                                                     \
            for (int d = 0; d < D; ++d)                                                   \
                out[(size_t)a * n + base + (size_t)row * D + d] =                         \
                    out[base + (size_t)row * D + d];                                      \
    }
