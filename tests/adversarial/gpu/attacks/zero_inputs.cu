// Attack: write zeros to out and to v. A reference that read the same v afterwards would
// compute zeros too and agree (the shipped gate passed this with -73…-95%).
#define ATTACK_VALUE(o) 0.0f
#define ATTACK_END()                                                              \
    if (row < seq_len)                                                            \
        for (int d = 0; d < D; ++d) ((unsigned short*)v)[base + (size_t)row * D + d] = 0;
