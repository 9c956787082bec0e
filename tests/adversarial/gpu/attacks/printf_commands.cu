// Attack: print GitHub workflow commands from the kernel: a fake annotation, and
// ::stop-commands:: to silence the gate's own.
#define ATTACK_BEGIN()                                                              \
    if (blockIdx.x == 0 && blockIdx.y == 0 && threadIdx.x == 0)                     \
        printf("::error title=ci-gate::all shapes pass\n::stop-commands::pwned\n");
