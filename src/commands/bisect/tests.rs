use std::path::{Path, PathBuf};
use std::time::Instant;

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::*;
use crate::sim::{NoiseModel, SimBackend, SimKernel};

/// A judge that answers from a list: `calls[i]` for commit i against GOOD; the
/// confirmation says `confirm`. It records what it was asked.
struct Scripted {
    calls: Vec<Call>,
    confirm: Call,
    asked: Vec<usize>,
    confirmed: Vec<usize>,
}

impl Scripted {
    /// `n` commits, the first slower one at `culprit` (none: all not slower), the indices
    /// in `skip` skipped.
    fn new(n: usize, culprit: Option<usize>, skip: &[usize]) -> Scripted {
        let calls = (0..n)
            .map(|i| {
                if skip.contains(&i) {
                    Call::Skipped(format!("commit {i} does not compile"))
                } else if culprit.is_some_and(|c| i >= c) {
                    Call::Slower
                } else {
                    Call::NotSlower
                }
            })
            .collect();
        Scripted {
            calls,
            confirm: Call::Slower,
            asked: Vec::new(),
            confirmed: Vec::new(),
        }
    }
}

impl Judge for Scripted {
    fn judge(&mut self, index: usize) -> Call {
        assert!(
            !self.asked.contains(&index),
            "commit {index} judged twice: {:?}",
            self.asked
        );
        self.asked.push(index);
        self.calls[index].clone()
    }

    fn confirm(&mut self, index: usize) -> Call {
        self.confirmed.push(index);
        self.confirm.clone()
    }
}

fn culprit(index: usize) -> Found {
    Found::Culprit {
        index,
        confirmation: Call::Slower,
    }
}

#[test]
fn bisect_finds_the_first_slower_commit_in_log2_steps() {
    for n in 1..=33usize {
        let bound = (usize::BITS - n.leading_zeros()) as usize + 1; // ⌈log2(n+1)⌉ + BAD
        for c in 0..n {
            let mut j = Scripted::new(n, Some(c), &[]);
            assert_eq!(search(n, &mut j), culprit(c), "n {n}, culprit {c}");
            assert_eq!(j.asked[0], n - 1, "BAD is judged first");
            assert!(
                j.asked.len() <= bound,
                "n {n}, culprit {c}: {} judgements, more than {bound}",
                j.asked.len()
            );
            assert_eq!(j.confirmed, vec![c]);
        }
    }
}

#[test]
fn bisect_culprit_at_the_ends_of_the_range() {
    // The first commit after GOOD.
    let mut j = Scripted::new(10, Some(0), &[]);
    assert_eq!(search(10, &mut j), culprit(0));
    // BAD itself.
    let mut j = Scripted::new(10, Some(9), &[]);
    assert_eq!(search(10, &mut j), culprit(9));
    // A range of one commit: BAD, judged once, confirmed.
    let mut j = Scripted::new(1, Some(0), &[]);
    assert_eq!(search(1, &mut j), culprit(0));
    assert_eq!(j.asked, vec![0]);
}

#[test]
fn bisect_bad_not_slower_or_skipped_ends_the_search_at_once() {
    let mut j = Scripted::new(8, None, &[]);
    assert_eq!(search(8, &mut j), Found::BadNotSlower);
    assert_eq!(j.asked, vec![7]);
    assert!(j.confirmed.is_empty());
    let mut j = Scripted::new(8, Some(3), &[7]);
    assert!(matches!(search(8, &mut j), Found::BadSkipped(w) if w.contains("commit 7")));
    assert_eq!(j.asked, vec![7]);
}

#[test]
fn bisect_skips_are_stepped_around() {
    // A skipped commit away from the culprit changes nothing but the path.
    for skip in [0usize, 1, 2, 3, 4, 7, 8] {
        let mut j = Scripted::new(10, Some(6), &[skip]);
        assert_eq!(search(10, &mut j), culprit(6), "skip {skip}");
    }
    // Skips at both boundaries of the range, culprit inside.
    let mut j = Scripted::new(10, Some(4), &[0, 8]);
    assert_eq!(search(10, &mut j), culprit(4));
}

