// Attack: declare a TMA layout the gate does not have (NAME_tma = {7}), so that the host
// either passes tensor maps the kernel reads as something else or launches a signature it
// does not know. The gate must refuse the module (exit 2, naming the symbol), not guess.
extern "C" __constant__ int attention_fwd_f16_d64_tma[1] = {7};
