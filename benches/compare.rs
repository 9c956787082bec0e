//! `cargo bench --bench compare`: the statistics of one `ci-gate compare` of two plain sample
//! files of 10,000 values each with 10,000 bootstrap resamples (the budget: < 1 s).

use criterion::{Criterion, criterion_group, criterion_main};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

use ci_gate::comparison::Comparison;
use ci_gate::config::GateSettings;
use ci_gate::stats::{Rounds, Sample};

fn timings(seed: u64, center: f64, n: usize) -> Vec<f64> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    (0..n)
        .map(|_| center * (1.0 + 0.01 * (rng.random::<f64>() + rng.random::<f64>() - 1.0)))
        .collect()
}

fn bench(c: &mut Criterion) {
    let gate = GateSettings::default();
    assert_eq!(gate.bootstrap_resamples, 10_000);
    let base = Rounds::single(Sample::new(timings(1, 9.0, 10_000)).unwrap());
    let cand = Rounds::single(Sample::new(timings(2, 9.1, 10_000)).unwrap());
    c.bench_function("compare 10k vs 10k, 10k resamples", |b| {
        b.iter(|| Comparison::of(&base, &cand, &gate, 42).unwrap())
    });
    // Rounds-aware bootstrap: 20 rounds × 50 samples per side, as a results file holds.
    let split = |v: Vec<f64>| Rounds::new(v.chunks(50).map(<[f64]>::to_vec).collect()).unwrap();
    let base = split(timings(3, 9.0, 1_000));
    let cand = split(timings(4, 9.1, 1_000));
    c.bench_function("compare 20x50 rounds, 10k resamples", |b| {
        b.iter(|| Comparison::of(&base, &cand, &gate, 42).unwrap())
    });
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20);
    targets = bench
}
criterion_main!(benches);
