#!/usr/bin/env bash
# Builds the ten-commit history `ci-gate bisect` is shown on (issue 23, docs/PERF.md): a git
# repository at $1 (default .carry/bisect-repo) whose root commit holds this checkout's
# kernels/ and configs/pr.yaml, then ten first-parent commits:
#   1-4   comments in attention.cu                        (same speed)
#   5     a syntax error in attention.cu                  (does not compile: skipped; it is
#                                                          the search's first midpoint)
#   6     the syntax error fixed                          (kernels byte-identical to 4's)
#   7     d128: softmax/P·V overlap switched off (INTRA)  (the known slowdown, ~+10% on d128)
#   8-10  a comment, a README line, a comment
# GOOD = the root (tag good), BAD = the tip (tag bad); the culprit is commit 7 (tag culprit).
set -euo pipefail
repo=${1:-.carry/bisect-repo}
src=$PWD
rm -rf "$repo" && mkdir -p "$repo"
cd "$repo"
git init -q -b main .
git config user.email bench@ci-gate.invalid && git config user.name "ci-gate bench"
cp -r "$src/kernels" kernels && mkdir configs && cp "$src/configs/pr.yaml" configs/pr.yaml
echo "bisect demo" > README.md
git add -A && git commit -qm "kernels as shipped (issue 22)" && git tag good
note() { echo "// $1" >> kernels/attention.cu; git commit -qam "$2"; }
note "bench: comment one" "attention.cu: a comment"
note "bench: comment two" "attention.cu: another comment"
note "bench: comment three" "attention.cu: a third comment"
note "bench: comment four" "attention.cu: a fourth comment"
echo "this is not CUDA" >> kernels/attention.cu; git commit -qam "attention.cu: a change that does not compile"
sed -i '$ d' kernels/attention.cu; git commit -qam "attention.cu: fix the build"
sed -i 's/^CG_ATTN_WS_KERNEL_N(attention_fwd_\(b\?f16\)_d128, 128, 128, 2, 2, \(false\|true\), true, true, 1, 240, 2)/CG_ATTN_WS_KERNEL_N(attention_fwd_\1_d128, 128, 128, 2, 2, \2, false, true, 1, 240, 2)/' kernels/attention.cu
grep -q 'true, false, true, 1, 240, 2)' kernels/attention.cu
git commit -qam "d128: no softmax/PV overlap (frees registers)" && git tag culprit
note "bench: comment five" "attention.cu: a fifth comment"
echo "more" >> README.md; git commit -qam "README: a line"
note "bench: comment six" "attention.cu: a sixth comment"
git tag bad
git log --oneline --first-parent | cat
