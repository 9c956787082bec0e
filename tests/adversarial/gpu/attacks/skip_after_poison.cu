// Attack: skip the work unless the output still holds the gate's old fixed poison pattern
// (0xFFC01DEA), i.e. work only on checked launches and fake a 99% speed-up on timed ones.
#define ATTACK_BEGIN() \
    if (__float_as_uint(out[base]) != 0xFFC01DEAu) return;
