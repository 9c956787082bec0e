# Sourced by the bench/*_device.sh scripts on a lent GPU machine: where results go ($out,
# $OUT when the device tool sets it), the carried binary ($bin), the CUDA libraries on the
# loader path and its tools on the PATH, and `timed CMD...` (runs CMD, prints rc and wall).
out=${OUT:-/tmp/ci-gate-out}
mkdir -p "$out"
bin=$PWD/.carry/ci-gate
export NO_COLOR=1 CI_GATE_CACHE_DIR=/tmp/ci-gate-cache PATH="$PATH:/usr/local/cuda/bin"
nvrtc=$(ls /usr/local/cuda/lib64/libnvrtc.so.1* 2>/dev/null | head -1)
[ -n "$nvrtc" ] || nvrtc=$(find / -xdev -name 'libnvrtc.so.1*' 2>/dev/null | grep -v builtins | head -1)
export LD_LIBRARY_PATH="$(dirname "$nvrtc")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
timed() { local t0=$EPOCHREALTIME; "$@"; local rc=$?; echo "rc=$rc wall=$(python3 -c "print(round($EPOCHREALTIME - $t0, 1))") s"; }
