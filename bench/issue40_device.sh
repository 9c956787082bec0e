#!/usr/bin/env bash
# Issue 40's kernel steps on a lent GPU, one call each. Every step is judged by the gate's own
# A/B (`ci-gate local`: the kernels of .carry/k-base against a candidate, PR method, no peers):
#   bash bench/issue40_device.sh persistent     # persistent-like grids for long d64 and d128
#   bash bench/issue40_device.sh profile        # ncu --set full of the shipped d64 and d128 kernels
#   bash bench/issue40_device.sh final          # after the last step: A/A + table, the step's A/B,
#                                               # the long shapes (`long`), the GPU tests
#   bash bench/issue40_device.sh long           # long shapes: A/B, then against cuDNN / FA2
#   bash bench/issue40_device.sh record         # the stored baselines of pr and pr-ada
#                                               # re-recorded (3 processes), a stored-only A/A each
#   bash bench/issue40_device.sh seventh        # kernels/ against the base: long, odd, PR and
#                                               # pr-ada shapes with cuDNN / FA2; sanitize, parity
#   bash bench/issue40_device.sh seventh-step   # the same A/B; if kept: checks, tests, record
#   bash bench/issue40_device.sh seventh-h100   # H100: record pr, pr-ada; PR table; L4 path
#   bash bench/issue40_device.sh seventh-long   # the long shapes: A/B, cuDNN / FA2
#   bash bench/issue40_device.sh seventh-leads  # two leads against main's kernels (variants/)
#   bash bench/issue40_device.sh seventh-grid   # the min_grid step; then tests, stored A/As
#   bash bench/issue40_device.sh eighth         # the pass rule's check (even split against the
#                                               # other form, forced); the step's A/B; checks
#   bash bench/issue40_device.sh eighth-check   # the cost rule on unseen shapes; the step's A/B;
#                                               # if both hold: pr re-recorded, stored A/As
#   bash bench/issue40_device.sh ninth          # four consumers for the d64 even split: forced
#                                               # pairs against three and the other form; PR A/B
#   bash bench/issue40_device.sh ninth-profile  # ncu: the L4's d128 path against FA2
#   bash bench/issue40_device.sh ninth-ada      # FA2's H200 tile (128 x 64, 4 warps) in our
#                                               # mma.sync kernel on the L4 path's shapes
#   bash bench/issue40_device.sh ninth-pf       # mma.sync fragments one step ahead (L4 path)
#   bash bench/issue40_device.sh ninth-uw       # mma.sync: the warp index uniform (L4 path)
#   bash bench/issue40_device.sh ninth-record   # after it: sanitize the L4 path, pr-ada
#                                               # re-recorded, stored A/A, GPU tests
#   bash bench/issue40_device.sh tenth          # Hopper: the last K/V tile narrowed; wide_tiles
#                                               # weighing it (variants/wide2)
#   bash bench/issue40_device.sh tenth-step     # Hopper d128 as two entries (128- and 192-key
#                                               # tiles, a narrowed first tile); if no A/B
#                                               # regresses: checks, pr re-recorded, tests
#   bash bench/issue40_device.sh tenth-final    # the same with NAME as shipped and the
#                                               # narrowed form from 1408 keys
#   bash bench/issue40_device.sh tenth-record   # sanitize, pr re-recorded, stored A/As, GPU
#                                               # tests, archived after every step
#   bash bench/issue40_device.sh eleventh-profile  # ncu: b4h16s512d64, ours and cuDNN's
#   bash bench/issue40_device.sh eleventh       # single-unit d64 CTAs (variants/q4, q4n, t3)
#   bash bench/issue40_device.sh eleventh-grid  # the grid cut, by the stored comparison
#                                               # (.carry/ci-gate-main records, ci-gate compares)
#   bash bench/issue40_device.sh eleventh-record  # pr re-recorded, its stored-only A/A
#   bash bench/issue40_device.sh gpu-tools      # the tools' GPU tests (sanitize, ncu)
#   bash bench/issue40_device.sh twelfth        # prepared for the next session: sanitize,
#                                               # gpu-tools, variants/early's A/B, the table
#   bash bench/issue40_device.sh twelfth-poly   # a polynomial exp2 (variants/p25, p50, p25t,
#                                               # ep25; a25, a50 on the L4 path), variants/early
#   bash bench/issue40_device.sh twelfth-x      # against variants/early: the last P V with
#                                               # the next Q K^T (ex), three stages (e3q1)
#   bash bench/issue40_device.sh twelfth-final  # 64-key tiles (b64, b64s4); sanitize,
#                                               # gpu-tools, the table
#   bash bench/issue40_device.sh thirteenth-cr  # the lazy softmax base (variants/cr, ecr):
#                                               # L4 path, PR, d64 mid, long; the tests
#   bash bench/issue40_device.sh thirteenth-ov  # the softmax overlapped with the previous
#                                               # P V (variants/ov, ovr): PR, d64 mid, long
#   bash bench/issue40_device.sh thirteenth-pp  # the d64 even split on two ping-pong
#                                               # consumers, forced (variants/pp2f, pp2f3)
#   bash bench/issue40_device.sh thirteenth-tm  # the softmax's row maxima by a tree
#                                               # (variants/tm); if kept, pr / pr-ada recorded
#   bash bench/issue40_device.sh thirteenth-profile  # ncu: main against variants/ov at
#                                               # b4h16s512d64 and b4h16s2048d64
#   bash bench/issue40_device.sh thirteenth-c64 # the L4 path's causal d128 on FA2's 64 x 64
#                                               # tile (variants/c64)
#   bash bench/issue40_device.sh thirteenth     # prepared: the GPU and tools' tests, the
#                                               # long shapes against cuDNN / FA2
#   bash bench/issue40_device.sh fourteenth-epi # the sub-tile's epilogue: reciprocals during
#                                               # the last P V (variants/li), the store during
#                                               # the next S_0 (nq), with the early wait (nqe)
#   bash bench/issue40_device.sh fourteenth-ts  # the row sums of P on the tensor cores
#                                               # (variants/ts), with the early wait (tse)
#   bash bench/issue40_device.sh fourteenth-o2  # P V over two accumulators at d64 (o2 =
#                                               # kernels/), with the early wait (o2e); if
#                                               # kept: GPU tests, pr re-recorded, stored A/A
#   bash bench/issue40_device.sh fourteenth-profile  # ncu with the inputs in L2 (as the
#                                               # gate times): b4h16s512d64, ours and cuDNN
#   bash bench/issue40_device.sh fourteenth-sh  # the producer sleeps in its waits (shp =
#                                               # kernels/), every wait so (sha); if kept:
#                                               # GPU tests, pr re-recorded, stored A/A
#   bash bench/issue40_device.sh fourteenth-ablate  # b4h16s512d64 with one part of a step
#                                               # removed (.carry/ablate/), ncu durations
#   bash bench/issue40_device.sh fifteenth-im3  # prepared: the row maxima by VIMNMX3
#                                               # (variants/im3, im3e); GPU tests; if kept
#                                               # (kernels/ = im3): pr re-recorded, A/A
#   bash bench/issue40_device.sh fifteenth-im3d # VIMNMX3 row maxima in the d128 kernels only
#                                               # (variants/im3d); GPU tests; if kept
#                                               # (kernels/ = im3d): pr, pr-ada re-recorded
#   bash bench/issue40_device.sh fifteenth-im3t # VIMNMX3 in four chains, every wgmma kernel
#                                               # (variants/im3t); pr, pr-ada re-recorded with
#                                               # it if kept, else with kernels/ = im3d
#   bash bench/issue40_device.sh fifteenth-im3m # long rows with cuDNN / FA2 (kernels/ = im3d);
#                                               # d64 row maxima half by VIMNMX3 (variants/im3m)
#   bash bench/issue40_device.sh fifteenth-checks # kernels/: sanitize, kernel_check, attacks
#   bash bench/issue40_device.sh sixteenth-early # prepared: the early first wait on im3d
#                                               # (variants/im3de); a record only if kept
#   bash bench/issue40_device.sh sixteenth       # call 1 of 2026-12-04: the early first wait on
#                                               # im3d (variants/im3de) on the PR, d64 mid, long
#                                               # and d128 mid shapes, then the attack suite
#   bash bench/issue40_device.sh sixteenth-ld    # call 2: whole-tile loads without bounds in
#                                               # the mma.sync kernels (variants/ld = kernels/)
#                                               # on the L4 path; the PR table (main's A/A)
#   bash bench/issue40_device.sh sixteenth-record # call 3: kernels/ (= ld) under compute-sanitizer
#                                               # on the L4 path; pr, pr-ada re-recorded, A/As
#   bash bench/issue40_device.sh seventeenth     # call 1 of 2026-12-04 (seventeenth session):
#                                               # the kept base at d64 and on the L4 path
#                                               # (variants/k64 = kernels/) on PR, d64 mid,
#                                               # long, pr-ada, ada-mid, ada-d64; the GPU
#                                               # tests; cuDNN / FA2; kernel_check (both paths)
#   bash bench/issue40_device.sh seventeenth-probe # call 2: k64 and k64a (the kept base given
#                                               # up for the rest of a row block after one
#                                               # failure) on N(0,1) and the mixture
#                                               # (bench/kept_probe.py); k64a's A/Bs
#   bash bench/issue40_device.sh seventeenth-ob  # call 3: O stored through shared memory by
#                                               # one bulk copy per sub-tile (variants/ob1 =
#                                               # kernels/) at d64: PR, d64 mid, long; tests,
#                                               # kernel_check, compute-sanitizer
#   bash bench/issue40_device.sh seventeenth-nightly # call 4: main's A/A on the long nightly
#                                               # shapes with cuDNN / FA2 (issue 40's table)
#   bash bench/issue40_device.sh seventeenth-tree # call 5: k64t, k64at (the kept base with its
#                                               # tile sums by a tree) on N(0,1) and the
#                                               # mixture; their A/Bs
#   bash bench/issue40_device.sh seventeenth-icache # call 6: ncu stall reasons of
#                                               # b4h16s512d64, main's kernels and k64t
#   bash bench/issue40_device.sh seventeenth-halves # call 7: S in two wgmma groups of 64
#                                               # keys, the first half's softmax during the
#                                               # second's (variants/hv): PR, d64 mid, long
#   bash bench/issue40_device.sh eighteenth     # call 1 of the eighteenth session: q4n (NAME
#                                               # d64 one unit per CTA, four per SM) on PR,
#                                               # d64 mid, long, quad shapes; the PR table
#   bash bench/issue40_device.sh eighteenth-short # call 2: kernels/ with NAME_short_noncausal
#                                               # against main's: PR, d64 mid, quad, unseen
#                                               # shapes; table; tests, checks; if it holds,
#                                               # pr re-recorded, its stored A/A
#   bash bench/issue40_device.sh eighteenth-record # call 3: the final rule's A/Bs, sanitize,
#                                               # pr re-recorded, its stored A/A
#   bash bench/issue40_device.sh eighteenth-final # call 4: sanitize on the smaller shapes;
#                                               # pr, pr-ada re-recorded, stored A/As
#   bash bench/issue40_device.sh eighteenth-attacks # call 5: the attack suite, kernels/
#   bash bench/issue40_device.sh nineteenth     # the mma.sync kernels with O += P V one tile
#                                               # behind (variants/lag) on the L4 path:
#                                               # pr-ada with FA2 / cuDNN, ada-mid, ada-d64;
#                                               # kernel_check --ada with it
#   bash bench/issue40_device.sh nineteenth-lag2  # variants/lag2 (lag, O's rescale moved to the
#                                               # next step) on pr-ada, ada-d64; then
#                                               # ninth-profile (ncu: main's L4 path and FA2)
#   bash bench/issue40_device.sh nineteenth-c32   # the L4 path's causal d128 on the split
#                                               # 128 x 32 tile (variants/c32) on pr-ada;
#                                               # main's L4 path on the d64 PR shapes with FA2
#   bash bench/issue40_device.sh nineteenth-sass  # ncu of the L4 path's d128 kernels with the
#                                               # stall samples of every SASS instruction
#   bash bench/issue40_device.sh nineteenth-ta    # Q and V on one set of ldmatrix offsets
#                                               # (variants/ta) on pr-ada and ada-d64
#   bash bench/issue40_device.sh nineteenth-fa2   # FA2's own code at its L4 tiles (a build of
#                                               # its source, .carry/fa2/libfa2_tiles.so) and
#                                               # at its H200 tile, beside PyTorch's FA2 and
#                                               # the gate's A/A of the L4 path (pr-ada)
#   bash bench/issue40_device.sh nineteenth-nofm  # the same FA2 build without --use_fast_math
#                                               # (.carry/fa2/libfa2_tiles_nofm.so) against
#                                               # PyTorch's FA2, then with it again
#   bash bench/issue40_device.sh nineteenth-table # the L4 path on every PR shape (pr-ada,
#                                               # ada-d64: the gate's p50) against FA2's own
#                                               # build at both tiles and PyTorch's FA2
#   bash bench/issue40_device.sh nineteenth-d64   # the L4 path's d64 NAME on split-pipeline
#                                               # tiles, Q in shared memory (variants/d64s,
#                                               # d64t, d64o, d64p) on ada-d64, pr-ada
#   bash bench/issue40_device.sh nineteenth-d64b  # the L4 path's d64 NAME with Q in registers
#                                               # on three stages (variants/d64r3) and on
#                                               # 32-key tiles, three CTAs per SM (d64w)
#   bash bench/issue40_device.sh twentieth      # the L4 path's d64 NAME on smaller CTAs
#                                               # (variants/n64s3, n64s4, n64s4b32, n64s4t1,
#                                               # n128w8) on ada-d64 and short d64 shapes
#   bash bench/issue40_device.sh twentieth-o16  # what writing O in fp32 costs the L4 path
#                                               # (variants/o16, fp16 stores; a timing ablation)
#   bash bench/issue40_device.sh twentieth-sms  # the L4 path and FA2 on 56 SMs (a green
#                                               # context) and on the whole GPU (l4_sms.py)
#   bash bench/issue40_device.sh twentieth-method  # the gate's p50 of the L4 path between two
#                                               # runs of l4_sms.py (the gate's conditions' cost)
#   bash bench/issue40_device.sh twentieth-profile  # ncu: the L4 path's d64 NAME and FA2 on
#                                               # b4h16s512d64 and b8h16s512d64
#   bash bench/issue40_device.sh twentieth-sass  # ncu stall samples per SASS line of the
#                                               # L4 path's d64 NAME on b4h16s512d64
#   bash bench/issue40_device.sh twentieth-kv1  # the L4 path's non-causal d128 on 128 x 64
#                                               # with one K-then-V buffer (variants/kv1)
#   bash bench/issue40_device.sh twentyfirst   # the L4 path's causal d64 launches on
#                                               # NAME_small's tile (variants/n64s3 as NAME):
#                                               # a sweep of lengths and grids, the gate's A/B
#                                               # and l4_sms.py on 56 SMs
#   bash bench/issue40_device.sh twentyfirst-tests # main's binary and kernels: the GPU
#                                               # tests, the tools' GPU tests, stored-only
#                                               # A/As of pr and pr-ada
#   bash bench/issue40_device.sh twentyfirst-attacks # the attack suite, main's binary
#   bash bench/issue40_device.sh twentyfirst-sanitize # the shipped kernels under the four
#                                               # sanitizers (the tools' GPU test) with the
#                                               # sanitizer's wait bound at 300 s
#   bash bench/issue40_device.sh twentyfirst-gputools # the tools' GPU tests again, the
#                                               # sanitizer's wait bound at 300 s
#   bash bench/issue40_device.sh twentyfirst-wall # the PR gate's wall time (the design: 30 s
#                                               # with peers): main's kernels against
#                                               # themselves, cold compile cache, then warm
#   bash bench/issue40_device.sh twentyfirst-w8 # the L4 path's non-causal d128 form on
#                                               # 256-row CTAs of 8 warps x 32 rows, one per
#                                               # SM (variants/w8n64, w8n32): pr-ada, ada-mid
#   bash bench/issue40_device.sh twentysecond-record # NVRTC on 1-16 threads (compile_split.py
#                                               # --threads; the split test of tests/it);
#                                               # pr and pr-ada re-recorded from 5 processes
#   bash bench/issue40_device.sh twentysecond-wall # the PR gate's wall time as a pull request
#                                               # that changes attention.cu runs it: main's
#                                               # binary (one-thread NVRTC) and this one, cold
#                                               # and warm, the old and the new baselines
#   bash bench/issue40_device.sh twentysecond-stored # the same when attention.cu is unchanged
#                                               # (no A/B: the stored baseline decides), the
#                                               # old and the new baselines
#   bash bench/issue40_device.sh twentysecond-tests # this binary's GPU tests and attack suite
#   bash bench/issue40_device.sh twentythird-w2 # the L4 path on 64-row CTAs of 2 warps x 32
#                                               # rows, 3 a SM (variants/w2a, w2b): ada-d64,
#                                               # pr-ada, ada-mid; kernel_check.py --ada
#   bash bench/issue40_device.sh twentythird-mb3 # the L4 path's d128 NAME on a 3-stage ring
#                                               # of mbarriers, no CTA barrier (variants/mb3e,
#                                               # mb3s): pr-ada, causal d128; kernel_check --ada
#   bash bench/issue40_device.sh twentythird-step NAME   # a winning candidate as a step: sanitize,
#                                               # A/B with FA2 / cuDNN (pr-ada, ada-d64), 56 SMs
#   bash bench/issue40_device.sh twentythird-record NAME # then pr-ada and pr re-recorded, A/As
#   bash bench/issue40_device.sh twentyfifth    # the L4 path: one barrier a tile in the
#                                               # 2-stage loop (variants/b1, b1q), non-causal
#                                               # d128 on the ring NAME (variants/ncname)
#   bash bench/issue40_device.sh twentyfifth-step # the step: non-causal d128 on NAME above
#                                               # 447 keys; checks, A/Bs, FA2 / cuDNN, 56 SMs
#   bash bench/issue40_device.sh twentyfifth-record # the bound at 319; pr-ada, pr re-recorded
#   bash bench/issue40_device.sh twentysixth-ks   # ks2 (key-split warp pairs, d128 L4 path); tail rule
#   bash bench/issue40_device.sh twentyninth-ks    # twentysixth-ks by what item 2 misses, 600 s
#   bash bench/issue40_device.sh twentysixth-step  # kernels/ = the step: checks, A/Bs, FA2, tests
#   bash bench/issue40_device.sh twentysixth-record # pr-ada and pr re-recorded; the attack suite
#   bash bench/issue40_device.sh twentysixth-verify # the tail rule against no split tile; attacks, tools
#   bash bench/issue40_device.sh thirtieth-witness # the witness's GPU tests, the side alone's new one
#   bash bench/issue40_device.sh thirtysecond    # b4h16s512d64: what the store costs (ncu,
#                                               # ablate-nostore); float4 stores (stv4) on pr
#   bash bench/issue40_device.sh thirtysecond-step # the float4 epilogue: A/Bs; pr, pr-ada re-recorded
#   bash bench/issue40_device.sh thirtysecond-h200 # H200 only: the step on pr; pr, pr-ada re-recorded; tail
#   bash bench/issue40_device.sh thirtysecond-verify # witness GPU tests; the attack suite
#   bash bench/issue40_device.sh thirtythird     # item 1 and item 2 tables: ours, cuDNN, FA2 in one call
#   bash bench/issue40_device.sh thirtythird-pair # the L4 path's d128 as warp pairs (variants/pair)
#   bash bench/issue40_device.sh thirtythird-profile # ncu: NAME against the pairs, pipes and stalls
#   bash bench/issue40_device.sh thirtyfifth-like # issue 40's ratios two ways: against PyTorch as a
#                                               # user times it and under the gate's own conditions
#   bash bench/issue40_device.sh thirtyfifth-warm # our kernel timed as the harness times PyTorch's
#   bash bench/issue40_device.sh thirtyninth     # H200: pr, pr-ada re-recorded; any card: the
#                                               # control's span through its work (a side alone's
#                                               # witness confirmed): GPU tests, stored-only A/As
#   bash bench/issue40_device.sh thirtyninth-attacks # the attack suite; the control tests again
#   bash bench/issue40_device.sh fortyseventh-sc # the short d64 form as 2 or 4 consumers of
#                                               # one unit each sharing the K/V tiles
#   bash bench/issue40_device.sh fortyseventh  # the Q loads of a one-wave grid staggered by
#                                               # CTA group (variants/stagger.patch): Hopper's
#                                               # short d64 form and the L4 path's d64 NAME
#   bash bench/issue40_device.sh fortysixth    # any card: this head's GPU tests and the attack
#                                               # suite (what a file may hold changed, not how
#                                               # anything is measured)
#   bash bench/issue40_device.sh fortyfirst    # H200: item 3 (pr-ada, pr), the tables; else
#                                               # (H100_TESTS=1) the GPU tests, (H100_AA=1) the
#                                               # stored-only A/As of pr-ada and pr
#   bash bench/issue40_device.sh fortieth-last  # H200: item 3; small_l4.py on 128-key grids
#   bash bench/issue40_device.sh fortieth-final # H200: item 3; else stored A/As; the GPU tests
#   bash bench/issue40_device.sh fortieth-smallrule # NAME_small by cost: the gate's A/B against
#                                               # variants/nosmall; small_l4.py on the PR shapes
#   bash bench/issue40_device.sh fortieth-small2 # small_l4.py on more grids: the margin the rule needs
#   bash bench/issue40_device.sh fortieth-small # d64 NAME against NAME_small on 56 SMs (small_l4.py)
#   bash bench/issue40_device.sh fortieth-verify # H200: item 3 + GPU tests; else GPU tests + attacks
#   bash bench/issue40_device.sh fortieth-record # H200: pr, pr-ada re-recorded; H100: pr; stored A/As
#   bash bench/issue40_device.sh fortieth      # any card: bench/context_probe.py; H200: pr, pr-ada
#                                               # re-recorded, stored A/As
#   bash bench/issue40_device.sh thirtyninth-h200 # H200 only: pr, pr-ada re-recorded, stored A/As
#   bash bench/issue40_device.sh thirtyninth-final # H200: pr, pr-ada re-recorded; selftest's witness
#                                               # calibration (3 A/A trials of pr)
#   bash bench/issue40_device.sh thirtyninth-tail # the tail after the checks and the least spans:
#                                               # GPU tests, forced and stored-only A/As
#   bash bench/issue40_device.sh thirtyeighth-witness # the corroborated witness: GPU tests, forced A/As,
#                                               # the attack suite
#   bash bench/issue40_device.sh thirtyeighth-final # the witness's three refusals again; H200: record
#   bash bench/issue40_device.sh thirtyeighth-record # the host's wake-ups; pr-ada re-recorded (H200: pr
#                                               # too), stored A/As, GPU tests, the tables
#   bash bench/issue40_device.sh thirtyeighth-causal # NAME_causal (units by cost) against NAME: A/Bs,
#                                               # parity, sanitizer, 56 SMs
#   bash bench/issue40_device.sh thirtyeighth-h200 # H200 only: pr, pr-ada re-recorded; the tables
#   bash bench/issue40_device.sh thirtyeighth-control # the control test again, its rounds printed
#   bash bench/issue40_device.sh thirtyeighth    # H200: pr, pr-ada re-recorded; the GPU tests; the
#                                               # one-wave form on 56 SMs; H100: the attack suite
#   bash bench/issue40_device.sh thirtyseventh-form # NAME_one_wave_causal (kernels/) against k-base:
#                                               # A/B, checks, sanitizer, peers
#   bash bench/issue40_device.sh thirtyseventh-pair # the pairing in a copy of the body of its own
#                                               # (variants/heavylight2 against k-base)
#   bash bench/issue40_device.sh thirtysixth-pair # causal one-wave grids on the L4 path paired heavy
#                                               # with light (variants/heavylight against k-base)
#   bash bench/issue40_device.sh thirtyfifth-leadin # the witness's lead-in timed by the global timer
#   bash bench/issue40_device.sh thirtyfifth-noshort # the short d64 form against NAME on this card
#   bash bench/issue40_device.sh thirtyfourth-control # which step of a kernel's sample the
#                                               # witness's control lacks (its 1-8 us offset)
#   bash bench/issue40_device.sh thirtyfirst-through # the witness through the checks, their own time
#                                               # out: GPU tests, forced A/As of pr, pr-ada, eval
#   bash bench/issue40_device.sh fortyeighth-fill # the L4 path's d64 NAME as a filling form (variants/afill, afill2)
#   bash bench/issue40_device.sh fiftieth-h200   # an H200 only: stored-only A/As of pr-ada, pr; the tables
#   bash bench/issue40_device.sh fiftyfourth     # the mixture and centered error of 2026-12-08: the
#                                               # GPU tests, the attack suite (uniform_on_flat),
#                                               # then this card's pr and pr-ada re-recorded (a
#                                               # new method) with stored-only A/As
#   bash bench/issue40_device.sh fiftyfirst      # the short d64 form as four independent units a
#                                               # CTA (variants/indu*): A/Bs, then kernel_check
#   bash bench/issue40_device.sh fiftysecond     # Q in registers for the short d64 form (qrk3, qrk2,
#                                               # wgpq3), then fiftyfirst-wg's candidates, ncu
#   bash bench/issue40_device.sh fiftyfirst-wg   # the short d64 form without a producer warpgroup
#                                               # (variants/wgp, wgn); ncu stalls of it, indun
#   bash bench/issue40_device.sh fiftieth-kv2    # variants/kv2 (d128 NAME: 8 x 32-row warps, K/V on
#                                               # mbarriers): kernel_check, A/B on pr-ada, ada-mid
#   bash bench/issue40_device.sh fiftieth-probe  # mma_ceiling.py with reads that cannot be hoisted, ncu
#   bash bench/issue40_device.sh fiftieth        # the mma.sync ceiling (mma_ceiling.py), ncu of it, the
#                                               # L4 path's d128 NAME and FA2; the tables, stored A/As
#   bash bench/issue40_device.sh fortyninth       # afo / afon (NAME_fill_or_one) against k-base, 56 SMs, kernel_check
#   bash bench/issue40_device.sh fortyeighth   # any card: issue 40's tables, its nightly rows, GPU tests
#   bash bench/issue40_device.sh thirtyfirst-h200  # thirtyfirst-final's H200 part alone
#   bash bench/issue40_device.sh thirtyfirst-final # H200: stored A/As, the split tile; the attack suite
#   bash bench/issue40_device.sh thirtyfirst-cheap # the control at 100% duty: witness tests, stored
#                                               # A/A of pr (H200: pr-ada, the split tile too)
#   bash bench/issue40_device.sh thirtyfirst-control # the control without its idle time; H200: witness,
#                                               # stored A/As, the split tile at 4, 6, 8 CTAs
#   bash bench/issue40_device.sh thirtyfirst-profile # ncu: b4h16s512d64's L2 traffic, ours and cuDNN
#   bash bench/issue40_device.sh thirtyfirst    # any card: witness tests, stored A/A + table, the early
#                                               # wait on pr; H200: tail at 6, 8 CTAs; H100: nightly rows
#   bash bench/issue40_device.sh thirtieth-h100    # the witness alone with its control beside each
#                                               # round, then the H100's `pr` re-recorded
#   bash bench/issue40_device.sh twentyninth-tail  # the split tile never with a last round not full
#   bash bench/issue40_device.sh twentyninth-h100  # pr first (valid after an L4-path step), its table
#   bash bench/issue40_device.sh twentyeighth-h100 # the H100's pr-ada and pr re-recorded, the PR
#                                               # table with cuDNN / FA2 (issue 40 items 3, 1)
#   bash bench/issue40_device.sh twentyseventh-witness # the host's clock as a witness: its GPU
#                                               # tests, A/As of pr and pr-ada (unwitnessed µs),
#                                               # pr without a base (against the control)
#   bash bench/issue40_device.sh step [CFG...]  # kernels/ against the base on whole configs
#                                               # (default configs/pr.yaml), then issue 40's table
# Carried: .carry/ci-gate, .carry/it-tests (final), .carry/k-base/{attention,reference,util}.cu
# (the base: the kernels before the step, e.g. `git show <rev>:kernels/attention.cu`).
# Results in $OUT (tar).
set -uo pipefail
. "$(dirname "$0")/device_env.sh"
base=$PWD/.carry/k-base
res=$out/r && mkdir -p "$res"
what=${1:-final}
shift || true

# one A/B: ab NAME KDIR CONFIG [--shape S ...]; prints the per-shape change and verdict
# (BASE=DIR: that kernel directory as the base instead of .carry/k-base)
ab() {
  local name=$1 kdir=$2 cfg=$3
  shift 3
  timed timeout 240 "$bin" local --config "$cfg" --base-kernels "${BASE:-$base}" --kernels "$kdir" \
    --no-peers --no-profile "$@" --out "$res/ab-$name.json" > "$res/ab-$name.txt" 2>&1
  python3 - "$res/ab-$name.json" "$name" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
print(f"== {sys.argv[2]}: passed={r.get('passed')} error={r.get('error')}")
for s in r.get("shapes", []):
    ab = s.get("ab") or {}
    p50 = (s.get("summary") or {}).get("p50")
    ratio = ab.get("ratio")
    d = f"{(ratio - 1) * 100:+.2f}% [{(ab['ci_low'] - 1) * 100:+.2f}, {(ab['ci_high'] - 1) * 100:+.2f}]" if ratio else "-"
    u = (s.get("measurement") or {}).get("unwitnessed") or {}
    f = lambda k: f"{u[k]:.1f}" if u.get(k) is not None else "-"
    w = f"  unwitnessed b/c {f('base_us')}/{f('candidate_us')} µs (control {f('control_us')}), through checks {f('base_through_checks_us')}/{f('candidate_through_checks_us')} µs; shift {f('shift_us')}, through checks {f('through_checks_shift_us')} over {u.get('units')} (limit {u['limit_us']:.0f}, sample {u['sample_us']:.0f} µs)" if u else ""
    print(f"  {s['name']:<28} p50 {p50 if p50 is None else round(p50, 2)} µs  {d}  {s.get('verdict')}{w} {s.get('error') or ''}")
PY
}

# ab without the witness's detail, then the mode's save: ab_brief NAME KDIR CONFIG [--shape S ...]
ab_brief() {
  ab "$@" | sed -E 's/  unwitnessed b\/c .*$//'
  save
}

# $res/NAME.yaml: BASE's settings (peers dropped) on the shapes read from standard input, one
# per line, "batch heads seq_len head_dim causal|noncausal dtype": derive_config NAME BASE
derive_config() {
  python3 -c '
import sys, yaml
name, base = sys.argv[1:3]
cfg = yaml.safe_load(open(base))
cfg["name"] = name
cfg.pop("peers", None)
cfg["shapes"] = []
for line in sys.stdin:
    if not line.split():
        continue
    b, h, s, d, mask, dtype = line.split()
    assert mask in ("causal", "noncausal"), line
    cfg["shapes"].append({"batch": int(b), "heads": int(h), "seq_len": int(s),
                          "head_dim": int(d), "causal": mask == "causal", "dtype": dtype})
yaml.safe_dump(cfg, open(sys.argv[3], "w"), sort_keys=False)
' "$1" "$2" "$res/$1.yaml"
}

# causal-d64.yaml: pr-ada's settings on causal d64 grids of one wave on 132 SMs (144 to 256
# 128-row CTAs, NAME_one_wave_causal's) and one of two waves (b8h16s512d64, NAME's)
causal_d64_config() {
  derive_config causal-d64 configs/pr-ada.yaml <<'SHAPES'
4 16 512 64 causal bfloat16
3 16 512 64 causal float16
6 8 512 64 causal float16
4 16 384 64 causal float16
2 16 1024 64 causal float16
1 16 2048 64 causal float16
5 16 256 64 causal float16
8 16 512 64 causal float16
SHAPES
}

# the card, bench/placement_probe.py (where the block scheduler puts a grid of one wave at two
# CTAs a SM), ada-d64.yaml and causal-d64.yaml: one_wave_setup
one_wave_setup() {
  card
  timed timeout 60 python3 bench/placement_probe.py --out "$res/placement.json" \
    > "$res/placement.txt" 2>&1
  cat "$res/placement.txt"
  ada_d64_config
  causal_d64_config
}

# after a one-wave candidate's A/Bs: kernel_check.py --ada with .carry/variants/V, FA2 / cuDNN
# on ada-d64 and the table of ab-TAG-d64.json, both trees by bench/warm_alike.py:
# one_wave_tail V TAG
one_wave_tail() {
  kernel_check_variants "$1"
  peers ada-d64 "$res/ada-d64.yaml"
  peer_table "$res/ab-$2-d64.json" "$res/sdpa-ada-d64.json"
  for k in ".carry/variants/$1" .carry/k-base; do
    timed timeout 120 python3 bench/warm_alike.py --ada --kdir "$k" --shape 4,16,512,64,causal \
      --shape 3,16,512,64,causal --shape 4,16,512,64 > "$res/warm-$(basename "$k").txt" 2>&1
    echo "== $k"; cat "$res/warm-$(basename "$k").txt"
  done
  save
}

# short.yaml: the PR config's settings on grids Hopper's short d64 form takes (512 CTAs of one
# unit, four a SM: b4h16s512d64 f16 and bf16, b2h32s512d64, b8h16s256d64; 384: b3h16s512d64,
# b6h8s512d64, b4h16s384d64) and two that run NAME_small (controls)
short_form_config() {
  derive_config short configs/pr.yaml <<'SHAPES'
4 16 512 64 noncausal float16
4 16 512 64 noncausal bfloat16
2 32 512 64 noncausal float16
3 16 512 64 noncausal float16
6 8 512 64 noncausal float16
4 16 384 64 noncausal float16
8 16 256 64 noncausal float16
2 8 512 64 noncausal float16
1 8 512 64 noncausal float16
SHAPES
}

# mid.yaml: the PR config's settings on non-causal d128 shapes around wide_tiles()'s
# threshold (attention.cu: 192-key tiles when they need at most 69% as many)
mid_config() {
  derive_config mid configs/pr.yaml <<'SHAPES'
4 16 1024 128 noncausal float16
4 16 1280 128 noncausal float16
4 16 1536 128 noncausal float16
4 16 1664 128 noncausal float16
2 16 2048 128 noncausal float16
2 16 3001 128 noncausal float16
SHAPES
}

# long.yaml: the PR config's settings on long shapes (d64 through the `_long` form, d128)
long_config() {
  derive_config long configs/pr.yaml <<'SHAPES'
2 16 1536 64 noncausal float16
4 16 2048 64 noncausal float16
4 16 2048 64 causal float16
1 16 8192 64 noncausal float16
1 16 8192 64 causal float16
1 8 16384 64 noncausal float16
2 16 4096 64 causal float16
2 16 4096 128 noncausal float16
2 16 4096 128 causal float16
1 8 16384 128 noncausal float16
1 8 16384 128 causal float16
1 16 8192 128 noncausal bfloat16
2 16 2048 128 causal bfloat16
4 16 1024 128 noncausal float16
2 8 3001 128 causal float16
SHAPES
}

# ada-mid.yaml: configs/pr-ada.yaml's settings (CG_ADA_TILES) on non-causal d128 lengths
# from 256 to 4096 keys, and [1,16,1000], a grid of fewer CTAs than an H200 has SMs
ada_mid_config() {
  derive_config ada-mid configs/pr-ada.yaml <<'SHAPES'
16 16 256 128 noncausal float16
8 16 512 128 noncausal float16
4 16 1024 128 noncausal float16
2 16 2048 128 noncausal float16
1 16 1000 128 noncausal float16
2 16 4096 128 noncausal bfloat16
SHAPES
}

# ada-d64.yaml: configs/pr-ada.yaml's settings (CG_ADA_TILES) on d64 PR shapes
ada_d64_config() {
  derive_config ada-d64 configs/pr-ada.yaml <<'SHAPES'
1 8 512 64 noncausal float16
4 16 512 64 noncausal float16
4 16 512 64 causal float16
8 16 512 64 noncausal float16
4 16 2048 64 noncausal float16
4 16 2048 64 causal float16
SHAPES
}