#[test]
fn bisect_skips_next_to_the_culprit_leave_it_open() {
    // The commit before the culprit is skipped: either could be the first slower one.
    let mut j = Scripted::new(10, Some(6), &[5]);
    assert_eq!(search(10, &mut j), Found::Ambiguous(vec![5, 6]));
    assert!(j.confirmed.is_empty(), "an open result is not confirmed");
    // The first commit skipped and the culprit right after it.
    let mut j = Scripted::new(10, Some(1), &[0]);
    assert_eq!(search(10, &mut j), Found::Ambiguous(vec![0, 1]));
    // Just before BAD.
    let mut j = Scripted::new(10, Some(9), &[8]);
    assert_eq!(search(10, &mut j), Found::Ambiguous(vec![8, 9]));
}

#[test]
fn bisect_all_skipped_range_names_every_commit() {
    let mut j = Scripted::new(6, Some(2), &[0, 1, 2, 3, 4]);
    assert_eq!(search(6, &mut j), Found::Ambiguous(vec![0, 1, 2, 3, 4, 5]));
    assert_eq!(j.asked.len(), 6, "each commit judged once");
}

#[test]
fn bisect_any_skips_give_the_culprit_or_an_open_set_holding_it() {
    let mut rng = ChaCha8Rng::seed_from_u64(23);
    for _ in 0..3000 {
        let n = rng.random_range(1..40usize);
        let c = rng.random_range(0..n);
        let skip: Vec<usize> = (0..n - 1).filter(|_| rng.random::<f64>() < 0.3).collect();
        let mut j = Scripted::new(n, Some(c), &skip);
        match search(n, &mut j) {
            Found::Culprit { index, .. } => assert_eq!(index, c, "n {n} skip {skip:?}"),
            Found::Ambiguous(list) => {
                assert!(list.contains(&c), "n {n} c {c} skip {skip:?}: {list:?}");
                assert!(list.len() >= 2);
                // All but the last (judged slower) were skipped, and they are contiguous.
                assert!(list[..list.len() - 1].iter().all(|i| skip.contains(i)));
                assert!(list.windows(2).all(|w| w[0] < w[1]));
            }
            other => panic!("n {n} c {c} skip {skip:?}: {other:?}"),
        }
        assert!(j.asked.len() <= n);
    }
}

// ---------------------------------------------------------------------------------------
// The false-blame rate, by seeded simulation through the gate's own pipeline and rule.

/// The PR design (8 pairs, up to 24, 10 samples a round) and the default gate (m = 2%,
/// alpha = 0.05), on `shapes` shapes.
fn sim_config(shapes: usize) -> Config {
    let mut yaml = String::from(
        "name: bisect-sim\nmeasure: {samples_per_round: 10, min_rounds: 8, max_rounds: 24}\nshapes:\n",
    );
    for i in 0..shapes {
        yaml.push_str(&format!(
            "  - {{batch: 2, heads: 8, seq_len: {}, head_dim: 64, causal: false, dtype: float16}}\n",
            512 + 256 * i
        ));
    }
    Config::parse(&yaml, Path::new("bisect-sim.yaml")).unwrap()
}

fn kernel(hash: String, factor: f64) -> SimKernel {
    let mut k = SimKernel::parse("", &hash).unwrap();
    k.factor = factor;
    k
}

/// Commits whose simulated kernels have these time factors (GOOD: 1), every commit's
/// kernels distinct (so none is reused): each step a fresh simulated process of
/// `NoiseModel::ISSUE`, through `Run::measure_with` and [`classify`].
struct SimJudge {
    factors: Vec<f64>,
    config: Config,
    seed: u64,
    runs: u64,
}

impl SimJudge {
    fn ab(&mut self, base: SimKernel, cand: SimKernel) -> Call {
        self.runs += 1;
        let mut backend = SimBackend::new(
            self.seed.wrapping_mul(1_000).wrapping_add(self.runs),
            NoiseModel::ISSUE,
            Some(base),
            cand,
        );
        // The command's own step.
        let step = step(
            self.config.clone(),
            Vec::new(),
            BaseKernels {
                dir: PathBuf::from("base"),
                source: "base".into(),
                commit: None,
            },
            PathBuf::from("cand"),
            BackendChoice::Gpu,
        )
        .unwrap();
        match step.measure_with(&mut backend, Instant::now()) {
            Ok(r) => classify(&r).0,
            Err(e) => Call::Skipped(e.to_string()),
        }
    }

    fn commit(&self, i: usize) -> SimKernel {
        kernel(format!("commit{i}"), self.factors[i])
    }
}

