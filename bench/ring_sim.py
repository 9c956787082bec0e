#!/usr/bin/env python3
"""A check of the mbarrier ring of bench/variants/mb3e.patch and mb3s.patch (the L4 path's
d128 NAME without a CTA barrier in its loop), on the CPU, before any GPU runs it.

The protocol as the patch writes it (ST = 3 stages, tile t in stage t % 3, phase t // 3 of
both of the stage's barriers, each initialised with the CTA's thread count):
  prologue  every thread issues its copies of tiles 0 and 1 and arrives on full[0], full[1]
            when they land (cp.async.mbarrier.arrive.noinc); tile 2's stage holds Q until a
            CTA barrier after Q is read into registers;
  tile j    a thread with work waits full[j % 3] for parity (j // 3) & 1, reads the stage
            (S, then the softmax and P V), arrives on empty[j % 3]; it issues tile j+2 (if
            any) into tile j-1's stage after waiting empty[(j-1) % 3] for parity
            ((j-1) // 3) & 1 (j >= 1), either after its S (mb3s) or after the tile (mb3e; and
            always after the tile when it had no work), its copies arriving on full[(j+2) % 3].
A thread is modelled as its warp (the 32 lanes act together); arrivals count per thread.

With --lock (bench/variants/lock.patch, 2026-12-05): every warp, with work or without, first
takes the named barrier 1 + (w & 3) of the warps / 4 warps of its scheduler (bar.sync at the
top of each tile), so the warps of a scheduler start every tile together; 4, 8 or 12 warps
(12: bench/variants/w12.patch). Its mutant takes the barrier only in tiles with work.

The model is event-driven with random durations (S, the rest of a tile, the copies' latency,
a warp's start) and random causal skips (warps with no work in the last tiles). It checks:
  * no deadlock: every warp finishes;
  * the mbarrier semantics exactly: test_wait.parity(P) is true iff the parity of the
    barrier's completed phase count differs from P; the patch relies on no waiter being two
    phases behind, where that test would alias, so such a wait is an error;
  * every read of a stage finds the tile it expects, landed, and no copy lands in a stage
    while some warp may still read the tile before (every warp arrived on its empty phase).

  python3 bench/ring_sim.py [--trials 20000] [--seed 1]   # both issue points; exit 1 on a fault
  python3 bench/ring_sim.py --lock [--trials 20000]       # with the scheduler's barrier
"""
import argparse
import heapq
import random
import sys

STAGES = 3


class Barrier:
    def __init__(self, count):
        self.count = count
        self.pending = count
        self.completed = 0  # phases completed

    def arrive(self):
        self.pending -= 1
        if self.pending < 0:
            raise AssertionError("more arrivals than the barrier counts")
        if self.pending == 0:
            self.completed += 1
            self.pending = self.count

    def test_wait_parity(self, parity, phase_wanted):
        """PTX: true iff the current phase's parity differs from `parity`. The model also
        knows which phase the caller means and flags aliasing (two phases ahead)."""
        if self.completed > phase_wanted + 1:
            raise AssertionError(
                f"aliasing: waiting for phase {phase_wanted}, {self.completed} completed")
        return (self.completed & 1) != parity


MUTANTS = ("no-empty-wait", "early-arrive", "wrong-parity")
LOCK_MUTANTS = ("lock-if-work",)


class NamedBarrier:
    """bar.sync id, n: the n-th arrival releases the n warps waiting (one generation)."""

    def __init__(self, count):
        self.count = count
        self.waiting = []

    def arrive(self, w):
        """True when this arrival completes the generation (the waiters are released)."""
        self.waiting.append(w)
        if len(self.waiting) < self.count:
            return False
        self.waiting = []
        return True


