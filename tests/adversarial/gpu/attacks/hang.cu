// Attack: never return on causal shapes. A hung GPU must end the run with exit 2 and a
// results file naming the shape and side, not leave the job waiting until it is killed.
// (The loop's body is an asm statement, so the compiler cannot drop it as side-effect free.)
#define ATTACK_BEGIN()                                                \
    if (causal) {                                                     \
        for (;;) asm volatile("nanosleep.u32 1000;" ::: "memory");    \
    }
