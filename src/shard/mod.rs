//! Shards: a config's shapes split into N parts that run on separate GPUs or runners and are
//! joined again by `ci-gate merge`, which decides the verdict over the whole run.
//!
//! The partition is deterministic (the same shapes and N always give the same shards, on any
//! machine), balanced by each shape's expected wall time, and stable: adding a shape to the
//! config moves few others. It is consistent hashing with bounded loads (Mirrokni, Thorup and
//! Zadimoghaddam, "Consistent Hashing with Bounded Loads", SODA 2018) on rendezvous hashing:
//! every shape ranks the shards by SHA-256 of (shape name, shard), and, taken from the most
//! to the least expensive, goes to the first shard in its ranking that still has room under
//! a cap of (1 + [`SLACK`]) × the mean load. Cost: O(S log S + S·N) hashes for S shapes.
//!
//! The expected cost is not the kernel's time. A sample is a CUDA graph of about
//! `sample_ms` of launches whatever the kernel, so a round costs about the same for every
//! shape; what differs is the parity check, whose fp32 reference kernel does 2·B·H·S²·D
//! multiply-adds per pass (three passes). [`expected_seconds`] adds the two.

pub(crate) mod merge;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::config::{Config, ShapeParams};

/// A shard that holds none of the run's shapes: fewer shards are needed.
#[derive(Debug, thiserror::Error)]
#[error("shard {spec} holds none of the run's {shapes} shapes: use fewer shards")]
pub(crate) struct EmptyShard {
    pub spec: ShardSpec,
    pub shapes: usize,
}

/// The shapes of `--shard K/N` among `shapes` (the run's, after `--shape`), with what its
/// results file records for `merge`.
pub(crate) fn of_run(
    config: &Config,
    shapes: &[ShapeParams],
    spec: ShardSpec,
) -> Result<(Vec<ShapeParams>, ShardInfo), EmptyShard> {
    let mine = select(config, shapes, spec);
    if mine.is_empty() {
        return Err(EmptyShard {
            spec,
            shapes: shapes.len(),
        });
    }
    let info = ShardInfo {
        index: spec.index,
        count: spec.count,
        run_shapes: shapes.iter().map(|s| s.name()).collect(),
    };
    Ok((mine, info))
}

/// The note a shard's results carry: `measured` of the run's shapes, verdicts provisional.
pub(crate) fn note(info: &ShardInfo, measured: usize) -> String {
    format!(
        "shard {}/{}: {measured} of the run's {} shapes; its verdicts are provisional: `ci-gate merge` decides over all shards",
        info.index,
        info.count,
        info.run_shapes.len()
    )
}

/// Most shards of one run.
pub(crate) const MAX_SHARDS: u32 = 64;
/// How far above the mean a shard's load may go before a shape tries its next shard.
pub(crate) const SLACK: f64 = 0.1;

/// Shard K of N (1-based), as `--shard K/N` writes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShardSpec {
    pub index: u32,
    pub count: u32,
}

impl std::str::FromStr for ShardSpec {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad =
            || format!("{s:?} is not a shard: write K/N, e.g. 2/4 (1 ≤ K ≤ N ≤ {MAX_SHARDS})");
        let (k, n) = s.split_once('/').ok_or_else(bad)?;
        let index: u32 = k.trim().parse().map_err(|_| bad())?;
        let count: u32 = n.trim().parse().map_err(|_| bad())?;
        if count == 0 || count > MAX_SHARDS || index == 0 || index > count {
            return Err(bad());
        }
        Ok(ShardSpec { index, count })
    }
}

impl std::fmt::Display for ShardSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

/// What a shard's results file says about the run it belongs to, for `merge` to check.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ShardInfo {
    pub index: u32,
    pub count: u32,
    /// Every shape of the whole run (all shards), by name: what `merge` must find.
    pub run_shapes: Vec<String>,
}

/// Expected wall time of one shape in seconds under `config`: its rounds (pairs in A/B, so
/// `sides` = 2) of `samples_per_round` samples of `sample_ms` at the duty cycle, plus the
/// parity check's reference kernel (three fp32 passes at an assumed 20 TFLOP/s) for each side.
pub(crate) fn expected_seconds(config: &Config, shape: &ShapeParams, sides: u32) -> f64 {
    let m = &config.measure;
    let sample_s = m.sample_ms / 1000.0 / m.duty_cycle.clamp(0.01, 1.0);
    let rounds = f64::from(m.min_rounds) * f64::from(sides);
    let measure = rounds * f64::from(m.samples_per_round) * sample_s + m.warmup_ms / 1000.0;
    let s = f64::from(shape.seq_len);
    let flops =
        3.0 * 4.0 * f64::from(shape.batch * shape.heads) * s * s * f64::from(shape.head_dim);
    measure + f64::from(sides) * flops / 20e12
}

/// The rank of shard `j` for `name` (higher first).
fn weight(name: &str, j: u32) -> u64 {
    let mut h = Sha256::new();
    h.update(name.as_bytes());
    h.update([0]);
    h.update(j.to_le_bytes());
    let d = h.finalize();
    let mut first = [0u8; 8];
    first.copy_from_slice(&d[..8]); // a SHA-256 digest has 32 bytes
    u64::from_le_bytes(first)
}

