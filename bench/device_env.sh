# Sourced by the bench/*_device.sh scripts on a lent GPU machine: where results go ($out,
# $OUT when the device tool sets it), the carried binaries ($bin; $it_tests, the integration
# tests), the CUDA libraries on the loader path and its tools on the PATH, and
# `timed CMD...` (runs CMD, prints rc and wall).
#
# $it_tests is the one integration-test binary (`cargo test --release --test it --no-run`,
# stripped); a test-name filter picks the GPU tests of one module: `gpu:: --skip
# adversarial_gpu::` (the filter is a substring: `gpu::` alone would take the attacks too),
# `gpu_tools::`, `adversarial_gpu::`.
out=${OUT:-/tmp/ci-gate-out}
mkdir -p "$out"
bin=$PWD/.carry/ci-gate
it_tests=$PWD/.carry/it-tests
export NO_COLOR=1 CI_GATE_CACHE_DIR=/tmp/ci-gate-cache PATH="$PATH:/usr/local/cuda/bin"
nvrtc=$(ls /usr/local/cuda/lib64/libnvrtc.so.1* 2>/dev/null | head -1)
[ -n "$nvrtc" ] || nvrtc=$(find / -xdev -name 'libnvrtc.so.1*' 2>/dev/null | grep -v builtins | head -1)
export LD_LIBRARY_PATH="$(dirname "$nvrtc")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
timed() { local t0=$EPOCHREALTIME; "$@"; local rc=$?; echo "rc=$rc wall=$(python3 -c "print(round($EPOCHREALTIME - $t0, 1))") s"; }
