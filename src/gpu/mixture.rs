//! The host's mirror of the input mixture (kernels/util.cu, "The input mixture"): which class
//! each (batch, head) slice of a tensor drew, and the scale of a V slice, which parity
//! errors are measured in (a kernel's error on V with a mean of 10 and a spread of 4 is
//! naturally ten times its error on N(0,1) V; the tolerance is relative to the output's
//! scale, not to its units).
//!
//! Only integer hashing and the same rounded float operations as the device: the classes
//! match the device's exactly; the scales to the last bit (nothing relies on that: they
//! divide an error). `tests/vectors/mixture.json` (made by `bench/mixture_study.py
//! --vectors`) pins this file to the study's Python port; the GPU test
//! `the_input_mixture_on_the_device_is_the_documented_one` pins the device to both.
//!
//! No CUDA here: the simulation and the tests use it on any machine.

/// The three tensors, in kernels/util.cu's numbering.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Role {
    Q = 0,
    K = 1,
    V = 2,
}

const GOLDEN: u64 = 0x9E37_79B9_7F4A_7C15;
const ROLE_SALT: u64 = 0xA24B_AED4_963E_E407;

/// splitmix64, as `cg_splitmix64`.
pub(crate) fn splitmix64(mut x: u64) -> u64 {
    x = x.wrapping_add(GOLDEN);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

/// The key a fill of `seed` draws from (`fill_input_*`: `splitmix64(seed)`).
pub fn fill_key(seed: u64) -> u64 {
    splitmix64(seed)
}

/// `cg_head_hash`: the hash that picks the class and parameters of slice `bh`.
pub fn head_hash(key: u64, role: Role, bh: u64) -> u64 {
    splitmix64(
        key ^ ROLE_SALT.wrapping_mul(role as u64 + 1) ^ (bh.wrapping_add(1)).wrapping_mul(GOLDEN),
    )
}

/// The class names of each role, in the device's numbering.
pub const Q_CLASSES: [&str; 4] = ["normal", "large", "outliers", "biased"];
pub const K_CLASSES: [&str; 4] = ["normal", "late", "sink", "flat"];
pub const V_CLASSES: [&str; 3] = ["normal", "offset", "wide"];

/// `cg_class`: the class index of a slice whose head hash is `h`.
pub fn class(role: Role, h: u64) -> usize {
    let decile = (((h >> 32) & 0xFFFF) * 10) >> 16;
    match role {
        Role::V => match decile {
            0..=3 => 0,
            4..=6 => 1,
            _ => 2,
        },
        Role::Q | Role::K => match decile {
            0..=2 => 0,
            3..=5 => 1,
            6..=7 => 2,
            _ => 3,
        },
    }
}

/// `cg_frac`: 16 bits of `h` from `shift` as a fraction in [0, 1).
fn frac(h: u64, shift: u32) -> f32 {
    ((h >> shift) & 0xFFFF) as f32 * (1.0 / 65536.0)
}

/// `cg_lerp`: lo + span · frac, each operation rounded once.
fn lerp(lo: f32, span: f32, h: u64, shift: u32) -> f32 {
    lo + span * frac(h, shift)
}

/// `cg_normal(key, i)`: a standard normal value by Box-Muller from splitmix64(key + i). The
/// device's logf and cosf may differ from these in the last bit.
fn normal(key: u64, i: u64) -> f32 {
    let h = splitmix64(key.wrapping_add(i));
    let u1 = ((h >> 40) as u32 + 1) as f32 * 5.960_464_5e-8;
    let u2 = (((h >> 8) & 0xFF_FFFF) as u32) as f32 * 5.960_464_5e-8;
    (-2.0f32 * u1.ln()).sqrt() * (std::f32::consts::TAU * u2).cos()
}

/// `cg_input(key, role, i, seq_len, head_dim)`: element i (flat, [bh, row, col]) of a
/// tensor of `role` drawn from `key` ([`fill_key`] of the fill's seed), before it is rounded
/// to the dtype. The host's copy of the device's function (up to the last bit of `normal`).
pub fn value(key: u64, role: Role, i: u64, seq_len: u32, head_dim: u32) -> f32 {
    let d = u64::from(head_dim.max(1));
    let per_head = u64::from(seq_len.max(1)) * d;
    let (bh, rest) = (i / per_head, i % per_head);
    let (row, col) = (rest / d, rest % d);
    let h = head_hash(key, role, bh);
    let z = normal(key, i);
    match (role, class(role, h)) {
        (Role::Q, 1) => z * lerp(2.5, 2.5, h, 0),
        (Role::Q, 2) => {
            let outlier = splitmix64(h ^ (col + 1).wrapping_mul(GOLDEN)) >> 60 == 0;
            if outlier {
                z * lerp(8.0, 8.0, h, 16)
            } else {
                z
            }
        }
        (Role::Q, 3) => z + lerp(0.5, 1.0, h, 0),
        (Role::K, 1) => {
            let late0 = u64::from((seq_len / 4).max(1));
            let strong = row >= late0 && splitmix64(h ^ (row + 1).wrapping_mul(GOLDEN)) >> 61 == 0;
            if strong { z * lerp(3.0, 5.0, h, 0) } else { z }
        }
        (Role::K, 2) if row == 0 => {
            lerp(2.0, 4.0, h, 0) * (1.0 + 0.25 * z) / (head_dim as f32).sqrt()
        }
        (Role::K, 3) => normal(h, 0x7F00_0000 + col) + 0.5 * z,
        (Role::V, 1) => {
            let mu = lerp(2.0, 4.0, h, 0);
            let sigma = lerp(1.0, 3.0, h, 16);
            (if h >> 63 == 1 { -mu } else { mu }) + sigma * z
        }
        (Role::V, 2) => lerp(8.0, 24.0, h, 0) * z,
        _ => z,
    }
}

/// The scale s_V of V slice `bh` filled from `key` ([`fill_key`]): |mu| + sigma of its
/// class (1 for N(0,1)); parity's `max_abs` is the largest |out − ref| / s_V.
pub fn v_scale(key: u64, bh: u64) -> f32 {
    let h = head_hash(key, Role::V, bh);
    match class(Role::V, h) {
        1 => lerp(2.0, 4.0, h, 0) + lerp(1.0, 3.0, h, 16),
        2 => lerp(8.0, 24.0, h, 0),
        _ => 1.0,
    }
}

/// The V scales of every slice of a tensor of `heads` = batch·heads slices filled from
/// `seed` (the seed passed to `fill_input_*`).
pub fn v_scales(seed: u64, heads: usize) -> Vec<f32> {
    let key = fill_key(seed);
    (0..heads as u64).map(|bh| v_scale(key, bh)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_come_in_the_documented_proportions() {
        let n = 100_000u64;
        for (role, want) in [
            (Role::Q, vec![0.3, 0.3, 0.2, 0.2]),
            (Role::K, vec![0.3, 0.3, 0.2, 0.2]),
            (Role::V, vec![0.4, 0.3, 0.3]),
        ] {
            let mut seen = vec![0u64; want.len()];
            for bh in 0..n {
                seen[class(role, head_hash(0x1234_5678, role, bh))] += 1;
            }
            for (i, w) in want.iter().enumerate() {
                let got = seen[i] as f64 / n as f64;
                assert!((got - w).abs() < 0.01, "{role:?} class {i}: {got} not ~{w}");
            }
        }
    }

    #[test]
    fn v_scales_are_one_for_normal_and_within_the_class_ranges() {
        let key = fill_key(99);
        let mut classes = [false; 3];
        for bh in 0..10_000 {
            let s = v_scale(key, bh);
            let c = class(Role::V, head_hash(key, Role::V, bh));
            classes[c] = true;
            match c {
                0 => assert_eq!(s, 1.0),
                1 => assert!((3.0..10.0).contains(&s), "{s}"),
                _ => assert!((8.0..32.0).contains(&s), "{s}"),
            }
        }
        assert_eq!(classes, [true; 3]);
    }

    #[test]
    fn each_class_draws_what_its_name_says() {
        // One (batch, head) slice of 512 x 64 per class, found by searching keys.
        let (s, d) = (512u32, 64u32);
        let slice = |key: u64, role: Role| -> Vec<f32> {
            (0..u64::from(s * d))
                .map(|i| value(key, role, i, s, d))
                .collect()
        };
        let key_of = |role: Role, want: usize| {
            (0u64..)
                .map(fill_key)
                .find(|&k| class(role, head_hash(k, role, 0)) == want)
                .unwrap()
        };
        let rms = |x: &[f32]| {
            (x.iter().map(|v| f64::from(*v).powi(2)).sum::<f64>() / x.len() as f64).sqrt()
        };
        let mean = |x: &[f32]| x.iter().map(|v| f64::from(*v)).sum::<f64>() / x.len() as f64;
        let normal_q = slice(key_of(Role::Q, 0), Role::Q);
        assert!((rms(&normal_q) - 1.0).abs() < 0.05, "{}", rms(&normal_q));
        assert!(rms(&slice(key_of(Role::Q, 1), Role::Q)) > 2.3);
        assert!(mean(&slice(key_of(Role::Q, 3), Role::Q)) > 0.45);
        // Late: the strongest key of the slice is past the first quarter.
        let k = slice(key_of(Role::K, 1), Role::K);
        let norm = |j: usize| {
            k[j * d as usize..(j + 1) * d as usize]
                .iter()
                .map(|v| v * v)
                .sum::<f32>()
        };
        let strongest = (0..s as usize)
            .max_by(|&a, &b| norm(a).total_cmp(&norm(b)))
            .unwrap();
        assert!(strongest >= s as usize / 4, "{strongest}");
        // Sink: against a q biased along the shared direction (all ones, a biased q's mean),
        // key 0 scores g0 · sqrt(d) with g0 in [2, 6) (times 1 + z/4), above nearly every
        // other key (N(0, d)): a lead of a few nats, bounded, never the whole row's weight.
        let k = slice(key_of(Role::K, 2), Role::K);
        let along = |j: usize| {
            k[j * d as usize..(j + 1) * d as usize]
                .iter()
                .map(|&v| f64::from(v))
                .sum::<f64>()
                / f64::from(d).sqrt()
        };
        let sink = along(0);
        assert!((1.0..8.0).contains(&sink), "{sink}");
        let above = (1..s as usize).filter(|&j| along(j) >= sink).count();
        assert!(above * 20 < s as usize, "{above} keys above the sink");
        // Flat: every key is one base vector plus z/2, so the keys of a slice spread half as
        // much as normal keys around their mean.
        let k = slice(key_of(Role::K, 3), Role::K);
        let rows = s as usize;
        let spread = (0..d as usize)
            .map(|c| {
                let col: Vec<f32> = (0..rows).map(|j| k[j * d as usize + c]).collect();
                let m = mean(&col);
                col.iter().map(|v| (f64::from(*v) - m).powi(2)).sum::<f64>() / rows as f64
            })
            .sum::<f64>()
            / f64::from(d);
        assert!((0.2..0.3).contains(&spread), "variance {spread}");
        // Offset V: the mean is the class's mu.
        let key = key_of(Role::V, 1);
        let v = slice(key, Role::V);
        assert!(mean(&v).abs() > 1.9, "{}", mean(&v));
        assert!(f64::from(v_scale(key, 0)) > mean(&v).abs());
        let key = key_of(Role::V, 2);
        assert!(rms(&slice(key, Role::V)) > 7.5);
        // Every value is far inside fp16's range.
        for role in [Role::Q, Role::K, Role::V] {
            for c in 0..4 {
                if let Some(k) = (0u64..2000)
                    .map(fill_key)
                    .find(|&k| class(role, head_hash(k, role, 0)) == c)
                {
                    assert!(
                        slice(k, role)
                            .iter()
                            .all(|v| v.is_finite() && v.abs() < 300.0)
                    );
                }
            }
        }
    }

    #[test]
    fn the_mirror_matches_the_studys_vectors() {
        // tests/vectors/mixture.json: made by `python3 bench/mixture_study.py --vectors`, the
        // Python port the tolerances were chosen with (the device is checked against both
        // on the GPU).
        let text = include_str!("../../tests/vectors/mixture.json");
        let cases: Vec<serde_json::Value> = serde_json::from_str(text).expect("vectors parse");
        assert!(cases.len() >= 100);
        for case in cases {
            let seed = case["seed"].as_str().unwrap().parse::<u64>().unwrap();
            let bh = case["bh"].as_u64().unwrap();
            let key = fill_key(seed);
            for (role, name) in [(Role::Q, "q"), (Role::K, "k"), (Role::V, "v")] {
                let want = case[name].as_u64().unwrap() as usize;
                assert_eq!(class(role, head_hash(key, role, bh)), want, "{case}");
            }
            let s = case["v_scale"].as_f64().unwrap() as f32;
            assert_eq!(v_scale(key, bh), s, "{case}");
            // A few values of each tensor (numpy's log and cos may differ from Rust's in the
            // last bit).
            let (sl, d) = (
                case["seq_len"].as_u64().unwrap() as u32,
                case["head_dim"].as_u64().unwrap() as u32,
            );
            for (role, name) in [
                (Role::Q, "q_values"),
                (Role::K, "k_values"),
                (Role::V, "v_values"),
            ] {
                for pair in case[name].as_array().unwrap() {
                    let i = pair[0].as_u64().unwrap();
                    let want = pair[1].as_f64().unwrap();
                    let got = f64::from(value(key, role, i, sl, d));
                    assert!(
                        (got - want).abs() <= 1e-5 * want.abs().max(1.0),
                        "{case}: {name} {i}: {got} != {want}"
                    );
                }
            }
        }
    }
}