# bench/l4_sms.py on 56 SMs (an L4 has 58) for each kernel tree named (k-base,
# variants/NAME, ...) on the configs given: l4_sms_trees "CFG [CFG ...]" TREE ...
l4_sms_trees() {
  local cfgs=$1
  shift
  for k in "$@"; do
    local tag=${k#variants/}
    # shellcheck disable=SC2086
    timed timeout 200 python3 bench/l4_sms.py $cfgs --sms 56 --kdir ".carry/$k" \
      --out "$res/l4-sms-$tag.json" 2>&1 | grep -v "Deprecat" > "$res/l4-sms-$tag.txt"
    tail -4 "$res/l4-sms-$tag.txt"
    save
  done
}

# bench/l4_sms.py on 56 SMs for .carry/k-prev (the kernels before the causal orders) and
# kernels/ with 56 in place of %nsmid (the kernel reads the card's SM count, which a green
# context does not change), as .carry/k56: l4_sms_k56 CFG
l4_sms_k56() {
  mkdir -p .carry/k56 && cp kernels/*.cu .carry/k56/
  sed -i 's/asm("mov.u32 %0, %%nsmid;" : "=r"(sms));/sms = 56u;/' .carry/k56/attention.cu
  if [ "$(grep -c 'sms = 56u;' .carry/k56/attention.cu)" = 1 ]; then
    l4_sms_trees "$1" k-prev k56
  else
    echo "k56: the %nsmid line was not found: no partition run"
  fi
}

# .carry/variants/NAME against the base on the L4 path: configs/pr-ada.yaml (FA2 / cuDNN
# after it), ada-mid and ada-d64; archived as $out/ninth-NAME.tgz: ada_candidate NAME
ada_candidate() {
  ada_mid_config
  ada_d64_config
  ab "$1-ada" ".carry/variants/$1" configs/pr-ada.yaml
  ada_peers
  peer_table "$res/ab-$1-ada.json" "$res/sdpa-ada.json"
  ab "$1-mid" ".carry/variants/$1" "$res/ada-mid.yaml"
  ab "$1-d64" ".carry/variants/$1" "$res/ada-d64.yaml"
  tar czf "$out/ninth-$1.tgz" -C "$out" r && rm -rf "$res"
}

# The non-causal d64 shapes the eighth session drew the form rule from (rule_shapes, 23) and
# checked it on (fresh_shapes, 14), one per line for derive_config
rule_shapes() {
  cat <<'SHAPES'
8 16 512 64 noncausal float16
4 16 512 64 noncausal float16
6 16 512 64 noncausal float16
2 32 640 64 noncausal float16
1 32 768 64 noncausal float16
8 32 768 64 noncausal float16
8 16 896 64 noncausal float16
4 16 1024 64 noncausal float16
3 16 1024 64 noncausal float16
3 32 1024 64 noncausal float16
4 8 1024 64 noncausal float16
1 16 1152 64 noncausal float16
4 16 1152 64 noncausal float16
2 16 1280 64 noncausal float16
4 16 1280 64 noncausal float16
12 16 1280 64 noncausal float16
3 12 1536 64 noncausal float16
3 16 1536 64 noncausal float16
1 16 1792 64 noncausal float16
3 16 1792 64 noncausal float16
2 16 2500 64 noncausal float16
3 16 2560 64 noncausal float16
3 16 4096 64 noncausal float16
SHAPES
}
fresh_shapes() {
  cat <<'SHAPES'
6 12 1920 64 noncausal float16
3 32 2304 64 noncausal float16
6 12 1600 64 noncausal float16
8 24 3328 64 noncausal float16
10 32 960 64 noncausal float16
8 40 1472 64 noncausal float16
5 20 3328 64 noncausal float16
8 40 3328 64 noncausal float16
1 32 2816 64 noncausal float16
10 8 960 64 noncausal float16
16 32 1600 64 noncausal float16
16 16 512 64 noncausal float16
16 16 2048 64 noncausal float16
3 16 1601 64 noncausal float16
SHAPES
}

# hop-small.yaml: the PR config's settings on non-causal d64 grids of fewer 64-row CTAs than
# an H200 has SMs, past NAME_long_noncausal_from (1536)
hop_small_config() {
  derive_config hop-small configs/pr.yaml <<'SHAPES'
1 4 2048 64 noncausal float16
1 2 4096 64 noncausal float16
1 5 1536 64 noncausal float16
1 1 8192 64 noncausal float16
SHAPES
}

# hop-odd.yaml: the PR config's settings on non-causal d64 lengths past
# NAME_long_noncausal_from whose 64-row units split unevenly over a head's CTAs
hop_odd_config() {
  derive_config hop-odd configs/pr.yaml <<'SHAPES'
3 16 1601 64 noncausal float16
2 16 2500 64 noncausal bfloat16
1 32 3000 64 noncausal float16
4 16 1536 64 noncausal float16
2 16 4096 64 noncausal float16
8 16 2048 64 noncausal float16
SHAPES
}

# ours (an A/B's candidate p50) against cuDNN and FA2 (an sdpa_bench.py file): table AB SDPA
peer_table() {
  python3 - "$1" "$2" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
peers = {s["name"]: s for s in json.load(open(sys.argv[2]))["shapes"]}
print("| shape | base µs | kernels µs | TF/s | / cuDNN | / FA2 |")
print("| --- | --- | --- | --- | --- | --- |")
for s in r.get("shapes", []):
    ab, p = s.get("ab") or {}, peers.get(s["name"], {})
    b, c, fa, cd = ab.get("p50_base"), ab.get("p50_cand"), p.get("flash_us"), p.get("cudnn_us")
    if not ab:  # identical kernels: the gate timed one side (its p50 is both)
        b = c = (s.get("summary") or {}).get("p50")
    q = lambda x: f"{c / x:.2f}" if c and x else "—"
    if b and c:
        print(f"| {s['name']} | {b:.2f} | {c:.2f} | {s.get('tflops') or 0:.0f} | {q(cd)} | {q(fa)} |")
PY
}

# cuDNN and FA2 on a config's shapes (the independent harness: CUDA graphs of ~2 ms, 25% duty),
# into sdpa-NAME.json: peers NAME CONFIG
peers() {
  timed timeout 150 python3 bench/sdpa_bench.py "$2" --backends flash,cudnn --replay-ms 2 \
    --samples 30 --duty 0.25 --out "$res/sdpa-$1.json" > "$res/sdpa-$1.txt" 2>&1
}

# bench/fa2_tiles.py on CONFIG (FA2's own build .carry/fa2/LIB.so, default libfa2_tiles, at
# its H200 and L4 tiles, PyTorch's FA2 beside it), into fa2-NAME.json and .txt:
# fa2_tiles NAME CONFIG [LIB]
fa2_tiles() {
  timed timeout 150 python3 bench/fa2_tiles.py "$2" --lib ".carry/fa2/${3:-libfa2_tiles}.so" \
    --out "$res/fa2-$1.json" > "$res/fa2-$1.txt" 2>&1
  echo "== fa2 $1"; tail -8 "$res/fa2-$1.txt"
}

# exit 0 when every A/B result given passed with no shape worse than pass: no_regression FILE...
no_regression() {
  python3 -c '
import json, sys
for f in sys.argv[1:]:
    r = json.load(open(f))
    v = [s.get("verdict") for s in r.get("shapes", [])]
    if not (r.get("passed") and v and set(v) <= {"pass", "improvement"}):
        sys.exit(1)
' "$@"
}

# exit 0 when every A/B result given passed and no shape is slower: each verdict pass or
# improvement, or inconclusive on the faster side (past -2% without the bound to say so;
# issue 40's step rule, fifteenth session): no_slower FILE...
no_slower() {
  python3 -c '
import json, sys
for f in sys.argv[1:]:
    r = json.load(open(f))
    sh = r.get("shapes", [])
    faster = lambda s: ((s.get("ab") or {}).get("ratio") or 1) < 1  # no ratio: not faster
    ok = lambda s: s.get("verdict") in ("pass", "improvement") or (
        s.get("verdict") == "inconclusive" and faster(s))
    if not (r.get("passed") and sh and all(ok(s) for s in sh)):
        sys.exit(1)
' "$@"
}

# exit 0 when some A/B result given has a shape the gate called an improvement (with
# IN=TEXT, a shape whose name holds TEXT): [IN=TEXT] improved FILE...
improved() {
  python3 -c 'import json, sys
want = sys.argv[1]
sys.exit(0 if any(s.get("verdict") == "improvement" and want in s["name"]
                  for f in sys.argv[2:] for s in json.load(open(f))["shapes"]) else 1)' "${IN:-}" "$@"
}

# the GPU tests (the adversarial ones left out) into gpu-tests.log, its summary printed
gpu_tests() {
  CI_GATE_GOLDEN_DIR=$PWD/tests/golden CI_GATE_BIN=$bin timed timeout 150 "$it_tests" --ignored \
    --test-threads=1 gpu:: --skip adversarial_gpu:: > "$res/gpu-tests.log" 2>&1
  grep -E "test result|FAILED|panicked" "$res/gpu-tests.log" | head -4
}

# the GPU tests without the attacks and the tools' tests (sanitize, ncu) into gpu-tests.log,
# LIMIT seconds at most, its summary printed: gpu_tests_only LIMIT
gpu_tests_only() {
  CI_GATE_GOLDEN_DIR=$PWD/tests/golden CI_GATE_BIN=$bin timed timeout "$1" "$it_tests" --ignored \
    --test-threads=1 gpu:: --skip adversarial_gpu:: --skip gpu_tools:: > "$res/gpu-tests.log" 2>&1
  grep -E "test result|FAILED|panicked" "$res/gpu-tests.log" | head -6
}

# the attack suite (adversarial_gpu::, every attack must fail closed) with kernels/ into
# attacks.log, its summary printed, LIMIT seconds at most (it took 299 s in issue 36's session,
# 330 s on 2026-12-04): attack_suite LIMIT
attack_suite() {
  CI_GATE_GOLDEN_DIR=$PWD/tests/golden CI_GATE_BIN=$bin timed timeout "$1" "$it_tests" --ignored \
    --test-threads=1 adversarial_gpu:: > "$res/attacks.log" 2>&1
  grep -E "test result|FAILED|panicked" "$res/attacks.log" | head -4
}

# the early first wait on im3d (variants/im3de) against .carry/k-base on the PR config, the
# d64 mid, long and d128 mid shapes (ab-early*.json); $r names the four results: early_abs
early_abs() {
  d64mid_config
  long_config
  mid2_config
  ab early .carry/variants/im3de configs/pr.yaml
  ab early-mid .carry/variants/im3de "$res/d64mid.yaml"
  ab early-long .carry/variants/im3de "$res/long.yaml"
  ab early-mid2 .carry/variants/im3de "$res/mid2.yaml"
  r="$res/ab-early.json $res/ab-early-mid.json $res/ab-early-long.json $res/ab-early-mid2.json"
}

# KDIR against the base on the PR config, the d64 mid shapes and the long shapes
# (ab-NAME.json, ab-NAME-mid.json, ab-NAME-long.json), the mode's `save` after each config:
# d64_abs NAME KDIR
d64_abs() {
  d64mid_config
  long_config
  ab "$1" "$2" configs/pr.yaml
  save
  ab "$1-mid" "$2" "$res/d64mid.yaml"
  ab "$1-long" "$2" "$res/long.yaml"
  save
}

# bench/kernel_check.py on kernels/ without its timings (the golden and random N(0,1) cases;
# --ada: the L4 path's forms too) into kc.json / kc.log (kc-ada.* with --ada), its summary
# printed: kernel_check_only [--ada]
kernel_check_only() {
  local tag=kc${1:+-ada}
  timed timeout "${KC_T:-160}" python3 bench/kernel_check.py "$@" --no-timing --out "$res/$tag.json" \
    > "$res/$tag.log" 2>&1
  grep -E "rand|FAIL|FAILURE|passed|failed" "$res/$tag.log" | tail -3 | cut -c1-200
}

# kernel_check_only --ada with kernels/attention.cu = each .carry/variants/V in turn (into
# kc-ada-V.log and .json; the mode's `save` after each), then the base's again; with
# KC_HOPPER=1 kernel_check_only without --ada (the device's own forms; kc-V.log and .json):
# [KC_HOPPER=1] kernel_check_variants V ...
kernel_check_variants() {
  local ada=--ada tag=kc-ada
  if [ "${KC_HOPPER:-0}" = 1 ]; then ada="" tag=kc; fi
  for v in "$@"; do
    cp ".carry/variants/$v/attention.cu" kernels/attention.cu
    kernel_check_only $ada
    mv "$res/$tag.log" "$res/$tag-$v.log"
    mv "$res/$tag.json" "$res/$tag-$v.json" 2>/dev/null
    save
  done
  cp "$base/attention.cu" kernels/attention.cu
}

# bench/kept_probe.py: .carry/variants/V against the base on N(0,1) and the mixture (--ada:
# the L4 path), into probe-V[-ada].json and .txt: kept_probe V [--ada]
kept_probe() {
  local tag=probe-$1${2:+-ada}
  timed timeout 150 python3 bench/kept_probe.py "$base" ".carry/variants/$1" ${2:+"$2"} \
    --out "$res/$tag.json" 2>&1 | grep -v "^ \|Deprecat" | tee "$res/$tag.txt"
}

# configs/CFG.yaml's baseline re-recorded with kernels/ for REASON, the baselines copied to
# the results, then CFG's stored-only A/A; the mode's `save` after each:
# [PROCESSES=N RECORD_LIMIT=S] record_with_kernels CFG REASON
# 5 processes by default, `baseline update`'s own (sessions 11-21 used 3, which cost every
# verdict the stored baseline decides a second stage on most shapes: PERF.md, 2026-12-04,
# twenty-second session); 255 s for pr on an H200.
record_with_kernels() {
  timed timeout "${RECORD_LIMIT:-330}" "$bin" baseline update --processes "${PROCESSES:-5}" --config "configs/$1.yaml" \
    --reason "$2" > "$res/record-$1.txt" 2>&1
  tail -2 "$res/record-$1.txt" | cut -c1-200
  mkdir -p "$res/baselines" && cp -r baselines/. "$res/baselines/"
  save
  stored_aa "$1"
  save
}

# The gate's A/A of the L4 path (main's kernels on both sides, so one side timed) on pr-ada
# and ada-d64 ($res/ada-d64.yaml), between two runs of a peer timing FN (called with 1, then
# 2), the mode's `save` after each step: ada_aa_between FN
ada_aa_between() {
  "$1" 1
  save
  ab aa-ada .carry/k-base configs/pr-ada.yaml
  ab aa-d64 .carry/k-base "$res/ada-d64.yaml"
  save
  "$1" 2
  save
}

# FA2 and cuDNN on configs/pr-ada.yaml's shapes (the independent harness), into sdpa-ada.json
ada_peers() {
  peers ada configs/pr-ada.yaml
}

# the seventh session's A/B of kernels/ against the base: the long shapes (with cuDNN / FA2
# after them), odd lengths (hop-odd.yaml), the PR config
seventh_ab() {
  long_config
  hop_odd_config
  ab step-long kernels "$res/long.yaml"
  peers long "$res/long.yaml"
  peer_table "$res/ab-step-long.json" "$res/sdpa-long.json"
  ab step-odd kernels "$res/hop-odd.yaml"
  ab step-pr kernels configs/pr.yaml
}

# compute-sanitizer on configs/sanitize.yaml and bench/kernel_check.py on kernels/, the results
# so far archived as $out/NAME.tgz, then the GPU tests (their own archive): kernel_checks NAME
kernel_checks() {
  timed timeout 150 "$bin" sanitize --kernels kernels > "$res/san.txt" 2>&1
  grep -E "sanitize:|finding" "$res/san.txt" | head -4
  timed timeout 150 python3 bench/kernel_check.py --no-timing --out "$res/kc.json" > "$res/kc.log" 2>&1
  grep -E "rand|FAIL|FAILURE|passed|failed" "$res/kc.log" | tail -4 | cut -c1-200
  tar czf "/tmp/$1.tgz" -C "$out" r && rm -rf "$res"
  bash bench/issue36_device.sh tests 2>&1 | grep -E "test result|FAILED|panicked|rc=" | head -8
  mv "/tmp/$1.tgz" "$out"/
}

# a stored-only A/A (the gate against this card's stored baseline of CONFIG): stored_aa CONFIG
# The PR config as a pull request runs it (peers, the stored baseline; the A/B where KDIR's
# attention.cu differs from the base's), its phases and stages from the results file, an empty
# compile cache first for cold: pr_wall NAME BINARY BASELINES cold|warm KDIR (the mode's save
# after it; CI_GATE_CACHE_DIR set by the caller)
pr_wall() {
  [ "$4" = cold ] && rm -rf "$CI_GATE_CACHE_DIR"
  timed timeout 150 "$2" local --config configs/pr.yaml --baselines "$3" --base-kernels "$base" \
    --kernels "$5" --out "$res/wall-$1.json" > "$res/wall-$1.txt" 2>&1
  grep -E "PASS|FAIL" "$res/wall-$1.txt" | tail -1 | cut -c1-160
  python3 - "$res/wall-$1.json" "$1" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
t = r["timing"]
keys = ("total_s", "setup_s", "probes_s", "parity_s", "measure_s", "peers_s", "drift_s")
print(sys.argv[2] + ": " + ", ".join(f"{k[:-2]} {t.get(k, 0):.1f}" for k in keys))
m = [(s.get("measurement") or {}) for s in r.get("shapes", [])]
print(f"  {sum(1 for x in m if x.get('extra_rounds'))} of {len(m)} shapes took a second stage; "
      "rounds " + " ".join(str(x.get("rounds")) for x in m) + "; verdicts "
      + " ".join(str(s.get("verdict")) for s in r.get("shapes", [])))
PY
  save
}

# each shape of a stored-only A/A (stored-CFG.json): its verdict, the witness's control and
# candidate µs, their shift and limit: shifts CFG
shifts() {
  python3 - "$res/stored-$1.json" <<'PY'
import json, sys
for s in json.load(open(sys.argv[1]))["shapes"]:
    u = (s.get("measurement") or {}).get("unwitnessed") or {}
    f = lambda k: "-" if u.get(k) is None else f"{u[k]:.1f}"
    print(f"  {s['name']:<28} {s.get('verdict'):<12} control/c {f('control_us')}/{f('candidate_us')} µs, shift {f('shift_us')} over {u.get('units')} (limit {f('limit_us')}); through control/c {f('control_through_checks_us')}/{f('candidate_through_checks_us')}, shift {f('through_checks_shift_us')} {s.get('error') or ''}"[:400])
PY
}

# the split d128 tile (the L4 path) at 4, 6 and 8 CTAs on the busiest SM, kernels/ against
# .carry/variants/nolnc (NAME on every non-causal d128 launch): the gate's A/B, ab-tail-rule3
tail_rule3() {
  derive_config ada-cross3 configs/pr-ada.yaml <<'SHAPES'
16 16 256 128 noncausal float16
24 16 256 128 noncausal float16
32 16 256 128 noncausal float16
SHAPES
  BASE=.carry/variants/nolnc ab tail-rule3 kernels "$res/ada-cross3.yaml"
}

# the thirty-first session's H200 work: stored-only A/As of `pr` and `pr-ada` with each
# shape's shift against the control, then tail_rule3; the mode's `save` after each
h200_witness_and_tail() {
  for c in pr pr-ada; do
    stored_aa "$c"
    shifts "$c"
    save
  done
  tail_rule3
  save
}

# ncu of one hot launch (inputs in L2, as the PR config's `cache: hot` times) of ours and of
# PyTorch's CUDNN_ATTENTION at b4h16s512d64, with ncu's options NCU_ARGS (an array), into
# $res/{ours,cudnn}-hot.ncu-rep and ncu-{ours,cudnn}-hot.log: ncu_b4h16_hot
ncu_b4h16_hot() {
  timed timeout 150 ncu --clock-control none --cache-control none "${NCU_ARGS[@]}" \
    --kernel-name regex:^attention_fwd_ --launch-count 1 --export "$res/ours-hot" --force-overwrite \
    "$bin" kernel-run --config configs/pr.yaml --kernels kernels --harness kernels \
    --shape b4h16s512d64_f16 --no-reference > "$res/ncu-ours-hot.log" 2>&1
  timed timeout 150 ncu --clock-control none --cache-control none "${NCU_ARGS[@]}" \
    --kernel-name regex:'sdpa|fmha|cudnn|attn' --launch-skip 5 --launch-count 1 --export "$res/cudnn-hot" --force-overwrite \
    python3 -c "
import torch, torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
q, k, v = (torch.randn(4, 16, 512, 64, device='cuda', dtype=torch.float16) for _ in range(3))
with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
    for _ in range(8):
        F.scaled_dot_product_attention(q, k, v)
torch.cuda.synchronize()
" > "$res/ncu-cudnn-hot.log" 2>&1
}

# b4h16s512d64 under ncu, one launch (inputs in L2, clocks as they are) of each
# .carry/ablate/NAME in turn, REPS rounds (default 4), into $res/ablate.csv; then each one's
# median duration and its change against `base`: ablate_ncu NAME...
ablate_ncu() {
  local r v
  for r in $(seq 1 "${REPS:-4}"); do
    for v in "$@"; do
      timeout 40 ncu --clock-control none --cache-control none --metrics gpu__time_duration.sum --csv \
        --kernel-name regex:^attention_fwd_ --launch-count 1 \
        "$bin" kernel-run --config configs/pr.yaml --kernels ".carry/ablate/$v" --harness kernels \
        --shape b4h16s512d64_f16 --no-reference 2>&1 | grep gpu__time_duration \
        | sed "s/^/$v,$r,/" >> "$res/ablate.csv"
    done
  done
  python3 - "$res/ablate.csv" <<'PY'
import csv, statistics, sys
t, unit = {}, ""
for row in csv.reader(open(sys.argv[1])):
    t.setdefault(row[0], []).append(float(row[-1].replace(",", "")))
    unit = row[-2]
b = statistics.median(t.get("base", [float("nan")]))
for v, xs in t.items():
    m = statistics.median(xs)
    print(f"{v:10} n={len(xs)} median {m:9.2f} {unit}  {100 * (m / b - 1):+6.1f}%  all {sorted(xs)}")
PY
}

# issue 40 item 3 where the card is an H200: its `pr` and `pr-ada` re-recorded with
# kernels/ and a stored-only A/A each, the results saved (the fortieth session's modes):
# h200_records
FORTIETH_REASON="NAME_small by cost on the L4 path's d64 pair (host), kernels of d93f3f0 (issue 40 item 3)"
h200_records() {
  case "$gpu" in
  *H200*)
    REASON=$FORTIETH_REASON record_baselines
    if declare -F save > /dev/null; then save; fi
    ;;
  esac
}

# issue 40 item 3 on an H200, one config: record_or_judge CFG. record_one; where `baseline
# update` refuses a shape as slower than the stored record, the gate's A/B of the stored
# record's kernels (.carry/k-h200rec: 53cd97c's, both H200 files' commit)
# against kernels/ on CFG in the same call, and only where that shows no regression the kept
# measurements recorded with --force, the A/B named in the reason (the thirty-second session's
# case: the card, not the step), then a stored-only A/A
record_or_judge() {
  local cfg=$1 from
  REASON=$FORTIETH_REASON record_one "$cfg"
  save
  if grep -q "refusing to record (pass --force" "$res/record-$cfg.txt"; then
    grep -A3 "refusing to record" "$res/record-$cfg.txt" | cut -c1-300
    BASE=.carry/k-h200rec ab_brief "rec-$cfg" kernels "configs/$cfg.yaml"
    from=$(grep -o -- "--from [^ ]*" "$res/record-$cfg.txt" | tr '\n' ' ')
    if ! no_regression "$res/ab-rec-$cfg.json"; then
      echo "the A/B shows a regression: $cfg not recorded"; return 1
    elif [ -z "$from" ]; then
      echo "no kept measurements named: $cfg not recorded"; return 1
    fi
    # shellcheck disable=SC2086  # $from is the --from words the refusal printed
    timed timeout 60 "$bin" baseline update --config "configs/$cfg.yaml" $from --force \
      --reason "$FORTIETH_REASON; forced: this H200 reads a shape slower than the record of 53cd97c's kernels, while the same call's A/B of those kernels against these shows no regression (the card, not the step)" \
      > "$res/record-$cfg-forced.txt" 2>&1
    tail -3 "$res/record-$cfg-forced.txt" | cut -c1-200
  fi
  stored_aa "$cfg"
  cp -r baselines "$res/baselines"
  save
}

# bench/small_l4.py on 56 SMs with ARGS (--shape B,H,S ...), into $res/NAME.json and .txt,
# printed and saved: small_l4 NAME TIMEOUT [ARGS...]
small_l4() {
  local name=$1 limit=$2
  shift 2
  timed timeout "$limit" python3 bench/small_l4.py --sms 56 "$@" --out "$res/$name.json" 2>&1 \
    | grep -v "Deprecat" > "$res/$name.txt"
  cat "$res/$name.txt"
  save
}

# the ncu metrics of the fiftieth session's modes (one unit for the probe and the kernels: the
# HMMA pipe's active cycles, shared memory's wavefronts, issue slots): metrics=$(ncu_metrics)
ncu_metrics() {
  local m=gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second
  m=$m,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active
  m=$m,smsp__issue_active.avg.pct_of_peak_sustained_active
  m=$m,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum.pct_of_peak_sustained_elapsed
  echo "$m,smsp__inst_executed_pipe_tensor_op_hmma.sum,smsp__inst_executed.sum"
}

# those metrics of $res/PREFIX-TAG.csv (ncu --csv --page raw: names, units, then one row of
# values) side by side, a column a TAG; PREFIX is NCU_PREFIX (default ncu); with NCU_STALLS=1
# also the cycles (GPC elapsed: the clock; SM active), warps active, pipe shares and every
# stall ratio the CSVs hold (stalls per issue):
# [NCU_PREFIX=P] [NCU_STALLS=1] ncu_table TAG...
ncu_table() {
  python3 - "$res" "$(ncu_metrics)" "${NCU_PREFIX:-ncu}" "${NCU_STALLS:-0}" "$@" <<'PY'
import csv, sys
res, keys, prefix, stalls, tags = sys.argv[1], sys.argv[2].split(","), sys.argv[3], sys.argv[4] == "1", sys.argv[5:]
cols = {}
for tag in tags:
    try:
        r = [x for x in csv.reader(open(f"{res}/{prefix}-{tag}.csv")) if x]
        hdr = next(i for i, x in enumerate(r) if "gpu__time_duration.sum" in x)
        vals = next(x for x in r[hdr + 1:] if x and x[0].isdigit())
        cols[tag] = dict(zip(r[hdr], vals))
    except (OSError, StopIteration) as e:
        cols[tag] = {}
        print(f"{tag}: no metrics ({e})")
if stalls:
    have = set().union(*[c.keys() for c in cols.values()])
    keys += ["smsp__average_warp_latency_per_inst_issued.ratio"]
    keys += sorted(k for k in have if k in ("gpc__cycles_elapsed.max", "sm__cycles_active.avg",
                                            "sm__warps_active.avg.pct_of_peak_sustained_active")
                   or any(p in k for p in ("pipe_tensor", "pipe_xu", "pipe_fma"))
                   and k.endswith("pct_of_peak_sustained_active"))
    keys += sorted(k for k in have if "issue_stalled" in k and k.endswith("per_issue_active.ratio"))
    # shared memory's share (MemoryWorkloadAnalysis where the call asked for it)
    keys += sorted(k for k in have if k not in keys and "pct_of_peak" in k
                   and any(p in k for p in ("l1tex__data_bank", "mem_shared", "l1tex__throughput")))
print(f"{'metric':76} " + " ".join(f"{t:>14}" for t in cols))
for k in keys:
    print(f"{k:76} " + " ".join(f"{cols[t].get(k, '-'):>14}" for t in cols))
PY
}

# the card's name into $gpu, printed: card
card() {
  gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
  echo "== $gpu"
}

# issue 40's misses with our kernel timed as the harness times cuDNN / FA2 (bench/warm_alike.py:
# the same q every call, one timer for the three), into warm-hopper.* and warm-ada.*
warm_alike() {
  timed timeout 120 python3 bench/warm_alike.py --shape 4,16,512,64,short_noncausal \
    --out "$res/warm-hopper.json" > "$res/warm-hopper.txt" 2>&1
  cat "$res/warm-hopper.txt"
  # (b4h16s512d64 causal on the form the host picks on 132 SMs since the thirty-seventh session)
  timed timeout 200 python3 bench/warm_alike.py --ada --shape 2,16,4096,128 --shape 4,16,512,64 \
    --shape 8,16,512,64 --shape 4,16,512,64,causal,causal --out "$res/warm-ada.json" \
    > "$res/warm-ada.txt" 2>&1
  cat "$res/warm-ada.txt"
}

# GPU tests of the integration-test binary by name, into $res/LOG, LIMIT seconds at most
# (a name of its own: as a second `gpu_tests` it hid the one above from every mode that runs
# all the GPU tests): gpu_tests_named LOG LIMIT TEST...
gpu_tests_named() {
  local log=$1 limit=$2
  shift 2
  CI_GATE_GOLDEN_DIR=$PWD/tests/golden CI_GATE_BIN=$bin timed timeout "$limit" "$it_tests" --ignored \
    --test-threads=1 --nocapture "$@" > "$res/$log" 2>&1
}

# issue 40's nightly rows (8k and 16k keys): main's kernels against themselves (one side
# timed), then cuDNN and FA2 by the independent harness, the table; the mode's `save` between
nightly_table() {
  derive_config nightly-long configs/pr.yaml <<'SHAPES'
1 16 8192 64 noncausal float16
1 16 8192 64 causal float16
1 8 16384 64 noncausal float16
1 8 16384 128 noncausal float16
1 8 16384 128 causal float16
1 16 8192 128 noncausal bfloat16
SHAPES
  ab nightly-aa .carry/k-base "$res/nightly-long.yaml"
  save
  peers nightly-long "$res/nightly-long.yaml"
  peer_table "$res/ab-nightly-aa.json" "$res/sdpa-nightly-long.json"
}

stored_aa() {
  echo "== stored-only A/A, $1"
  timed timeout 150 "$bin" local --no-base --no-peers --no-profile --config "configs/$1.yaml" \
    --out "$res/stored-$1.json" > "$res/stored-$1.txt" 2>&1
  grep -E "PASS|FAIL" "$res/stored-$1.txt" | tail -1 | cut -c1-200
}

# one config's stored baseline re-recorded with kernels/ (3 processes), into
# $res/record-CFG.txt, its last lines printed; the commit from .carry/commit where carried:
# record_one CFG
record_one() {
  [ -f .carry/commit ] && export GITHUB_SHA="$(cat .carry/commit)"
  echo "== re-record $1"
  timed timeout 240 "$bin" baseline update --processes "${PROCESSES:-3}" --config "configs/$1.yaml" \
    --reason "${REASON:-kernel step (issue 40)}" > "$res/record-$1.txt" 2>&1
  tail -3 "$res/record-$1.txt" | cut -c1-200
}

# the stored baselines of ${CFGS:-pr pr-ada} re-recorded (record_one), each followed by a
# stored-only A/A: record_baselines
record_baselines() {
  for cfg in ${CFGS:-pr pr-ada}; do
    record_one "$cfg"
    stored_aa "$cfg"
  done
  cp -r baselines "$res/baselines"
}

# mid2.yaml: the PR config's settings on non-causal d128 lengths from 512 to 2048 keys, where
# the choice between 128- and 192-key tiles (wide_tiles) is close, and 3880 (a narrowed first
# tile and a masked last one)
mid2_config() {
  derive_config mid2 configs/pr.yaml <<'SHAPES'
8 16 512 128 noncausal float16
6 16 768 128 noncausal float16
4 16 1000 128 noncausal float16
4 16 1024 128 noncausal float16
4 16 1280 128 noncausal float16
3 16 1408 128 noncausal float16
2 16 1792 128 noncausal float16
2 16 2048 128 noncausal float16
2 16 3880 128 noncausal float16
SHAPES
}

# d64mid.yaml: the PR config's settings on d64 shapes of 512 ... 1280 keys, both masks,
# around NAME's and the even split's grids (eleventh session)
d64mid_config() {
  derive_config d64mid configs/pr.yaml <<'SHAPES'
2 16 1024 64 causal float16
2 16 1024 64 noncausal float16
4 16 768 64 noncausal float16
3 16 1280 64 causal float16
16 16 512 64 noncausal float16
6 16 512 64 noncausal float16
1 16 1024 64 causal float16
SHAPES
}

# quad.yaml: the PR config's settings on non-causal d64 grids of 132 ... 640 64-row units
# below NAME_long_from (1536 keys): where a grid of one unit per CTA at four CTAs per SM is
# about one wave of an H200's 132 SMs (eighteenth session)
quad_config() {
  derive_config quad configs/pr.yaml <<'SHAPES'
2 16 1024 64 noncausal float16
4 8 1024 64 noncausal float16
3 16 640 64 noncausal float16
2 16 768 64 noncausal float16
6 8 512 64 noncausal float16
2 32 512 64 noncausal float16
8 16 256 64 noncausal float16
4 16 512 64 noncausal bfloat16
2 16 1280 64 noncausal float16
SHAPES
}

# short-check.yaml: the PR config's settings on non-causal d64 shapes the short form's rule
# was not drawn from (eighteenth session): on 132 SMs it takes NAME_short_noncausal for the
# first six and keeps the even split for [2,16,640] and [1,32,640] and NAME for [8,16,384]
# (a tie; src/gpu/device.rs pins these choices)
short_check_config() {
  derive_config short-check configs/pr.yaml <<'SHAPES'
5 16 512 64 noncausal float16
12 16 256 64 noncausal float16
4 16 384 64 noncausal float16
3 16 512 64 noncausal float16
10 16 256 64 noncausal float16
6 8 513 64 noncausal bfloat16
2 16 640 64 noncausal float16
1 32 640 64 noncausal float16
8 16 384 64 noncausal float16
SHAPES
}

# the tools' GPU tests (`ci-gate sanitize`, ncu) into $res/gpu-tools-tests.log
gpu_tools_tests() {
  CI_GATE_GOLDEN_DIR=$PWD/tests/golden CI_GATE_BIN=$bin timed timeout 240 "$it_tests" --ignored \
    --nocapture --test-threads=1 gpu_tools:: > "$res/gpu-tools-tests.log" 2>&1
  grep -E "test result|FAILED|panicked" "$res/gpu-tools-tests.log" | head -4
}

# ada-causal.yaml: causal d128 at 256, 1000 and 1024 keys, and non-causal d128 at 319 (the
# split tile's last) and 320 keys (NAME's first)
ada_causal_config() {
  derive_config ada-causal configs/pr-ada.yaml <<'SHAPES'
16 16 256 128 causal float16
4 16 1024 128 causal float16
1 16 1000 128 causal bfloat16
8 16 319 128 noncausal bfloat16
8 16 320 128 noncausal float16
SHAPES
}

# ada-cross.yaml: non-causal d128 at 256 and 319 keys with three ([12,16,256], [8,16,319]),
# four ([16,16,256]) and five ([20,16,256]) of the split tile's CTAs on the busiest SM
tail_cross_config() {
  derive_config ada-cross configs/pr-ada.yaml <<'SHAPES'
16 16 256 128 noncausal float16
12 16 256 128 noncausal float16
20 16 256 128 noncausal float16
8 16 319 128 noncausal bfloat16
SHAPES
}

# The host's tail rule as the gate's A/B (ab-tail-rule.json): kernels/ against
# .carry/variants/nolnc (no NAME_long_noncausal: NAME on every non-causal d128 launch) on
# ada-cross, so what differs is the form this binary picks: three CTAs on the busiest SM keep
# NAME (the same kernel: a pass), four and five take the split tile
tail_rule_ab() {
  tail_cross_config
  BASE=.carry/variants/nolnc ab tail-rule kernels "$res/ada-cross.yaml"
}

# kernels/ as an L4-path step: kernel_check.py --ada, then the L4 path under compute-sanitizer
# (configs/sanitize-ada.yaml), the mode's `save` after each: ada_step_checks
ada_step_checks() {
  kernel_check_only --ada
  save
  timed timeout 200 "$bin" sanitize --config configs/sanitize-ada.yaml --kernels kernels \
    > "$res/san-ada.txt" 2>&1
  grep -E "sanitize:|finding" "$res/san-ada.txt" | head -4
  save
}

case $what in
tenth)
  # 2026-12-03, tenth session, first form (one d128 entry choosing 128- or 192-key tiles per
  # launch, the last 192-key tile narrowed; .carry/variants/wide2: wide_tiles() weighing it):
  # kernels/ against main's (.carry/k-base) on the PR config and the long shapes, cuDNN /
  # FA2 after each, the d128 lengths around the tile choice. Kept as run; superseded by
  # tenth-step.
  long_config
  mid2_config
  ab tail-pr kernels configs/pr.yaml
  peers pr configs/pr.yaml
  peer_table "$res/ab-tail-pr.json" "$res/sdpa-pr.json"
  ab tail-long kernels "$res/long.yaml"
  peers long "$res/long.yaml"
  peer_table "$res/ab-tail-long.json" "$res/sdpa-long.json"
  ab tail-mid2 kernels "$res/mid2.yaml"
  BASE=$PWD/kernels ab wide2-mid2 .carry/variants/wide2 "$res/mid2.yaml"
  tar czf "$out/tenth.tgz" -C "$out" r && rm -rf "$res"
  ;;
tenth-step|tenth-final)
  # 2026-12-03, tenth session, against main's kernels (.carry/k-base). tenth-step (call 5):
  # the sm_90a d128 kernel as NAME on 128-key tiles and NAME_long_noncausal on 192-key ones
  # (non-causal from 768 keys, a first tile of 64 keys where the keys end at most 64 into the
  # last one). tenth-final (call 6): NAME as shipped (byte-identical SASS) and
  # NAME_long_noncausal from 1408 keys.
  # 1. the PR config, the long shapes (cuDNN / FA2 after each), the d128 lengths from 512 to
  #    3880 and 864 (where the tile model prefers 128-key tiles by 2.1%);
  # 2. if no A/B has a regression: sanitize (configs/sanitize.yaml: the new form narrowed and
  #    not), kernel_check.py, pr re-recorded with a stored-only A/A, a stored-only A/A of
  #    pr-ada, the GPU tests.
  long_config
  mid2_config
  printf '2 16 864 128 noncausal float16\n' | derive_config m864 configs/pr.yaml
  python3 - "$res/mid2.yaml" "$res/m864.yaml" <<'PY'
import sys, yaml
a, b = (yaml.safe_load(open(f)) for f in sys.argv[1:])
a["shapes"] += b["shapes"]
yaml.safe_dump(a, open(sys.argv[1], "w"), sort_keys=False)
PY
  ab step-pr kernels configs/pr.yaml
  peers pr configs/pr.yaml
  peer_table "$res/ab-step-pr.json" "$res/sdpa-pr.json"
  ab step-long kernels "$res/long.yaml"
  peers long "$res/long.yaml"
  peer_table "$res/ab-step-long.json" "$res/sdpa-long.json"
  ab step-mid2 kernels "$res/mid2.yaml"
  if no_regression "$res/ab-step-pr.json" "$res/ab-step-long.json" "$res/ab-step-mid2.json"; then
    timed timeout 150 "$bin" sanitize --kernels kernels > "$res/san.txt" 2>&1
    grep -E "sanitize:|finding" "$res/san.txt" | head -4
    timed timeout 120 python3 bench/kernel_check.py --no-timing --out "$res/kc.json" > "$res/kc.log" 2>&1
    grep -E "rand|FAIL|FAILURE|passed|failed" "$res/kc.log" | tail -4 | cut -c1-200
    KEEP_RES=1 REASON="${REASON:-kernel step (issue 40)}" CFGS=pr bash "$0" record
    stored_aa pr-ada
    tar czf "/tmp/$what.tgz" -C "$out" r && rm -rf "$res"
    bash bench/issue36_device.sh tests 2>&1 | grep -E "test result|FAILED|panicked|rc=" | head -8
    mv "/tmp/$what.tgz" "$out"/
  else
    echo "== not recorded: a step A/B has a regression"
    tar czf "$out/$what.tgz" -C "$out" r && rm -rf "$res"
  fi
  ;;
tenth-record)
  # After tenth-final (whose archive was lost when the session's device time ran out): the
  # kept kernels (3967920's) under compute-sanitizer, pr re-recorded with its stored-only A/A,
  # a stored-only A/A of pr-ada, the GPU tests. The results so far are archived after every
  # step ($out/tenth-record.tgz), so a call cut short keeps what it finished.
  save() { tar czf "$out/tenth-record.tgz" -C "$out" r; }
  timed timeout 200 "$bin" sanitize --kernels kernels > "$res/san.txt" 2>&1
  grep -E "sanitize:|finding" "$res/san.txt" | head -4
  save
  KEEP_RES=1 REASON="${REASON:-kernel step (issue 40)}" CFGS=pr bash "$0" record
  save
  stored_aa pr-ada
  save
  # the GPU tests as issue36_device.sh runs them, but into $res: that script archives and
  # then empties $out, which took this mode's archive with it (eleventh session, call 3)
  CI_GATE_GOLDEN_DIR=$PWD/tests/golden CI_GATE_BIN=$bin timed timeout 400 "$it_tests" --ignored \
    --nocapture --test-threads=1 gpu:: --skip adversarial_gpu:: --skip gpu_tools:: \
    > "$res/gpu-tests.log" 2>&1
  grep -E "test result|FAILED|panicked" "$res/gpu-tests.log" | head -8
  save && rm -rf "$res"
  # the GPU tests of the tools (sanitize, ncu) too, unless SKIP_TOOLS=1 (then run gpu-tools)
  [ -n "${SKIP_TOOLS:-}" ] || bash "$0" gpu-tools
  ;;
gpu-tools)
  # the GPU tests of the tools (`ci-gate sanitize`, ncu) into $out/gpu-tools.tgz
  gpu_tools_tests
  tar czf "$out/gpu-tools.tgz" -C "$out" r && rm -rf "$res"
  ;;
eleventh)
  # 2026-12-03, eleventh session: the d64 kernel at 512 keys is latency-bound (ncu,
  # eleventh-profile: tensor pipe 34%, MUFU 36%, the first Q / K waits ~10% of the samples):
  # more CTAs per SM with one 64-row unit each instead of two CTAs doing two units one after
  # the other. .carry/variants/{q4,q4n,t3}: NAME d64 as CG_ATTN_WS_KERNEL with 64-key tiles,
  # q4: 4 CTAs per SM, 104 consumer registers, softmax/PV overlap (48 bytes spilled); q4n:
  # the same without the overlap (no spill); t3: 3 CTAs per SM, 136 registers, overlap.
  # Each against main's kernels on the PR config and on d64 shapes of 512 ... 1280 keys.
  d64mid_config
  for v in ${VARIANTS:-q4n q4 t3}; do
    ab "$v" ".carry/variants/$v" configs/pr.yaml
    ab "$v-mid" ".carry/variants/$v" "$res/d64mid.yaml"
  done
  tar czf "$out/eleventh.tgz" -C "$out" r && rm -rf "$res"
  ;;
twelfth-poly)
  # 2026-12-03, twelfth session: at d64 the MUFU's ex2 (16 per clock per SM) is as busy as the
  # tensor pipe (ncu, eleventh session: 36% and 34% at b4h16s512d64, 56% and 54% at 2048 keys):
  # every PE-th n-block of a tile's softmax takes 2^x by a degree-3 polynomial on the FMA and
  # integer pipes instead (.carry/variants/p25: PE = 4, d64 wgmma kernels only; p50: PE = 2;
  # p25t: p25 with two accumulators for the row sums; ep25: p25 with the early-QK^T producer
  # wait; early: the wait alone; a25 / a50: the mma.sync kernels, PE = 4 / 2, on the L4 path).
  # Each against main's kernels; archived after each ($out/twelfth-poly.tgz).
  save() { tar czf "$out/twelfth-poly.tgz" -C "$out" r; }
  d64mid_config
  ada_d64_config
  for v in ${VARIANTS:-p25 early p50 ep25 p25t}; do
    ab "$v" ".carry/variants/$v" configs/pr.yaml
    ab "$v-mid" ".carry/variants/$v" "$res/d64mid.yaml"
    save
  done
  for v in ${ADA_VARIANTS:-a25 a50}; do
    ab "$v-ada" ".carry/variants/$v" configs/pr-ada.yaml
    ab "$v-d64" ".carry/variants/$v" "$res/ada-d64.yaml"
    save
  done
  ;;
twelfth-x)
  # 2026-12-03, twelfth session, against .carry/variants/early (the producer's early wait,
  # call 1: all pass, b4h16s512d64 -0.80%): ex, a sub-tile's last P V issued with the next
  # sub-tile's first Q K^T (one consumer, whole sub-tiles: NAME d64, _long), its softmax
  # while that P V runs, the store after; e3q1, NAME d64 and _long with three K/V stages and
  # one Q buffer (105 KiB). PR config, d64 mid shapes, long causal d64.
  save() { tar czf "$out/twelfth-x.tgz" -C "$out" r; }
  d64mid_config
  derive_config d64long configs/pr.yaml <<'SHAPES'
2 16 4096 64 causal float16
1 16 8192 64 causal float16
2 8 3001 64 causal bfloat16
SHAPES
  for v in ${VARIANTS:-ex e3q1}; do
    BASE=.carry/variants/early ab "$v" ".carry/variants/$v" configs/pr.yaml
    BASE=.carry/variants/early ab "$v-mid" ".carry/variants/$v" "$res/d64mid.yaml"
    BASE=.carry/variants/early ab "$v-long" ".carry/variants/$v" "$res/d64long.yaml"
    save
  done
  ;;
twelfth-final)
  # 2026-12-03, twelfth session, last call: NAME d64 on 64-key tiles with the early wait
  # (.carry/variants/b64: 2 stages, 49 KiB; b64s4: 4 stages) against main's kernels on the PR
  # config; then, as `twelfth` prepared it, ci-gate sanitize of the shipped kernels
  # (configs/sanitize.yaml, with the cut grid [6,16,512]), the tools' GPU tests and issue
  # 40's table by the independent harness; archived after each step ($out/twelfth-final.tgz).
  save() { tar czf "$out/twelfth-final.tgz" -C "$out" r; }
  for v in ${VARIANTS:-b64 b64s4}; do
    ab "$v" ".carry/variants/$v" configs/pr.yaml
    save
  done
  timed timeout 200 "$bin" sanitize --kernels kernels > "$res/san.txt" 2>&1
  grep -E "sanitize:|finding|clean" "$res/san.txt" | head -6
  save
  gpu_tools_tests
  save
  OUT=$res bash bench/kernel_table_device.sh configs/pr.yaml 2>&1 | tail -16
  save
  ;;
thirteenth-cr)
  # 2026-12-03, thirteenth session: the lazy base of the online softmax (variants/cr: a row
  # keeps its maximum unless a tile's exceeds it by more than 8 in log2 units, and a warp
  # whose alphas are all 1 skips the O rescale; both kernel families), and variants/ecr
  # (cr with the twelfth session's early first-Q K^T wait). Each against main's kernels:
  # the L4 path first (pr-ada with FA2 / cuDNN after it, ada-mid, ada-d64), then the PR
  # config, d64 mid shapes and the long shapes (cuDNN / FA2 after them); the GPU and tools'
  # tests last. Archived after each step ($out/thirteenth-cr.tgz).
  save() { tar czf "$out/thirteenth-cr.tgz" -C "$out" r; }
  ada_mid_config
  ada_d64_config
  d64mid_config
  long_config
  ab cr-ada .carry/variants/cr configs/pr-ada.yaml
  ada_peers
  peer_table "$res/ab-cr-ada.json" "$res/sdpa-ada.json"
  save
  ab cr-ada-mid .carry/variants/cr "$res/ada-mid.yaml"
  ab cr-ada-d64 .carry/variants/cr "$res/ada-d64.yaml"
  save
  for v in ${VARIANTS:-cr ecr}; do
    ab "$v" ".carry/variants/$v" configs/pr.yaml
    ab "$v-mid" ".carry/variants/$v" "$res/d64mid.yaml"
    save
  done
  ab cr-long .carry/variants/cr "$res/long.yaml"
  peers long "$res/long.yaml"
  peer_table "$res/ab-cr-long.json" "$res/sdpa-long.json"
  save
  gpu_tests
  save
  gpu_tools_tests
  save
  ;;
thirteenth-ov)
  # 2026-12-03, thirteenth session: the softmax of tile j overlapped with P_{j-1} V_{j-1} at
  # last (variants/ov: ptxas had put that P V's wait before the softmax in every Hopper
  # kernel; a never-taken uniform branch after the softmax keeps the wait after it) and
  # variants/ovr (ov, with O's rescale moved between the next Q K^T and P V issues, FA3's
  # order). Each against main's kernels: PR config (cuDNN / FA2 after it), d64 mid shapes,
  # the long shapes (cuDNN / FA2 after them), d128 mid lengths. Archived after each step.
  save() { tar czf "$out/thirteenth-ov.tgz" -C "$out" r; }
  d64mid_config
  long_config
  mid2_config
  for v in ${VARIANTS:-ov ovr}; do
    ab "$v" ".carry/variants/$v" configs/pr.yaml
    [ -f "$res/sdpa-pr.json" ] || peers pr configs/pr.yaml
    peer_table "$res/ab-$v.json" "$res/sdpa-pr.json"
    ab "$v-mid" ".carry/variants/$v" "$res/d64mid.yaml"
    save
  done
  for v in ${VARIANTS:-ov ovr}; do
    ab "$v-long" ".carry/variants/$v" "$res/long.yaml"
    [ -f "$res/sdpa-long.json" ] || peers long "$res/long.yaml"
    peer_table "$res/ab-$v-long.json" "$res/sdpa-long.json"
    save
  done
  for v in ${VARIANTS:-ov ovr}; do
    ab "$v-mid2" ".carry/variants/$v" "$res/mid2.yaml"
    save
  done
  ;;
thirteenth-pp)
  # 2026-12-03, thirteenth session: the d64 even split on two ping-pong consumers (240
  # registers, one CTA per SM; variants/pp2f: two K/V stages, pp2f3: three), forced on every
  # non-causal d64 launch from 512 keys (_tiles_at_once {64}), against main's kernels.
  save() { tar czf "$out/thirteenth-pp.tgz" -C "$out" r; }
  derive_config d64nc configs/pr.yaml <<'SHAPES'
4 16 512 64 noncausal float16
8 16 512 64 noncausal float16
16 16 512 64 noncausal float16
6 16 512 64 noncausal float16
4 16 768 64 noncausal float16
2 16 1024 64 noncausal float16
2 16 1536 64 noncausal float16
4 16 2048 64 noncausal float16
SHAPES
  for v in ${VARIANTS:-pp2f pp2f3}; do
    ab "$v" ".carry/variants/$v" "$res/d64nc.yaml"
    save
  done
  ;;
thirteenth-tm)
  # 2026-12-03, thirteenth session: the row maxima of the softmax by a tree instead of a
  # chain (variants/tm = kernels/; both kernel families), against main's kernels: the PR
  # config (cuDNN / FA2 after it), d64 mid shapes, the long shapes, d128 mid lengths, the L4
  # path (pr-ada with FA2 after it, ada-d64). If no A/B has a shape worse than pass and the
  # PR config has an improvement: pr and pr-ada re-recorded (3 processes) with kernels/,
  # each followed by its stored-only A/A. Archived after each step.
  save() { tar czf "$out/thirteenth-tm.tgz" -C "$out" r; }
  d64mid_config
  long_config
  mid2_config
  ada_d64_config
  ab tm .carry/variants/tm configs/pr.yaml
  peers pr configs/pr.yaml
  peer_table "$res/ab-tm.json" "$res/sdpa-pr.json"
  save
  ab tm-ada .carry/variants/tm configs/pr-ada.yaml
  ada_peers
  peer_table "$res/ab-tm-ada.json" "$res/sdpa-ada.json"
  save
  ab tm-mid .carry/variants/tm "$res/d64mid.yaml"
  ab tm-long .carry/variants/tm "$res/long.yaml"
  ab tm-ada-d64 .carry/variants/tm "$res/ada-d64.yaml"
  ab tm-mid2 .carry/variants/tm "$res/mid2.yaml"
  save
  if no_regression "$res"/ab-tm*.json && improved "$res/ab-tm.json"; then
    echo "== kept: re-recording pr and pr-ada with kernels/"
    for cfg in pr pr-ada; do
      record_with_kernels "$cfg" "kernel step: the softmax's row maxima by a tree (issue 40)"
    done
  else
    echo "== not kept: no re-recording"
  fi
  ;;
thirteenth-profile)
  # 2026-12-03, thirteenth session: why the softmax kept before the previous P V's wait
  # (variants/ov) is slower than ptxas' order (main): ncu --set full of one launch of each
  # on b4h16s512d64 and b4h16s2048d64; per report the duration, pipes and the ten largest
  # stall reasons (PC samples) as text.
  for kd in kernels .carry/variants/ov; do
    tag=$(basename "$kd")
    for shape in b4h16s512d64_f16 b4h16s2048d64_f16; do
      timed timeout 100 ncu --clock-control none --set full --import-source no \
        --kernel-name regex:^attention_fwd_ --launch-count 1 --export "$res/$tag-$shape" --force-overwrite \
        "$bin" kernel-run --config configs/pr.yaml --kernels "$kd" --harness kernels \
        --shape "$shape" --no-reference > "$res/ncu-$tag-$shape.log" 2>&1
      rep="$res/$tag-$shape.ncu-rep"
      [ -f "$rep" ] || { tail -3 "$res/ncu-$tag-$shape.log"; continue; }
      ncu --import "$rep" --page raw --csv > "$res/raw-$tag-$shape.csv" 2>&1
      rm -f "$rep"
      python3 - "$res/raw-$tag-$shape.csv" "$tag $shape" <<'PY'
import csv, sys
rows = list(csv.reader(open(sys.argv[1])))
head, units, vals = rows[0], rows[1], rows[2]
m = dict(zip(head, vals))
def f(k):
    try: return float(m.get(k, "nan").replace(",", ""))
    except ValueError: return float("nan")
pipes = ", ".join(f"{k.split('__')[1].split('.')[0]} {f(k):.1f}%" for k in head
                  if "pipe_tensor" in k and k.endswith("pct_of_peak_sustained_active"))
print(f"== {sys.argv[2]}: {m.get('gpu__time_duration.sum')} "
      f"{dict(zip(head, units)).get('gpu__time_duration.sum')}, issue "
      f"{f('sm__inst_issued.avg.pct_of_peak_sustained_active'):.1f}%; {pipes}")
st = [(f(k), k.replace("smsp__pcsamp_warps_issue_stalled_", "")) for k in head
      if k.startswith("smsp__pcsamp_warps_issue_stalled_") and not k.endswith("_not_issued")]
tot = sum(v for v, _ in st if v == v)
for v, k in sorted(st, reverse=True)[:10]:
    print(f"   {k:28} {v:8.0f}  {100 * v / tot:5.1f}%")
PY
    done
  done
  tar czf "$out/thirteenth-profile.tgz" -C "$out" r
  ;;
thirteenth-c64)
  # 2026-12-03, thirteenth session: the L4 path's causal d128 launches on FA2's sm_86/sm_89
  # causal tile (variants/c64: NAME d128 under CG_ADA_TILES as 64 rows x 64 keys, 4 warps,
  # the split pipeline, 48 KiB; 184 registers on sm_90 and 180 on sm_89, so two CTAs per SM
  # on the H200 as on the L4), against main's kernels: pr-ada (FA2 after it), causal d128.
  derive_config ada-causal configs/pr-ada.yaml <<'SHAPES'
4 16 1024 128 causal float16
8 16 512 128 causal float16
1 16 8192 128 causal float16
2 8 3001 128 causal bfloat16
SHAPES
  ab c64-ada .carry/variants/c64 configs/pr-ada.yaml
  ada_peers
  peer_table "$res/ab-c64-ada.json" "$res/sdpa-ada.json"
  ab c64-causal .carry/variants/c64 "$res/ada-causal.yaml"
  tar czf "$out/thirteenth-c64.tgz" -C "$out" r
  ;;
fourteenth-epi)
  # 2026-12-03, fourteenth session: the epilogue of a sub-tile against main's kernels. li: the
  # row sums' quad reduction and reciprocals while the last P V runs (store_rows split in two;
  # the mma.sync kernels take the same helpers); nq: li, and each sub-tile's output stored by
  # the next sub-tile while its S_0 = Q K_0^T runs (a predicated store inside the wgmma stage);
  # nqe: nq with the early first wait (variants/early). PR config for each (cuDNN / FA2 after
  # them), then nq on the d64 mid shapes, the long shapes, the d128 mid lengths and the L4
  # path. Archived after each step.
  save() { tar czf "$out/fourteenth-epi.tgz" -C "$out" r; }
  d64mid_config
  long_config
  mid2_config
  ab li .carry/variants/li configs/pr.yaml
  ab nq .carry/variants/nq configs/pr.yaml
  ab nqe .carry/variants/nqe configs/pr.yaml
  save
  peers pr configs/pr.yaml
  for v in li nq nqe; do echo "== $v"; peer_table "$res/ab-$v.json" "$res/sdpa-pr.json"; done
  save
  ab nq-mid .carry/variants/nq "$res/d64mid.yaml"
  ab nqe-mid .carry/variants/nqe "$res/d64mid.yaml"
  ab nq-long .carry/variants/nq "$res/long.yaml"
  ab nq-mid2 .carry/variants/nq "$res/mid2.yaml"
  save
  ab nq-ada .carry/variants/nq configs/pr-ada.yaml
  save
  ;;
fourteenth-ts)
  # 2026-12-03, fourteenth session: the row sums of P on the tensor cores (variants/ts: with
  # each P V, P times a column block of ones, m64n8k16, instead of two FADDs per score pair
  # in the softmax; the Hopper wgmma kernels only, the L4 path's cubin unchanged), and the
  # same with the early first wait (tse), against main's kernels: PR config (cuDNN / FA2 after
  # it), d64 mid shapes, long shapes, d128 mid lengths. Archived after each step.
  save() { tar czf "$out/fourteenth-ts.tgz" -C "$out" r; }
  d64mid_config
  long_config
  mid2_config
  ab ts .carry/variants/ts configs/pr.yaml
  ab tse .carry/variants/tse configs/pr.yaml
  save
  peers pr configs/pr.yaml
  for v in ts tse; do echo "== $v"; peer_table "$res/ab-$v.json" "$res/sdpa-pr.json"; done
  save
  ab ts-mid .carry/variants/ts "$res/d64mid.yaml"
  ab ts-long .carry/variants/ts "$res/long.yaml"
  ab ts-mid2 .carry/variants/ts "$res/mid2.yaml"
  save
  ab tse-mid .carry/variants/tse "$res/d64mid.yaml"
  save
  ;;
fourteenth-o2)
  # 2026-12-03, fourteenth session: P V's k-steps over two accumulators in the d64 kernels of
  # one consumer (variants/o2 = kernels/: consecutive wgmma's of a P V independent, the two
  # summed before the store; 232 registers, no spill; the d128 and three-consumer kernels
  # and the L4 path unchanged), and o2 with the early first wait (o2e), against main's
  # kernels: PR config (cuDNN / FA2 after it), d64 mid shapes, long shapes. If o2 regresses
  # nowhere and the PR config has an improvement: the GPU tests, pr re-recorded (3
  # processes) with kernels/, its stored-only A/A. Archived after each step.
  save() { tar czf "$out/fourteenth-o2.tgz" -C "$out" r; }
  d64mid_config
  long_config
  ab o2 .carry/variants/o2 configs/pr.yaml
  ab o2e .carry/variants/o2e configs/pr.yaml
  save
  peers pr configs/pr.yaml
  for v in o2 o2e; do echo "== $v"; peer_table "$res/ab-$v.json" "$res/sdpa-pr.json"; done
  save
  ab o2-mid .carry/variants/o2 "$res/d64mid.yaml"
  ab o2e-mid .carry/variants/o2e "$res/d64mid.yaml"
  ab o2-long .carry/variants/o2 "$res/long.yaml"
  save
  if no_regression "$res"/ab-o2.json "$res"/ab-o2-mid.json "$res"/ab-o2-long.json && improved "$res/ab-o2.json"; then
    echo "== kept: GPU tests, pr re-recorded with kernels/"
    gpu_tests
    save
    record_with_kernels pr "kernel step: P V over two accumulators in the d64 kernels (issue 40)"
  else
    echo "== not kept"
  fi
  ;;
fourteenth-profile)
  # 2026-12-03, fourteenth session: b4h16s512d64 as the gate times it, inputs in L2 (the PR
  # config is `cache: hot`): ncu --set full --cache-control none of one launch of ours
  # (main's kernels, the form the host picks) and of PyTorch's CUDNN_ATTENTION, after
  # launches that left the inputs in L2; the earlier profiles (eleventh, thirteenth
  # sessions) flushed the caches first. Details, raw metrics and the SASS with its stall
  # samples as text.
  NCU_ARGS=(--set full --import-source no)
  ncu_b4h16_hot
  for rep in "$res"/*.ncu-rep; do
    b=$(basename "$rep" .ncu-rep)
    ncu --import "$rep" --page details > "$res/details-$b.txt" 2>&1
    ncu --import "$rep" --page raw --csv > "$res/raw-$b.csv" 2>&1
    ncu --import "$rep" --page source --csv --print-source sass > "$res/sass-$b.csv" 2>&1
    rm -f "$rep"
    echo "== $b"
    grep -E "Duration|Issue Slots Busy|Warp Cycles Per Issued|DRAM Throughput|L2 Hit Rate|Grid Size" "$res/details-$b.txt" | head -8
  done
  tar czf "$out/fourteenth-profile.tgz" -C "$out" r
  ;;
fourteenth-sh)
  # 2026-12-03, fourteenth session: the TMA producer sleeps in its waits (variants/shp =
  # kernels/: try_wait with a 10 ms suspend-time hint, NANOSLEEP.SYNCS in the SASS, instead of
  # spinning on the sub-partition it shares with a consumer warp; every wgmma kernel), and
  # every wait so (sha: the consumers' too), against main's kernels: PR config (cuDNN / FA2
  # after it), d64 mid shapes, long shapes, d128 mid lengths. If shp regresses nowhere and the
  # PR config has an improvement: the GPU tests, pr re-recorded (3 processes) with kernels/,
  # its stored-only A/A. Archived after each step.
  save() { tar czf "$out/fourteenth-sh.tgz" -C "$out" r; }
  d64mid_config
  long_config
  mid2_config
  ab shp .carry/variants/shp configs/pr.yaml
  ab sha .carry/variants/sha configs/pr.yaml
  save
  peers pr configs/pr.yaml
  for v in shp sha; do echo "== $v"; peer_table "$res/ab-$v.json" "$res/sdpa-pr.json"; done
  save
  ab shp-mid .carry/variants/shp "$res/d64mid.yaml"
  ab shp-long .carry/variants/shp "$res/long.yaml"
  ab shp-mid2 .carry/variants/shp "$res/mid2.yaml"
  save
  if no_regression "$res"/ab-shp.json "$res"/ab-shp-mid.json "$res"/ab-shp-long.json "$res"/ab-shp-mid2.json && improved "$res/ab-shp.json"; then
    echo "== kept: GPU tests, pr re-recorded with kernels/"
    gpu_tests
    save
    record_with_kernels pr "kernel step: the TMA producer sleeps in its waits (issue 40)"
  else
    echo "== not kept"
    ab sha-mid .carry/variants/sha "$res/d64mid.yaml"
    save
  fi
  ;;
fourteenth-ablate)
  # 2026-12-03, fourteenth session: what each part of a step costs b4h16s512d64, by ablation
  # (.carry/ablate/<name>: main's kernels with one part removed, so the outputs are wrong and
  # only their time means anything): nomufu (ex2 the identity), nomax (no row maxima),
  # nosum (no row sums), norescale (no O rescale), nopv (no P V, so no P pack), nosoftmax (no
  # mask and no softmax; P packed from the raw scores), base (unchanged). One launch each
  # under ncu (inputs in L2, clocks as they were), REPS rounds over the variants in turn;
  # the median duration per variant. The ablations: bench/variants/ablate-<name>.patch (base
  # is kernels/ itself), each applied to a copy of kernels/ in .carry/ablate/<name>.
  ablate_ncu base nomufu nomax nosum norescale nopv nosoftmax
  tar czf "$out/fourteenth-ablate.tgz" -C "$out" r
  ;;
fifteenth-im3)
  # Prepared 2026-12-03 (fourteenth session) for the next one: the ablation's lead (the row
  # maxima are the dearest part of the softmax, by their count). variants/im3: the wgmma
  # kernels take a tile's row maxima by VIMNMX3 (__vimax3_s32, two scores an instruction) on
  # the scores' bits, falling back to fmaxf for a warp where some row's tile holds no score
  # >= +0; im3e: with the early first wait. Build them from the kernels before the
  # fifteenth session's step (1dbb555's) first, then (to record if kept) put im3 in kernels/:
  #   for v in im3 im3e; do mkdir -p .carry/variants/$v && for f in attention reference util; do
  #     git show 1dbb555:kernels/$f.cu > .carry/variants/$v/$f.cu; done
  #     patch -d .carry/variants/$v -p1 < bench/variants/$v.patch; done
  #   cp .carry/variants/im3/attention.cu kernels/
  # Against main's kernels: PR config (cuDNN / FA2 after it), d64 mid shapes, long shapes,
  # d128 mid lengths; the GPU tests with kernels/ = im3 (among them
  # kernels_are_right_where_a_tile_has_no_positive_score, the fallback's test). If im3
  # regresses nowhere, the GPU tests pass and the PR config has an improvement: pr
  # re-recorded (3 processes) with kernels/ (= im3: copy it there before the call), its
  # stored-only A/A. Archived after each step.
  save() { tar czf "$out/fifteenth-im3.tgz" -C "$out" r; }
  d64mid_config
  long_config
  mid2_config
  ab im3 .carry/variants/im3 configs/pr.yaml
  ab im3e .carry/variants/im3e configs/pr.yaml
  save
  peers pr configs/pr.yaml
  for v in im3 im3e; do echo "== $v"; peer_table "$res/ab-$v.json" "$res/sdpa-pr.json"; done
  save
  ab im3-mid .carry/variants/im3 "$res/d64mid.yaml"
  ab im3-long .carry/variants/im3 "$res/long.yaml"
  ab im3-mid2 .carry/variants/im3 "$res/mid2.yaml"
  save
  gpu_tests
  save
  if cmp -s kernels/attention.cu .carry/variants/im3/attention.cu \
    && grep -q "test result: ok" "$res/gpu-tests.log" \
    && no_regression "$res"/ab-im3.json "$res"/ab-im3-mid.json "$res"/ab-im3-long.json "$res"/ab-im3-mid2.json \
    && improved "$res/ab-im3.json"; then
    echo "== kept: pr re-recorded with kernels/ (= im3)"
    record_with_kernels pr "kernel step: the row maxima by VIMNMX3 (issue 40)"
  else
    echo "== not kept (or kernels/ is not im3)"
  fi
  ;;
fifteenth-im3d)
  # 2026-12-03 (fifteenth session): fifteenth-im3 measured d128 -1.5 ... -2.7% and d64 +3 ...
  # +14% (VIMNMX3 costs the softmax-bound d64 kernels more than the FMNMX it saves), so
  # variants/im3d takes the row maxima by VIMNMX3 in the d128 kernels only (the d64 and L4
  # kernels byte-identical to main's: bench/kernel_resources.py). It is kernels/ since this
  # session; to rerun, the base (.carry/k-base) is 1dbb555's kernels and im3d is built from it:
  #   mkdir -p .carry/k-base .carry/variants/im3d && for f in attention reference util; do
  #     git show 1dbb555:kernels/$f.cu > .carry/k-base/$f.cu; done
  #   cp .carry/k-base/*.cu .carry/variants/im3d/ \
  #     && patch -d .carry/variants/im3d -p1 < bench/variants/im3d.patch
  # Against main's kernels: PR config (cuDNN / FA2 after it), long shapes, d128 mid lengths;
  # the GPU tests with kernels/ = im3d. If im3d regresses nowhere, the GPU tests pass and the
  # PR config has an improvement: pr and pr-ada re-recorded (3 processes) with kernels/, each
  # with its stored-only A/A. Archived after each step.
  save() { tar czf "$out/fifteenth-im3d.tgz" -C "$out" r; }
  long_config
  mid2_config
  ab im3d .carry/variants/im3d configs/pr.yaml
  peers pr configs/pr.yaml
  peer_table "$res/ab-im3d.json" "$res/sdpa-pr.json"
  save
  ab im3d-long .carry/variants/im3d "$res/long.yaml"
  ab im3d-mid2 .carry/variants/im3d "$res/mid2.yaml"
  save
  gpu_tests
  save
  if cmp -s kernels/attention.cu .carry/variants/im3d/attention.cu \
    && grep -q "test result: ok" "$res/gpu-tests.log" \
    && no_regression "$res"/ab-im3d.json "$res"/ab-im3d-long.json "$res"/ab-im3d-mid2.json \
    && improved "$res/ab-im3d.json"; then
    echo "== kept: pr and pr-ada re-recorded with kernels/ (= im3d)"
    record_with_kernels pr "kernel step: the d128 row maxima by VIMNMX3 (issue 40)"
    record_with_kernels pr-ada "kernel step: the d128 row maxima by VIMNMX3 (issue 40)"
  else
    echo "== not kept (or kernels/ is not im3d)"
  fi
  ;;
fifteenth-im3t)
  # 2026-12-03 (fifteenth session): im3d (kernels/: VIMNMX3 row maxima at d128 only) had the
  # gate's improvement on three d128 shapes and no regression on 37 (fifteenth-im3d). variants/
  # im3t: VIMNMX3 in every wgmma kernel, each row's maximum over four independent chains (if
  # im3's d64 cost was the chain's latency, this removes it):
  #   mkdir -p .carry/variants/im3t && cp kernels/*.cu .carry/variants/im3t/ \
  #     && patch -d .carry/variants/im3t -p1 < bench/variants/im3t-on-im3d.patch
  # A/B against main's kernels: PR config; if no d64 PR shape regresses, d64 mid and long
  # shapes. im3t kept (put in kernels/ here, GPU tests) if it regresses nowhere and has an
  # improvement on a d64 shape; then, or else with kernels/ = im3d, pr and pr-ada re-recorded
  # (3 processes), each with its stored-only A/A. Archived after each step.
  save() { tar czf "$out/fifteenth-im3t.tgz" -C "$out" r; }
  d64mid_config
  long_config
  ab im3t .carry/variants/im3t configs/pr.yaml
  save
  keep_t=no
  if python3 -c '
import json, sys
v = [s.get("verdict") for s in json.load(open(sys.argv[1]))["shapes"] if "d64" in s["name"]]
sys.exit(0 if v and "regression" not in v else 1)' "$res/ab-im3t.json"; then
    ab im3t-mid .carry/variants/im3t "$res/d64mid.yaml"
    ab im3t-long .carry/variants/im3t "$res/long.yaml"
    save
    if no_regression "$res"/ab-im3t.json "$res"/ab-im3t-mid.json "$res"/ab-im3t-long.json \
      && IN=d64 improved "$res"/ab-im3t.json "$res"/ab-im3t-mid.json "$res"/ab-im3t-long.json; then
      keep_t=yes
    fi
  fi
  if [ $keep_t = yes ]; then
    echo "== im3t kept: kernels/ = im3t, GPU tests"
    cp .carry/variants/im3t/attention.cu kernels/attention.cu
    gpu_tests
    save
    grep -q "test result: ok" "$res/gpu-tests.log" || { echo "== GPU tests failed: nothing recorded"; exit 1; }
    why="kernel step: the row maxima by VIMNMX3 in four chains (issue 40)"
  elif cmp -s kernels/attention.cu .carry/variants/im3d/attention.cu; then
    echo "== im3t not kept: kernels/ = im3d recorded"
    why="kernel step: the d128 row maxima by VIMNMX3 (issue 40)"
  else
    echo "== im3t not kept and kernels/ is not im3d: nothing recorded"
    exit 1
  fi
  record_with_kernels pr "$why"
  record_with_kernels pr-ada "$why"
  ;;
fifteenth-im3m)
  # 2026-12-03 (fifteenth session), kernels/ = im3d (recorded by fifteenth-im3t): issue 40's
  # long rows, kernels/ against main's kernels (.carry/k-base) with cuDNN / FA2 after them;
  # then variants/im3m: the d64 kernels' row maxima half by FMNMX, half by VIMNMX3 (if the
  # two run on different pipes, each carries half), against kernels/ on the PR config, and
  # where no PR shape regresses and a d64 one improves, on the d64 mid and long shapes:
  #   mkdir -p .carry/variants/im3m && cp kernels/*.cu .carry/variants/im3m/ \
  #     && patch -d .carry/variants/im3m -p1 < bench/variants/im3m-on-im3d.patch
  # Nothing re-recorded here. Archived after each step.
  save() { tar czf "$out/fifteenth-im3m.tgz" -C "$out" r; }
  long_config
  d64mid_config
  BASE=kernels ab im3m .carry/variants/im3m configs/pr.yaml
  save
  ab step-long kernels "$res/long.yaml"
  peers long "$res/long.yaml"
  peer_table "$res/ab-step-long.json" "$res/sdpa-long.json"
  save
  if no_regression "$res/ab-im3m.json" && IN=d64 improved "$res/ab-im3m.json"; then
    BASE=kernels ab im3m-mid .carry/variants/im3m "$res/d64mid.yaml"
    BASE=kernels ab im3m-long .carry/variants/im3m "$res/long.yaml"
    save
  fi
  ;;
fifteenth-checks)
  # 2026-12-03 (fifteenth session), kernels/ = im3d: compute-sanitizer over
  # configs/sanitize.yaml, bench/kernel_check.py (issue 37's input mixture, no timing) and the
  # attack kernels (adversarial_gpu::, every one must fail closed). Archived after each step.
  save() { tar czf "$out/fifteenth-checks.tgz" -C "$out" r; }
  timed timeout 150 "$bin" sanitize --kernels kernels > "$res/san.txt" 2>&1
  grep -E "sanitize:|finding" "$res/san.txt" | head -4
  timed timeout 150 python3 bench/kernel_check.py --no-timing --out "$res/kc.json" > "$res/kc.log" 2>&1
  grep -E "rand|FAIL|FAILURE|passed|failed" "$res/kc.log" | tail -4 | cut -c1-200
  save
  # (240 s was too short on 2026-12-03, call 5: the whole suite took 299 s in issue 36's
  # session, PERF.md; a call of this mode needs about 560 s)
  attack_suite 420
  save
  ;;
eighteenth)
  # 2026-12-04 (eighteenth session), call 1: variants/q4n (bench/variants/q4n.patch: NAME d64
  # as one 64-row unit per CTA, 64-key tiles, no INTRA, four CTAs per SM, 104 consumer
  # registers: the eleventh session's q4n, -1.99% at b4h16s512d64 then) against .carry/k-base
  # (main's kernels): PR, d64 mid, long and quad.yaml (non-causal d64 grids of 132 ... 640
  # units below 1536 keys, where q4n's grid is about one wave); then main's side with cuDNN /
  # FA2 (issue 40's table). No record. Archived after each step.
  save() { tar czf "$out/eighteenth.tgz" -C "$out" r; }
  quad_config
  d64_abs q4n .carry/variants/q4n
  ab q4n-quad .carry/variants/q4n "$res/quad.yaml"
  save
  peers pr configs/pr.yaml
  peer_table "$res/ab-q4n.json" "$res/sdpa-pr.json"
  save
  ;;
eighteenth-short)
  # 2026-12-04 (eighteenth session), call 2: the step. kernels/ with NAME_short_noncausal
  # (call 1's q4n as a form of its own, which the host takes for non-causal launches up to
  # NAME_short_noncausal_to = 640 keys where its busiest SM costs less) against .carry/k-base
  # (main's kernels), both by this binary's host: the PR config, the d64 mid shapes, call 1's
  # quad shapes and shapes the rule was not drawn from (short-check.yaml); then main's and
  # the step's PR table with cuDNN / FA2; the GPU tests and kernel_check.py on kernels/. If
  # no shape of the A/Bs is slower and b4h16s512d64 improved: pr re-recorded (3 processes)
  # and its stored-only A/A (compute-sanitizer and pr-ada: eighteenth-final). Archived
  # after each step.
  save() { tar czf "$out/eighteenth-short.tgz" -C "$out" r; }
  d64mid_config
  quad_config
  short_check_config
  ab short kernels configs/pr.yaml
  ab short-mid kernels "$res/d64mid.yaml"
  ab short-quad kernels "$res/quad.yaml"
  ab short-check kernels "$res/short-check.yaml"
  save
  peers pr configs/pr.yaml
  peer_table "$res/ab-short.json" "$res/sdpa-pr.json"
  save
  gpu_tests
  kernel_check_only
  save
  r="$res/ab-short.json $res/ab-short-mid.json $res/ab-short-quad.json $res/ab-short-check.json"
  # shellcheck disable=SC2086
  if no_slower $r && IN=b4h16s512d64_f16 improved "$res/ab-short.json"; then
    echo "== the step holds: no shape slower, b4h16s512d64 improved; pr re-recorded"
    record_with_kernels pr "kernel step (issue 40): NAME_short_noncausal for short non-causal d64"
  else
    echo "== the step does not hold: no record"
  fi
  ;;
eighteenth-record)
  # 2026-12-04 (eighteenth session), call 3: the step as it ships. Call 2 kept every shape
  # within the gate's 2% and improved five, but [5,16,512] went to the short form and was
  # 1.5% slower; the host now charges a short grid's partial second round one more pass
  # (src/gpu/device.rs, SHORT_PASS), which keeps [5,16,512] and [12,16,256] on NAME. With
  # this binary: short-check.yaml and the PR config against .carry/k-base (main's kernels);
  # compute-sanitizer on kernels/ (configs/sanitize.yaml then: [6,8,513] on the short form);
  # if no shape is slower, pr re-recorded (3 processes) and its stored-only A/A. Archived
  # after each step.
  save() { tar czf "$out/eighteenth-record.tgz" -C "$out" r; }
  short_check_config
  ab final-check kernels "$res/short-check.yaml"
  ab final kernels configs/pr.yaml
  save
  timeout 200 "$bin" sanitize --kernels kernels > "$res/san.txt" 2>&1
  san_rc=$?
  echo "== sanitize rc=$san_rc"
  tail -4 "$res/san.txt" | cut -c1-200
  save
  if no_slower "$res/ab-final-check.json" "$res/ab-final.json" && [ "$san_rc" = 0 ]; then
    echo "== the step holds: pr re-recorded"
    record_with_kernels pr "kernel step (issue 40): NAME_short_noncausal for short non-causal d64"
  else
    echo "== the step does not hold: no record"
  fi
  ;;
eighteenth-final)
  # 2026-12-04 (eighteenth session), call 4: call 3's sanitize ran past its 200 s on the
  # larger shapes configs/sanitize.yaml then had ([6,16,896], [6,8,513]); now the smallest
  # shapes that reach a cut grid of the even split ([3,16,641]) and the short form
  # ([6,24,65]). compute-sanitizer on kernels/; if clean (call 3's A/Bs by this binary held),
  # pr and pr-ada re-recorded (3 processes), each with its stored-only A/A. Archived after
  # each step.
  save() { tar czf "$out/eighteenth-final.tgz" -C "$out" r; }
  timeout 220 "$bin" sanitize --kernels kernels > "$res/san.txt" 2>&1
  san_rc=$?
  echo "== sanitize rc=$san_rc"
  tail -4 "$res/san.txt" | cut -c1-200
  save
  if [ "$san_rc" = 0 ]; then
    record_with_kernels pr "kernel step (issue 40): NAME_short_noncausal for short non-causal d64"
    record_with_kernels pr-ada "kernel source changed (issue 40: an sm_90a entry added; the L4 path's code unchanged)"
  else
    echo "== sanitize not clean: no record"
  fi
  ;;
nineteenth)
  # 2026-12-04 (nineteenth session), call 1: variants/lag (bench/variants/lag.patch: every
  # mma.sync kernel with O += P V one key tile behind, so a warp's softmax of tile j and its
  # P_{j-1} V_{j-1} mma's are independent and ptxas interleaves them; the sm_90a wgmma
  # kernels unchanged) against .carry/k-base (main's kernels) on the L4 path: pr-ada (FA2 /
  # cuDNN after it), ada-mid, ada-d64; then, with kernels/ = lag on this machine only,
  # kernel_check.py --ada (the L4's forms on golden and random cases). Archived after each.
  save() { tar czf "$out/nineteenth.tgz" -C "$out" r; }
  ada_mid_config
  ada_d64_config
  ab lag-ada .carry/variants/lag configs/pr-ada.yaml
  ada_peers
  peer_table "$res/ab-lag-ada.json" "$res/sdpa-ada.json"
  save
  ab lag-mid .carry/variants/lag "$res/ada-mid.yaml"
  ab lag-d64 .carry/variants/lag "$res/ada-d64.yaml"
  save
  cp .carry/variants/lag/attention.cu kernels/attention.cu
  kernel_check_only --ada
  save
  ;;
nineteenth-lag2)
  # 2026-12-04 (nineteenth session), call 2. Call 1's variants/lag lost 5-8% everywhere; its
  # SASS shows why in part: ptxas issues P_{j-1} V_{j-1}'s mma's before tile j's maxima rather
  # than among them, and O's rescale by tile j's alpha waits for those mma's at the end of
  # the step. variants/lag2 (bench/variants/lag2.patch) moves that rescale to the next step,
  # beside S_{j+1}'s mma's. Against .carry/k-base on pr-ada and ada-d64; then ninth-profile
  # (ncu of main's L4 path and FA2, b2h16s4096d128 f16 both masks) with kernels/ as shipped.
  save() { tar czf "$out/nineteenth-lag2.tgz" -C "$out" r; }
  ada_d64_config
  ab lag2-ada .carry/variants/lag2 configs/pr-ada.yaml
  ab lag2-d64 .carry/variants/lag2 "$res/ada-d64.yaml"
  save
  rm -rf "$res" && mkdir -p "$res"
  bash "$0" ninth-profile
  ;;
nineteenth-c32)
  # 2026-12-04 (nineteenth session), call 3. Call 2's profile: on the causal shape our 8-warp
  # 128 x 64 tile (16 rows a warp, each K/V fragment feeding one mma) had 3.3 times FA2's
  # short-scoreboard stall samples. variants/c32 (bench/variants/c32.patch): NAME d128 under
  # CG_ADA_TILES as the split 128 x 32 tile of _long_noncausal (32 rows a warp; it lost 1.0%
  # on the causal shape in the sixth session, before the uniform warp index and the
  # whole-tile loads). Against .carry/k-base on pr-ada. Then main's kernels on the d64 PR
  # shapes of the L4 path (an A/A) with cuDNN / FA2, for issue 40's item 2 on every PR shape.
  save() { tar czf "$out/nineteenth-c32.tgz" -C "$out" r; }
  ab c32-ada .carry/variants/c32 configs/pr-ada.yaml
  save
  ada_d64_config
  ab aa-d64 .carry/k-base "$res/ada-d64.yaml"
  peers ada-d64 "$res/ada-d64.yaml"
  peer_table "$res/ab-aa-d64.json" "$res/sdpa-ada-d64.json"
  save
  ;;
nineteenth-sass)
  # 2026-12-04 (nineteenth session), call 4. Call 2's profile (ninth-profile): against FA2 our
  # L4 path has twice its short-scoreboard stall samples (non-causal; 3.3 times causal). Where:
  # ncu --set full of one launch each of the L4 path's d128 kernels (configs/pr-ada.yaml,
  # b2h16s4096d128 f16 both masks), the source page's SASS with its stall samples per line.
  for mask in noncausal causal; do
    shape=b2h16s4096d128_f16; [ $mask = causal ] && shape=b2h16s4096d128_causal_f16
    timed timeout 150 ncu --clock-control none --set full --import-source no \
      --kernel-name regex:^attention_fwd_ --launch-count 1 --export "$res/ours-$mask" --force-overwrite \
      "$bin" kernel-run --config configs/pr-ada.yaml --kernels kernels --harness kernels \
      --shape "$shape" --no-reference > "$res/ncu-ours-$mask.log" 2>&1
    ncu --import "$res/ours-$mask.ncu-rep" --page source --csv --print-source sass \
      > "$res/sass-ours-$mask.csv" 2>&1
    rm -f "$res/ours-$mask.ncu-rep"
    head -c 600 "$res/sass-ours-$mask.csv"; echo
  done
  tar czf "$out/nineteenth-sass.tgz" -C "$out" r
  ;;
nineteenth-ta)
  # 2026-12-04 (nineteenth session), call 5. Call 4: 4% of the L4 split loop's stall samples
  # sit on LOP3s that recompute one of Q's ldmatrix addresses into a register the previous
  # ldmatrix has not read yet (ptxas, at 255 registers, keeps about 22 address registers).
  # variants/ta (bench/variants/ta.patch): Q and V from one set of per-step offsets, the
  # warp's Q rows a uniform base. Against .carry/k-base on pr-ada and ada-d64.
  save() { tar czf "$out/nineteenth-ta.tgz" -C "$out" r; }
  ada_d64_config
  ab ta-ada .carry/variants/ta configs/pr-ada.yaml
  ab ta-d64 .carry/variants/ta "$res/ada-d64.yaml"
  save
  ;;
nineteenth-fa2)
  # 2026-12-04 (nineteenth session), call 6. PyTorch's FA2 picks its d128 tile by compute
  # capability: on the H200 128 x 64 (64 KiB), on the L4 128 x 32 non-causal and 64 x 64
  # causal. bench/fa2_tiles.py times FA2's own code at both from a build of its source
  # (bench/fa2/build.sh, carried as .carry/fa2/libfa2_tiles.so) beside PyTorch's FA2 (the
  # build's H200 tile is the calibration), then the gate's p50 of the L4 path on pr-ada
  # (main's kernels against themselves: the gate skips the A/B of identical kernels and
  # reports one side), then the FA2 tiles again, so the two sit on both sides of ours.
  save() { tar czf "$out/nineteenth-fa2.tgz" -C "$out" r; }
  fa2_tiles tiles-1 configs/pr-ada.yaml
  save
  ab aa-ada .carry/k-base configs/pr-ada.yaml
  peers ada configs/pr-ada.yaml
  save
  fa2_tiles tiles-2 configs/pr-ada.yaml
  save
  ;;
nineteenth-nofm)
  # 2026-12-04 (nineteenth session), call 7. Call 6: the build of FA2's source at its H200
  # tile ran 7-9% faster than PyTorch's FA2 on the same tensors. Is it the flags? FA2's own
  # build uses --use_fast_math (exp2f as one ex2.approx.ftz); .carry/fa2/libfa2_tiles_nofm.so
  # is the same source without it (FA2_FAST_MATH= bash bench/fa2/build.sh ...; built then
  # from fa2_tiles.cu before its head_dim argument). Both builds, in turn, twice.
  save() { tar czf "$out/nineteenth-nofm.tgz" -C "$out" r; }
  for i in 1 2; do
    for lib in libfa2_tiles_nofm libfa2_tiles; do
      fa2_tiles "$lib-$i" configs/pr-ada.yaml "$lib"
    done
  done
  save
  ;;
nineteenth-table)
  # 2026-12-04 (nineteenth session), call 8: issue 40's item 2 on every PR shape of the L4
  # path. The gate's p50 of main's kernels under CG_ADA_TILES (pr-ada: the d128 shapes;
  # ada-d64: the d64 ones; identical kernels on both sides, so one side is timed), between
  # two runs of bench/fa2_tiles.py on the same shapes (FA2's own build at its H200 and L4
  # tiles, PyTorch's FA2 beside them; at d64 FA2 has one tile for every card).
  save() { tar czf "$out/nineteenth-table.tgz" -C "$out" r; }
  ada_d64_config
  fa2_both() {
    fa2_tiles "pr-ada-$1" configs/pr-ada.yaml
    fa2_tiles "ada-d64-$1" "$res/ada-d64.yaml"
  }
  ada_aa_between fa2_both
  ;;
nineteenth-d64)
  # 2026-12-04 (nineteenth session), call 9. Call 8: at d64 the L4 path reads 0.88-1.01x FA2's
  # own build (b4h16s512d64 1.01x, b8h16s512d64 0.99x), and FA2's one d64 tile is 128 x 128
  # on 4 warps with Q in shared memory and one K and one V buffer (48 KiB), where ours is
  # 128 x 64 with Q in registers on a 2-stage ring (32 KiB, 242 registers, two CTAs per SM).
  # Candidates for NAME d64 under CG_ADA_TILES (bench/variants/<name>.patch), all the split
  # pipeline with Q in shared memory, each sized for an L4 (100 KB, 64 K registers per SM):
  #   d64s: 128 x 128 (FA2's tile; 48 KiB, two CTAs per SM; 372 bytes of spill)
  #   d64t: 128 x 96 (40 KiB, two CTAs per SM; no spill)
  #   d64o: 128 x 64, three CTAs per SM (32 KiB, 168 registers; 172 bytes of spill)
  #   d64p: 128 x 32, three CTAs per SM (24 KiB, 167 registers; no spill)
  # Against .carry/k-base on ada-d64, then pr-ada (d128: unchanged launches, a control).
  save() { tar czf "$out/nineteenth-d64.tgz" -C "$out" r; }
  ada_d64_config
  for v in d64s d64t d64o d64p; do
    ab "$v-d64" ".carry/variants/$v" "$res/ada-d64.yaml"
    save
  done
  ab d64p-ada .carry/variants/d64p configs/pr-ada.yaml
  save
  ;;
twentieth)
  # 2026-12-04 (twentieth session), call 1. Item 2's short d64 PR shapes on the L4 path
  # (b4h16s512d64 0.97x, causal 0.91x, b8h16s512d64 0.95x PyTorch's FA2) run NAME's 128-row
  # tile at two CTAs per SM. Candidates for NAME with more, smaller CTAs (Q in registers):
  #   n64s3:    64 x 64, 4 warps x 16 rows, 2 stages, 32 KiB, three CTAs per SM (NAME_small's tile);
  #   n64s4:    the same at four CTAs per SM (128 registers; on an L4 only three fit by smem);
  #   n64s4b32: 64 x 32, 2 stages, 16 KiB, four CTAs per SM (fits an L4);
  #   n64s4t1:  64 x 64 on the split pipeline (Q in smem), 24 KiB, four per SM (fits an L4);
  #   n128w8:   128 x 64 on 8 warps x 16 rows, 2 CTAs per SM: sixteen warps per SM.
  # As NAME for every d64 grid, so each shape says what the tile costs there; the host's form
  # rule is fitted after. Against .carry/k-base on ada-d64 and ada-short.
  save() { tar czf "$out/twentieth.tgz" -C "$out" r; }
  ada_d64_config
  derive_config ada-short configs/pr-ada.yaml <<'SHAPES'
6 8 512 64 noncausal float16
8 16 256 64 noncausal float16
2 16 1024 64 noncausal float16
16 16 512 64 noncausal float16
8 16 512 64 causal float16
SHAPES
  for v in n64s4b32 n64s4t1 n64s4 n64s3 n128w8; do
    ab "$v-d64" ".carry/variants/$v" "$res/ada-d64.yaml"
    ab "$v-short" ".carry/variants/$v" "$res/ada-short.yaml"
    save
  done
  ;;
twentieth-o16)
  # 2026-12-04 (twentieth session), call 2. The gate's ABI has the kernel write O in fp32
  # (kernels/README.md); FA2 and cuDNN write fp16. What the extra bytes cost the L4 path on
  # the PR shapes: variants/o16 (a timing ablation, wrong output: O packed to fp16 into the
  # first half of each row's bytes) against main's kernels by bench/kept_probe.py (one
  # tile per CTA, CUDA-graph medians, three rounds in turn, N(0,1) and the mixture).
  save() { tar czf "$out/twentieth-o16.tgz" -C "$out" r; }
  timed timeout 300 python3 bench/kept_probe.py "$base" .carry/variants/o16 --ada \
    --shape 4,16,512,64 --shape 4,16,512,64,causal --shape 8,16,512,64 \
    --shape 4,16,2048,64 --shape 4,16,2048,64,causal --shape 1,8,512,64,small \
    --shape 2,16,4096,128,long_noncausal --shape 2,16,4096,128,causal \
    --out "$res/probe-o16.json" 2>&1 | grep -v "^ \|Deprecat" | tee "$res/probe-o16.txt"
  save
  ;;
twentieth-sms)
  # 2026-12-04 (twentieth session), call 3. Item 2 asks what to expect on the L4 itself (58
  # SMs): bench/l4_sms.py times the L4 path, PyTorch's FA2 and FA2's own build at both tiles
  # on the whole H200 and inside a green context of 56 SMs (a driver-level partition of this
  # process's streams; no mode, clock or power setting changes), on the PR shapes.
  save() { tar czf "$out/twentieth-sms.tgz" -C "$out" r; }
  ada_d64_config
  timed timeout 420 python3 bench/l4_sms.py configs/pr-ada.yaml "$res/ada-d64.yaml" --sms 56 \
    --lib .carry/fa2/libfa2_tiles.so --out "$res/l4-sms.json" 2>&1 | grep -v "Deprecat" \
    | tee "$res/l4-sms.txt"
  save
  ;;
twentieth-method)
  # 2026-12-04 (twentieth session), call 7. Call 6 timed the L4 path as FA2 is timed (one
  # L2-warm q, k, v, CUDA graphs): 0.93x PyTorch's FA2 on b4h16s512d64 where the gate's p50
  # read 0.97x in the nineteenth session. The gate's p50 (identical kernels: one side timed)
  # between two runs of bench/l4_sms.py in one call says what the gate's conditions (a fresh
  # q and a poisoned output of its own per call) cost the kernel per shape.
  save() { tar czf "$out/twentieth-method.tgz" -C "$out" r; }
  ada_d64_config
  sms_run() {
    timed timeout 200 python3 bench/l4_sms.py configs/pr-ada.yaml "$res/ada-d64.yaml" --sms 56 \
      --lib .carry/fa2/libfa2_tiles.so --out "$res/l4-sms-$1.json" > "$res/l4-sms-$1.txt" 2>&1
    grep -v Deprecat "$res/l4-sms-$1.txt" | tail -12
  }
  ada_aa_between sms_run
  ;;
twentieth-profile)
  # 2026-12-04 (twentieth session), call 8. Timed alike, b4h16s512d64 and b8h16s512d64 are the
  # L4 path's d64 PR shapes furthest from 0.90x FA2 (0.92-0.93x). What bounds them: ncu --set
  # full of one launch each, ours (the L4 path's NAME, as `ci-gate kernel-run` launches it on
  # ada-d64) and PyTorch's FLASH_ATTENTION; the details page and the raw metrics as text.
  save() { tar czf "$out/twentieth-profile.tgz" -C "$out" r; }
  ada_d64_config
  for b in 4 8; do
    shape=b${b}h16s512d64_f16
    timed timeout 120 ncu --clock-control none --set full --import-source no \
      --kernel-name regex:^attention_fwd_ --launch-count 1 --export "$res/ours-$b" --force-overwrite \
      "$bin" kernel-run --config "$res/ada-d64.yaml" --kernels kernels --harness kernels \
      --shape "$shape" --no-reference > "$res/ncu-ours-$b.log" 2>&1
    timed timeout 120 ncu --clock-control none --set full --import-source no \
      --kernel-name regex:flash --launch-skip 2 --launch-count 1 --export "$res/fa2-$b" --force-overwrite \
      python3 -c "
import torch, torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
q, k, v = (torch.randn($b, 16, 512, 64, device='cuda', dtype=torch.float16) for _ in range(3))
with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
    for _ in range(3):
        F.scaled_dot_product_attention(q, k, v)
torch.cuda.synchronize()
" > "$res/ncu-fa2-$b.log" 2>&1
    for who in ours fa2; do
      ncu --import "$res/$who-$b.ncu-rep" --page details > "$res/details-$who-$b.txt" 2>&1
      ncu --import "$res/$who-$b.ncu-rep" --page raw --csv > "$res/raw-$who-$b.csv" 2>&1
      rm -f "$res/$who-$b.ncu-rep"
      echo "== $who $shape"
      grep -E "^  [a-zA-Z_]|Duration|Registers Per|Issue Slots Busy|No Eligible|Warp Cycles Per Issued|Achieved Occupancy|Executed Instructions  " "$res/details-$who-$b.txt" | head -14
    done
    save
  done
  ;;
twentieth-sass)
  # 2026-12-04 (twentieth session), call 9. Call 8: on b4h16s512d64 the L4 path's d64 NAME has
  # 2.2 times FA2's short-scoreboard stall samples. Where: ncu --set full of one launch (ada-d64,
  # b4h16s512d64 f16), the source page's SASS with its stall samples per line.
  ada_d64_config
  timed timeout 150 ncu --clock-control none --set full --import-source no \
    --kernel-name regex:^attention_fwd_ --launch-count 1 --export "$res/ours-d64" --force-overwrite \
    "$bin" kernel-run --config "$res/ada-d64.yaml" --kernels kernels --harness kernels \
    --shape b4h16s512d64_f16 --no-reference > "$res/ncu-ours-d64.log" 2>&1
  ncu --import "$res/ours-d64.ncu-rep" --page source --csv --print-source sass \
    > "$res/sass-ours-d64.csv" 2>&1
  rm -f "$res/ours-d64.ncu-rep"
  head -c 600 "$res/sass-ours-d64.csv"; echo
  tar czf "$out/twentieth-sass.tgz" -C "$out" r
  ;;
twentyfirst-tests)
  # 2026-12-04 (twenty-first session), call 2: the release check of main's binary (src/ as at
  # a305942, tests/ as at f8c936e) and kernels: every GPU test but the attacks, the tools'
  # GPU tests (sanitize, ncu), the stored-only A/A of pr and pr-ada. Archived after each.
  save() { tar czf "$out/twentyfirst-tests.tgz" -C "$out" r; }
  gpu_tests
  save
  gpu_tools_tests
  save
  stored_aa pr
  stored_aa pr-ada
  save
  ;;
twentyfirst-sanitize)
  # 2026-12-04 (twenty-first session), call 3. Call 2's tools' GPU test failed on one run:
  # racecheck of b1h16s1250d64 waited past the 150 s the sanitizer's wait bound then was (its
  # neighbours b3h16s641d64 153 s, b1h6s1601d64 125 s, four jobs at once). With the bound at
  # 300 s (src/commands/sanitize.rs): the test again, and the report's slowest runs.
  save() { tar czf "$out/twentyfirst-sanitize.tgz" -C "$out" r; }
  # the test's own command (gpu_tools.rs runs `ci-gate sanitize --format json` and asserts
  # exit 0, four runs a shape, no error, no failure), with the report kept
  timed timeout 560 "$bin" sanitize --format json --out "$res/sanitize.json" \
    > "$res/sanitize.txt" 2> "$res/sanitize.err"
  python3 - "$res/sanitize.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
runs = r["runs"]
bad = [x for x in runs if x["errors"] or x["failure"] is not None]
print(f"sanitize: {len(runs)} runs, {len(bad)} not clean, {r['seconds']:.0f} s")
for x in sorted(runs, key=lambda x: -x["seconds"])[:6]:
    print(f"  {x['tool']:10} {x['shape']:28} {x['seconds']:6.1f} s {x['failure'] or 'clean'}")
PY
  save
  ;;
twentyfirst-gputools)
  # 2026-12-04 (twenty-first session), call 6: the tools' GPU tests (gpu_tools::, the test
  # that failed in call 2 among them) with the binary whose sanitizer waits up to 300 s.
  save() { tar czf "$out/twentyfirst-gputools.tgz" -C "$out" r; }
  gpu_tools_tests
  save
  ;;
twentyfirst-wall)
  # 2026-12-04 (twenty-first session), call 7. The design asks for a PR verdict within 30 s on
  # an H100/H200 with peers; last measured 34.4 s (2026-11-27, cold compile cache). The PR
  # config as a pull request runs it (A/B against the base kernels, peers, the stored
  # baseline): main's kernels against themselves, first with an empty compile cache, then
  # with the cache it filled. Each run's phases from its results file.
  save() { tar czf "$out/twentyfirst-wall.tgz" -C "$out" r; }
  export CI_GATE_CACHE_DIR=/tmp/ci-gate-cache-wall
  rm -rf "$CI_GATE_CACHE_DIR"
  for run in cold warm; do
    timed timeout 150 "$bin" local --config configs/pr.yaml --base-kernels "$base" \
      --kernels kernels --out "$res/wall-$run.json" > "$res/wall-$run.txt" 2>&1
    grep -E "PASS|FAIL" "$res/wall-$run.txt" | tail -1 | cut -c1-160
    python3 - "$res/wall-$run.json" "$run" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))["timing"]
keys = ("total_s", "setup_s", "probes_s", "parity_s", "measure_s", "peers_s", "drift_s",
        "peers_start_s")
print(sys.argv[2] + ": " + ", ".join(f"{k[:-2]} {t.get(k, 0):.1f}" for k in keys))
PY
    save
  done
  ;;
twentysecond-record)
  # 2026-12-04 (twenty-second session), call 1. (a) NVRTC's split compilation, which the gate
  # now asks for from NVRTC 13 (src/kernel/compile.rs, up to 8 threads): attention.cu for
  # sm_90a on 1 ... 16 threads on this host's cores, and the integration test that proves it
  # changes no code (every section but the notes, and ptxas's report) with this NVRTC. (b) `pr`
  # and `pr-ada` re-recorded from 5 processes (the default; the eighteenth session's used 3,
  # so every comparison with them floored the spread at 0.3% with df 2, and the first look
  # sent 11 of 13 shapes to the second stage: call 7 of the twenty-first session), each with
  # its stored-only A/A.
  save() { tar czf "$out/twentysecond-record.tgz" -C "$out" r; }
  python3 -c "import sys; sys.path.insert(0, 'bench'); import nvrtc_check; print('NVRTC', nvrtc_check.nvrtc_version(), nvrtc_check.find_nvrtc()[1])"
  nproc
  timed timeout 150 python3 bench/compile_split.py --threads 1 2 4 8 16 | tee "$res/threads.txt"
  save
  CI_GATE_REQUIRE_NVRTC=1 CI_GATE_BIN=$bin timed timeout 120 "$it_tests" --exact \
    nvrtc::compiling_on_several_threads_gives_the_same_cubin_as_on_one > "$res/split-test.log" 2>&1
  grep -E "test result|FAILED|panicked" "$res/split-test.log" | head -4
  save
  why="re-recorded from 5 processes (the default) so that the spread between processes is estimated, not floored at 0.3% with df 2; no kernel change"
  PROCESSES=5 RECORD_LIMIT=330 record_with_kernels pr "$why"
  PROCESSES=5 RECORD_LIMIT=150 record_with_kernels pr-ada "$why"
  ;;
twentysecond-wall)
  # 2026-12-04 (twenty-second session), call 2. The PR config as a pull request that changes
  # attention.cu runs it (kernels = main's with one comment line added: a different source,
  # so both sides compiled and measured, interleaved; peers; the stored baseline): main's
  # binary (.carry/ci-gate-old, NVRTC on one thread) with main's baselines
  # (.carry/baselines-old, 3 processes), then this binary with them, then this binary with the
  # baselines call 1 recorded (5 processes), cold (an empty compile cache) and warm. Phases and
  # stages from each results file.
  save() { tar czf "$out/twentysecond-wall.tgz" -C "$out" r; }
  mkdir -p /tmp/k-pr && cp "$base"/*.cu /tmp/k-pr/
  echo "// a pull request's change that does not change the code" >> /tmp/k-pr/attention.cu
  export CI_GATE_CACHE_DIR=/tmp/ci-gate-cache-wall
  pr_wall old-cold .carry/ci-gate-old .carry/baselines-old cold /tmp/k-pr
  pr_wall new-cold "$bin" .carry/baselines-old cold /tmp/k-pr
  pr_wall new-cold-5p "$bin" baselines cold /tmp/k-pr
  pr_wall new-warm-5p "$bin" baselines warm /tmp/k-pr
  ;;
twentyfifth)
  # 2026-12-05 (twenty-fifth session): two candidates for item 2's shapes that miss 0.90x.
  #   b1: the 2-stage mma.sync loop (the L4 path's d64 NAME and NAME_small) on one CTA
  #       barrier a tile instead of two: tile j+1 is requested after the barrier that says
  #       tile j landed (when every warp is done with tile j-1, whose stage it takes), so the
  #       barrier that closed every tile goes; the copies still have tile j's math to land.
  #   b1q: b1, and the prologue's barrier after Q's fragments are read goes too (with 2
  #       stages the loop's first barrier comes before tile 1 is copied into Q's stage).
  #   ncname: the non-causal d128 launches on NAME (one CTA of 8 warps on the mbarrier ring,
  #       64-key tiles) instead of the split 128 x 32 NAME_long_noncausal: the ring took the
  #       barrier cost out of NAME in the twenty-fourth session (-7.7% at [1,16,1000]).
  # Each: kernel_check.py --ada with kernels/ = it; the gate's A/B against .carry/k-base on
  # ada-d64 and ada-d64b (b1, b1q) or pr-ada and ada-mid (ncname); PyTorch's FA2 and cuDNN
  # after them (issue 40's table); then the trees on 56 SMs.
  save() { tar czf "$out/twentyfifth.tgz" -C "$out" r; }
  ada_d64_config
  ada_mid_config
  derive_config ada-d64b configs/pr-ada.yaml <<'SHAPES'
2 8 512 64 noncausal float16
8 16 512 64 causal bfloat16
4 16 1024 64 noncausal float16
2 16 1536 64 causal float16
1 16 4096 64 noncausal bfloat16
6 8 512 64 noncausal float16
SHAPES
  kernel_check_variants b1 b1q ncname
  for v in b1 b1q; do
    ab "$v-d64" ".carry/variants/$v" "$res/ada-d64.yaml"
    ab "$v-d64b" ".carry/variants/$v" "$res/ada-d64b.yaml"
    save
  done
  ab ncname-ada .carry/variants/ncname configs/pr-ada.yaml
  ab ncname-mid .carry/variants/ncname "$res/ada-mid.yaml"
  save
  peers d64 "$res/ada-d64.yaml"
  for v in b1 b1q; do peer_table "$res/ab-$v-d64.json" "$res/sdpa-d64.json"; done
  ada_peers
  peer_table "$res/ab-ncname-ada.json" "$res/sdpa-ada.json"
  save
  l4_sms_trees "configs/pr-ada.yaml $res/ada-d64.yaml" k-base variants/b1 variants/ncname
  ;;
twentyfifth-step)
  # 2026-12-05 (twenty-fifth session), after `twentyfifth`: the step. kernels/ (= .carry/
  # variants/step) takes non-causal d128 launches above 447 keys to NAME (the ring) and keeps
  # the split tile, NAME_long_noncausal, from 256 to 447 keys (its new NAME_long_noncausal_to;
  # this binary reads it). kernel_check.py --ada and the L4 path under compute-sanitizer with
  # it; the gate's A/B against .carry/k-base on pr-ada (PyTorch's FA2 and cuDNN after it),
  # ada-mid, ada-cross (non-causal d128 at 128 to 448 keys, where the bound sits) and ada-d64;
  # the two forms at the bound itself (ncname, NAME on every non-causal launch, against
  # k-base on ada-cross); variants/ncs (ncname with the next tile issued after S_j, mb3s's
  # point) against kernels/ on pr-ada; the trees on 56 SMs; the GPU tests (the host's form
  # rule changed).
  save() { tar czf "$out/twentyfifth-step.tgz" -C "$out" r; }
  ada_step_checks
  ada_mid_config
  ada_d64_config
  derive_config ada-cross configs/pr-ada.yaml <<'SHAPES'
32 16 128 128 noncausal float16
16 16 256 128 noncausal float16
8 16 320 128 noncausal float16
8 16 384 128 noncausal float16
8 16 447 128 noncausal bfloat16
8 16 448 128 noncausal float16
SHAPES
  ab step-ada kernels configs/pr-ada.yaml
  ada_peers
  peer_table "$res/ab-step-ada.json" "$res/sdpa-ada.json"
  ab step-mid kernels "$res/ada-mid.yaml"
  ab step-cross kernels "$res/ada-cross.yaml"
  ab ncname-cross .carry/variants/ncname "$res/ada-cross.yaml"
  save
  ab step-d64 kernels "$res/ada-d64.yaml"
  BASE=$PWD/kernels ab ncs-ada .carry/variants/ncs configs/pr-ada.yaml
  save
  l4_sms_trees configs/pr-ada.yaml k-base variants/step
  gpu_tests
  save
  ;;
twentyfifth-record)
  # After twentyfifth-step: its 447-key bound lowered to 319 (NAME was 19% faster at 320 and
  # 384 keys, where the split tile's third CTA on the busiest SM runs alone). The step again
  # on the bound's shapes against .carry/k-base (ada-cross, and b12h16s256 and b24h16s256,
  # three CTAs on the busiest SM at 256 keys, where the split tile stays), ncname there too;
  # then pr-ada and pr re-recorded from 5 processes with kernels/ (= the committed step),
  # each with its stored-only A/A.
  save() { tar czf "$out/twentyfifth-record.tgz" -C "$out" r; }
  derive_config ada-cross configs/pr-ada.yaml <<'SHAPES'
16 16 256 128 noncausal float16
12 16 256 128 noncausal float16
8 16 319 128 noncausal float16
8 16 320 128 noncausal float16
8 16 384 128 noncausal float16
8 16 448 128 noncausal float16
SHAPES
  ab step-cross kernels "$res/ada-cross.yaml"
  ab ncname-cross .carry/variants/ncname "$res/ada-cross.yaml"
  save
  record_with_kernels pr-ada "kernel step: non-causal d128 on the L4 path's ring NAME from 320 keys (issue 40 item 2)"
  record_with_kernels pr "kernel step: non-causal d128 on the L4 path's ring NAME from 320 keys (issue 40 item 2)"
  ;;
twentysixth-ks)
  # 2026-12-05 (twenty-sixth session), call 1. ks2: the L4 path's d128 NAME as 4 pairs of warps
  # on 32 rows each (Q 32 x 128 in registers), the two warps of a pair on the two halves of
  # every 64-key tile with their own maxima and sums, merged once after the walk through shared
  # memory: each K and V fragment a warp reads feeds two mma's (16 KiB of ldmatrix a warp a
  # tile where NAME's 16-row warps read 32: the proxy's bound, KERNEL_LOG 2026-12-05). Same
  # ring, same CTA, same grid. kernel_check.py --ada with it; the gate's A/B against
  # .carry/k-base (main's kernels) on pr-ada (FA2 / cuDNN after), ada-mid, the causal d128
  # shapes of ada-causal. ks2l: ks2 with O's rescale skipped where every alpha of the warp is
  # 1.0f (kernel_check, pr-ada). ks2d64: ks2 with the d64 NAME on it too, as 8 warps (4 pairs
  # of 32 rows) with Q re-read from shared memory (48 KiB, 128 registers: two CTAs = 16 warps
  # a SM where NAME has 8; small spills) (kernel_check, ada-d64). Then the tail rule's A/B
  # (twentysixth-verify's) and the attack suite.
  save() { tar czf "$out/twentysixth-ks.tgz" -C "$out" r; }
  ada_mid_config
  ada_causal_config
  ada_d64_config
  kernel_check_variants ks2 ks2l ks2d64
  ab ks2-ada .carry/variants/ks2 configs/pr-ada.yaml
  ab ks2l-ada .carry/variants/ks2l configs/pr-ada.yaml
  save
  ab ks2d64-d64 .carry/variants/ks2d64 "$res/ada-d64.yaml"
  save
  ab ks2-mid .carry/variants/ks2 "$res/ada-mid.yaml"
  ab ks2-causal .carry/variants/ks2 "$res/ada-causal.yaml"
  save
  ada_peers
  for v in ks2 ks2l; do peer_table "$res/ab-$v-ada.json" "$res/sdpa-ada.json"; done
  save
  tail_rule_ab
  save
  [ -n "${NO_ATTACKS:-}" ] || { attack_suite 240; save; }
  ;;
twentyninth-ks)
  # 2026-12-05 (twenty-ninth session), call 1: twentysixth-ks in the order of what issue 40
  # item 2 misses, for a 600-s call. ks2d64 holds ks2 (d128) and the d64 change, so its
  # kernel_check.py --ada and its A/B on pr-ada judge both on the PR shapes at once; ks2 alone
  # is checked only where ks2d64 fails. FA2 / cuDNN on pr-ada, the peer table; then ks2d64q
  # (ks2d64's d64 NAME with Q in registers and 3 stages: 198 registers, no spill, one CTA of
  # 8 warps a SM, as many warps as main's two CTAs of 4) on ada-d64, ks2l against ks2 (O's
  # rescale skipped where every alpha is 1), ks2 on ada-mid.
  save() { tar czf "$out/twentyninth-ks.tgz" -C "$out" r; }
  ada_d64_config
  ada_mid_config
  kernel_check_variants ks2d64 ks2d64q
  if ! grep -q "ALL CHECKS PASSED" "$res/kc-ada-ks2d64.log"; then kernel_check_variants ks2; fi
  ab ks2d64-ada .carry/variants/ks2d64 configs/pr-ada.yaml
  save
  ada_peers
  peer_table "$res/ab-ks2d64-ada.json" "$res/sdpa-ada.json"
  save
  ab ks2d64q-d64 .carry/variants/ks2d64q "$res/ada-d64.yaml"
  save
  kernel_check_variants ks2l
  BASE=.carry/variants/ks2 ab ks2l-ada .carry/variants/ks2l configs/pr-ada.yaml
  save
  ab ks2-mid .carry/variants/ks2 "$res/ada-mid.yaml"
  save
  ;;
twentysixth-step)
  # After twentysixth-ks, if a candidate wins: kernels/ = the step (committed). kernel_check.py
  # --ada and the L4 path under compute-sanitizer; the gate's A/B against .carry/k-base on
  # pr-ada (PyTorch's FA2 and cuDNN after it: issue 40's table), ada-mid, ada-causal and
  # ada-d64; the GPU tests; the trees on 56 SMs.
  save() { tar czf "$out/twentysixth-step.tgz" -C "$out" r; }
  ada_step_checks
  ada_mid_config
  ada_d64_config
  ada_causal_config
  ab step-ada kernels configs/pr-ada.yaml
  ada_peers
  peer_table "$res/ab-step-ada.json" "$res/sdpa-ada.json"
  save
  ab step-mid kernels "$res/ada-mid.yaml"
  ab step-causal kernels "$res/ada-causal.yaml"
  save
  ab step-d64 kernels "$res/ada-d64.yaml"
  gpu_tests
  save
  l4_sms_trees configs/pr-ada.yaml k-base
  mkdir -p .carry/variants/step && cp kernels/*.cu .carry/variants/step/
  l4_sms_trees configs/pr-ada.yaml variants/step
  ;;
twentysixth-record)
  # After twentysixth-step: pr-ada and pr re-recorded from 5 processes with kernels/ (= the
  # committed step), each with its stored-only A/A; then the attack suite (NO_ATTACKS=1: not).
  save() { tar czf "$out/twentysixth-record.tgz" -C "$out" r; }
  record_with_kernels pr-ada "kernel step: the L4 path's d128 NAME on key-split warp pairs (issue 40 item 2)"
  record_with_kernels pr "kernel step: the L4 path's d128 NAME on key-split warp pairs (issue 40 item 2)"
  [ -n "${NO_ATTACKS:-}" ] || { attack_suite 240; save; }
  ;;
twentysixth-verify)
  # 2026-12-05 (twenty-sixth session): what twentyfifth-final (never run, removed: against
  # 1390757's kernels this binary picks the same forms on ada-cross) was for. The host's tail rule
  # on the shapes it decides, as the gate's A/B: kernels/ (the split tile from 256 to 319 keys)
  # against BASE=.carry/variants/nolnc (kernels/ without NAME_long_noncausal: NAME on every
  # non-causal d128 launch). With three of the split tile's CTAs on the busiest SM
  # ([12,16,256], [8,16,319]) the rule keeps NAME: the same kernel, a pass; with four
  # ([16,16,256]) and five ([20,16,256]) it takes the split tile. Then the attack suite and
  # the tools' GPU tests with this binary and kernels/.
  save() { tar czf "$out/twentysixth-verify.tgz" -C "$out" r; }
  tail_rule_ab
  save
  attack_suite 300
  save
  gpu_tools_tests
  save
  ;;
twentyeighth-h100)
  # 2026-12-05 (twenty-eighth session): an H100 lent, the first since 2026-12-02, whose
  # baselines are of 5337da9's kernels. Issue 40 item 3 there: pr-ada and pr re-recorded from
  # 5 processes with main's kernels (be61b8d's), each with its stored-only A/A; then item 1's
  # table on the H100: ours from the stored-only A/A of pr, cuDNN and FA2 by the independent
  # harness in the same call.
  save() { tar czf "$out/twentyeighth-h100.tgz" -C "$out" r; }
  record_with_kernels pr-ada "issue 40 item 3: the H100's baselines of main's kernels (be61b8d's)"
  record_with_kernels pr "issue 40 item 3: the H100's baselines of main's kernels (be61b8d's)"
  peers pr configs/pr.yaml
  save
  peer_table "$res/stored-pr.json" "$res/sdpa-pr.json"
  ;;
twentyninth-tail)
  # 2026-12-05 (twenty-ninth session), after twentysixth-verify found the split tile 10.9%
  # slower than NAME at [20,16,256] (five of its CTAs on the busiest SM, which the cost
  # model took it for): this binary's rule (never where the split form's last round is not
  # full) as the gate's A/B, kernels/ against .carry/variants/nolnc, on the busiest SM's
  # 3, 4, 5, 6 and 8 CTAs: odd counts now keep NAME (a pass: the same kernel), even ones take
  # the split tile (six and eight never measured).
  save() { tar czf "$out/twentyninth-tail.tgz" -C "$out" r; }
  derive_config ada-cross2 configs/pr-ada.yaml <<'SHAPES'
12 16 256 128 noncausal float16
16 16 256 128 noncausal float16
20 16 256 128 noncausal float16
24 16 256 128 noncausal float16
32 16 256 128 noncausal float16
8 16 319 128 noncausal bfloat16
SHAPES
  BASE=.carry/variants/nolnc ab tail-rule2 kernels "$res/ada-cross2.yaml"
  save
  ;;
thirtyfirst)
  # 2026-12-05 (thirty-first session), whichever card comes: the witness's GPU tests with the
  # control beside each round (first run of `gpu::measure::Control`, a586f25), a stored-only
  # A/A of `pr` (each shape's shift against its control) and item 1's PR table (cuDNN / FA2
  # by the independent harness); then the early first wait (`variants/early-on-im3d`, never
  # timed on the short d64 form) as the gate's A/B on `pr`. On an H200: the split d128 tile
  # at 6 and 8 CTAs on the busiest SM (`twentyninth-tail`'s A/B) and `pr-ada`'s stored-only
  # A/A; on an H100: the long nightly rows with cuDNN / FA2 (never timed there).
  save() { tar czf "$out/thirtyfirst.tgz" -C "$out" r; }
  card
  gpu_tests_named witness-tests.log 200 gpu::a_side_alone_is_judged_against_the_control_beside_each_round \
    gpu::ab_pairs_of_one_kernel_agree gpu::time_the_events_did_not_see_on_one_side_is_judged
  grep -E "alone|unwitnessed|lead-in|test result|FAILED|panicked" "$res/witness-tests.log" | cut -c1-400
  save
  stored_aa pr
  shifts pr
  peers pr configs/pr.yaml
  peer_table "$res/stored-pr.json" "$res/sdpa-pr.json"
  save
  ab early-pr .carry/variants/early-on-im3d configs/pr.yaml
  save
  case "$gpu" in
  *H200*)
    tail_rule3
    save
    stored_aa pr-ada
    shifts pr-ada
    ;;
  *)
    nightly_table
    ;;
  esac
  save
  ;;
thirtyfirst-profile)
  # 2026-12-05 (thirty-first session): is b4h16s512d64 (the short d64 form since the
  # eighteenth session: 512 CTAs of one 64-row unit, four a SM, each reading the head's whole
  # K and V, 128 KiB, from L2: 64 MiB in ~14.5 µs) bounded by L2's bandwidth? ncu of one
  # launch of ours and of cuDNN's (inputs in L2, as the PR config times), the memory
  # workload's figures printed.
  save() { tar czf "$out/thirtyfirst-profile.tgz" -C "$out" r; }
  NCU_ARGS=(--section SpeedOfLight --section MemoryWorkloadAnalysis --section LaunchStats
    --section Occupancy --metrics lts__t_sectors_srcunit_tex_op_read.sum,lts__t_bytes.sum.per_second,lts__t_sectors.sum.pct_of_peak_sustained_elapsed,l1tex__m_xbar2l1tex_read_bytes.sum)
  ncu_b4h16_hot
  for rep in "$res"/*.ncu-rep; do
    b=$(basename "$rep" .ncu-rep)
    ncu --import "$rep" --page details > "$res/details-$b.txt" 2>&1
    ncu --import "$rep" --page raw --csv > "$res/raw-$b.csv" 2>&1
    rm -f "$rep"
    echo "== $b"
    grep -E "Duration|Memory Throughput|L2 Cache Throughput|L1/TEX Cache Throughput|DRAM Throughput|L2 Hit Rate|Mem Busy|Max Bandwidth|Grid Size|Block Size|lts__|l1tex__m|Achieved Occupancy|Compute \(SM\)" "$res/details-$b.txt" | head -24
  done
  tail -3 "$res/ncu-ours-hot.log" "$res/ncu-cudnn-hot.log" | cut -c1-300
  save
  ;;
thirtyfirst-control)
  # 2026-12-05 (thirty-first session): what the witness's control costs a side alone (~41 ms
  # a round, 28% of a stored-only run of `pr` on an H100) is mostly the duty cycle's idle time
  # after each of its samples; `gpu::the_control_reads_the_same_without_the_duty_cycles_idle_time`
  # samples it both ways after each round of a kernel alone and prints both shifts. On an
  # H200 then (the control's offset there never measured since a586f25): the witness's
  # other GPU tests, stored-only A/As of `pr` and `pr-ada` (shifts), the split d128 tile at
  # 4, 6 and 8 CTAs on the busiest SM (`twentyninth-tail`'s A/B).
  save() { tar czf "$out/thirtyfirst-control.tgz" -C "$out" r; }
  card
  witness_tests=gpu::the_control_reads_the_same_without_the_duty_cycles_idle_time
  case "$gpu" in *H200*) witness_tests="$witness_tests gpu::a_side_alone_is_judged_against_the_control_beside_each_round gpu::ab_pairs_of_one_kernel_agree" ;; esac
  # shellcheck disable=SC2086
  gpu_tests_named control-tests.log 200 $witness_tests
  grep -E "duty|alone|unwitnessed µs|test result|FAILED|panicked" "$res/control-tests.log" | cut -c1-300
  save
  case "$gpu" in *H200*) h200_witness_and_tail ;; esac
  save
  ;;
thirtyfirst-cheap)
  # 2026-12-05 (thirty-first session): the control sampled with no idle time after its
  # samples (CONTROL_DUTY_CYCLE = 1, 3f-control's measurement): the witness's GPU tests and a
  # stored-only A/A of `pr` with this binary (each shape's shift against its control, what
  # the control cost); on an H200 also `pr-ada`'s and the split d128 tile at 4, 6 and 8 CTAs
  # on the busiest SM (`twentyninth-tail`'s A/B).
  save() { tar czf "$out/thirtyfirst-cheap.tgz" -C "$out" r; }
  card
  gpu_tests_named witness-tests.log 200 gpu::the_control_reads_the_same_without_the_duty_cycles_idle_time \
    gpu::a_side_alone_is_judged_against_the_control_beside_each_round gpu::ab_pairs_of_one_kernel_agree \
    gpu::time_the_events_did_not_see_on_one_side_is_judged
  grep -E "duty|test result|FAILED|panicked" "$res/witness-tests.log" | cut -c1-300
  save
  cost() {
    python3 - "$res/stored-$1.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
t = r["timing"]
rounds = sum((s.get("measurement") or {}).get("rounds") or 0 for s in r["shapes"])
c = t["detail_s"].get("round.witness_control", 0)
print(f"  control {c:.2f} s over {rounds} rounds ({1000 * c / max(rounds, 1):.1f} ms a round) of {t['total_s']:.1f} s")
PY
  }
  configs=pr
  case "$gpu" in *H200*) configs="pr pr-ada" ;; esac
  for c in $configs; do
    stored_aa "$c"
    shifts "$c"
    cost "$c"
    save
  done
  case "$gpu" in *H200*) tail_rule3; save ;; esac
  ;;
thirtyfirst-final)
  # 2026-12-05 (thirty-first session), this binary (the control's samples back to back): on
  # an H200 first, its stored-only A/As of `pr` and `pr-ada` (each shape's shift against the
  # control, never measured there since the control moved beside each round) and the split
  # d128 tile at 4, 6 and 8 CTAs on the busiest SM; then, on either card, the attack suite.
  save() { tar czf "$out/thirtyfirst-final.tgz" -C "$out" r; }
  card
  case "$gpu" in *H200*) h200_witness_and_tail ;; esac
  attack_suite 380
  save
  ;;
thirtythird)
  # 2026-12-05 (thirty-third session), whichever card comes: issue 40's tables after the
  # float4 epilogue, ours against cuDNN / FA2 timed in the same call by the independent
  # harness. Item 1: the stored-only A/A of `pr` (the stored baseline's card or not: its p50
  # is this card's). Item 2: the L4 path (`CG_ADA_TILES`) on pr-ada's shapes and the d64 PR
  # shapes, one side timed (k-base = kernels/), then FA2 / cuDNN on the same shapes.
  save() { tar czf "$out/thirtythird.tgz" -C "$out" r; }
  card
  stored_aa pr
  peers pr configs/pr.yaml
  peer_table "$res/stored-pr.json" "$res/sdpa-pr.json"
  save
  ada_d64_config
  ab aa-ada .carry/k-base configs/pr-ada.yaml | sed -E 's/  unwitnessed b\/c .*$//'
  ab aa-d64 .carry/k-base "$res/ada-d64.yaml" | sed -E 's/  unwitnessed b\/c .*$//'
  save
  peers ada configs/pr-ada.yaml
  peers d64 "$res/ada-d64.yaml"
  peer_table "$res/ab-aa-ada.json" "$res/sdpa-ada.json"
  peer_table "$res/ab-aa-d64.json" "$res/sdpa-d64.json"
  save
  ;;
thirtythird-pair)
  # 2026-12-05 (thirty-third session): the L4 path's d128 NAME as warp pairs
  # (variants/pair: each warp S for half a tile's keys of its pair's 32 rows and P V for half
  # the dims, maxima and P exchanged at pair barriers; half the K/V ldmatrix a mma). Its
  # kernel_check --ada, then the gate's A/B against kernels/ on pr-ada (FA2 / cuDNN after it),
  # ada-mid and ada-causal; VARIANTS="v ..." names the candidates instead (turn, turn2: the
  # warps of a scheduler taking turns at the tensor cores; lock, w12, w12lock = w12 + lock:
  # the warps of a scheduler starting each tile together, three warps a scheduler, both).
  save() { tar czf "$out/thirtythird-pair.tgz" -C "$out" r; }
  card
  ada_mid_config
  ada_causal_config
  for v in ${VARIANTS:-pair}; do
    kernel_check_variants "$v"
    if grep -q "FAIL" "$res/kc-ada-$v.log"; then echo "== $v: kernel_check failed"; continue; fi
    ab "$v-ada" ".carry/variants/$v" configs/pr-ada.yaml | sed -E 's/  unwitnessed b\/c .*$//'
    save
    ab "$v-mid" ".carry/variants/$v" "$res/ada-mid.yaml" | sed -E 's/  unwitnessed b\/c .*$//'
    ab "$v-causal" ".carry/variants/$v" "$res/ada-causal.yaml" | sed -E 's/  unwitnessed b\/c .*$//'
    save
  done
  ada_peers
  for v in ${VARIANTS:-pair}; do
    [ -f "$res/ab-$v-ada.json" ] && peer_table "$res/ab-$v-ada.json" "$res/sdpa-ada.json"
  done
  save
  ;;
thirtythird-profile)
  # 2026-12-05 (thirty-third session): why the warp pairs (variants/pair, half the K/V
  # ldmatrix a mma) are slower than NAME on the L4 path: ncu --set full of one launch of
  # b2h16s4096d128 (configs/pr-ada.yaml) each; the pipes' use and the stall reasons per issue.
  # (PROFILE_VARIANT=V profiles .carry/variants/V in place of pair: fiftieth session, kv2)
  for v in kernels ".carry/variants/${PROFILE_VARIANT:-pair}"; do
    tag=$(basename "$v")
    timed timeout 150 ncu --clock-control none --set full --import-source no \
      --kernel-name regex:^attention_fwd_ --launch-count 1 --export "$res/$tag" --force-overwrite \
      "$bin" kernel-run --config configs/pr-ada.yaml --kernels "$v" --harness kernels \
      --shape b2h16s4096d128_f16 --no-reference > "$res/ncu-$tag.log" 2>&1
    ncu --import "$res/$tag.ncu-rep" --page details > "$res/details-$tag.txt" 2>&1
    ncu --import "$res/$tag.ncu-rep" --page raw --csv > "$res/raw-$tag.csv" 2>&1
    rm -f "$res/$tag.ncu-rep"
  done
  python3 - "$res/raw-kernels.csv" "$res/raw-${PROFILE_VARIANT:-pair}.csv" <<'PY'
import csv, sys
rows = []
for f in sys.argv[1:]:
    r = list(csv.reader(open(f)))
    hdr = next(i for i, x in enumerate(r) if "gpu__time_duration.sum" in x)
    names, vals = r[hdr], r[-1]
    rows.append(dict(zip(names, vals)))
keys = ["gpu__time_duration.sum", "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active",
        "smsp__issue_active.avg.pct_of_peak_sustained_active",
        "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum.pct_of_peak_sustained_elapsed",
        "smsp__inst_executed.sum", "launch__registers_per_thread"]
keys += sorted(k for k in rows[0] if k.startswith("smsp__average_warps_issue_stalled_") and k.endswith("_per_issue_active.ratio"))
for k in keys:
    a, b = rows[0].get(k, "-"), rows[1].get(k, "-")
    try:
        if max(float(a.replace(",", "")), float(b.replace(",", ""))) < 0.02: continue
    except ValueError:
        pass
    print(f"{k.replace('smsp__average_warps_issue_stalled_', 'stall ').replace('_per_issue_active.ratio', ''):70} {a:>14} {b:>14}")
PY
  tar czf "$out/thirtythird-profile.tgz" -C "$out" r && rm -rf "$res"
  ;;
thirtysecond)
  # 2026-12-05 (thirty-second session), item 1's last H100 miss (b4h16s512d64, the short d64
  # form: four one-unit CTAs a SM that all end together, so each SM's 64 KiB of fp32 O is
  # stored at once, after the last P V). What the store costs: ncu durations of one launch
  # (inputs in L2), main's kernels against `ablate-nostore` (the short form's store skipped,
  # outputs wrong by design), REPS rounds in turn. Then `stv4` (every kernel's epilogue by
  # float4 stores after a swap within lane pairs: half the store instructions, the same
  # bytes), the gate's A/B on `pr`.
  save() { tar czf "$out/thirtysecond.tgz" -C "$out" r; }
  card
  ablate_ncu base nostore
  save
  ab stv4 .carry/variants/stv4 configs/pr.yaml
  save
  ;;
thirtysecond-step)
  # 2026-12-05 (thirty-second session): kernels/ = the float4 epilogue (`stv4`, kept on `pr`
  # in `thirtysecond`) against the kernels before it (.carry/k-base): the gate's A/B on
  # pr-ada, ada-d64 (the mma.sync epilogue) and the long shapes; if every verdict is pass or
  # improvement (no_slower), `pr` and `pr-ada` re-recorded on this card (3 processes each),
  # each followed by a stored-only A/A.
  save() { tar czf "$out/thirtysecond-step.tgz" -C "$out" r; }
  card
  ada_d64_config
  long_config
  ok=1
  for c in pr-ada "$res/ada-d64.yaml" "$res/long.yaml"; do
    n=$(basename "$c" .yaml)
    case "$c" in /*) ;; *) c=configs/$c.yaml ;; esac
    ab "step-$n" kernels "$c" | sed -E 's/  unwitnessed b\/c .*$//'
    no_slower "$res/ab-step-$n.json" || ok=0
    save
  done
  if [ "$ok" = 1 ]; then
    KEEP_RES=1 REASON="the float4 epilogue (issue 40, thirty-second session)" PROCESSES=3 \
      CFGS="pr pr-ada" bash "$0" record
  else
    echo "== not recorded: an A/B did not pass"
  fi
  save
  ;;
thirtysecond-h200)
  # 2026-12-05 (thirty-second session), on an H200 only (exits at once on another card): the
  # float4 epilogue (kernels/) against the kernels before it on `pr`, the step's verdict on
  # the card item 1 is judged on; if every shape is pass or improvement (no_slower), `pr` and
  # `pr-ada` re-recorded (3 processes) with a stored-only A/A each; then the split d128 tile
  # at 4, 6 and 8 CTAs on the busiest SM against variants/nolnc (rebuilt on these kernels).
  save() { tar czf "$out/thirtysecond-h200.tgz" -C "$out" r; }
  card
  case "$gpu" in *H200*) ;; *) exit 0 ;; esac
  ab step-pr kernels configs/pr.yaml | sed -E 's/  unwitnessed b\/c .*$//'
  save
  if no_slower "$res/ab-step-pr.json"; then
    KEEP_RES=1 REASON="the float4 epilogue (issue 40, thirty-second session)" PROCESSES=3 \
      CFGS="pr pr-ada" bash "$0" record
  else
    echo "== not recorded: the A/B on pr did not pass"
  fi
  save
  tail_rule3 | sed -E 's/  unwitnessed b\/c .*$//'
  save
  ;;
thirtysecond-verify)
  # 2026-12-05 (thirty-second session): this binary's witness GPU tests (the A/A test now
  # bounds each sample's time through the checks, not its split at the end event), then
  # the attack suite.
  save() { tar czf "$out/thirtysecond-verify.tgz" -C "$out" r; }
  card
  gpu_tests_named witness-tests.log 150 gpu::ab_pairs_of_one_kernel_agree \
    gpu::time_the_events_did_not_see_on_one_side_is_judged \
    gpu::a_side_alone_is_judged_against_the_control_beside_each_round
  grep -E "test result|FAILED|panicked" "$res/witness-tests.log" | cut -c1-300
  save
  attack_suite 380
  save
  ;;
thirtyfirst-h200)
  # thirtyfirst-final's H200 part alone (nothing on another card): stored-only A/As of `pr`
  # and `pr-ada` with each shape's shift against the control, the split d128 tile at 4, 6
  # and 8 CTAs on the busiest SM.
  save() { tar czf "$out/thirtyfirst-h200.tgz" -C "$out" r; }
  card
  case "$gpu" in *H200*) ;; *) exit 0 ;; esac
  h200_witness_and_tail
  ;;
thirtyfirst-through)
  # 2026-12-05 (thirty-first session): the witness through the checks with the checks' own
  # time (two events the GPU records after the replay) taken out of the host's wait for
  # them: its GPU tests (through-checks shift as small as the lead's in an A/A, the same as
  # the lead's with a lead-in 100 µs longer), then A/As forced to A/B of `pr`, `pr-ada` and
  # `eval` (each shape's lead and through-checks shifts: what THROUGH_CHECKS_FLOOR_US is to be
  # set from), then one selftest trial's witness calibration.
  save() { tar czf "$out/thirtyfirst-through.tgz" -C "$out" r; }
  card
  gpu_tests_named witness-tests.log 150 gpu::ab_pairs_of_one_kernel_agree \
    gpu::time_the_events_did_not_see_on_one_side_is_judged
  grep -E "test result|FAILED|panicked" "$res/witness-tests.log" | cut -c1-300
  grep -oE "(through_checks_shift_us|shift_us): Some\([-0-9.]*\)" "$res/witness-tests.log" | cut -c1-60 | paste -sd' '
  save
  for c in pr pr-ada eval; do
    ab "aa-$c" kernels "configs/$c.yaml" --ab-always | sed -E 's/unwitnessed b\/c [^;]*; //'
    save
  done
  timed timeout 150 "$bin" selftest --config configs/pr.yaml --trials 1 --format json \
    --out "$res/selftest.json" > "$res/selftest.txt" 2>&1
  python3 -c 'import json,sys; print(json.dumps(json.load(open(sys.argv[1]))["witness"]))' \
    "$res/selftest.json" || tail -5 "$res/selftest.txt"
  save
  ;;
thirtyfifth-like)
  # 2026-12-05 (thirty-fifth session), whichever card comes: our p50s (the stored-only A/As of
  # pr and pr-ada, the L4 path's d64 shapes one side timed) against cuDNN / FA2 as a PyTorch
  # user times them (bench/sdpa_bench.py) and as the gate times our kernel (peers_variants.py's
  # qpool: a q of its own per call, not L2-warm; alone beside it), all in this call, then
  # bench/like_for_like.py's table. Every PR and pr-ada shape is in configs/pr.yaml, so its
  # peers serve both paths. ~5 min.
  save() { tar czf "$out/thirtyfifth-like.tgz" -C "$out" r; }
  card
  stored_aa pr
  stored_aa pr-ada
  ada_d64_config
  ab aa-d64 .carry/k-base "$res/ada-d64.yaml" | sed -E 's/  unwitnessed b\/c .*$//'
  save
  peers pr configs/pr.yaml
  save
  timed timeout 240 python3 bench/peers_variants.py configs/pr.yaml --variants alone,qpool \
    --out "$res/var-pr.json" > "$res/var-pr.txt" 2>&1
  cat "$res/var-pr.txt"
  python3 bench/like_for_like.py --ours "hopper=$res/stored-pr.json" \
    --ours "l4-path=$res/stored-pr-ada.json" --ours "l4-path=$res/ab-aa-d64.json" \
    --harness "$res/sdpa-pr.json" --variants "$res/var-pr.json" --out "$res/like.json" \
    | tee "$res/like.txt"
  save
  warm_alike
  save
  ;;
thirtyninth)
  # 2026-12-06 (thirty-ninth session). On an H200 first: `pr` and `pr-ada` re-recorded with
  # kernels/ (NAME_causal, d93f3f0) and a stored-only A/A each (issue 40 item 3). On any card:
  # the control now queues ~1 ms of spin after each sample's end event (a span through it, as
  # a kernel's through its checks) and a side alone's first test counts only where that span
  # confirms it (src/witness.rs): the control's GPU tests twice with their shifts printed,
  # the GPU tests, then stored-only A/As of pr and pr-ada (each a side alone against the
  # control), twice each, every shape's shifts up to the end and through the checks. ~7 min
  # (H200: ~9).
  save() { tar czf "$out/thirtyninth.tgz" -C "$out" r; }
  card
  case "$gpu" in
  *H200*) REASON="NAME_causal: causal units dealt by cost, d93f3f0 (issue 40 item 3)" \
    record_baselines; save ;;
  esac
  for i in 1 2; do
    gpu_tests_named "control-tests-$i.log" 150 gpu::the_control_reads_the_same \
      gpu::a_side_alone_is_judged_against_the_control_beside_each_round \
      gpu::which_step_of_a_kernels_sample_the_control_lacks
    grep -E "control at|control as|control upload|control 64|control all|control 150|test result|panicked" \
      "$res/control-tests-$i.log" | cut -c1-300
  done
  save
  gpu_tests_only 200
  save
  for i in 1 2; do
    for c in pr pr-ada; do
      stored_aa "$c"
      shifts "$c"
      cp "$res/stored-$c.json" "$res/stored-$c-$i.json"
    done
    save
  done
  ;;
fortyseventh-sc)
  # 2026-12-07 (forty-seventh session): Hopper's short d64 form as several consumers of one
  # 64-row unit each sharing every K/V tile (no INTRA, no ping-pong): variants/sc2s3, sc2s4
  # (two consumers, 3 or 4 stages, two CTAs a SM, 104 registers), sc4s4 (four, 4 stages, one
  # CTA a SM, 112 registers), sc4s4i (sc4s4 with INTRA), each against .carry/k-base =
  # kernels/ on the grids the short form takes; HOP_VARIANTS may name others of the same
  # grids: sc2s3p, sc2s4p, sc4s4p (with ping-pong), stg300f (fortyseventh's stagger on grids
  # of more than three CTAs a SM only), rs1 (O's rescale skipped where it is the identity).
  # ~3 min.
  save() { tar czf "$out/fortyseventh-sc.tgz" -C "$out" r; }
  card
  short_form_config
  for v in ${HOP_VARIANTS:-sc4s4 sc2s4 sc4s4i sc2s3}; do ab_brief "$v" ".carry/variants/$v" "$res/short.yaml"; done
  ;;
fortyseventh)
  # 2026-12-07 (forty-seventh session): the Q loads of a one-wave grid staggered by the CTA's
  # group (bench/variants/stagger.patch: CTA l waits (l / %nsmid) * CYC clocks before its first
  # loads). Under the gate every launch reads its own q from DRAM, all CTAs at once; staggered,
  # the first group's Q lands first and its chain starts while the rest load. Hopper's short
  # d64 form (variants/stg300, stg600, stg1200: CYC) on the grids it takes, then the L4 path's
  # d64 NAME (variants/astg600, astg1200) on ada-d64, each against .carry/k-base = kernels/.
  # ~5 min. (Call 1 of the session ran short.yaml without b1h8s512d64, the second control.)
  save() { tar czf "$out/fortyseventh.tgz" -C "$out" r; }
  card
  short_form_config
  for v in ${HOP_VARIANTS:-stg600 stg300 stg1200}; do ab_brief "$v" ".carry/variants/$v" "$res/short.yaml"; done
  ada_d64_config
  for v in ${ADA_VARIANTS:-astg600 astg1200}; do ab_brief "$v" ".carry/variants/$v" "$res/ada-d64.yaml"; done
  ;;
fortyeighth-fill)
  # 2026-12-07 (forty-eighth session): the L4 path's d64 NAME as a filling form
  # (bench/variants/afill.patch: NAME_fill {2, CG_FILL_MAXT}; a CTA takes its head's row tiles
  # x, x + gridDim.x, ... and requests the next unit's Q during its last K/V tile and its first
  # K/V tile before the store). variants/afill (at most 4 units a CTA) and afill2 (2) against
  # .carry/k-base = kernels/ on ada-d64 and on grids of two and more rounds (ada-fill), then
  # kernel_check --ada with each (one unit a CTA; KC=0 leaves it out); PEERS=1: the first
  # variant's table against FA2 / cuDNN (bench/sdpa_bench.py) after its A/Bs. ~4 min.
  save() { tar czf "$out/fortyeighth-fill.tgz" -C "$out" r; }
  card
  ada_d64_config
  derive_config ada-fill configs/pr-ada.yaml <<'SHAPES'
16 16 512 64 noncausal float16
6 16 512 64 noncausal float16
4 16 1024 64 noncausal float16
8 16 1024 64 noncausal bfloat16
4 16 1000 64 noncausal float16
2 16 4096 64 noncausal float16
SHAPES
  for v in ${ADA_VARIANTS:-afill afill2}; do
    ab_brief "$v" ".carry/variants/$v" "$res/ada-d64.yaml"
    ab_brief "$v-more" ".carry/variants/$v" "$res/ada-fill.yaml"
  done
  if [ "${PEERS:-0}" = 1 ]; then  # the first variant's A/B p50s against PyTorch's FA2 / cuDNN
    peers d64 "$res/ada-d64.yaml"
    peers fill "$res/ada-fill.yaml"
    v=${ADA_VARIANTS:-afill}; v=${v%% *}
    peer_table "$res/ab-$v.json" "$res/sdpa-d64.json"
    peer_table "$res/ab-$v-more.json" "$res/sdpa-fill.json"
    save
  fi
  if [ "${KC:-1}" = 1 ]; then
    kernel_check_variants ${ADA_VARIANTS:-afill afill2}
    grep -hE "PASS|FAIL|ok" "$res"/kc-ada-*.log | tail -6
  fi
  ;;
fiftysecond)
  # 2026-12-07 (fifty-second session, its call 1): the fifty-first session's prepared call
  # with two more candidates first: variants/qrk3 and qrk2 (bench/variants/qr.patch: the
  # short form's S = Q K^T with 3 or 2 of Q's four k-steps in registers, so that each tile
  # reads 6 or 4 KiB less from shared memory: a tile's 160 KiB an SM of shared-memory traffic
  # would take 1,250 clocks at 128 bytes a clock, above the tensor pipe's 1,024) and wgpq3
  # (wgp with the same, 122 registers), then `fiftyfirst-wg`'s candidates, then ncu (its
  # sections and MemoryWorkloadAnalysis: the shared-memory throughput) of kernels/ and
  # NCU_VARIANTS, then kernel_check with KC_VARIANTS (default qrk3) unless KC=0. 272 s (H100).
  HOP_VARIANTS=${HOP_VARIANTS:-qrk3 indun indu wgp wgpq3 qrk2 indu3 wgn} \
    NCU_VARIANTS=${NCU_VARIANTS:-qrk3 indun indu wgp} KC_VARIANTS=${KC_VARIANTS:-qrk3} \
    NCU_EXTRA="--section MemoryWorkloadAnalysis" SAVE_AS=fiftysecond KEEP_RES=1 \
    bash "$0" fiftyfirst-wg
  ;;
fiftyfirst-wg)
  # 2026-12-07 (fifty-first session): Hopper's short d64 form without a producer warpgroup:
  # attn_fwd_wg (one warpgroup a CTA loads its own tiles by cp.async, a CTA barrier a tile),
  # four CTAs a SM, so each thread keeps 128 registers at launch (109 used) where the
  # warp-specialised form's consumer has 104 after the producer's setmaxnreg: variants/wgp
  # (PIPE: S_j with P_{j-1} V_{j-1}) and wgn (without), against .carry/k-base = kernels/ on the
  # grids the short form takes. Then ncu of one b4h16s512d64 launch each (the issue and stall
  # ratios, pipe shares, SM clocks) of kernels/ and NCU_VARIANTS (default: indun, the merged
  # CTA of `fiftyfirst` with its unit index warp-uniform, and wgp), and unless KC=0
  # kernel_check with KC_VARIANTS (default: wgp). ~4 min. Run in the fifty-second session
  # through `fiftysecond`, and with HOP_VARIANTS=qrl3b.
  save() { tar czf "$out/${SAVE_AS:-fiftyfirst-wg}.tgz" -C "$out" r; }
  card
  short_form_config
  for v in ${HOP_VARIANTS:-wgp wgn}; do ab_brief "$v" ".carry/variants/$v" "$res/short.yaml"; done
  for v in base ${NCU_VARIANTS:-indun wgp}; do
    d=.carry/variants/$v; [ "$v" = base ] && d=$base
    timeout 60 ncu --clock-control none --section WarpStateStats --section InstructionStats \
      --section SpeedOfLight --section ComputeWorkloadAnalysis --section Occupancy ${NCU_EXTRA:-} \
      --csv --page raw \
      --kernel-name regex:^attention_fwd_ --launch-count 1 \
      "$bin" kernel-run --config configs/pr.yaml --kernels "$d" --harness kernels \
      --shape b4h16s512d64_f16 --no-reference > "$res/ncu-stall-$v.csv" 2> "$res/ncu-stall-$v.err"
  done
  NCU_PREFIX=ncu-stall NCU_STALLS=1 ncu_table base ${NCU_VARIANTS:-indun wgp}
  save
  [ "${KC:-1}" = 1 ] || exit 0
  KC_HOPPER=1 kernel_check_variants ${KC_VARIANTS:-wgp}
  ;;
fiftyfirst)
  # 2026-12-07 (fifty-first session): Hopper's short d64 form as four independent 64-row units
  # in one CTA (bench/variants/ind.patch, IND): each consumer warpgroup with its own Q buffer,
  # K/V ring and barriers, served by one warp of the producer warpgroup, so the four units
  # share nothing but the SM, as four one-unit CTAs do, and one producer warpgroup's 24
  # registers a thread instead of four leave the consumers 112 where they had 104: enough for
  # INTRA (S_j beside P_{j-1} V_{j-1}) without a spill in the loop. variants/indun (no INTRA,
  # 2 stages: the merge alone), indu (INTRA, 2), indu3 (INTRA, 3) against .carry/k-base =
  # kernels/ on the grids the short form takes, then kernel_check (the Hopper forms' random
  # cases, odd lengths among them) with KC_VARIANTS (default: indu). ~5 min. Call 1 of the
  # session ran HOP_VARIANTS="ind ind3 indn" KC_VARIANTS=ind: the same forms with the unit
  # index not warp-uniform to ptxas (indu-on-ind.patch mends it), +12 ... +13%.
  save() { tar czf "$out/fiftyfirst.tgz" -C "$out" r; }
  card
  short_form_config
  for v in ${HOP_VARIANTS:-indun indu indu3}; do ab_brief "$v" ".carry/variants/$v" "$res/short.yaml"; done
  KC_HOPPER=1 kernel_check_variants ${KC_VARIANTS:-indu}
  ;;
fiftieth-h200)
  # 2026-12-07 (fiftieth session): an H200 only (any other card: its name, nothing else). The
  # stored-only A/As of pr-ada and pr with kernels/ (the forty-ninth session's step moved no
  # launch of either config, so the H200's records should judge them: item 3, no re-record),
  # then issue 40's tables through `thirtythird` (.carry/k-base = kernels/). ~6 min.
  save() { tar czf "$out/fiftieth-h200.tgz" -C "$out" r; }
  card
  case "$gpu" in
  *H200*)
    stored_aa pr-ada; stored_aa pr; grep -h "launch" "$res"/stored-*.txt | head -5; save
    KEEP_RES=1 bash bench/issue40_device.sh thirtythird
    save
    ;;
  *) echo "not an H200: nothing run" ;;
  esac
  ;;
fiftieth-kv2)
  # 2026-12-07 (fiftieth session): the lead the ceiling leaves for item 2 at d128
  # (variants/kv2, bench/variants/kv2.patch): the L4 path's d128 NAME as 8 warps x 32 rows
  # (256-row CTAs), Q in shared memory, K and V each double-buffered on mbarriers, no CTA
  # barrier. kernel_check --ada with it first (nothing timed if it fails), then the gate's
  # A/B against .carry/k-base = kernels/ on pr-ada (FA2 / cuDNN after it) and ada-mid. ~6 min.
  save() { tar czf "$out/fiftieth-kv2.tgz" -C "$out" r; }
  card
  ada_mid_config
  KC_T=${KC_T:-160} kernel_check_variants kv2
  grep -hE "ALL CHECKS|FAIL" "$res/kc-ada-kv2.log" | tail -4
  if grep -q "ALL CHECKS PASSED" "$res/kc-ada-kv2.log"; then
    ab kv2-ada .carry/variants/kv2 configs/pr-ada.yaml | sed -E 's/  unwitnessed b\/c .*$//'
    save
    ab kv2-mid .carry/variants/kv2 "$res/ada-mid.yaml" | sed -E 's/  unwitnessed b\/c .*$//'
    save
    ada_peers
    peer_table "$res/ab-kv2-ada.json" "$res/sdpa-ada.json"
    save
  else
    echo "== kv2: kernel_check did not pass; nothing timed"
  fi
  ;;
fiftieth-probe)
  # 2026-12-07 (fiftieth session): bench/mma_ceiling.py again after its ldmatrix addresses
  # were made to repeat only after 8 to 64 iterations (in `fiftieth` ptxas had kept the reads
  # in registers), fp16 at 8 and 16 mma's an iteration; ncu of the probe at 8 warps for 4, 2
  # and 1 mma's a read (the instructions executed say whether every ldmatrix ran). ~2 min.
  save() { tar czf "$out/fiftieth-probe.tgz" -C "$out" r; }
  card
  timed timeout 120 python3 bench/mma_ceiling.py --out "$res/ceiling-f16.json" \
    > "$res/ceiling-f16.txt" 2>&1
  cat "$res/ceiling-f16.txt"
  timed timeout 60 python3 bench/mma_ceiling.py --mma 16 --warps 8,16 --reads 0,4,6,8,16 \
    --out "$res/ceiling-f16-m16.json" > "$res/ceiling-f16-m16.txt" 2>&1
  cat "$res/ceiling-f16-m16.txt"
  save
  metrics=$(ncu_metrics)
  for reads in 2 4 8; do
    timed timeout 60 ncu --clock-control none --metrics "$metrics" --kernel-name regex:mma_probe \
      --launch-skip 2 --launch-count 1 --csv --page raw \
      python3 bench/mma_ceiling.py --warps 8 --reads "$reads" > "$res/ncu-probe-r$reads.csv" 2>&1
  done
  ncu_table probe-r2 probe-r4 probe-r8
  save
  ;;
fiftieth)
  # 2026-12-07 (fiftieth session): the ceiling item 2 is judged under on the proxy. The
  # mma.sync ceiling of this card (bench/mma_ceiling.py: one CTA a SM of 4 to 16 warps, the B
  # fragments from registers or from ldmatrix.x4 at 1 to 4 mma's a read; fp16, also 16 mma's
  # an iteration and bf16); then ncu of one launch each, in one unit (the tensor pipe's
  # active cycles): the probe at 8 warps (registers; 2 mma's a read), the L4 path's d128 NAME
  # (pr-ada's b2h16s4096d128) and PyTorch's FA2 on the same shape; then, unless TABLES=0,
  # issue 40's tables (`thirtythird`'s) and the stored-only A/As of pr-ada and pr. ~9 min.
  save() { tar czf "$out/fiftieth.tgz" -C "$out" r; }
  card
  timed timeout 120 python3 bench/mma_ceiling.py --out "$res/ceiling-f16.json" \
    > "$res/ceiling-f16.txt" 2>&1
  cat "$res/ceiling-f16.txt"
  timed timeout 60 python3 bench/mma_ceiling.py --mma 16 --warps 8,16 --reads 0,4,8 \
    --out "$res/ceiling-f16-m16.json" > "$res/ceiling-f16-m16.txt" 2>&1
  cat "$res/ceiling-f16-m16.txt"
  timed timeout 40 python3 bench/mma_ceiling.py --bf16 --warps 8 --reads 0,4 \
    --out "$res/ceiling-bf16.json" > "$res/ceiling-bf16.txt" 2>&1
  cat "$res/ceiling-bf16.txt"
  save
  metrics=$(ncu_metrics)
  for reads in 0 4; do
    timed timeout 60 ncu --clock-control none --metrics "$metrics" --kernel-name regex:mma_probe \
      --launch-skip 2 --launch-count 1 --csv --page raw \
      python3 bench/mma_ceiling.py --warps 8 --reads "$reads" > "$res/ncu-probe-r$reads.csv" 2>&1
  done
  timed timeout 90 ncu --clock-control none --metrics "$metrics" --kernel-name regex:^attention_fwd_ \
    --launch-count 1 --csv --page raw "$bin" kernel-run --config configs/pr-ada.yaml \
    --kernels kernels --harness kernels --shape b2h16s4096d128_f16 --no-reference \
    > "$res/ncu-ours.csv" 2>&1
  timed timeout 90 ncu --clock-control none --metrics "$metrics" --kernel-name regex:flash \
    --launch-skip 2 --launch-count 1 --csv --page raw python3 -c "
import torch, torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
q, k, v = (torch.randn(2, 16, 4096, 128, device='cuda', dtype=torch.float16) for _ in range(3))
with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
    for _ in range(3):
        F.scaled_dot_product_attention(q, k, v)
torch.cuda.synchronize()
" > "$res/ncu-fa2.csv" 2>&1
  ncu_table probe-r0 probe-r4 ours fa2
  save
  if [ "${TABLES:-1}" = 1 ]; then
    KEEP_RES=1 bash bench/issue40_device.sh thirtythird
    stored_aa pr-ada; stored_aa pr; save
  fi
  ;;
fortyninth)
  # 2026-12-07 (forty-ninth session): the fill form with the host's one-tile grid where the
  # fill grid costs more (NAME_fill_or_one, src/gpu/device.rs launch_grid_x; this binary):
  # variants/afo (afill2 with NAME_fill_or_one, its one-tile grids on NAME's own body) and
  # afon (the same, every grid on the fill body) against .carry/k-base = kernels/ on ada-d64
  # and ada-fill (ADA_VARIANTS); then k-base and SMS_TREES (afo) by bench/l4_sms.py on 56 SMs
  # (the grid the host gives an L4-sized GPU) and the whole GPU; kernel_check --ada with
  # KC_VARIANTS (afo; with its fill-grid sections: every NAME_fill entry at 2, 3 and its most
  # tiles a CTA); then, with kernels/ = afo, this binary's GPU tests and the stored-only A/As
  # of pr-ada and pr (CHECKS=0 leaves them out, GPU_TESTS=0 the tests). ~8 min.
  save() { tar czf "$out/fortyninth.tgz" -C "$out" r; }
  card
  ada_d64_config
  derive_config ada-fill configs/pr-ada.yaml <<'SHAPES'
16 16 512 64 noncausal float16
6 16 512 64 noncausal float16
4 16 1024 64 noncausal float16
8 16 1024 64 noncausal bfloat16
4 16 1000 64 noncausal float16
2 16 4096 64 noncausal float16
SHAPES
  for v in ${ADA_VARIANTS:-afo afon}; do
    ab_brief "$v" ".carry/variants/$v" "$res/ada-d64.yaml"
    ab_brief "$v-more" ".carry/variants/$v" "$res/ada-fill.yaml"
  done
  trees=${SMS_TREES-afo}
  if [ -n "$trees" ]; then
    # shellcheck disable=SC2046
    l4_sms_trees "$res/ada-d64.yaml $res/ada-fill.yaml" k-base $(for v in $trees; do echo "variants/$v"; done)
    # shellcheck disable=SC2086
    python3 - "$res" $trees <<'PY'
import json, sys
res, names = sys.argv[1], sys.argv[2:]
runs = {n: json.load(open(f"{res}/l4-sms-{n}.json")) for n in ["k-base"] + names}
base = {r["name"]: r for r in runs["k-base"]["shapes"]}
for n in names:
    print(f"-- {n} against k-base (ours' µs, entry and tiles a CTA per side)")
    for r in runs[n]["shapes"]:
        b = base.get(r["name"], {})
        for w in ("whole", "part"):
            o, bo = r.get(f"{w}_ours_us"), b.get(f"{w}_ours_us")
            fl = r.get(f"{w}_flash_us")
            if o and bo and fl:
                print(f"{r['name']:28} {w:5} {bo:8.2f} -> {o:8.2f} ({100 * (o / bo - 1):+6.2f}%)"
                      f"  /FA2 {bo / fl:.2f} -> {o / fl:.2f}  {b.get(w + '_entry')}"
                      f"/{b.get(w + '_tiles_per_cta')} -> {r.get(w + '_entry')}"
                      f"/{r.get(w + '_tiles_per_cta')}")
PY
    save
  fi
  if [ -n "${KC_VARIANTS-afo}" ]; then
    # shellcheck disable=SC2086
    kernel_check_variants ${KC_VARIANTS-afo}
    grep -hE "ALL CHECKS|FAIL" "$res"/kc-ada-*.log | tail -6
    grep -hcE "rand-(ada-)?fill" "$res"/kc-ada-*.log || true
  fi
  if [ "${CHECKS:-1}" = 1 ]; then
    cp .carry/variants/afo/attention.cu kernels/attention.cu
    [ "${GPU_TESTS:-1}" = 1 ] && { gpu_tests_only "${GPU_T:-170}"; save; }
    stored_aa pr-ada; stored_aa pr; save
    cp "$base/attention.cu" kernels/attention.cu
  fi
  ;;
fortyeighth)
  # 2026-12-07 (forty-eighth session), any card: issue 40's tables (`thirtythird`: item 1 from
  # the stored-only A/A of `pr`, item 2 from the L4 path one side timed; cuDNN / FA2 by the
  # independent harness after each) and its nightly rows, then this head's GPU tests. ~5 min.
  save() { tar czf "$out/fortyeighth.tgz" -C "$out" r; }
  KEEP_RES=1 bash "$0" thirtythird
  nightly_table; save
  gpu_tests_only "${GPU_T:-170}"; save
  ;;
fiftyfourth)
  # 2026-12-08 (fifty-fourth session): the input mixture without degenerate classes (flat keys,
  # a bounded sink, offsets of at most 6 sigma) and parity's centered error, first on a GPU:
  # the GPU tests (the device's fill against the host's mirror, the shipped kernel's centered
  # error on every class), the attack suite (uniform_on_flat must read parity-fail, every
  # other attack still fail closed), then, since util.cu changed the method, this card's `pr`
  # and `pr-ada` re-recorded (3 processes) with a stored-only A/A each (issue 40 item 3).
  # ~10 min on an H100; GPU_T, ATK_T set limits (s); RECORD=0 skips the re-records.
  save() { tar czf "$out/fiftyfourth.tgz" -C "$out" r; }
  card
  gpu_tests_only "${GPU_T:-170}"; save
  attack_suite "${ATK_T:-380}"; save
  if [ "${RECORD:-1}" = 1 ]; then
    REASON="${REASON:-the input mixture and the centered parity error of 2026-12-08 (a new method)}" \
      record_baselines; save
  fi
  ;;
fortysixth)
  # 2026-12-07 (forty-sixth session): this head's binaries (a results file's derived figures,
  # its verdict against its own parity record, and what compare, history and baseline update
  # do with a shape that failed) on any card: the GPU tests, then the attack suite (every
  # attack must still fail closed). ~9 min; GPU_T and ATK_T set their limits (s).
  save() { tar czf "$out/fortysixth.tgz" -C "$out" r; }
  card
  gpu_tests_only "${GPU_T:-170}"; save
  attack_suite "${ATK_T:-380}"; save
  ;;
fortyfirst)
  # 2026-12-06 (forty-first session): an H200: issue 40 item 3 first (`pr-ada`, the stale one,
  # then `pr`, re-recorded with kernels/ and a stored-only A/A each), then issue 40's tables on
  # it (main's A/A of `pr` and `pr-ada`, cuDNN and FA2 by the independent harness after each).
  # Any other card: with H100_TESTS=1 the GPU tests of main's binaries, with H100_AA=1 the
  # stored-only A/As of `pr-ada` and `pr` (~55 s), else nothing. Carry
  # .carry/k-base = kernels/, .carry/k-h200rec = 53cd97c's kernels (record_or_judge). ~10 min
  # on an H200 (the tables may be cut by the call's limit: each is saved as it lands).
  save() { tar czf "$out/fortyfirst.tgz" -C "$out" r; }
  card
  case "$gpu" in
  *H200*)
    record_or_judge pr-ada
    record_or_judge pr
    ab pr-aa .carry/k-base configs/pr.yaml; save
    peers pr configs/pr.yaml; peer_table "$res/ab-pr-aa.json" "$res/sdpa-pr.json"; save
    ab ada-aa .carry/k-base configs/pr-ada.yaml; save
    ada_peers; peer_table "$res/ab-ada-aa.json" "$res/sdpa-ada.json"; save
    ;;
  *)
    if [ -n "${H100_TESTS:-}" ]; then gpu_tests_only 150; save
    elif [ -n "${H100_AA:-}" ]; then
      stored_aa pr-ada; stored_aa pr; grep -h "launch" "$res"/stored-*.txt | head -5; save
    else echo "not an H200"; fi
    ;;
  esac
  ;;
fortieth-last)
  # 2026-12-06 (fortieth session): an H200: issue 40 item 3 first (`pr` and `pr-ada`
  # re-recorded, stored-only A/As). Any card: small_l4.py on the grids NAME_small by cost moves
  # that the session had not timed, the shortest rows (128 keys, a tail of 1601) and one it
  # keeps on 56 SMs. ~1 min (H200: ~7).
  save() { tar czf "$out/fortieth-last.tgz" -C "$out" r; }
  card
  h200_records
  small_l4 small-last 150 --shape 4,16,128 --shape 2,32,128 --shape 1,6,1601 --shape 16,16,128
  ;;
fortieth-final)
  # 2026-12-06 (fortieth session): the binary with NAME_small by cost. An H200: issue 40 item 3
  # (`pr` and `pr-ada` re-recorded, stored-only A/As), then the GPU tests. Any other card:
  # stored-only A/As of `pr` and `pr-ada` (the rule moves none of their launches: each shape's
  # launch is checked against the stored one), then the GPU tests. ~3 min (H200: ~7).
  save() { tar czf "$out/fortieth-final.tgz" -C "$out" r; }
  card
  case "$gpu" in
  *H200*) h200_records ;;
  *) stored_aa pr; stored_aa pr-ada; save ;;
  esac
  grep -h "launch" "$res"/stored-*.txt | head -5
  gpu_tests_only 150
  save
  ;;
fortieth-smallrule)
  # 2026-12-06 (fortieth session): the host's NAME_small by cost (src/gpu/device.rs pick_form)
  # judged by the gate's own A/B on the L4 path (pr-ada's settings, CG_ADA_TILES) on 132 SMs:
  # kernels/ against variants/nosmall (the same kernels without the mma.sync NAME_small, so the
  # host launches NAME), with this binary. Non-causal d64 grids the rule moves to NAME_small,
  # then grids where both sides run the same kernel (NAME, NAME_causal); b2h8s512d64 takes
  # NAME_small on both rules (fewer CTAs than SMs), here against NAME. Then small_l4.py on the
  # PR shapes at 56 SMs. An H200: the re-records first.
  save() { tar czf "$out/fortieth-smallrule.tgz" -C "$out" r; }
  card
  h200_records
  derive_config small-flip configs/pr-ada.yaml <<'SHAPES'
3 16 512 64 noncausal float16
2 12 1024 64 noncausal float16
4 16 384 64 noncausal float16
5 16 512 64 noncausal float16
3 12 1024 64 noncausal bfloat16
6 16 768 64 noncausal float16
SHAPES
  derive_config small-same configs/pr-ada.yaml <<'SHAPES'
4 16 512 64 noncausal float16
8 16 512 64 noncausal float16
3 16 512 64 causal float16
2 8 512 64 noncausal float16
SHAPES
  BASE=$PWD/.carry/variants/nosmall ab small-flip kernels "$res/small-flip.yaml"
  save
  BASE=$PWD/.carry/variants/nosmall ab small-same kernels "$res/small-same.yaml"
  save
  small_l4 small-pr 120 --shape 2,8,512 --shape 4,16,512 --shape 8,16,512 --shape 1,8,512
  ;;
fortieth-small2)
  # 2026-12-06 (fortieth session): bench/small_l4.py on grids whose busiest-SM cost margin for
  # NAME_small is 16.7%, 10% or 6.25% on 56 SMs or on the whole GPU, from 256 to 2048 keys, and
  # NAME-favoured ones: how large a margin the rule needs. An H200: the re-records first.
  save() { tar czf "$out/fortieth-small2.tgz" -C "$out" r; }
  card
  h200_records
  local_shapes=""
  for sh in 2,8,512 1,8,1024 1,16,640 2,16,512 1,8,2048 2,8,1024 1,60,512 5,12,512 3,16,640 \
    3,16,512 2,12,1024 1,12,2048 4,16,384 5,16,512 3,12,1024 2,12,1536 6,16,768 3,12,2048 \
    6,12,1024 4,16,512 8,16,512; do
    local_shapes="$local_shapes --shape $sh"
  done
  # shellcheck disable=SC2086
  small_l4 small2 420 $local_shapes
  ;;
fortieth-small)
  # 2026-12-06 (fortieth session), issue 40 item 2 on an L4: the L4 path's d64 NAME against
  # NAME_small, both forced, on non-causal grids on 56 SMs that round as the PR shapes do on an
  # L4's 58 (bench/small_l4.py: is the host's busiest-SM cost right that NAME_small would be
  # cheaper there?). An H200: issue 40 item 3 first (the re-records). ~2 min (H200: ~7).
  save() { tar czf "$out/fortieth-small.tgz" -C "$out" r; }
  card
  h200_records
  small_l4 small 300
  ;;
fortieth-verify)
  # 2026-12-06 (fortieth session): main's binary and test binary (src of 4ff0638) on a GPU.
  # An H200: issue 40 item 3 first (`pr` and `pr-ada` re-recorded with kernels/, d93f3f0's,
  # stored-only A/As), then the GPU tests (~8 min). Any other card: the GPU tests, then the
  # attack suite (every attack must fail closed; ~7 min).
  save() { tar czf "$out/fortieth-verify.tgz" -C "$out" r; }
  card
  case "$gpu" in
  *H200*) h200_records; gpu_tests_only 150; save ;;
  *) gpu_tests_only 150; save; attack_suite 380; save ;;
  esac
  ;;
fortieth-record)
  # 2026-12-06 (fortieth session), issue 40 item 3: this card's baselines of kernels/ (d93f3f0's,
  # NAME_causal), each with a stored-only A/A. An H200: `pr` and `pr-ada`. An H100: `pr` alone
  # (its `pr-ada` was recorded with these kernels; its `pr` with bd13957's, whose sm_90a code
  # is the same), then a stored-only A/A of `pr-ada`. ~3 min (H200: ~5).
  card
  case "$gpu" in
  *H200*) h200_records ;;
  *) REASON=$FORTIETH_REASON CFGS=pr record_baselines; stored_aa pr-ada ;;
  esac
  ;;
fortieth)
  # 2026-12-06 (fortieth session): on any card, what a CUDA context of its own for each side
  # would give (bench/context_probe.py: isolation of cuMemAlloc memory between contexts,
  # VMM memory across them, a wait across them, the cost of alternating them sample by
  # sample, work of two queued at once); on an H200 also issue 40 item 3: `pr` and `pr-ada`
  # re-recorded with kernels/ (d93f3f0's) and a stored-only A/A each. ~1 min (H200: ~6).
  card
  timed timeout 120 python3 bench/context_probe.py --out "$res/context_probe.json" \
    > "$res/context_probe.txt" 2>&1
  cut -c1-400 "$res/context_probe.txt"
  h200_records
  ;;
thirtyninth-h200)
  # 2026-12-06 (thirty-ninth session): on an H200 only (any other card: nothing, at once),
  # issue 40 item 3: `pr` and `pr-ada` re-recorded with kernels/ (d93f3f0's, NAME_causal) and
  # a stored-only A/A each. ~5 min.
  save() { tar czf "$out/thirtyninth-h200.tgz" -C "$out" r; }
  card
  case "$gpu" in
  *H200*) REASON="NAME_causal: causal units dealt by cost, d93f3f0 (issue 40 item 3)" \
    record_baselines; save ;;
  *) echo "not an H200: nothing to do" ;;
  esac
  ;;
thirtyninth-final)
  # 2026-12-06 (thirty-ninth session): on an H200 first `pr` and `pr-ada` re-recorded with
  # kernels/ (d93f3f0's, NAME_causal) and their stored-only A/As (issue 40 item 3); on any
  # card `ci-gate selftest` with the tail and the least spans (95a5bf7): 3 A/A trials of the
  # PR config, its witness line (shapes judged: false alarms; each test's largest shift). ~4 min
  # (H200: ~7).
  save() { tar czf "$out/thirtyninth-final.tgz" -C "$out" r; }
  card
  case "$gpu" in
  *H200*) REASON="NAME_causal: causal units dealt by cost, d93f3f0 (issue 40 item 3)" \
    record_baselines; save ;;
  esac
  timed timeout 330 "$bin" selftest --config configs/pr.yaml --trials 3 --format json \
    --out "$res/selftest.json" > "$res/selftest.txt" 2>&1
  python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(json.dumps(r["witness"]))' \
    "$res/selftest.json" || tail -5 "$res/selftest.txt"
  grep -iE "flagged|false|witness|PASS|FAIL" "$res/selftest.txt" | head -12 | cut -c1-300
  save
  ;;
thirtyninth-tail)
  # 2026-12-06 (thirty-ninth session): ~200 µs of the harness's spin after every sample's
  # checks (the tail) and each witness test on the least of its span and the later ones
  # (src/witness.rs): the GPU tests, forced A/As of pr and pr-ada (--ab-always: every shape
  # a pair) and stored-only A/As of both (a side alone against the control), every shape's
  # shifts printed. ~5 min.
  save() { tar czf "$out/thirtyninth-tail.tgz" -C "$out" r; }
  card
  case "$gpu" in
  *H200*) REASON="NAME_causal: causal units dealt by cost, d93f3f0 (issue 40 item 3)" \
    record_baselines; save ;;
  esac
  gpu_tests_only 200
  save
  for c in pr pr-ada; do
    ab "aa-$c" kernels "configs/$c.yaml" --ab-always | sed -E 's/unwitnessed b\/c [^;]*; //'
    python3 - "$res/ab-aa-$c.json" <<'PY'
import json, sys
for s in json.load(open(sys.argv[1]))["shapes"]:
    u = (s.get("measurement") or {}).get("unwitnessed") or {}
    f = lambda k: "-" if u.get(k) is None else f"{u[k]:+.1f}"
    print(f"  {s['name']:<28} {s.get('verdict'):<12} shifts: end {f('shift_us')}, checks {f('through_checks_shift_us')}, tail {f('through_tail_shift_us')} (limits {u.get('limit_us', 0):.1f}, {u.get('through_checks_limit_us') or 0:.1f}) {s.get('error') or ''}"[:300])
PY
    save
  done
  for c in pr pr-ada; do
    stored_aa "$c"
    shifts "$c"
  done
  save
  ;;
thirtyninth-attacks)
  # 2026-12-06 (thirty-ninth session): the attack suite with the control's span through its
  # work (every attack must still fail closed), then the control's GPU tests once more. ~6 min.
  save() { tar czf "$out/thirtyninth-attacks.tgz" -C "$out" r; }
  card
  attack_suite 330
  save
  gpu_tests_named control-tests.log 120 gpu::the_control_reads_the_same \
    gpu::a_side_alone_is_judged_against_the_control_beside_each_round
  grep -E "control at|test result|panicked" "$res/control-tests.log" | cut -c1-300
  save
  ;;
thirtyeighth-witness)
  # 2026-12-06 (thirty-eighth session): the witness's first test counted only where the
  # second corroborates it (src/witness.rs `corroborated`), on a GPU: the GPU tests (the
  # witness's among them), forced A/As of pr and pr-ada (--ab-always: each shape a pair, its
  # shifts printed), then the attack suite (every attack must still fail closed). ~7 min.
  save() { tar czf "$out/thirtyeighth-witness.tgz" -C "$out" r; }
  card
  gpu_tests_only 150
  save
  for c in pr pr-ada; do
    ab "aa-$c" kernels "configs/$c.yaml" --ab-always | sed -E 's/unwitnessed b\/c [^;]*; //'
  done
  save
  attack_suite 330
  save
  ;;
thirtyeighth-final)
  # 2026-12-06 (thirty-eighth session): the three shapes of thirtyeighth-causal that the
  # witness refused (no verdict: host wake-ups, docs/PERF.md) again, NAME_causal against the
  # kernels before it (.carry/k-prev); on an H200 first `pr` and `pr-ada` re-recorded and
  # their stored-only A/As (issue 40 item 3). ~1 min (H200: ~3).
  save() { tar czf "$out/thirtyeighth-final.tgz" -C "$out" r; }
  card
  case "$gpu" in
  *H200*) CFGS="pr pr-ada" REASON="NAME_causal: causal units dealt by cost (issue 40)" \
    record_baselines; save ;;
  esac
  derive_config refused configs/pr-ada.yaml <<'SHAPES'
1 8 512 64 noncausal float16
2 16 1024 64 causal float16
1 16 8192 64 causal float16
SHAPES
  BASE=$PWD/.carry/k-prev ab_brief refused kernels "$res/refused.yaml"
  ;;
thirtyeighth-record)
  # 2026-12-06 (thirty-eighth session), after NAME_causal: how late the host sees the end
  # event (bench/wake_probe.py: the witness's false alarms of calls 1 and 5); the card's
  # pr-ada re-recorded (an H200: pr too; an H100's pr runs the sm_90a kernels, unchanged) and
  # stored-only A/As; the GPU tests; issue 40's tables as thirtyfifth-like takes them. ~8 min.
  save() { tar czf "$out/thirtyeighth-record.tgz" -C "$out" r; }
  card
  timed timeout 60 python3 bench/wake_probe.py --out "$res/wake.json" > "$res/wake.txt" 2>&1
  cat "$res/wake.txt"
  case "$gpu" in *H200*) cfgs="pr pr-ada" ;; *) cfgs=pr-ada ;; esac
  CFGS=$cfgs REASON="NAME_causal: causal units dealt by cost (issue 40)" record_baselines
  stored_aa pr
  save
  CI_GATE_GOLDEN_DIR=$PWD/tests/golden CI_GATE_BIN=$bin timed timeout 200 "$it_tests" --ignored \
    --test-threads=1 gpu:: --skip adversarial_gpu:: > "$res/gpu-tests.log" 2>&1
  grep -E "test result|FAILED|panicked" "$res/gpu-tests.log" | head -6
  save
  bash "$0" thirtyfifth-like
  ;;
thirtyeighth-causal)
  # 2026-12-06 (thirty-eighth session): NAME_causal (kernels/, with the binary that picks it
  # for every causal launch on NAME): the units of a causal grid dealt by cost, the heaviest
  # first across the grid (rank-major) and, on a grid of one wave, paired with the lightest;
  # d64 and d128 on the mma.sync path. .carry/k-base's kernels name the pairing
  # `_one_wave_causal`, which this binary does not know: the base runs NAME everywhere. The
  # gate's A/B on causal grids of several waves, pr-ada, ada-d64 and the one-wave grids;
  # kernel_check.py --ada (by_cost_cases: one wave and several, d64 and d128); the new paths
  # under compute-sanitizer; on 56 SMs (a green context) the kernels before the pairing
  # (.carry/k-prev) against kernels/ with S = 56. ~8 min.
  save() { tar czf "$out/thirtyeighth-causal.tgz" -C "$out" r; }
  card
  derive_config causal-multi configs/pr-ada.yaml <<'SHAPES'
8 16 512 64 causal float16
6 16 512 64 causal bfloat16
4 16 1024 64 causal float16
4 16 2048 64 causal float16
2 16 4096 128 causal float16
2 16 2048 128 causal bfloat16
4 16 1024 128 causal float16
1 16 8192 64 causal float16
SHAPES
  ab_brief causal-multi kernels "$res/causal-multi.yaml"
  ab_brief causal-pr-ada kernels configs/pr-ada.yaml
  ada_d64_config
  ab_brief causal-d64 kernels "$res/ada-d64.yaml"
  causal_d64_config
  ab_brief causal-one-wave kernels "$res/causal-d64.yaml"
  timed timeout 160 python3 bench/kernel_check.py --ada --no-timing --out "$res/kc-ada.json" \
    > "$res/kc-ada.log" 2>&1
  grep -E "rand|FAIL|FAILURE|passed|failed" "$res/kc-ada.log" | tail -4 | cut -c1-200
  save
  derive_config san-causal configs/sanitize-ada.yaml <<'SHAPES'
1 50 333 64 causal float16
1 100 333 64 causal bfloat16
1 70 300 128 causal float16
1 1 384 128 causal bfloat16
SHAPES
  timed timeout 150 "$bin" sanitize --config "$res/san-causal.yaml" --kernels kernels \
    > "$res/san-causal.txt" 2>&1
  grep -E "sanitize:|finding|error" "$res/san-causal.txt" | head -6
  save
  derive_config l4-causal configs/pr-ada.yaml <<'SHAPES'
1 16 512 64 causal float16
4 16 512 64 causal float16
8 16 512 64 causal float16
4 16 2048 64 causal float16
2 16 4096 128 causal float16
SHAPES
  l4_sms_k56 "$res/l4-causal.yaml"
  ;;
thirtyeighth-h200)
  # 2026-12-06 (thirty-eighth session): on an H200 only (any other card: nothing, at once),
  # issue 40 item 3: `pr` and `pr-ada` re-recorded with kernels/ (NAME_causal) and a
  # stored-only A/A each, then issue 40's tables as thirtyfifth-like takes them. ~8 min.
  save() { tar czf "$out/thirtyeighth-h200.tgz" -C "$out" r; }
  card
  case "$gpu" in
  *H200*)
    REASON="NAME_causal: causal units dealt by cost (issue 40)" record_baselines
    save
    bash "$0" thirtyfifth-like
    ;;
  *) echo "not an H200: nothing to do" ;;
  esac
  ;;
thirtyeighth-control)
  # 2026-12-06 (thirty-eighth session): gpu::the_control_reads_the_same_without_the_duty_cycles_
  # idle_time failed in call 1 (b2h16s4096d128: a side alone 60 µs beyond both controls, limit
  # 20; 2.9-3.1 µs on an H100 in the thirty-first session): the test again, twice, now printing
  # each round's median, and the witness's A/A test beside it; on an H200 first the `pr` and
  # `pr-ada` re-recorded (issue 40 item 3). ~1 min (H200: ~4).
  save() { tar czf "$out/thirtyeighth-control.tgz" -C "$out" r; }
  card
  case "$gpu" in *H200*) REASON="NAME_one_wave_causal, bd13957 (issue 40 item 3)" record_baselines; save ;; esac
  for i in 1 2; do
    gpu_tests_named "control-tests-$i.log" 120 gpu::the_control_reads_the_same \
      gpu::a_side_alone_is_judged_against_the_control_beside_each_round
    grep -E "control at|rounds' medians|test result|panicked" "$res/control-tests-$i.log" | cut -c1-400
  done
  save
  ;;
thirtyeighth)
  # 2026-12-06 (thirty-eighth session), whichever card comes. On an H200: its `pr` and `pr-ada`
  # re-recorded with the kernels of bd13957 (NAME_one_wave_causal), a stored-only A/A each
  # (issue 40 item 3). On any card: the GPU tests of this head (the attacks apart); then the
  # one-wave form at an L4's SM count: bench/l4_sms.py in a green context of 56 SMs (an L4 has
  # 58), the kernels before the form (.carry/k-prev: NAME, heaviest first) against kernels/
  # with S = 56 in pair_heavy_with_light (the kernel reads the card's %nsmid, which a partition
  # does not change), on causal d64 grids of 64 to 112 CTAs (one wave at two a SM on 56) and a
  # guard of 256 (NAME on both). On an H100 the attack suite last. ~5 min on an H200, ~8 on an
  # H100.
  save() { tar czf "$out/thirtyeighth.tgz" -C "$out" r; }
  card
  case "$gpu" in *H200*) REASON="NAME_one_wave_causal, bd13957 (issue 40 item 3)" record_baselines; save ;; esac
  CI_GATE_GOLDEN_DIR=$PWD/tests/golden CI_GATE_BIN=$bin timed timeout 240 "$it_tests" --ignored \
    --test-threads=1 gpu:: --skip adversarial_gpu:: > "$res/gpu-tests.log" 2>&1
  grep -E "test result|FAILED|panicked" "$res/gpu-tests.log" | head -6
  save
  derive_config l4-one-wave configs/pr-ada.yaml <<'SHAPES'
1 16 512 64 causal float16
2 8 512 64 causal float16
1 8 1024 64 causal float16
3 8 512 64 causal float16
1 16 768 64 causal bfloat16
1 28 512 64 causal float16
4 16 512 64 causal float16
SHAPES
  l4_sms_k56 "$res/l4-one-wave.yaml"
  case "$gpu" in *H200*) ;; *) attack_suite 330; save ;; esac
  ;;
thirtyseventh-form)
  # 2026-12-06 (thirty-seventh session): the pairing as a form of its own,
  # NAME_one_wave_causal (kernels/, with the binary that picks it), against .carry/k-base (the
  # kernels before it: NAME byte-identical, no such form). Where the block scheduler puts a
  # grid of one wave; the gate's A/B on causal-d64 and ada-d64; kernel_check.py --ada (the
  # form on N(0,1) and on grids of one wave); the form under compute-sanitizer; FA2 / cuDNN
  # on ada-d64 in the same call; both trees under one timer. ~5 min.
  save() { tar czf "$out/thirtyseventh-form.tgz" -C "$out" r; }
  one_wave_setup
  derive_config san-one-wave configs/sanitize-ada.yaml <<'SHAPES'
1 50 333 64 causal float16
SHAPES
  ab_brief form-causal kernels "$res/causal-d64.yaml"
  ab_brief form-d64 kernels "$res/ada-d64.yaml"
  kernel_check_only --ada
  save
  timed timeout 150 "$bin" sanitize --config "$res/san-one-wave.yaml" --kernels kernels \
    > "$res/san-one-wave.txt" 2>&1
  grep -E "sanitize:|finding|one_wave|error" "$res/san-one-wave.txt" | head -6
  save
  peers ada-d64 "$res/ada-d64.yaml"
  peer_table "$res/ab-form-d64.json" "$res/sdpa-ada-d64.json"
  timed timeout 120 python3 bench/warm_alike.py --ada --kdir kernels \
    --shape 4,16,512,64,causal,one_wave_causal --shape 3,16,512,64,causal,one_wave_causal \
    --shape 4,16,512,64 > "$res/warm-kernels.txt" 2>&1
  echo "== kernels"; cat "$res/warm-kernels.txt"
  timed timeout 120 python3 bench/warm_alike.py --ada --kdir .carry/k-base --shape 4,16,512,64,causal \
    --shape 3,16,512,64,causal --shape 4,16,512,64 > "$res/warm-k-base.txt" 2>&1
  echo "== k-base"; cat "$res/warm-k-base.txt"
  save
  ;;
thirtyseventh-pair)
  # 2026-12-06 (thirty-seventh session): the pairing as a copy of the body of its own
  # (.carry/variants/heavylight2, from bench/variants/heavylight2.patch: d64 NAME only, the
  # plain copy for every launch that does not pair), since the one-copy form (variants/
  # heavylight) cost multi-wave grids +1.5 ... +2.2% (thirty-sixth call 1). The gate's A/B on
  # causal-d64 and ada-d64, then the one-copy form again on the three grids it regressed,
  # kernel_check.py --ada, FA2 / cuDNN in the same call, both trees under one timer. ~4 min.
  save() { tar czf "$out/thirtyseventh-pair.tgz" -C "$out" r; }
  card
  ada_d64_config
  causal_d64_config
  derive_config guard-d64 configs/pr-ada.yaml <<'SHAPES'
8 16 512 64 causal float16
4 16 2048 64 causal float16
4 16 2048 64 noncausal float16
SHAPES
  ab_brief pair2-causal .carry/variants/heavylight2 "$res/causal-d64.yaml"
  ab_brief pair2-d64 .carry/variants/heavylight2 "$res/ada-d64.yaml"
  ab_brief pair1-guard .carry/variants/heavylight "$res/guard-d64.yaml"
  one_wave_tail heavylight2 pair2
  ;;
thirtysixth-pair)
  # 2026-12-06 (thirty-sixth session): the mma.sync kernel's causal one-wave grids with the
  # heaviest row tiles paired with the lightest on an SM (pair_heavy_with_light: the
  # candidate .carry/variants/heavylight, from bench/variants/heavylight.patch; .carry/k-base the
  # kernels before it). First where the block scheduler puts a
  # grid of one wave at two CTAs a SM (bench/placement_probe.py), the gate's A/B on causal-d64
  # (one-wave grids that pair and two that do not) and ada-d64, kernel_check.py --ada, FA2 /
  # cuDNN on ada-d64 in the same call, and both trees under one timer. ~4 min.
  save() { tar czf "$out/thirtysixth-pair.tgz" -C "$out" r; }
  one_wave_setup
  ab_brief pair-causal .carry/variants/heavylight "$res/causal-d64.yaml"
  ab_brief pair-d64 .carry/variants/heavylight "$res/ada-d64.yaml"
  one_wave_tail heavylight pair
  ;;
thirtyfifth-leadin)
  # 2026-12-05 (thirty-fifth session): the witness's lead-in timed by the global timer before a
  # kernel's samples and before the control's (bench/leadin_probe.py), on three kernels. ~1 min.
  save() { tar czf "$out/thirtyfifth-leadin.tgz" -C "$out" r; }
  card
  for spec in "hopper-short 4,16,512,64,short_noncausal" "hopper-d128 2,16,4096,128" \
      "ada-d128 2,16,4096,128 --ada"; do
    set -- $spec
    timed timeout 120 python3 bench/leadin_probe.py --shape "$2" ${3:-} --out "$res/leadin-$1.json" \
      > "$res/leadin-$1.txt" 2>&1
    grep -v Warning "$res/leadin-$1.txt" | tail -6
    save
  done
  ;;
thirtyfifth-noshort)
  # 2026-12-05 (thirty-fifth session): is the short d64 form still the faster one on an H100,
  # whose HBM makes the gate's fresh q cost more than on the H200 its rule was fitted on?
  # The gate's A/B of .carry/variants/noshort (kernels/ with bench/variants/noshort.patch: the host never
  # takes the form) against kernels/ on pr, quad and short-check. ~3 min.
  save() { tar czf "$out/thirtyfifth-noshort.tgz" -C "$out" r; }
  card
  ab noshort-pr .carry/variants/noshort configs/pr.yaml | sed -E 's/  unwitnessed b\/c .*$//'
  save
  quad_config
  short_check_config
  ab noshort-quad .carry/variants/noshort "$res/quad.yaml" | sed -E 's/  unwitnessed b\/c .*$//'
  ab noshort-check .carry/variants/noshort "$res/short-check.yaml" | sed -E 's/  unwitnessed b\/c .*$//'
  save
  ;;
thirtyfifth-warm)
  # 2026-12-05 (thirty-fifth session): warm_alike alone (our kernel and PyTorch's under the
  # harness's conditions, one timer), after thirtyfifth-like's call on the same card. ~1 min.
  save() { tar czf "$out/thirtyfifth-warm.tgz" -C "$out" r; }
  card
  warm_alike
  save
  ;;
thirtyfourth-control)
  # 2026-12-05 (thirty-fourth session, written when no machine was lent): what keeps a
  # kernel's unwitnessed time 1-8 us above the control's in every run without a base (the
  # clock does not: the same at a steady 1,980 MHz), `gpu::which_step_of_a_kernels_sample_the_
  # control_lacks`: the control sampled as a run does and with a kernel sample's steps outside
  # the events' span (the upload and the clock read before, 1 ms of work after the end); then
  # the test the control's rule stands on. Then the attack suite's `code_patch` alone: can a
  # kernel write its context's code through a data address (the precondition of slowing the
  # base's kernel)? Exit 2 or parity-fail: no; a verdict on its timings: yes. ~90 s.
  save() { tar czf "$out/thirtyfourth-control.tgz" -C "$out" r; }
  card
  gpu_tests_named control-tests.log 200 gpu::which_step_of_a_kernels_sample_the_control_lacks \
    gpu::a_side_alone_is_judged_against_the_control_beside_each_round
  grep -E "control |alone|test result|FAILED|panicked" "$res/control-tests.log" | cut -c1-400
  save
  CI_GATE_ATTACKS=code_patch attack_suite 200
  grep -E "code_patch" "$res/attacks.log" | cut -c1-600
  save
  ;;
thirtieth-witness)
  # 2026-12-05 (thirtieth session, written when no device time was left): the witness's GPU
  # tests with the control beside each round of a side alone (`gpu::a_side_alone_is_judged_
  # against_the_control_beside_each_round`, new: its shift printed and within the limit, a
  # lead-in 100 µs longer judged) and the A/B ones. ~60 s.
  save() { tar czf "$out/thirtieth-witness.tgz" -C "$out" r; }
  CI_GATE_GOLDEN_DIR=$PWD/tests/golden CI_GATE_BIN=$bin timed timeout 200 "$it_tests" --ignored \
    --test-threads=1 --nocapture gpu::a_side_alone_is_judged_against_the_control_beside_each_round \
    gpu::ab_pairs_of_one_kernel_agree gpu::time_the_events_did_not_see_on_one_side_is_judged \
    > "$res/witness-tests.log" 2>&1
  grep -E "alone|unwitnessed|lead-in|test result|FAILED|panicked" "$res/witness-tests.log" | cut -c1-400
  save
  ;;
thirtieth-h100)
  # 2026-12-05 (thirtieth session): twentyninth-h100's `baseline update` of `pr` refused shapes
  # the witness judged against a control sampled once before the shapes (3 of 13, then with
  # the control beside each round 1 of 13, 28 µs on the side that reads slower); with this
  # binary (a control sample after GPU work, 4x the limit on that side) a stored-only A/A of
  # `pr` (each shape's shift against its control printed), then `pr` re-recorded from 5
  # processes and its stored-only A/A. (`pr-ada` was recorded in that call.)
  save() { tar czf "$out/thirtieth-h100.tgz" -C "$out" r; }
  stored_aa pr
  shifts pr
  mv "$res/stored-pr.json" "$res/stored-pr-before.json"
  save
  RECORD_LIMIT=380 record_with_kernels pr "issue 40 item 3: the H100's baselines of main's kernels (be61b8d's)"
  shifts pr
  save
  ;;
twentyninth-h100)
  # 2026-12-05 (twenty-ninth session): twentyeighth-h100 in the order that survives a kernel
  # step of the L4 path (sm_90a's cubin is byte-identical under the ks2 candidates, so the
  # Hopper path's `pr` baseline stays valid): `pr` re-recorded from 5 processes with main's
  # kernels and its stored-only A/A, item 1's table on the H100 (cuDNN and FA2 by the
  # independent harness in the same call), then `pr-ada` if the call has room.
  save() { tar czf "$out/twentyninth-h100.tgz" -C "$out" r; }
  record_with_kernels pr "issue 40 item 3: the H100's baselines of main's kernels (be61b8d's)"
  peers pr configs/pr.yaml
  peer_table "$res/stored-pr.json" "$res/sdpa-pr.json"
  save
  RECORD_LIMIT=200 record_with_kernels pr-ada "issue 40 item 3: the H100's baselines of main's kernels (be61b8d's)"
  ;;
twentyseventh-witness)
  # 2026-12-05 (twenty-seventh session, no device lent): the host's clock as a witness of every
  # sample (src/witness.rs), first on a GPU. Its two GPU tests (both sides' medians printed: an
  # A/A agrees; a candidate whose lead-in is ~100 µs longer, time the events do not see, is
  # judged), then A/As of the PR configs and of eval's (1 ms samples, where the limit's 30 µs
  # floor is 3%): kernels/ against .carry/k-base, the same kernels, A/B forced
  # (--ab-always: identical kernels are otherwise not measured as a pair), each shape's
  # unwitnessed µs per side, the shifts judged (twenty-eighth session: round medians, pair
  # differences, trimmed mean) and the limit, every verdict a pass, no error. The largest
  # |shift| of these A/As against its limit is what SHARE and FLOOR_US are to be set from.
  save() { tar czf "$out/twentyseventh-witness.tgz" -C "$out" r; }
  CI_GATE_GOLDEN_DIR=$PWD/tests/golden CI_GATE_BIN=$bin timed timeout 150 "$it_tests" --ignored \
    --test-threads=1 --nocapture gpu::ab_pairs_of_one_kernel_agree \
    gpu::time_the_events_did_not_see_on_one_side_is_judged > "$res/witness-tests.log" 2>&1
  grep -E "unwitnessed|lead-in|test result|FAILED|panicked" "$res/witness-tests.log" | cut -c1-300
  save
  ab aa-pr kernels configs/pr.yaml --ab-always
  save
  ab aa-ada kernels configs/pr-ada.yaml --ab-always
  save
  ab aa-eval kernels configs/eval.yaml --ab-always
  save
  # a run without a base: each shape against the control (the harness's spin), as stored
  stored_aa pr
  python3 - "$res/stored-pr.json" <<'PY'
import json, sys
for s in json.load(open(sys.argv[1]))["shapes"]:
    u = (s.get("measurement") or {}).get("unwitnessed") or {}
    print(f"  {s['name']:<28} {s.get('verdict')}  unwitnessed control/c {u.get('control_us')}/{u.get('candidate_us')} µs, shift {u.get('shift_us')} over {u.get('units')} rounds (limit 2 x {u.get('limit_us')}) {s.get('error') or ''}")
PY
  save
  # selftest's witness calibration (twenty-eighth session): 2 A/A trials of the PR config at
  # the design's 28 pairs, the largest shift of each test against its limit
  timed timeout 300 "$bin" selftest --config configs/pr.yaml --trials 2 --format json \
    --out "$res/selftest.json" > "$res/selftest.txt" 2>&1
  python3 -c 'import json,sys; print(json.dumps(json.load(open(sys.argv[1]))["witness"]))' \
    "$res/selftest.json" || tail -5 "$res/selftest.txt"
  save
  ;;
twentythird-step)
  # Prepared in the twenty-third session for the next one: if a candidate of twentythird-mb3 or
  # twentythird-w2 wins on the L4 path with no regression, `twentythird-step NAME` makes it
  # kernels/ on this machine and checks it as a step: the L4 path's kernels under
  # compute-sanitizer (configs/sanitize-ada.yaml), the gate's A/B against .carry/k-base on
  # pr-ada and ada-d64 with PyTorch's FA2 and cuDNN timed after it (issue 40's table for the
  # L4 path), then on 56 SMs (l4_sms.py). Then `twentythird-record NAME` in the next call.
  v=${1:?twentythird-step needs the candidate, e.g. mb3e}
  save() { tar czf "$out/twentythird-step-$v.tgz" -C "$out" r; }
  cp ".carry/variants/$v/attention.cu" kernels/attention.cu
  timed timeout 200 "$bin" sanitize --config configs/sanitize-ada.yaml --kernels kernels \
    > "$res/san-ada.txt" 2>&1
  grep -E "sanitize:|finding" "$res/san-ada.txt" | head -4
  save
  ada_d64_config
  ab "$v-ada" kernels configs/pr-ada.yaml
  ada_peers
  peer_table "$res/ab-$v-ada.json" "$res/sdpa-ada.json"
  ab "$v-d64" kernels "$res/ada-d64.yaml"
  peers d64 "$res/ada-d64.yaml"
  peer_table "$res/ab-$v-d64.json" "$res/sdpa-d64.json"
  save
  l4_sms_trees "configs/pr-ada.yaml $res/ada-d64.yaml" k-base "variants/$v"
  ;;
twentythird-record)
  # The kept step's baselines: kernels/ = variants/NAME, pr and pr-ada re-recorded from 5
  # processes (attention.cu's hash changes even where the sm_90a cubin does not), each with
  # its stored-only A/A.
  v=${1:?twentythird-record needs the candidate kept}
  save() { tar czf "$out/twentythird-record-$v.tgz" -C "$out" r; }
  cp ".carry/variants/$v/attention.cu" kernels/attention.cu
  record_with_kernels pr-ada "kernel step: $v on the L4 path (issue 40 item 2)"
  save
  record_with_kernels pr "kernel step: $v on the L4 path (issue 40 item 2)"
  save
  ;;
twentythird-mb3)
  # Prepared in the twenty-third session (2026-12-04; no device lent then) for the next one.
  # The L4 path's d128 NAME (causal launches, and grids of fewer CTAs than SMs) is one CTA of
  # 8 warps a SM on a 3-stage ring with a CTA barrier every tile; the twenty-first session
  # measured such a CTA's barriers at about 9% (w8n32 against two CTAs of 4 warps). Without
  # the barrier: per stage a `full` mbarrier (every thread's cp.async arrive on it when its
  # copies land: cp.async.mbarrier.arrive.noinc, sm_80) and an `empty` one (every thread
  # arrives when done reading), tile j+2's copies issued once every thread is done with tile
  # j-1, so a warp runs ahead of the slowest by up to
  #   mb3e: a whole tile (tile j+2 issued after this thread's tile j),
  #   mb3s: S's part of one (issued after its S_j; more time for the copies to land).
  # bench/variants/mb3e.patch, mb3s.patch (208 registers on sm_89, no spill, 64 bytes of
  # barriers after the 96 KiB; only that kernel differs); mb3d64: mb3e with the d64 NAME (two
  # CTAs of 4 warps a SM, 2 stages and a barrier each tile today; a 3-stage ring with a barrier,
  # d64r3, was neutral in the nineteenth session) on the same ring (48 KiB + 64 bytes: still
  # two a SM on an L4). Against .carry/k-base on pr-ada
  # and causal d128 shapes (ada-causal128; mb3d64: ada-d64), after kernel_check.py --ada with kernels/ = each
  # (a wrong or hung barrier shows there first: the check's 100 s bound). The grids are
  # main's, so no l4_sms.py here (w2's grids are not: twentythird-w2 runs it).
  save() { tar czf "$out/twentythird-mb3.tgz" -C "$out" r; }
  derive_config ada-causal128 configs/pr-ada.yaml <<'SHAPES'
16 16 256 128 causal float16
8 16 512 128 causal float16
4 16 1024 128 causal float16
2 16 2048 128 causal bfloat16
1 16 1000 128 noncausal float16
SHAPES
  kernel_check_variants mb3e mb3s mb3d64
  for v in mb3e mb3s; do
    ab "$v-ada" ".carry/variants/$v" configs/pr-ada.yaml
    ab "$v-causal" ".carry/variants/$v" "$res/ada-causal128.yaml"
    save
  done
  ada_d64_config
  ab mb3d64-d64 .carry/variants/mb3d64 "$res/ada-d64.yaml"
  save
  ;;
twentythird-w2)
  # Prepared in the twenty-third session (2026-12-04; no device lent then) for the next one.
  # The twenty-first session measured one CTA of 8 warps a SM +9.4% against two CTAs of 4 at
  # the same per-warp work: a CTA's barriers hold all its warps, and CTAs on one SM fill each
  # other's waits. Not measured yet: smaller CTAs of the same 32-row warps (each K and V
  # fragment still feeds two mma's, which 16-row warps lose), 64 rows = 2 warps a CTA:
  #   w2a: the d64 NAME as 64 x 64, Q in registers, 2 stages (32 KiB, 242 registers on sm_89):
  #        3 CTAs = 6 warps a SM on an L4, where NAME runs 2 x 4 = 8;
  #   w2b: the d128 forms (NAME, causal; NAME_long_noncausal) as 64 x 32, Q in shared memory,
  #        the split pipeline (32 KiB, 255 registers, the same 16 bytes of spill on sm_89),
  #        3 CTAs = 6 warps a SM on an L4; a 64-thread CTA copies two chunks a row (load_tile).
  # Both launch with 72 KiB of dynamic shared memory, so the H200 holds 3 a SM as the L4
  # would (bench/variants/w2a.patch, w2b.patch). Against .carry/k-base: w2a on ada-d64, w2b on
  # pr-ada and ada-mid; then kernel_check.py --ada with kernels/ = each (tails, causal, bf16);
  # then all three trees by l4_sms.py on 56 SMs (the grid as an L4 rounds it).
  save() { tar czf "$out/twentythird-w2.tgz" -C "$out" r; }
  ada_d64_config
  ada_mid_config
  ab w2a-d64 .carry/variants/w2a "$res/ada-d64.yaml"
  save
  ab w2b-ada .carry/variants/w2b configs/pr-ada.yaml
  ab w2b-mid .carry/variants/w2b "$res/ada-mid.yaml"
  save
  kernel_check_variants w2a w2b
  l4_sms_trees "configs/pr-ada.yaml $res/ada-d64.yaml" k-base variants/w2a variants/w2b
  ;;
twentysecond-tests)
  # 2026-12-04 (twenty-second session), call 4: the release check of this binary (NVRTC on up
  # to 8 threads): the GPU tests but the tools', then the attack suite.
  save() { tar czf "$out/twentysecond-tests.tgz" -C "$out" r; }
  gpu_tests
  save
  attack_suite 420
  save
  ;;
twentysecond-stored)
  # 2026-12-04 (twenty-second session), call 3. Call 2's pull request changed attention.cu,
  # so the A/B decided and no shape took a second stage. A pull request that leaves
  # attention.cu as it is gets no A/B: the stored baseline decides (twenty-first session, call
  # 7: 11 of 13 shapes to the second stage against the 3-process baselines). This binary, the
  # base's kernels on both sides, with main's baselines (.carry/baselines-old: cold, then warm)
  # and with call 1's (5 processes: warm, then cold). First the split-compile test of tests/it
  # with the NVRTC the gate loads here (the test binary looks for the repository and the
  # ci-gate executable where it was built: /work/main).
  save() { tar czf "$out/twentysecond-stored.tgz" -C "$out" r; }
  if mkdir -p /work 2>/dev/null && ln -sfn "$PWD" /work/main 2>/dev/null; then
    mkdir -p target/release && cp "$bin" target/release/ci-gate
    CI_GATE_REQUIRE_NVRTC=1 timed timeout 120 "$it_tests" --exact \
      nvrtc::compiling_on_several_threads_gives_the_same_cubin_as_on_one > "$res/split-test.log" 2>&1
    grep -E "test result|FAILED|panicked" "$res/split-test.log" | head -4
  else
    echo "no /work/main here: the split test not run"
  fi
  echo "NVRTC the gate loads: $nvrtc"
  save
  export CI_GATE_CACHE_DIR=/tmp/ci-gate-cache-stored
  pr_wall stored-cold-3p "$bin" .carry/baselines-old cold "$base"
  pr_wall stored-warm-3p "$bin" .carry/baselines-old warm "$base"
  pr_wall stored-warm-5p "$bin" baselines warm "$base"
  pr_wall stored-cold-5p "$bin" baselines cold "$base"
  ;;
twentyfirst-w8)
  # 2026-12-04 (twenty-first session), call 5. The L4 path's non-causal d128 form runs two
  # 128-row CTAs of 4 warps x 32 rows per SM (48 KiB each); FA2's wider H200 tile (64 keys)
  # cannot be held twice by an L4. One CTA of 256 rows, 8 warps x 32 rows, Q in shared memory,
  # the split pipeline, one per SM on both cards (255 registers x 256 threads), the K and V
  # tiles shared by 8 warps:
  #   w8n64: 64-key tiles (96 KiB; FA2's H200 tile per warp; 56 bytes of spill on sm_89),
  #   w8n32: 32-key tiles (80 KiB; today's tile per warp, no new spill).
  # Against .carry/k-base on pr-ada and ada-mid.
  save() { tar czf "$out/twentyfirst-w8.tgz" -C "$out" r; }
  ada_mid_config
  for v in w8n32 w8n64; do
    ab "$v-ada" ".carry/variants/$v" configs/pr-ada.yaml
    ab "$v-mid" ".carry/variants/$v" "$res/ada-mid.yaml"
    save
  done
  ;;
twentyfirst-attacks)
  # 2026-12-04 (twenty-first session), call 3: the attack suite (adversarial_gpu::, every
  # attack must fail closed) with main's binary and kernels. Archived.
  save() { tar czf "$out/twentyfirst-attacks.tgz" -C "$out" r; }
  attack_suite 560
  save
  ;;
twentyfirst)
  # 2026-12-04 (twenty-first session), call 1. NAME_small's tile (64 x 64, 4 warps x 16 rows,
  # three CTAs per SM) as the d64 NAME (variants/n64s3) read -1.79% at b4h16s512d64 causal and
  # -5.34% at b8h16s512d64 causal, +4.42% at b4h16s2048d64 causal (twentieth session). Where
  # does a causal launch gain from it: a sweep of causal d64 lengths and grids, the gate's A/B
  # against .carry/k-base, then both by l4_sms.py on 56 SMs (an L4 has 58) and the whole GPU.
  save() { tar czf "$out/twentyfirst.tgz" -C "$out" r; }
  derive_config ada-causal configs/pr-ada.yaml <<'SHAPES'
4 16 256 64 causal float16
4 16 384 64 causal float16
4 16 512 64 causal float16
4 16 640 64 causal float16
4 16 768 64 causal float16
4 16 1024 64 causal float16
4 16 1280 64 causal float16
4 16 1536 64 causal float16
8 16 256 64 causal float16
8 16 512 64 causal float16
8 16 768 64 causal float16
8 16 1024 64 causal float16
16 16 512 64 causal float16
16 16 1024 64 causal float16
2 16 1024 64 causal float16
1 16 2048 64 causal float16
3 16 640 64 causal float16
6 8 512 64 causal float16
8 16 512 64 causal bfloat16
4 16 1024 64 causal bfloat16
SHAPES
  ab n64s3-causal .carry/variants/n64s3 "$res/ada-causal.yaml"
  save
  for k in k-base variants/n64s3; do
    tag=${k#variants/}
    timed timeout 200 python3 bench/l4_sms.py "$res/ada-causal.yaml" --sms 56 --kdir ".carry/$k" \
      --out "$res/l4-sms-$tag.json" 2>&1 | grep -v "Deprecat" > "$res/l4-sms-$tag.txt"
    tail -4 "$res/l4-sms-$tag.txt"
    save
  done
  ;;
twentieth-kv1)
  # 2026-12-04 (twentieth session), call 10. FA2's own code runs its H200 tile (128 x 64) 12-13%
  # faster than its L4 tile (128 x 32); an L4 cannot hold the wider one (64 KiB) twice per SM.
  # variants/kv1 (bench/variants/kv1.patch): the L4 path's non-causal d128 form on 128 x 64 in
  # 48 KiB, one 16 KiB buffer that holds K_j and then V_j (ST = 0: V_j's load in flight during
  # the softmax, K_{j+1}'s exposed to the other CTA on the SM; 88 bytes of spill), so a warp
  # of 32 rows pays O's rescale and its row reductions once per 64 keys. Against .carry/k-base
  # on pr-ada and ada-mid; then, with kernels/ = kv1 on this machine only, kernel_check.py --ada.
  save() { tar czf "$out/twentieth-kv1.tgz" -C "$out" r; }
  ada_mid_config
  ab kv1-ada .carry/variants/kv1 configs/pr-ada.yaml
  ab kv1-mid .carry/variants/kv1 "$res/ada-mid.yaml"
  save
  cp .carry/variants/kv1/attention.cu kernels/attention.cu
  kernel_check_only --ada
  save
  ;;
nineteenth-d64b)
  # 2026-12-04 (nineteenth session), call 10. Call 9: Q in shared memory loses 13-48% at d64.
  # Two candidates that keep Q in registers, both within an L4's 100 KB and 64 K registers:
  #   d64r3: 128 x 64 on a 3-stage ring (48 KiB, 243 registers, two CTAs per SM; the mma.sync
  #          3-stage ring was last measured on 2026-11-21, before the uniform warp index);
  #   d64w:  128 x 32 on a 2-stage ring, three CTAs per SM (16 KiB, 168 registers, 12 bytes
  #          of spill): twelve warps per SM where NAME has eight.
  # Against .carry/k-base on ada-d64.
  save() { tar czf "$out/nineteenth-d64b.tgz" -C "$out" r; }
  ada_d64_config
  for v in d64r3 d64w; do
    ab "$v-d64" ".carry/variants/$v" "$res/ada-d64.yaml"
    save
  done
  ;;
eighteenth-attacks)
  # 2026-12-04 (eighteenth session), call 5: the attack suite (adversarial_gpu::, every attack
  # must fail closed) with kernels/ as shipped (NAME_short_noncausal added). Archived.
  save() { tar czf "$out/eighteenth-attacks.tgz" -C "$out" r; }
  attack_suite 480
  save
  ;;
seventeenth-halves)
  # 2026-12-04 (seventeenth session), call 7: the d64 kernels are latency-bound (call 6:
  # issue slots 31.6% busy); variants/hv (bench/variants/halves.patch) issues each main-loop
  # S_j of the d64 wgmma kernels as two wgmma groups of 64 keys before P_{j-1} V_{j-1}, so
  # that the first half's maxima and exponentials run while the tensor cores compute the
  # second half (its p then scaled once by the second half's move of the base). Against
  # .carry/k-base (main's kernels): PR, d64 mid, long. No record. Archived after each step.
  save() { tar czf "$out/seventeenth-halves.tgz" -C "$out" r; }
  d64_abs hv .carry/variants/hv
  ;;
seventeenth-icache)
  # 2026-12-04 (seventeenth session), call 6: is a failed kept-base tile dear because of the
  # instruction cache? ncu --set full --cache-control none of one launch of b4h16s512d64 as
  # the gate runs it (`ci-gate kernel-run`, the mixture's inputs, written into L2 by the fills
  # before it), main's kernels and variants/k64t; the pc-sampling stall counts, from each
  # report's raw page.
  save() { tar czf "$out/seventeenth-icache.tgz" -C "$out" r; }
  for v in main k64t; do
    kd=$base
    [ "$v" = main ] || kd=.carry/variants/$v
    timed timeout 150 ncu --clock-control none --cache-control none --set full --import-source no \
      --kernel-name regex:^attention_fwd_ --launch-count 1 --export "$res/$v" \
      --force-overwrite "$bin" kernel-run --config configs/pr.yaml --kernels "$kd" \
      --harness kernels --shape b4h16s512d64_f16 --no-reference > "$res/ncu-$v.log" 2>&1
    ncu --import "$res/$v.ncu-rep" --page raw --csv > "$res/raw-$v.csv" 2>&1
    ncu --import "$res/$v.ncu-rep" --page details > "$res/details-$v.txt" 2>&1
    rm -f "$res/$v.ncu-rep"
    echo "== $v"
    grep -E "Duration|Issue Slots Busy|Warp Cycles Per Issued" "$res/details-$v.txt" | head -4
    python3 - "$res/raw-$v.csv" <<'PY'
import csv, sys
rows = list(csv.reader(open(sys.argv[1])))
hdr = next(i for i, r in enumerate(rows) if r and r[0] == "ID")
names, vals = rows[hdr], rows[hdr + 2]
counts = {n: float(v.replace(",", "") or 0) for n, v in zip(names, vals)
          if n.startswith("smsp__pcsamp_warps_issue_stalled_") and not n.endswith("_not_issued")}
for n, c in sorted(counts.items(), key=lambda x: -x[1]):
    print(f"  {n} {c:.0f}")
PY
    save
  done
  ;;
seventeenth-tree)
  # 2026-12-04 (seventeenth session), call 5: in k64 the vote waits for the tile's row sums,
  # a chain of 32 dependent FADDs a row, and the next tile's wgmma issue waits for the vote
  # (the base's sums were off that path); k64t and k64at (kept-base.patch and
  # kept-adaptive.patch with the sums by a tree, log2 of the tile's n-blocks deep) on N(0,1)
  # and the mixture (bench/kept_probe.py), then their PR A/Bs (k64t also pr-ada), and for
  # either with no shape slower (no_slower) the d64 mid and long A/Bs. Archived after each.
  save() { tar czf "$out/seventeenth-tree.tgz" -C "$out" r; }
  d64mid_config
  long_config
  for v in k64t k64at; do
    kept_probe "$v"
    save
  done
  kept_probe k64t --ada
  for v in k64t k64at; do
    ab "$v" ".carry/variants/$v" configs/pr.yaml
    save
  done
  ab k64t-ada .carry/variants/k64t configs/pr-ada.yaml
  save
  for v in k64t k64at; do
    if no_slower "$res/ab-$v.json"; then
      ab "$v-mid" ".carry/variants/$v" "$res/d64mid.yaml"
      ab "$v-long" ".carry/variants/$v" "$res/long.yaml"
      save
    fi
  done
  ;;
seventeenth-nightly)
  # 2026-12-04 (seventeenth session), call 4: main's kernels against themselves on the long
  # shapes of issue 40's nightly rows (8k and 16k keys), cuDNN and FA2 right after them in
  # the same call: issue 40's table. Archived after each step.
  save() { tar czf "$out/seventeenth-nightly.tgz" -C "$out" r; }
  nightly_table
  save
  ;;
seventeenth-ob)
  # 2026-12-04 (seventeenth session), call 3: variants/ob1 (= kernels/; the d64 wgmma
  # kernels write each sub-tile's O into shared memory and one thread copies the rows to
  # global memory with one cp.async.bulk, instead of 16 float2 stores a lane) against
  # .carry/k-base (main's kernels): PR, d64 mid, long; with kernels/ = ob1 the GPU tests,
  # kernel_check.py (every output element written once, on the golden and random cases)
  # and compute-sanitizer on configs/sanitize.yaml. No record. Archived after each step.
  save() { tar czf "$out/seventeenth-ob.tgz" -C "$out" r; }
  d64_abs ob1 .carry/variants/ob1
  if cmp -s kernels/attention.cu .carry/variants/ob1/attention.cu; then
    gpu_tests
    save
    kernel_check_only
    save
    timed timeout 150 "$bin" sanitize --kernels kernels > "$res/san.txt" 2>&1
    grep -E "sanitize:|finding" "$res/san.txt" | head -4
  fi
  save
  ;;
seventeenth-probe)
  # 2026-12-04 (seventeenth session), call 2: call 1 read k64 +14 ... +37% on every d64
  # shape where the softmax's row maxima were 8% (ablation); a CPU simulation of the mixture
  # says the kept base fails on 28% of the tiles at 512 keys, 12% at 2048. Which is it, the
  # inputs or the code? bench/kept_probe.py times each tree against main's kernels on N(0,1)
  # and on the mixture, Hopper and the L4 path, for k64 and k64a (after one failure a row
  # block keeps the exact softmax); then k64a's A/Bs (PR, pr-ada). Archived after each step.
  save() { tar czf "$out/seventeenth-probe.tgz" -C "$out" r; }
  for v in k64 k64a; do
    kept_probe "$v"
    kept_probe "$v" --ada
    save
  done
  ab k64a .carry/variants/k64a configs/pr.yaml
  ab k64a-ada .carry/variants/k64a configs/pr-ada.yaml
  save
  ;;
seventeenth)
  # 2026-12-04 (seventeenth session), call 1: variants/k64 (bench/variants/kept-base.patch,
  # and kernels/ the same for the checks: after a row's first tile the softmax keeps the
  # row's base, no row maxima and no rescale, where every lane's tile sum stays under
  # CG_KEPT_SUM_MAX; the exact softmax_tile where not; the d64 wgmma kernels and every
  # mma.sync kernel) against .carry/k-base (main's kernels): the PR config, the d64 mid and
  # long shapes (Hopper), pr-ada, ada-mid, ada-d64 (the L4 path); the GPU tests (parity on
  # issue 37's mixture); cuDNN / FA2 on PR and pr-ada (issue 40's tables); kernel_check.py
  # on both paths (golden and random N(0,1) cases, every output element written once). No
  # record. Archived after each step.
  save() { tar czf "$out/seventeenth.tgz" -C "$out" r; }
  ada_mid_config
  ada_d64_config
  d64_abs k64 .carry/variants/k64
  ab k64-ada .carry/variants/k64 configs/pr-ada.yaml
  ab k64-ada-mid .carry/variants/k64 "$res/ada-mid.yaml"
  ab k64-ada-d64 .carry/variants/k64 "$res/ada-d64.yaml"
  save
  if cmp -s kernels/attention.cu .carry/variants/k64/attention.cu; then gpu_tests; fi
  save
  peers pr configs/pr.yaml
  peer_table "$res/ab-k64.json" "$res/sdpa-pr.json"
  ada_peers
  peer_table "$res/ab-k64-ada.json" "$res/sdpa-ada.json"
  save
  kernel_check_only
  kernel_check_only --ada
  save
  ;;
sixteenth)
  # 2026-12-04 (sixteenth session), call 1: sixteenth-early's A/Bs without peers, tests or a
  # record (variants/im3de against .carry/k-base = main's kernels, im3d), then the attack
  # suite with kernels/ = im3d (it did not finish in the fifteenth session's call 5).
  # Archived after each step.
  save() { tar czf "$out/sixteenth.tgz" -C "$out" r; }
  early_abs
  # shellcheck disable=SC2086
  if no_slower $r && improved $r; then echo "== early: no shape slower, some improvement"; fi
  save
  attack_suite 430
  save
  ;;
sixteenth-ld)
  # 2026-12-04 (sixteenth session), call 2: variants/ld (load_tile: a K/V/Q tile wholly
  # inside the sequence is copied without the per-row bound, select and zero-fill, one
  # address and immediate offsets; mma.sync kernels only, the sm_90a wgmma cubin
  # byte-identical) against .carry/k-base (main's kernels) on the L4 path: pr-ada (FA2 /
  # cuDNN after it), ada-mid, ada-d64; then main's A/A on the PR config with cuDNN / FA2
  # (issue 40's table); with kernels/ = ld, kernel_check.py --ada (the L4's forms on the
  # golden and random N(0,1) cases) and the GPU tests. No record. Archived after each step.
  save() { tar czf "$out/sixteenth-ld.tgz" -C "$out" r; }
  ada_mid_config
  ada_d64_config
  ab ld-ada .carry/variants/ld configs/pr-ada.yaml
  ada_peers
  peer_table "$res/ab-ld-ada.json" "$res/sdpa-ada.json"
  ab ld-mid .carry/variants/ld "$res/ada-mid.yaml"
  ab ld-d64 .carry/variants/ld "$res/ada-d64.yaml"
  r="$res/ab-ld-ada.json $res/ab-ld-mid.json $res/ab-ld-d64.json"
  # shellcheck disable=SC2086
  if no_slower $r && improved $r; then echo "== ld: no shape slower, some improvement"; fi
  save
  ab pr-aa .carry/k-base configs/pr.yaml
  peers pr configs/pr.yaml
  peer_table "$res/ab-pr-aa.json" "$res/sdpa-pr.json"
  save
  if cmp -s kernels/attention.cu .carry/variants/ld/attention.cu; then
    timed timeout 150 python3 bench/kernel_check.py --ada --no-timing --out "$res/kc-ada.json" \
      > "$res/kc-ada.log" 2>&1
    grep -E "rand|FAIL|FAILURE|passed|failed" "$res/kc-ada.log" | tail -4 | cut -c1-200
    gpu_tests
  fi
  save
  ;;
sixteenth-record)
  # 2026-12-04 (sixteenth session), call 3, kernels/ = variants/ld (kept in call 2): the L4
  # path's kernels under compute-sanitizer (configs/sanitize-ada.yaml: the changed loads
  # reach whole and partial tiles), then pr and pr-ada re-recorded (the kernel's source hash
  # changed; the sm_90a cubin did not), each with its stored-only A/A. Archived after each.
  save() { tar czf "$out/sixteenth-record.tgz" -C "$out" r; }
  timed timeout 200 "$bin" sanitize --config configs/sanitize-ada.yaml --kernels kernels \
    > "$res/san-ada.txt" 2>&1
  grep -E "sanitize:|finding" "$res/san-ada.txt" | head -4
  save
  record_with_kernels pr "kernel step: whole-tile loads without bounds, mma.sync (issue 40)"
  record_with_kernels pr-ada "kernel step: whole-tile loads without bounds, mma.sync (issue 40)"
  ;;
sixteenth-early)
  # Prepared 2026-12-03 (fifteenth session) for the next one: the twelfth session's early
  # first wait (the producer waits for K_0 before asking for V_0: -0.8% at b4h16s512d64,
  # no improvement alone) on today's kernels, where with VIMNMX3 in every kernel it read
  # b2h16s4096d128 -2.7% against -2.1% without (fifteenth-im3, im3e against im3):
  #   mkdir -p .carry/variants/im3de && cp kernels/*.cu .carry/variants/im3de/ \
  #     && patch -d .carry/variants/im3de -p1 < bench/variants/early-on-im3d.patch
  # (to record if kept, also: cp .carry/variants/im3de/attention.cu kernels/; and the base,
  # main's kernels, as .carry/k-base). Against .carry/k-base: PR config (cuDNN / FA2 after
  # it), d64 mid, long and d128 mid shapes; the GPU tests; kept (pr and pr-ada re-recorded,
  # their stored-only A/As) only where kernels/ is im3de, no shape is slower (no_slower) and
  # some shape is the gate's improvement. Archived after each step.
  save() { tar czf "$out/sixteenth-early.tgz" -C "$out" r; }
  early_abs
  peers pr configs/pr.yaml
  peer_table "$res/ab-early.json" "$res/sdpa-pr.json"
  save
  gpu_tests
  save
  # shellcheck disable=SC2086
  if cmp -s kernels/attention.cu .carry/variants/im3de/attention.cu \
    && grep -q "test result: ok" "$res/gpu-tests.log" && no_slower $r && improved $r; then
    echo "== kept: pr and pr-ada re-recorded with kernels/ (= im3de)"
    record_with_kernels pr "kernel step: the early first wait (issue 40)"
    record_with_kernels pr-ada "kernel step: the early first wait (issue 40)"
  else
    echo "== not kept (or kernels/ is not im3de)"
  fi
  ;;
thirteenth)
  # Prepared 2026-12-03 (twelfth session) for the next one: the GPU tests and the tools' GPU
  # tests (the latter now check that the launch the results record names the kernel ncu saw
  # run), then the long shapes' table by the independent harness (the nightly rows of issue
  # 40's table were last timed by it in the tenth session); archived after each step.
  save() { tar czf "$out/thirteenth.tgz" -C "$out" r; }
  gpu_tests
  gpu_tools_tests
  save
  long_config
  ab long-aa kernels "$res/long.yaml"
  peers long "$res/long.yaml"
  peer_table "$res/ab-long-aa.json" "$res/sdpa-long.json"
  save
  ;;
twelfth)
  # Prepared 2026-12-03 (eleventh session) for the next one, one call, archived after each
  # step ($out/twelfth.tgz): ci-gate sanitize (configs/sanitize.yaml now holds a grid cut to
  # one wave, [6,16,512]); the tools' GPU tests; the earlier-first-QK^T lead
  # (.carry/variants/early: the producer waits for Q and K_0 before asking for V_0 and the
  # rest; docs/KERNEL_LOG.md, eleventh session) against main's kernels on the PR config and
  # d64 shapes of 512 ... 1280 keys; then issue 40's table by the independent harness.
  save() { tar czf "$out/twelfth.tgz" -C "$out" r; }
  timed timeout 200 "$bin" sanitize --kernels kernels > "$res/san.txt" 2>&1
  grep -E "sanitize:|finding" "$res/san.txt" | head -4
  save
  gpu_tools_tests
  save
  d64mid_config
  if [ -d .carry/variants/early ]; then
    ab early .carry/variants/early configs/pr.yaml
    ab early-mid .carry/variants/early "$res/d64mid.yaml"
    save
  fi
  OUT=$res bash bench/kernel_table_device.sh configs/pr.yaml 2>&1 | tail -16
  save
  ;;
eleventh-record)
  # 2026-12-03, eleventh session: pr re-recorded (3 processes) by the binary with
  # launch_grid_x, which launches every PR shape as before, then its stored-only A/A;
  # archived after each step ($out/eleventh-record.tgz)
  save() { tar czf "$out/eleventh-record.tgz" -C "$out" r; }
  echo "== re-record pr"
  timed timeout 300 "$bin" baseline update --processes 3 --config configs/pr.yaml \
    --reason "${REASON:-kernel step (issue 40)}" > "$res/record-pr.txt" 2>&1
  tail -3 "$res/record-pr.txt" | cut -c1-200
  mkdir -p "$res/baselines" && cp -r baselines/. "$res/baselines/"
  save
  stored_aa pr
  save
  ;;
eleventh-grid)
  # 2026-12-03, eleventh session: the host's grid for non-causal launches whose one-wave grid
  # overfills the wave (launch_grid_x, src/gpu/device.rs). A host rule, so both sides of the
  # gate's A/B would launch alike; judged instead by the gate's stored comparison: main's
  # binary (.carry/ci-gate-main) records these shapes (3 processes), the new binary
  # (.carry/ci-gate) is compared with that record, then main's binary again (a stored-only
  # A/A: what the comparison reads with nothing changed). Same kernels throughout.
  derive_config grid configs/pr.yaml <<'SHAPES'
6 16 512 64 noncausal float16
3 16 1024 64 noncausal float16
5 12 1920 64 noncausal float16
3 12 4096 64 noncausal float16
4 12 768 64 noncausal float16
10 12 1280 64 noncausal float16
5 8 2048 64 noncausal float16
3 16 2048 64 noncausal float16
6 12 1536 64 noncausal float16
3 16 1601 64 noncausal float16
6 12 1920 64 noncausal float16
8 16 512 64 noncausal float16
6 16 512 64 causal float16
SHAPES
  main=$PWD/.carry/ci-gate-main
  timed timeout 200 "$main" baseline update --processes 3 --config "$res/grid.yaml" \
    --reason "grid check (main's binary)" > "$res/grid-record.txt" 2>&1
  tail -2 "$res/grid-record.txt" | cut -c1-200
  for who in new main; do
    b=$bin; [ $who = main ] && b=$main
    echo "== $who binary against main's record"
    timed timeout 150 "$b" local --no-base --no-peers --no-profile --config "$res/grid.yaml" \
      --out "$res/grid-$who.json" > "$res/grid-$who.txt" 2>&1
    python3 - "$res/grid-$who.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
print(f"passed={r.get('passed')} error={r.get('error')}")
for s in r.get("shapes", []):
    st = s.get("stored") or {}
    ratio = st.get("ratio")
    d = f"{(ratio - 1) * 100:+.2f}% [{(st['ci_low'] - 1) * 100:+.2f}, {(st['ci_high'] - 1) * 100:+.2f}]" if ratio else "-"
    print(f"  {s['name']:<28} p50 {round((s.get('summary') or {}).get('p50') or 0, 2)} µs  {d}  {s.get('verdict')} {s.get('error') or ''}")
PY
  done
  tar czf "$out/eleventh-grid.tgz" -C "$out" r && rm -rf "$res"
  ;;
eleventh-profile)
  # 2026-12-03, eleventh session: what bounds the d64 kernel at 512 keys (b4h16s512d64, 0.97x
  # cuDNN): ncu --set full of one launch of ours (configs/pr.yaml, the form the host picks)
  # and of PyTorch's CUDNN_ATTENTION on the same shape; the details page, the raw metrics and
  # our SASS with its stall samples as text.
  for shape in b4h16s512d64_f16 b4h16s2048d64_f16; do
    timed timeout 150 ncu --clock-control none --set full --import-source no \
      --kernel-name regex:^attention_fwd_ --launch-count 1 --export "$res/ours-$shape" --force-overwrite \
      "$bin" kernel-run --config configs/pr.yaml --kernels kernels --harness kernels \
      --shape "$shape" --no-reference > "$res/ncu-ours-$shape.log" 2>&1
  done
  timed timeout 150 ncu --clock-control none --set full --import-source no \
    --kernel-name regex:'sdpa|fmha|cudnn|attn' --launch-skip 3 --launch-count 1 --export "$res/cudnn-b4h16s512d64_f16" --force-overwrite \
    python3 -c "
import torch, torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
q, k, v = (torch.randn(4, 16, 512, 64, device='cuda', dtype=torch.float16) for _ in range(3))
with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
    for _ in range(6):
        F.scaled_dot_product_attention(q, k, v)
torch.cuda.synchronize()
" > "$res/ncu-cudnn.log" 2>&1
  for rep in "$res"/*.ncu-rep; do
    b=$(basename "$rep" .ncu-rep)
    ncu --import "$rep" --page details > "$res/details-$b.txt" 2>&1
    ncu --import "$rep" --page raw --csv > "$res/raw-$b.csv" 2>&1
    case $b in ours-*) ncu --import "$rep" --page source --csv --print-source sass > "$res/sass-$b.csv" 2>&1 ;; esac
    rm -f "$rep"
    echo "== $b"
    grep -E "^  [a-zA-Z_]|Duration|Registers Per|Issue Slots Busy|No Eligible|Warp Cycles Per Issued|Executed Ipc Active|Achieved Occupancy|DRAM Throughput|Compute \(SM\) Throughput|Grid Size|Block Size" "$res/details-$b.txt" | head -20
  done
  tar czf "$out/eleventh-profile.tgz" -C "$out" r && rm -rf "$res"
  ;;
ninth-profile)
  # 2026-12-03, ninth session: what bounds the L4's d128 path against FA2 on the same card.
  # ncu --set full of one launch each: ours (configs/pr-ada.yaml: the split 128 x 32 tile
  # non-causal, NAME's 128 x 64 causal) and PyTorch's FLASH_ATTENTION (FA2) on
  # b2h16s4096d128 f16, non-causal and causal; the details page and the raw metrics as text.
  for mask in noncausal causal; do
    shape=b2h16s4096d128_f16; [ $mask = causal ] && shape=b2h16s4096d128_causal_f16
    timed timeout 150 ncu --clock-control none --set full --import-source no \
      --kernel-name regex:^attention_fwd_ --launch-count 1 --export "$res/ours-$mask" --force-overwrite \
      "$bin" kernel-run --config configs/pr-ada.yaml --kernels kernels --harness kernels \
      --shape "$shape" --no-reference > "$res/ncu-ours-$mask.log" 2>&1
    timed timeout 150 ncu --clock-control none --set full --import-source no \
      --kernel-name regex:flash --launch-skip 2 --launch-count 1 --export "$res/fa2-$mask" --force-overwrite \
      python3 -c "
import torch, torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
q, k, v = (torch.randn(2, 16, 4096, 128, device='cuda', dtype=torch.float16) for _ in range(3))
with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
    for _ in range(3):
        F.scaled_dot_product_attention(q, k, v, is_causal=('$mask' == 'causal'))
torch.cuda.synchronize()
" > "$res/ncu-fa2-$mask.log" 2>&1
    for who in ours fa2; do
      ncu --import "$res/$who-$mask.ncu-rep" --page details > "$res/details-$who-$mask.txt" 2>&1
      ncu --import "$res/$who-$mask.ncu-rep" --page raw --csv > "$res/raw-$who-$mask.csv" 2>&1
      rm -f "$res/$who-$mask.ncu-rep"
      echo "== $who $mask"
      grep -E "^  [a-zA-Z_]|Duration|Registers Per|Issue Slots Busy|No Eligible|Warp Cycles Per Issued|Executed Ipc Active|Achieved Occupancy|Executed Instructions  " "$res/details-$who-$mask.txt" | head -14
    done
  done
  tar czf "$out/ninth-profile.tgz" -C "$out" r && rm -rf "$res"
  ;;
ninth-ada)
  # 2026-12-03, ninth session: FA2's own H200 tile in our mma.sync kernel. On an H200 PyTorch's
  # FA2 runs 128 x 64, 4 warps, one K and one V buffer (64 KiB: two CTAs per SM there, one on
  # an L4), where the L4 path runs 128 x 32 (non-causal) and 128 x 64 on 8 warps (causal).
  # .carry/variants/ada64: both of the L4 path's d128 forms as 128 x 64, 4 warps x 32 rows,
  # Q in smem, split (255 registers, 80 bytes of spill, as FA2's). A calibration of our code
  # against FA2's on the same tile, not a candidate for the L4 (one CTA per SM there).
  ab ada64 .carry/variants/ada64 configs/pr-ada.yaml
  ada_peers
  peer_table "$res/ab-ada64.json" "$res/sdpa-ada.json"
  tar czf "$out/ninth-ada.tgz" -C "$out" r && rm -rf "$res"
  ;;
ninth-uw)
  # 2026-12-03, ninth session: the mma.sync kernel with its warp index read through a shuffle
  # from lane 0 (.carry/variants/uw; the sm_90a cubin is unchanged), so that ptxas sees the
  # per-warp tests of the tile walk as uniform and drops the divergence checks (BRA.DIV)
  # before the softmax's shuffles; the same shapes as ninth-pf
  ada_candidate uw
  ;;
ninth-pf)
  # 2026-12-03, ninth session: the mma.sync kernel with each ldmatrix issued one step ahead of
  # the mma's that read it (.carry/variants/pf; the sm_90a cubin is unchanged), against
  # main's kernels on the L4 path (configs/pr-ada.yaml, ada-mid, and the d64 PR shapes under
  # CG_ADA_TILES), FA2 / cuDNN after it
  ada_candidate pf
  ;;
ninth-record)
  # 2026-12-03, ninth session, after ninth-uw: kernels/ is .carry/variants/uw (the same cubins
  # on sm_89, sm_90 and sm_90a). Under compute-sanitizer the L4 path's kernels (sanitize.yaml's
  # shapes with CG_ADA_TILES); pr-ada re-recorded with its stored-only A/A; the GPU tests.
  python3 -c '
import sys, yaml
cfg = yaml.safe_load(open("configs/sanitize.yaml"))
cfg["name"] = "sanitize-ada"
cfg["compile"] = {"defines": ["CG_ADA_TILES"]}
yaml.safe_dump(cfg, open(sys.argv[1], "w"), sort_keys=False)
' "$res/sanitize-ada.yaml"
  timed timeout 200 "$bin" sanitize --config "$res/sanitize-ada.yaml" --kernels kernels > "$res/san-ada.txt" 2>&1
  grep -E "sanitize:|finding" "$res/san-ada.txt" | head -4
  KEEP_RES=1 REASON="${REASON:-kernel step (issue 40)}" CFGS=pr-ada bash "$0" record
  tar czf /tmp/ninth-record.tgz -C "$out" r && rm -rf "$res"
  bash bench/issue36_device.sh tests 2>&1 | grep -E "test result|FAILED|panicked|rc=" | head -8
  mv /tmp/ninth-record.tgz "$out"/
  ;;
ninth)
  # 2026-12-03, ninth session: the d64 even split on four consumers (BN 64, 112 registers,
  # 96 at launch: .carry/variants/nc4; nc4f / nc4s3f: the same, ST 2 / 3, with
  # _tiles_at_once {64}, which makes it the cheaper form on every shape below).
  # 1. Four consumers against three, both forced, and against the other form alone, on the
  #    eighth session's 37 non-causal d64 shapes; ST 3 against 2 on a few.
  # 2. The step (k-base = main's kernels) on the PR config, cuDNN / FA2 after it.
  { rule_shapes; fresh_shapes; } | derive_config sweep configs/pr.yaml
  derive_config few configs/pr.yaml <<'SHAPES'
8 16 512 64 noncausal float16
4 16 512 64 noncausal float16
4 16 1024 64 noncausal float16
4 16 2048 64 noncausal float16
1 16 8192 64 noncausal float16
SHAPES
  BASE=$PWD/.carry/variants/forced ab nc4-vs-nc3 .carry/variants/nc4f "$res/sweep.yaml"
  BASE=$PWD/.carry/variants/nolnc ab nc4-vs-other .carry/variants/nc4f "$res/sweep.yaml"
  BASE=$PWD/.carry/variants/nc4f ab st3-vs-st2 .carry/variants/nc4s3f "$res/few.yaml"
  ab step-pr .carry/variants/nc4 configs/pr.yaml
  peers pr configs/pr.yaml
  peer_table "$res/ab-step-pr.json" "$res/sdpa-pr.json"
  tar czf "$out/ninth.tgz" -C "$out" r && rm -rf "$res"
  ;;
eighth-check)
  # 2026-12-03, eighth session, after `eighth` (whose rule, passes alone, picked the slower
  # form on 2 of its 23 shapes): the host now weighs the forms by the busiest SM's cost
  # (rows, plus one NAME tile's rows a pass). 1. Shapes the rule had not seen, the other form
  # alone (.carry/variants/nolnc) against the even split forced (.carry/variants/forced),
  # each checked against the rule's choice (its cost, computed here beforehand from
  # busiest_sm_cost's arithmetic: `even` or `other`). 2. The step against .carry/k-base on
  # the PR, long and odd shapes; the GPU tests. 3. If no step A/B has a regression and the
  # rule's choice was never slower by more than 2%: pr re-recorded with a stored-only A/A,
  # and a stored-only A/A of pr-ada.
  fresh_shapes | derive_config fresh configs/pr.yaml
  BASE=$PWD/.carry/variants/nolnc ab fresh .carry/variants/forced "$res/fresh.yaml"
  python3 - "$res/ab-fresh.json" > "$res/fresh-check.txt" <<'PY'
import json, sys
want = {"b6h12s1920d64_f16": "other", "b3h32s2304d64_f16": "other", "b6h12s1600d64_f16": "other",
        "b8h24s3328d64_f16": "other", "b10h32s960d64_f16": "other", "b8h40s1472d64_f16": "other",
        "b5h20s3328d64_f16": "even", "b8h40s3328d64_f16": "other", "b1h32s2816d64_f16": "even",
        "b10h8s960d64_f16": "other", "b16h32s1600d64_f16": "even", "b16h16s512d64_f16": "even",
        "b16h16s2048d64_f16": "even", "b3h16s1601d64_f16": "even"}
r = json.load(open(sys.argv[1]))
worst = 0.0
for s in r.get("shapes", []):
    ratio = (s.get("ab") or {}).get("ratio")
    if not ratio or s["name"] not in want:
        print(f"{s['name']}: no ratio"); worst = 99; continue
    d = (ratio - 1) * 100          # the even split against the other form
    cost = d if want[s["name"]] == "even" else -d   # what the rule's choice lost
    worst = max(worst, cost)
    print(f"{s['name']:<22} even vs other {d:+6.2f}%  rule: {want[s['name']]:<5}  {'right' if cost <= 0 else f'slower by {cost:.2f}%'}")
print(f"worst loss of the rule's choice: {worst:.2f}%")
sys.exit(0 if worst <= 2.0 and len(r.get("shapes", [])) == len(want) else 1)
PY
  rule_ok=$?
  cat "$res/fresh-check.txt"
  long_config
  hop_odd_config
  ab step-pr kernels configs/pr.yaml
  ab step-long kernels "$res/long.yaml"
  ab step-odd kernels "$res/hop-odd.yaml"
  tar czf /tmp/eighth-check.tgz -C "$out" r && rm -rf "$res"
  bash bench/issue36_device.sh tests 2>&1 | grep -E "test result|FAILED|panicked|rc=" | head -8
  mv /tmp/eighth-check.tgz "$out"/
  mkdir -p "$res"
  tar xzf "$out/eighth-check.tgz" -C "$out"
  if [ "$rule_ok" = 0 ] && no_regression "$res/ab-step-pr.json" "$res/ab-step-long.json" "$res/ab-step-odd.json"; then
    rm -rf "$res"/*
    KEEP_RES=1 REASON="${REASON:-kernel step (issue 40)}" CFGS=pr bash "$0" record
    stored_aa pr-ada
  else
    rm -rf "$res"/*
    echo "== not recorded: rule_ok=$rule_ok or a step regression"
  fi
  ;;
eighth)
  # 2026-12-03, eighth session: the host weighs `_long_noncausal` against the form for any
  # mask by the busiest SM's passes (pick_form), and the d64 form starts at 512 keys.
  # 1. The rule's check: on non-causal d64 shapes (each side with the same binary), the other
  #    form alone (.carry/variants/nolnc: no `_long_noncausal`) against the even split forced
  #    (.carry/variants/forced: tiles_at_once 64, so it takes fewer passes on every shape
  #    below): the sign of each change against the rule's choice (docs/KERNEL_LOG.md).
  rule_shapes | derive_config rule configs/pr.yaml
  BASE=$PWD/.carry/variants/nolnc ab rule .carry/variants/forced "$res/rule.yaml"
  # 2. The step: .carry/k-base (kernels/ with the form from 1536 keys, as shipped) against
  #    kernels/ on the PR config (cuDNN / FA2 after it), the long and odd shapes
  long_config
  hop_odd_config
  ab step-pr kernels configs/pr.yaml
  peers pr configs/pr.yaml
  peer_table "$res/ab-step-pr.json" "$res/sdpa-pr.json"
  ab step-long kernels "$res/long.yaml"
  ab step-odd kernels "$res/hop-odd.yaml"
  # 3. Against what shipped: kernels/ and this binary against the H200's stored pr baseline
  #    (recorded with 1f6bf36's binary and kernels)
  stored_aa pr
  # 4. Checks when no A/B of the step has a regression
  if no_regression "$res/ab-step-pr.json" "$res/ab-step-long.json" "$res/ab-step-odd.json"; then
    kernel_checks eighth-part1
  else
    echo "== the step has a regression: no checks"
  fi
  ;;
eighth-record)
  # 2026-12-03, eighth session, after `eighth`: this card's pr baseline re-recorded with a
  # stored-only A/A, and a stored-only A/A of pr-ada (its kernels and forms unchanged)
  KEEP_RES=1 CFGS=pr bash "$0" record
  stored_aa pr-ada
  # TESTS=1: the GPU tests after them
  if [ "${TESTS:-0}" = 1 ]; then
    bash bench/issue36_device.sh tests 2>&1 | grep -E "test result|FAILED|panicked|rc=" | head -8
  fi
  ;;
persistent)
  # candidates in .carry/variants/long-* and d128-* (each a copy of kernels/ whose `_long` or
  # d128 entry lines were replaced, e.g. by CG_ATTN_WS_KERNEL_DYN with another fill or tile:
  # docs/KERNEL_LOG.md, 2026-12-02, third session), and the kernels/ of this tree, each
  # against the base on long shapes (a config made from pr.yaml); ada-* (the L4's path) on
  # configs/pr-ada.yaml, pr-* on configs/pr.yaml
  long_config
  d64=(--shape b2h16s1536d64_f16 --shape b4h16s2048d64_f16 --shape b4h16s2048d64_causal_f16
       --shape b1h16s8192d64_f16 --shape b1h16s8192d64_causal_f16 --shape b1h8s16384d64_f16
       --shape b2h16s4096d64_causal_f16)
  d128=(--shape b2h16s4096d128_f16 --shape b2h16s4096d128_causal_f16 --shape b1h8s16384d128_f16
        --shape b1h8s16384d128_causal_f16 --shape b1h16s8192d128_bf16
        --shape b2h16s2048d128_causal_bf16 --shape b4h16s1024d128_f16
        --shape b2h8s3001d128_causal_f16)
  ab shipped-long kernels "$res/long.yaml" "${d64[@]}"
  for v in $(ls .carry/variants); do
    case $v in
      long-*) ab "$v" ".carry/variants/$v" "$res/long.yaml" "${d64[@]}" ;;
      d128-*) ab "$v" ".carry/variants/$v" "$res/long.yaml" "${d128[@]}" ;;
      ada-*) ab "$v" ".carry/variants/$v" configs/pr-ada.yaml ;;
      pr-*) ab "$v" ".carry/variants/$v" configs/pr.yaml ;;
    esac
  done
  # PR=1: kernels/ against the base on the whole PR config too
  if [ "${PR:-0}" = 1 ]; then ab pr-kernels kernels configs/pr.yaml; fi
  ;;
profile)
  # ncu --set full on one launch of the shipped kernel per shape: the details page, and the
  # SASS with its warp-state samples (where the consumers wait), as text
  for shape in b4h16s2048d64_f16 b2h16s4096d128_f16; do
    timed timeout 150 ncu --clock-control none --set full --import-source no \
      --kernel-name regex:^attention_fwd_ --launch-count 1 --export "$res/$shape" --force-overwrite \
      "$bin" kernel-run --config configs/pr.yaml --kernels kernels --harness kernels \
      --shape "$shape" --no-reference > "$res/ncu-$shape.log" 2>&1
    ncu --import "$res/$shape.ncu-rep" --page details > "$res/details-$shape.txt" 2>&1
    ncu --import "$res/$shape.ncu-rep" --page source --csv --print-source sass \
      > "$res/sass-$shape.csv" 2>&1
    rm -f "$res/$shape.ncu-rep"
    grep -E "Duration|Compute \(SM\) Throughput|Issue Slots Busy|Issued Warp|No Eligible|Active Warps Per|Eligible Warps|Warp Cycles Per Issued|Executed Ipc Active" \
      "$res/details-$shape.txt" | head -20
  done
  ;;
final)
  # After the session's last step, one call: the shipped kernels' A/A through the new binary
  # with cuDNN and FA2 timed right after (kernel_table_device.sh: issue 40's table, issue 39's
  # A/A), the step's A/B against the base on the PR config, the long shapes (below), then the
  # GPU tests (last: issue36_device.sh leaves only its own files in $OUT)
  bash bench/kernel_table_device.sh configs/pr.yaml
  ab final-pr kernels configs/pr.yaml
  bash "$0" long
  bash bench/issue36_device.sh tests 2>&1 | grep -E "test result|FAILED|panicked|rc=" | head -8
  ;;
long)
  # the long shapes: kernels/ against the base, then cuDNN / FA2 on the same shapes
  long_config
  ab final-long kernels "$res/long.yaml"
  peers long "$res/long.yaml"
  python3 - "$res/ab-final-long.json" "$res/sdpa-long.json" <<'PY'
import json, sys
ours = json.load(open(sys.argv[1]))
peers = {s["name"]: s for s in json.load(open(sys.argv[2]))["shapes"]}
print("| shape | ours µs | TF/s | / cuDNN | / FA2 |")
for s in ours["shapes"]:
    p50 = (s.get("summary") or {}).get("p50")
    p = peers.get(s["name"], {})
    r = lambda x: f"{p50 / x:.2f}" if p50 and x else "—"
    print(f"| {s['name']} | {p50:.2f} | {s.get('tflops') or 0:.0f} | {r(p.get('cudnn_us'))} | {r(p.get('flash_us'))} |" if p50 else f"| {s['name']} | — | | | |")
PY
  ;;
wide)
  # 2026-12-02, fourth session: kernels/ (d128 non-causal with 192-key tiles where
  # wide_tiles() says so; the L4's d128 tile with 3 stages) against the base on the PR and
  # pr-ada configs; on mid.yaml, kernels/ and .carry/variants/d128-n192q1 (192-key tiles at
  # every length); then the long shapes with cuDNN / FA2 (`long`) and the PR table
  mid_config
  ab step-pr kernels configs/pr.yaml
  ab step-ada kernels configs/pr-ada.yaml
  ab mid-kernels kernels "$res/mid.yaml"
  ab mid-n192 .carry/variants/d128-n192q1 "$res/mid.yaml"
  bash "$0" long
  bash bench/kernel_table_device.sh configs/pr.yaml
  bash bench/kernel_table_device.sh configs/pr-ada.yaml
  mkdir -p "$res" && mv "$out"/ours-* "$out"/sdpa-* "$res"/
  ;;
check)
  # 2026-12-02, fourth session: the GPU tests; .carry/variants/pr-st3q1 (the d64 main and
  # small-grid kernels with 3 stages and one Q buffer) against the base on the PR config;
  # kernels/ at wide_tiles()'s boundary; then `record` (the tests first, and $res made again:
  # issue36_device.sh leaves only its own archive in $OUT)
  bash bench/issue36_device.sh tests 2>&1 | grep -E "test result|FAILED|panicked|rc=" | head -8
  mkdir -p "$res"
  mid_config
  ab st3q1 .carry/variants/pr-st3q1 configs/pr.yaml
  ab mid-le kernels "$res/mid.yaml" --shape b4h16s1280d128_f16 --shape b4h16s1664d128_f16
  bash "$0" record
  ;;
st3)
  # 2026-12-02, fourth session, call 4: .carry/variants/pr-st3q1 against the base on the
  # PR config; kernels/ at wide_tiles()'s boundary; where the variant is an improvement with
  # no regression, it becomes kernels/ here and the baselines are re-recorded with it
  mid_config
  # (the base: kernels/ of this tree in .carry/k-base; those before the d128 step in
  # .carry/k-old)
  ab st3q1 .carry/variants/pr-st3q1 configs/pr.yaml
  base=$PWD/.carry/k-old ab mid-le kernels "$res/mid.yaml" --shape b4h16s1280d128_f16 \
    --shape b4h16s1664d128_f16
  if python3 - "$res/ab-st3q1.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
v = [s.get("verdict") for s in r.get("shapes", [])]
sys.exit(0 if r.get("passed") and v and set(v) <= {"pass", "improvement"} and "improvement" in v else 1)
PY
  then
    echo "== st3q1 kept: re-recording with it"
    cp .carry/variants/pr-st3q1/attention.cu kernels/attention.cu
    bash "$0" record
  fi
  ;;
fifth)
  # 2026-12-02, fifth session, the last call: kernels/ (d64 non-causal launches from 1536 keys
  # on NAME_long_noncausal) against the base on the PR config and the long shapes (with cuDNN
  # and FA2 after); only when neither has a regression or a failure: issue 40's table, the GPU
  # tests, and the `pr` baseline re-recorded (the L4's path did not change: CFGS=pr)
  ab fifth-pr kernels configs/pr.yaml
  KEEP_RES=1 bash "$0" long
  if no_regression "$res/ab-fifth-pr.json" "$res/ab-final-long.json"; then
    bash "$0" fifth-rest
  else
    echo "== the step is not kept: no table, tests or record"
  fi
  ;;
fifth-rest)
  # what `fifth` runs after an A/B without regression (alone: the same, no A/B first)
  bash bench/kernel_table_device.sh configs/pr.yaml
  mkdir -p "$res" && mv "$out"/ours-* "$out"/sdpa-* "$res"/ 2>/dev/null
  # (issue36_device.sh leaves only its own archive in $OUT: this call's so far waits in /tmp)
  tar czf /tmp/fifth-part1.tgz -C "$out" r && rm -rf "$res"
  bash bench/issue36_device.sh tests 2>&1 | grep -E "test result|FAILED|panicked|rc=" | head -8
  mv /tmp/fifth-part1.tgz "$out"/
  mkdir -p "$res"
  KEEP_RES=1 CFGS=pr bash "$0" record
  ;;
record)
  # after the last kernel step: the H200's stored baselines of the shipped kernels, each
  # followed by a stored-only A/A (the gate against the file it just wrote); CFGS=pr for one.
  # The commit recorded is .carry/commit's where it is carried (`git rev-parse HEAD >
  # .carry/commit`): the device's copy of the tree may answer `git rev-parse HEAD` with an
  # older commit (2026-12-06, thirty-seventh session: 77cd67d for bd13957's kernels).
  record_baselines
  ;;
step)
  [ $# -gt 0 ] || set -- configs/pr.yaml
  for cfg in "$@"; do ab "step-$(basename "$cfg" .yaml)" kernels "$cfg"; done
  bash bench/kernel_table_device.sh configs/pr.yaml
  ;;
sixth)
  # 2026-12-02, sixth session: the L4's d128 tile with the split pipeline (one K and one V
  # buffer, 48 KiB, two CTAs per SM on the L4): each .carry/variants/ada-* against the base on
  # configs/pr-ada.yaml; FA2 and cuDNN on the same shapes right after; each
  # .carry/variants/san-* (the same kernels with CG_ADA_TILES defined on top) under
  # compute-sanitizer on configs/sanitize.yaml
  for v in $(ls .carry/variants | grep '^ada-'); do ab "$v" ".carry/variants/$v" configs/pr-ada.yaml; done
  # mid-*: the same against the base on non-causal d128 shapes of other lengths (ada-mid.yaml)
  if ls .carry/variants | grep -q '^mid-'; then
    ada_mid_config
    for v in $(ls .carry/variants | grep '^mid-'); do ab "$v" ".carry/variants/$v" "$res/ada-mid.yaml"; done
  fi
  ada_peers
  python3 - "$res" <<'PY'
import glob, json, os, sys
res = sys.argv[1]
peers = {s["name"]: s for s in json.load(open(f"{res}/sdpa-ada.json"))["shapes"]}
print("| kernels | shape | p50 µs | / cuDNN | / FA2 |")
for f in sorted(glob.glob(f"{res}/ab-ada-*.json")):
    r = json.load(open(f))
    for s in r.get("shapes", []):
        p = peers.get(s["name"], {})
        for side, p50 in (("base", (s.get("ab") or {}).get("p50_base")), (os.path.basename(f)[3:-5], (s.get("ab") or {}).get("p50_cand"))):
            if p50:
                q = lambda x: f"{p50 / x:.2f}" if x else "—"
                print(f"| {side} | {s['name']} | {p50:.2f} | {q(p.get('cudnn_us'))} | {q(p.get('flash_us'))} |")
PY
  for v in $(ls .carry/variants | grep '^san-'); do
    echo "== sanitize $v"
    timed timeout 150 "$bin" sanitize --kernels ".carry/variants/$v" > "$res/$v.txt" 2>&1
    tail -4 "$res/$v.txt"
  done
  ;;
sixth-step)
  # 2026-12-02, sixth session: kernels/ (the L4's d128 non-causal launches on
  # NAME_long_noncausal, the split-pipeline 128x32 tile; the host takes a NAME_long_noncausal
  # only on a grid of NAME with at least as many CTAs as SMs) against the base on pr-ada, on
  # non-causal d128 lengths (ada-mid.yaml) and on the PR config; the new grid rule on the
  # H200's d64 (.carry/ci-gate-old, the binary without it: the base's `_long_noncausal`
  # against .carry/variants/pr-nolnc, the same kernels without it, so `_long`, on small
  # grids); FA2 / cuDNN on pr-ada; bench/kernel_check.py --ada (parity of the L4's forms)
  ab step-ada kernels configs/pr-ada.yaml
  ada_mid_config
  hop_small_config
  ab step-mid kernels "$res/ada-mid.yaml"
  bin=$PWD/.carry/ci-gate-old ab hop-small .carry/variants/pr-nolnc "$res/hop-small.yaml"
  ab step-pr kernels configs/pr.yaml
  ada_peers
  python3 - "$res" <<'PY'
import json, sys
res = sys.argv[1]
peers = {s["name"]: s for s in json.load(open(f"{res}/sdpa-ada.json"))["shapes"]}
r = json.load(open(f"{res}/ab-step-ada.json"))
print("| shape | base µs | kernels µs | base / FA2 | kernels / FA2 | kernels / cuDNN |")
for s in r.get("shapes", []):
    ab, p = s.get("ab") or {}, peers.get(s["name"], {})
    b, c, fa, cd = ab.get("p50_base"), ab.get("p50_cand"), p.get("flash_us"), p.get("cudnn_us")
    if not ab:  # identical kernels: the gate timed one side (its p50 is both)
        b = c = (s.get("summary") or {}).get("p50")
    if b and c and fa and cd:
        print(f"| {s['name']} | {b:.2f} | {c:.2f} | {b / fa:.2f} | {c / fa:.2f} | {c / cd:.2f} |")
PY
  timed timeout 200 python3 bench/kernel_check.py --ada --out "$res/kc-ada.json" > "$res/kc-ada.log" 2>&1
  grep -E "ada|FAIL|passed|failed" "$res/kc-ada.log" | tail -8 | cut -c1-200
  ;;
sixth-rest)
  # after `sixth-step` passed: bench/kernel_check.py --ada, the L4's new form under
  # compute-sanitizer (a grid of NAME with more CTAs than SMs, so the host takes it), the GPU
  # tests, pr-ada re-recorded with a stored-only A/A, and a stored-only A/A of pr
  timed timeout 200 python3 bench/kernel_check.py --ada --out "$res/kc-ada.json" > "$res/kc-ada.log" 2>&1
  grep -E "rand-ada|FAIL|FAILURE|util" "$res/kc-ada.log" | tail -8 | cut -c1-200
  mkdir -p /tmp/k-ada && cp kernels/*.cu /tmp/k-ada/ && sed -i '1i #define CG_ADA_TILES 1' /tmp/k-ada/attention.cu
  cat > "$res/san-ada.yaml" <<'YAML'
name: san-ada
shapes:
  # 3 query tiles x 67 heads = 201 CTAs of NAME: the host takes NAME_long_noncausal (from 256);
  # 257 keys leave a 32-key tile with one valid key
  - {batch: 1, heads: 67, seq_len: 257, head_dim: 128, causal: false, dtype: float16}
  - {batch: 1, heads: 67, seq_len: 300, head_dim: 128, causal: false, dtype: bfloat16}
YAML
  timed timeout 200 "$bin" sanitize --config "$res/san-ada.yaml" --kernels /tmp/k-ada > "$res/san-ada.txt" 2>&1
  grep -E "sanitize:|finding" "$res/san-ada.txt" | head -4
  tar czf /tmp/sixth-part1.tgz -C "$out" r && rm -rf "$res"
  bash bench/issue36_device.sh tests 2>&1 | grep -E "test result|FAILED|panicked|rc=" | head -8
  mv /tmp/sixth-part1.tgz "$out"/
  mkdir -p "$res"
  KEEP_RES=1 CFGS=pr-ada bash "$0" record
  stored_aa pr
  ;;
seventh)
  # 2026-12-02, seventh session: kernels/ (the three-consumer d64 form's rows split evenly in
  # 64-row units over a head's CTAs) against the base (main's kernels) on the long shapes,
  # odd lengths (hop-odd.yaml) and the PR config, with cuDNN / FA2 on the long and PR shapes
  # right after each (issue 40's table on this card); the L4's path (pr-ada, its kernels
  # unchanged: an A/A) with FA2 / cuDNN; compute-sanitizer on configs/sanitize.yaml (its
  # [1,6,1601] d64 reaches the form with idle consumers); bench/kernel_check.py (parity)
  seventh_ab
  peers pr configs/pr.yaml
  peer_table "$res/ab-step-pr.json" "$res/sdpa-pr.json"
  ab step-ada kernels configs/pr-ada.yaml
  ada_peers
  peer_table "$res/ab-step-ada.json" "$res/sdpa-ada.json"
  timed timeout 150 "$bin" sanitize --kernels kernels > "$res/san.txt" 2>&1
  grep -E "sanitize:|finding" "$res/san.txt" | head -4
  timed timeout 150 python3 bench/kernel_check.py --no-timing --out "$res/kc.json" > "$res/kc.log" 2>&1
  grep -E "rand|FAIL|FAILURE|passed|failed" "$res/kc.log" | tail -8 | cut -c1-200
  ;;
seventh-step)
  # 2026-12-02, seventh session: kernels/ (the even split with one 64-row unit as
  # rows_per_block, so the host's fill rule sizes the grid by units) against the base on the
  # long, odd and PR shapes, cuDNN / FA2 on the long ones; only when no A/B has a regression
  # or a failure: compute-sanitizer, bench/kernel_check.py, the GPU tests, and this card's
  # baselines re-recorded (H200: pr, its pr-ada kernels unchanged, so a stored-only A/A of it;
  # any other card: pr and pr-ada), each with a stored-only A/A
  seventh_ab
  if no_regression "$res/ab-step-long.json" "$res/ab-step-odd.json" "$res/ab-step-pr.json"; then
    kernel_checks seventh-part1
    mkdir -p "$res"
    if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
      KEEP_RES=1 CFGS=pr bash "$0" record
      stored_aa pr-ada
    else
      KEEP_RES=1 CFGS="pr pr-ada" bash "$0" record
    fi
  else
    echo "== the step is not kept: no checks or record"
  fi
  ;;
seventh-h100)
  # 2026-12-02, seventh session, on an H100 after `seventh-step` was kept on the H200: this
  # card's pr and pr-ada baselines re-recorded with stored-only A/As; the step against the base
  # on the PR config with cuDNN / FA2 after it (the table on this card); the L4's path (an A/A:
  # its kernels did not change) with FA2 / cuDNN; LONG=1: the long shapes too
  KEEP_RES=1 CFGS="pr pr-ada" bash "$0" record
  ab step-pr kernels configs/pr.yaml
  peers pr configs/pr.yaml
  peer_table "$res/ab-step-pr.json" "$res/sdpa-pr.json"
  ab step-ada kernels configs/pr-ada.yaml
  ada_peers
  peer_table "$res/ab-step-ada.json" "$res/sdpa-ada.json"
  if [ "${LONG:-0}" = 1 ]; then
    long_config
    ab step-long kernels "$res/long.yaml"
    peers long "$res/long.yaml"
    peer_table "$res/ab-step-long.json" "$res/sdpa-long.json"
  fi
  ;;
seventh-leads)
  # 2026-12-02, seventh session, leads for the next step (nothing kept from it): against the
  # kernels of 4dd4ad2 (.carry/k-base), .carry/variants/lead-from512 (the even-split form from
  # 512 keys) on the PR config and non-causal d64 at 1024 keys; .carry/variants/lead-rev (its
  # CTAs in the reverse order of blockIdx.x) on lengths that split into whole sub-tiles
  derive_config s1024 configs/pr.yaml <<'SHAPES'
4 16 1024 64 noncausal float16
16 16 1024 64 noncausal float16
2 32 1024 64 noncausal float16
SHAPES
  derive_config whole configs/pr.yaml <<'SHAPES'
2 16 1536 64 noncausal float16
4 16 1536 64 noncausal float16
1 32 3000 64 noncausal float16
SHAPES
  ab from512-pr .carry/variants/lead-from512 configs/pr.yaml
  ab from512-s1024 .carry/variants/lead-from512 "$res/s1024.yaml"
  ab rev-whole .carry/variants/lead-rev "$res/whole.yaml"
  ;;
seventh-grid)
  # (needs the kernels/ and the binary of 03a71a2, where this step was measured; reverted)
  # 2026-12-02, seventh session, a step not kept: kernels/ (the even-split d64 form from 1024
  # keys, and only on grids of NAME with at least 4 CTAs per SM: NAME_long_noncausal_min_grid,
  # new in the host) against the base (4dd4ad2's kernels, which declare no min_grid: one per
  # SM) on the PR config (every PR shape keeps its form) and on medium.yaml (1024 keys, and
  # grids of 132..527 CTAs of NAME from 1536 keys, which now run NAME_long); the lead
  # .carry/variants/lead-c2 (the same from 512 keys) on the PR config; then, without a
  # regression or failure: the GPU tests, stored-only A/As of pr and pr-ada on this card
  derive_config medium configs/pr.yaml <<'SHAPES'
4 16 1024 64 noncausal float16
2 32 1024 64 noncausal float16
16 16 1024 64 noncausal float16
4 16 1024 64 noncausal bfloat16
4 8 1024 64 noncausal float16
1 8 2048 64 noncausal float16
1 16 2048 64 noncausal float16
1 4 4096 64 noncausal float16
2 8 1536 64 noncausal float16
3 8 1536 64 noncausal float16
SHAPES
  ab grid-pr kernels configs/pr.yaml
  ab grid-medium kernels "$res/medium.yaml"
  ab c2-pr .carry/variants/lead-c2 configs/pr.yaml
  if no_regression "$res/ab-grid-pr.json" "$res/ab-grid-medium.json"; then
    tar czf /tmp/grid-part1.tgz -C "$out" r && rm -rf "$res"
    bash bench/issue36_device.sh tests 2>&1 | grep -E "test result|FAILED|panicked|rc=" | head -8
    mv /tmp/grid-part1.tgz "$out"/
    mkdir -p "$res"
    for cfg in pr pr-ada; do
      stored_aa "$cfg"
    done
  else
    echo "== the step is not kept: no tests or A/A"
  fi
  ;;
seventh-long)
  # the long shapes alone: the step against the base, then cuDNN / FA2
  long_config
  ab step-long kernels "$res/long.yaml"
  peers long "$res/long.yaml"
  peer_table "$res/ab-step-long.json" "$res/sdpa-long.json"
  ;;
esac
# (KEEP_RES=1: a mode run by another leaves its results to the caller's archive)
[ "${KEEP_RES:-0}" = 1 ] || { [ -d "$res" ] && tar czf "$out/issue40-$what.tgz" -C "$out" r && rm -rf "$res"; }
ls "$out"