def run(rng, warps, n_tiles, after_s, mutant=None, lock=False):
    """One CTA's loop; raises AssertionError on a fault. `mutant` breaks the protocol on
    purpose (the self-test: the model must catch each). `lock`: the scheduler's barrier at
    the top of every tile."""
    locks = [NamedBarrier(warps // 4) for _ in range(4)]
    full = [Barrier(warps) for _ in range(STAGES)]
    empty = [Barrier(warps) for _ in range(STAGES)]
    stage_tile = [None] * STAGES  # the tile whose copies landed in each stage
    readers = [set() for _ in range(STAGES)]
    # work: causal, the last tiles skipped by the first warps (rows above the diagonal)
    skip_from = {w: n_tiles - rng.randint(0, 1) if w < warps // 2 else n_tiles for w in range(warps)}
    events = []  # (time, seq, kind, payload)
    seq = [0]

    def push(t, kind, payload):
        seq[0] += 1
        heapq.heappush(events, (t, seq[0], kind, payload))

    def issue(now, w, tile):
        s = tile % STAGES
        if readers[s]:
            raise AssertionError(
                f"warp {w} copies tile {tile} into stage {s} while warps {sorted(readers[s])} read")
        push(now + rng.uniform(0.2, 3.0), "land", (w, tile))

    # each warp is a generator of steps: ("wait", barrier, parity, phase) / ("do", dt) /
    # ("read", stage, tile) / ("unread", stage) / ("arrive", barrier) / ("issue", tile)
    def program(w):
        for t in range(min(2, n_tiles)):
            yield ("issue", t)
        for j in range(n_tiles):
            work = j < skip_from[w]
            s = j % STAGES

            def issue_next():
                if j + 2 < n_tiles:
                    if j >= 1 and mutant != "no-empty-wait":
                        p = (j - 1) % STAGES
                        yield ("wait", empty[p], ((j - 1) // STAGES) & 1, (j - 1) // STAGES)
                    yield ("issue", j + 2)

            if lock and (work or mutant != "lock-if-work"):
                yield ("bar", locks[w & 3])
            if work:
                parity = (j // STAGES) & 1
                if mutant == "wrong-parity" and j == n_tiles - 1:
                    parity ^= 1
                yield ("wait", full[s], parity, j // STAGES)
                yield ("read", s, j)
                if mutant == "early-arrive":
                    yield ("arrive", empty[s])
                yield ("do", rng.uniform(0.5, 1.5))  # S
                if after_s:
                    yield from issue_next()
                yield ("do", rng.uniform(0.5, 1.5))  # softmax, P V
                yield ("unread", s)
            if mutant != "early-arrive" or not work:
                yield ("arrive", empty[s])
            if not after_s or not work:
                yield from issue_next()

    arrived_copies = {}
    progs = {w: program(w) for w in range(warps)}
    blocked = {}  # warp -> (barrier, parity, phase)
    done = set()
    # Q's barrier: tile 2's stage is free from the start of the loop (the patch's prologue
    # barrier); the prologue's copies of tiles 0, 1 need no empty wait.

    def step(now, w):
        while True:
            try:
                op = next(progs[w])
            except StopIteration:
                done.add(w)
                return
            kind = op[0]
            if kind == "do":
                push(now + op[1], "resume", w)
                return
            if kind == "bar":
                b = op[1]
                if not b.arrive(w):
                    blocked[w] = (b, None, None)
                    return
                for x in list(blocked):
                    if blocked[x][0] is b:
                        del blocked[x]
                        push(now, "resume", x)
            elif kind == "issue":
                issue(now, w, op[1])
            elif kind == "arrive":
                op[1].arrive()
                wake(now)
            elif kind == "read":
                s, tile = op[1], op[2]
                if stage_tile[s] != tile or arrived_copies.get(tile, 0) != warps:
                    raise AssertionError(
                        f"warp {w} reads stage {s} for tile {tile}; it holds {stage_tile[s]}"
                        f" ({arrived_copies.get(tile, 0)} of {warps} warps' copies landed)")
                readers[s].add(w)
            elif kind == "unread":
                readers[op[1]].discard(w)
            elif kind == "wait":
                b, parity, phase = op[1], op[2], op[3]
                if not b.test_wait_parity(parity, phase):
                    blocked[w] = (b, parity, phase)
                    return

    def wake(now):
        for w, (b, parity, phase) in list(blocked.items()):
            if isinstance(b, Barrier) and b.test_wait_parity(parity, phase):
                del blocked[w]
                push(now, "resume", w)

    for w in range(warps):
        push(rng.uniform(0, 1.0), "resume", w)
    while events:
        now, _, kind, payload = heapq.heappop(events)
        if kind == "resume":
            step(now, payload)
        elif kind == "land":
            w, tile = payload
            s = tile % STAGES
            if readers[s]:
                raise AssertionError(f"tile {tile}'s copies land in stage {s} while it is read")
            stage_tile[s] = tile  # the model keeps the newest tile landed in the stage
            arrived_copies[tile] = arrived_copies.get(tile, 0) + 1
            full[s].arrive()
            wake(now)
    if len(done) != warps:
        raise AssertionError(f"deadlock: warps {sorted(set(range(warps)) - done)} never finish"
                             f" (blocked: {sorted(blocked)})")
    for t in range(n_tiles):
        if arrived_copies.get(t, 0) != warps:
            raise AssertionError(f"tile {t}: {arrived_copies.get(t, 0)} arrivals of {warps}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trials", type=int, default=20000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--lock", action="store_true",
                    help="the scheduler's barrier at the top of every tile (variants/lock)")
    args = ap.parse_args()
    rng = random.Random(args.seed)

    def trials(after_s, mutant, shown):
        faults = 0
        for i in range(args.trials):
            warps = rng.choice([4, 8, 12] if args.lock else [4, 8])
            n_tiles = rng.randint(1, 40)
            try:
                run(rng, warps, n_tiles, after_s, mutant, args.lock)
            except AssertionError as e:
                faults += 1
                if faults <= shown:
                    print(f"  trial {i} ({warps} warps, {n_tiles} tiles): {e}")
        return faults

    ok = True
    for after_s in (False, True):
        name = "mb3s" if after_s else "mb3e"
        faults = trials(after_s, None, 5)
        print(f"{name}: {args.trials} trials (seed {args.seed}): {faults} fault(s)")
        ok &= faults == 0
        # The model must catch a broken protocol: each mutant faults somewhere.
        for m in MUTANTS + (LOCK_MUTANTS if args.lock else ()):
            caught = trials(after_s, m, 0)
            print(f"  {name} with the mutant {m}: {caught} of {args.trials} trials fault")
            ok &= caught > 0
    print("the protocol holds" if ok else "FAULT")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
