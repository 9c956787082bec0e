//! `cargo bench --bench compare`: the statistics of `ci-gate compare` on a million values:
//! 10 rounds × 50,000 values a side, unpaired (stored-baseline test) and paired (A/B). The
//! design's budget for the whole command is under 1 s (docs/PERF.md has the process's time).

use criterion::{Criterion, criterion_group, criterion_main};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

use ci_gate::comparison::{Comparison, StageDesign, StoredSide};
use ci_gate::config::GateSettings;
use ci_gate::stats::{ProcessSpread, Rounds};

fn rounds(seed: u64, center: f64, rounds: usize, per: usize) -> Vec<Vec<f64>> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    (0..rounds)
        .map(|_| {
            let shift = 1.0 + 0.004 * (rng.random::<f64>() - 0.5);
            (0..per)
                .map(|_| center * shift * (1.0 + 0.01 * (rng.random::<f64>() - 0.5)))
                .collect()
        })
        .collect()
}

fn bench(c: &mut Criterion) {
    let gate = GateSettings::default();
    let base = rounds(1, 9.0, 10, 50_000);
    let cand = Rounds::new(rounds(2, 9.1, 10, 50_000)).unwrap();
    let stored = StoredSide::recorded(base.clone(), Vec::new(), Some(ProcessSpread::ASSUMED));
    c.bench_function("unpaired, 10 x 50k values a side", |b| {
        b.iter(|| Comparison::unpaired(&stored, &cand, None, &gate).unwrap())
    });
    let base = Rounds::new(base).unwrap();
    let design = Some(StageDesign { stage1: 4, max: 10 });
    c.bench_function("paired two-stage, 10 x 50k values a side", |b| {
        b.iter(|| Comparison::paired(&base, &cand, design, &gate).unwrap())
    });
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(10);
    targets = bench
}
criterion_main!(benches);
