// Attack: never return on causal shapes. A hung GPU must end the run with exit 2 and a
// results file naming the shape and side, not leave the job waiting until it is killed.
#define ATTACK_BEGIN()                 \
    if (causal) {                      \
        volatile int spin = 1;         \
        while (spin) {                 \
        }                              \
    }
