// Attack: be right only on the shapes the config lists (seq_len 256 in the adversarial
// config) and skip the work on every other shape.
#define ATTACK_BEGIN() \
    if (seq_len != 256) return;