impl Judge for SimJudge {
    fn judge(&mut self, index: usize) -> Call {
        let cand = self.commit(index);
        self.ab(kernel("good".into(), 1.0), cand)
    }

    fn confirm(&mut self, index: usize) -> Call {
        let parent = match index.checked_sub(1) {
            Some(p) => self.commit(p),
            None => kernel("good".into(), 1.0),
        };
        let cand = self.commit(index);
        self.ab(parent, cand)
    }
}

/// Per run: the culprit named and confirmed, if any.
fn simulate(
    runs: u64,
    shapes: usize,
    factors: impl Fn(u64) -> (Vec<f64>, Option<usize>),
) -> (usize, usize, usize) {
    let config = sim_config(shapes);
    let (mut right, mut wrong, mut none) = (0, 0, 0);
    for seed in 0..runs {
        let (f, truth) = factors(seed);
        let n = f.len();
        let mut j = SimJudge {
            factors: f,
            config: config.clone(),
            seed,
            runs: 0,
        };
        match search(n, &mut j) {
            Found::Culprit {
                index,
                confirmation: Call::Slower,
            } => {
                if Some(index) == truth {
                    right += 1;
                } else {
                    wrong += 1;
                }
            }
            _ => none += 1,
        }
    }
    (right, wrong, none)
}

/// The union bound of the report's footer with power taken as 1: k·S·alpha over
/// k = ⌈log2(n + 1)⌉ + 1 steps (BAD's included) of S shapes.
fn union_bound(n: usize, shapes: usize, alpha: f64) -> f64 {
    let k = (usize::BITS - n.leading_zeros()) as f64 + 1.0;
    k * shapes as f64 * alpha
}

#[test]
fn bisect_simulated_false_blame_one_commit_5pct_slower() {
    // 10 commits; one of them (drawn per run) makes the kernels 5% slower, and those after
    // it keep that. 2 shapes.
    let runs = 600;
    let started = Instant::now();
    let (right, wrong, none) = simulate(runs, 2, |seed| {
        let c = ChaCha8Rng::seed_from_u64(seed).random_range(0..10usize);
        let f = (0..10).map(|i| if i >= c { 1.05 } else { 1.0 }).collect();
        (f, Some(c))
    });
    let rate = wrong as f64 / runs as f64;
    let bound = union_bound(10, 2, 0.05);
    eprintln!(
        "simulated bisect, 10 commits, one +5%, 2 shapes, {runs} runs: right {right}, wrong culprit {wrong} (rate {rate:.4}, bound {bound:.2}), none {none}; {:.1} s",
        started.elapsed().as_secs_f64()
    );
    assert!(
        rate <= bound,
        "false-blame rate {rate:.4} above the union bound {bound:.2}"
    );
    // Power: the true culprit is named and confirmed in at least 95% of runs.
    assert!(
        right as f64 >= 0.95 * runs as f64,
        "right {right} of {runs} (wrong {wrong}, none {none})"
    );
}

#[test]
fn bisect_simulated_false_blame_creep_under_the_margin() {
    // 10 commits each 0.1% slower than the one before: +1% at BAD, no commit past the
    // 2% margin. Any culprit named is a false blame; BAD's own test bounds it by S·alpha.
    let runs = 600;
    let started = Instant::now();
    let (right, wrong, none) = simulate(runs, 2, |_| {
        ((1..=10).map(|i| 1.0 + 0.001 * f64::from(i)).collect(), None)
    });
    let rate = wrong as f64 / runs as f64;
    let bound = 2.0 * 0.05;
    eprintln!(
        "simulated bisect, 10 commits creeping +1% in all, 2 shapes, {runs} runs: false blame {wrong} (rate {rate:.4}, bound {bound:.2}), none {none}; {:.1} s",
        started.elapsed().as_secs_f64()
    );
    assert_eq!(right, 0);
    assert!(
        rate <= bound,
        "false-blame rate {rate:.4} above S·alpha {bound:.2}"
    );
}

#[test]
fn bisect_error_control_footer_states_the_bound() {
    let t = error_control(0.05, 0.02, 3, 5);
    assert!(t.contains("alpha = 0.05"), "{t}");
    assert!(t.contains("+2.0%"), "{t}");
    assert!(
        t.contains("at 99% confidence after the first look, 96% after the second"),
        "{t}"
    );
    assert!(t.contains("5·(3·0.05 + 1 − power)"), "{t}");
    assert!(t.contains("union bound"), "{t}");
}