/// The shard (0-based) of each item, given as (name, cost). Names must be unique; costs are
/// clamped to be positive and finite.
pub(crate) fn partition(items: &[(String, f64)], count: u32) -> Vec<u32> {
    let count = count.clamp(1, MAX_SHARDS);
    let cost = |c: f64| if c.is_finite() && c > 0.0 { c } else { 1e-9 };
    let total: f64 = items.iter().map(|(_, c)| cost(*c)).sum();
    let cap = (1.0 + SLACK) * total / f64::from(count);
    let mut order: Vec<usize> = (0..items.len()).collect();
    order.sort_by(|&a, &b| {
        cost(items[b].1)
            .total_cmp(&cost(items[a].1))
            .then_with(|| items[a].0.cmp(&items[b].0))
    });
    let mut load = vec![0.0f64; count as usize];
    let mut out = vec![0u32; items.len()];
    for i in order {
        let (name, c) = (&items[i].0, cost(items[i].1));
        let mut ranked: Vec<u32> = (0..count).collect();
        ranked.sort_by_key(|&j| std::cmp::Reverse(weight(name, j)));
        let chosen = ranked
            .iter()
            .copied()
            .find(|&j| load[j as usize] + c <= cap)
            .unwrap_or_else(|| {
                // Every shard is at the cap (a shape larger than the slack): the least loaded.
                // `count` is at least 1, so there is one.
                (0..count)
                    .min_by(|&a, &b| load[a as usize].total_cmp(&load[b as usize]))
                    .unwrap_or(0)
            });
        load[chosen as usize] += c;
        out[i] = chosen;
    }
    out
}

/// The shapes of shard `spec` among `shapes`, in their config order. Costs are those of an
/// A/B run (two sides) whether or not A/B runs, so every shard of a run splits alike.
pub fn select(config: &Config, shapes: &[ShapeParams], spec: ShardSpec) -> Vec<ShapeParams> {
    let items: Vec<(String, f64)> = shapes
        .iter()
        .map(|s| (s.name(), expected_seconds(config, s, 2)))
        .collect();
    let shard = partition(&items, spec.count);
    shapes
        .iter()
        .zip(shard)
        .filter(|(_, k)| *k + 1 == spec.index)
        .map(|(s, _)| *s)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn items(n: usize) -> Vec<(String, f64)> {
        (0..n)
            .map(|i| {
                (
                    format!("shape{i}"),
                    1.0 + (i % 7) as f64 * 0.5 + if i % 13 == 0 { 4.0 } else { 0.0 },
                )
            })
            .collect()
    }

    fn loads(items: &[(String, f64)], shards: &[u32], n: u32) -> Vec<f64> {
        let mut l = vec![0.0; n as usize];
        for ((_, c), &k) in items.iter().zip(shards) {
            l[k as usize] += c;
        }
        l
    }

    #[test]
    fn parses_k_of_n() {
        assert_eq!(
            "2/4".parse::<ShardSpec>(),
            Ok(ShardSpec { index: 2, count: 4 })
        );
        for bad in ["0/4", "5/4", "1/0", "4", "a/b", "1/65", "-1/2", ""] {
            assert!(bad.parse::<ShardSpec>().is_err(), "{bad}");
        }
        assert_eq!(ShardSpec { index: 1, count: 2 }.to_string(), "1/2");
    }

    #[test]
    fn every_item_lands_in_exactly_one_shard_and_loads_are_balanced() {
        for n in [1, 2, 3, 4, 8] {
            let it = items(164);
            let shards = partition(&it, n);
            assert!(shards.iter().all(|&k| k < n));
            let l = loads(&it, &shards, n);
            // The slowest shard sets the wall time: at most the cap above the mean.
            let mean = l.iter().sum::<f64>() / f64::from(n);
            let most = l.iter().copied().fold(0.0, f64::max);
            assert!(most <= (1.0 + SLACK) * mean + 1e-9, "n={n}: {l:?}");
        }
    }

    #[test]
    fn the_same_shapes_give_the_same_shards_in_any_order() {
        let it = items(50);
        let a = partition(&it, 4);
        let mut rev = it.clone();
        rev.reverse();
        let mut b = partition(&rev, 4);
        b.reverse();
        assert_eq!(a, b);
    }

    #[test]
    fn adding_a_shape_moves_few_others() {
        let it = items(164);
        let before = partition(&it, 4);
        let mut worst = 0;
        for extra in 0..20 {
            let mut more = it.clone();
            more.push((format!("new{extra}"), 1.0 + extra as f64 * 0.3));
            let after = partition(&more, 4);
            let moved = before.iter().zip(&after).filter(|(a, b)| a != b).count();
            worst = worst.max(moved);
        }
        // Round-robin or a sorted greedy split would move most of the 164; measured: a
        // handful.
        assert!(worst <= 16, "{worst} of 164 moved");
    }

    #[test]
    fn degenerate_costs_do_not_break_the_partition() {
        let it = vec![
            ("a".to_string(), f64::NAN),
            ("b".to_string(), -1.0),
            ("c".to_string(), f64::INFINITY),
            ("d".to_string(), 0.0),
        ];
        let shards = partition(&it, 2);
        assert_eq!(shards.len(), 4);
        assert!(shards.iter().all(|&k| k < 2));
        assert!(partition(&[], 3).is_empty());
    }
}
