//! Tests on a real GPU: `cargo test --test it -- --ignored gpu:: --skip adversarial_gpu::` on
//! a CUDA machine.
//! Both kernels against PyTorch's float64 golden outputs and against the CPU float64
//! reference on random shapes (odd seq_len included), parity and measurement.

use std::path::Path;

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::common::{golden_dir, read_f32, read_u16};
use ci_gate::config::{CacheMode, Dtype, MeasureSettings, ShapeParams, Tolerance};
use ci_gate::gpu::Gpu;
use ci_gate::gpu::device::AttentionSet;
use ci_gate::gpu::measure::{
    AbSide, Bench, CONTROL_DUTY_CYCLE, Control, Held, LEAD_CYCLES, extend, measure, measure_pairs,
};
use ci_gate::gpu::parity::{POISON, Which, attention_on_host, check_parity};
use ci_gate::reference::{Problem, attention, decode, errors};
use ci_gate::results::PairOrder;
use ci_gate::stats::{Rounds, paired_margin_test};
use ci_gate::witness::{SideWitness, judge_recorded, limit_us, record};

fn gpu() -> Gpu {
    // NVRTC runs in a sandboxed child that is the ci-gate executable, not this test binary:
    // $CI_GATE_BIN where the binaries were carried to another machine, else cargo's build.
    ci_gate::kernel::sandbox::use_compiler_executable(
        std::env::var_os("CI_GATE_BIN")
            .map(std::path::PathBuf::from)
            .unwrap_or_else(|| env!("CARGO_BIN_EXE_ci-gate").into()),
    );
    Gpu::open(&Path::new(env!("CARGO_MANIFEST_DIR")).join("kernels"))
        .expect("open the GPU and compile the kernels")
}

/// Rounds an f32 to the nearest fp16 / bf16 bit pattern (ties to even), for random inputs.
fn to_bits(dtype: Dtype, x: f32) -> u16 {
    match dtype {
        Dtype::Bfloat16 => {
            let b = x.to_bits();
            ((b + 0x7fff + ((b >> 16) & 1)) >> 16) as u16
        }
        Dtype::Float16 => {
            // Inputs here are |x| < 8 and normal in fp16 or zero: round the mantissa to 10 bits.
            if x == 0.0 {
                return 0;
            }
            let b = x.to_bits();
            let sign = ((b >> 16) & 0x8000) as u16;
            let exp = ((b >> 23) & 0xff) as i32 - 127 + 15;
            if exp <= 0 {
                return sign;
            }
            let mant = b & 0x7f_ffff;
            let mut h = ((exp as u32) << 10) | (mant >> 13);
            let rest = mant & 0x1fff;
            if rest > 0x1000 || (rest == 0x1000 && (h & 1) == 1) {
                h += 1;
            }
            sign | h as u16
        }
    }
}

fn random_bits(rng: &mut ChaCha8Rng, dtype: Dtype, n: usize) -> Vec<u16> {
    (0..n)
        .map(|_| {
            // Sum of uniforms: roughly normal, bounded.
            let x: f32 = (0..4).map(|_| rng.random::<f32>() - 0.5).sum::<f32>() * 1.7;
            to_bits(dtype, x)
        })
        .collect()
}

fn check(name: &str, got: &[f32], want: &[f64], rel_bound: f64) {
    let unwritten = got.iter().filter(|x| x.to_bits() == POISON).count();
    let nonfinite = got.iter().filter(|x| !x.is_finite()).count();
    assert_eq!(unwritten, 0, "{name}: {unwritten} elements unwritten");
    assert_eq!(nonfinite, 0, "{name}: {nonfinite} elements NaN/Inf");
    let got: Vec<f64> = got.iter().map(|&x| f64::from(x)).collect();
    let (max_abs, rel_l2) = errors(&got, want);
    eprintln!("{name:<40} max_abs {max_abs:.3e}  rel_l2 {rel_l2:.3e}");
    assert!(
        rel_l2 < rel_bound,
        "{name}: rel_l2 {rel_l2:e} ≥ {rel_bound:e} (max_abs {max_abs:e})"
    );
}

/// The CPU float64 reference on a shape's 16-bit inputs.
fn cpu_attention(shape: &ShapeParams, q: &[u16], k: &[u16], v: &[u16]) -> Vec<f64> {
    attention(
        &decode(shape.dtype, q),
        &decode(shape.dtype, k),
        &decode(shape.dtype, v),
        Problem {
            batch_heads: (shape.batch * shape.heads) as usize,
            seq_len: shape.seq_len as usize,
            head_dim: shape.head_dim as usize,
            scale: f64::from(shape.scale()),
            causal: shape.causal,
        },
    )
}

/// The relative L2 error the fast kernels must stay under against `cpu_attention`.
fn fast_bound(dtype: Dtype) -> f64 {
    match dtype {
        Dtype::Float16 => 1e-3,
        Dtype::Bfloat16 => 8e-3,
    }
}

/// Ignored as the other GPU tests are, and also (with both reasons) where build.rs found no
/// golden data; run without the data, it fails.
#[test]
#[cfg_attr(not(ci_gate_no_golden), ignore = "needs a CUDA GPU")]
#[cfg_attr(
    ci_gate_no_golden,
    ignore = "needs a CUDA GPU, and no golden data at tests/golden (set CI_GATE_GOLDEN_DIR)"
)]
fn kernels_match_pytorch_golden_outputs() {
    let dir = golden_dir().expect("no golden data at tests/golden (set CI_GATE_GOLDEN_DIR)");
    let gpu = gpu();
    let cases: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("cases.json")).unwrap()).unwrap();
    for (name, c) in cases.as_object().unwrap() {
        let get = |k: &str| c[k].as_u64().unwrap() as u32;
        let dtype = if c["dtype"] == "bfloat16" {
            Dtype::Bfloat16
        } else {
            Dtype::Float16
        };
        let shape = ShapeParams::new(
            get("batch"),
            get("heads"),
            get("seq_len"),
            get("head_dim"),
            c["causal"].as_bool().unwrap(),
            dtype,
        );
        let (q, k, v) = (
            read_u16(&dir.join(format!("{name}.q.bin"))),
            read_u16(&dir.join(format!("{name}.k.bin"))),
            read_u16(&dir.join(format!("{name}.v.bin"))),
        );
        let want = read_f32(&dir.join(format!("{name}.out_f32.bin")));
        // PyTorch's own GPU kernel error is the bar for the fast kernel.
        let torch = c["sdpa_gpu_rel_l2_vs_fp64"].as_f64().unwrap();
        let fast = attention_on_host(&gpu, Which::Fast, &shape, &q, &k, &v).unwrap();
        check(
            &format!("{name} fast"),
            &fast,
            &want,
            torch.max(1e-6) * 1.0001,
        );
        let reference = attention_on_host(&gpu, Which::Reference, &shape, &q, &k, &v).unwrap();
        check(&format!("{name} reference"), &reference, &want, 1e-5);
        let tiled = attention_on_host(&gpu, Which::TiledReference, &shape, &q, &k, &v).unwrap();
        check(&format!("{name} tiled reference"), &tiled, &want, 1e-5);
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn kernels_match_the_cpu_reference_on_random_shapes() {
    let gpu = gpu();
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let lens = [1u32, 7, 63, 64, 65, 100, 129, 257, 1000];
    let mut cases = Vec::new();
    for (i, &s) in lens.iter().enumerate() {
        for dtype in [Dtype::Float16, Dtype::Bfloat16] {
            let d = if i % 2 == 0 { 64 } else { 128 };
            cases.push(ShapeParams::new(
                1 + (i as u32 % 2),
                1 + (i as u32 % 3),
                s,
                d,
                i % 3 != 1,
                dtype,
            ));
        }
    }
    // Grids large enough for each kernel form of kernels/README.md ("Small grids, long
    // sequences"): on an H100 or H200 the d64 main kernel ([4,16,513]: 576 CTAs of 64 rows;
    // non-causal, the even split), its short form ([6,8,513] non-causal: 432 CTAs of one
    // 64-row unit), its long-sequence forms (seq_len >= 1536, odd tails: causal launches take
    // `_long`, non-causal ones `_long_noncausal`), and the d128 kernel on a grid of more CTAs
    // than SMs. The cases above all have small grids.
    cases.push(ShapeParams::new(4, 16, 513, 64, false, Dtype::Float16));
    cases.push(ShapeParams::new(6, 8, 513, 64, false, Dtype::Bfloat16));
    cases.push(ShapeParams::new(2, 8, 1537, 64, true, Dtype::Bfloat16));
    cases.push(ShapeParams::new(2, 8, 1537, 64, false, Dtype::Float16));
    cases.push(ShapeParams::new(1, 4, 2113, 64, false, Dtype::Bfloat16));
    cases.push(ShapeParams::new(2, 40, 300, 128, true, Dtype::Float16));
    // Head dims only the references take (1..=256): the fast kernels are skipped there.
    for (i, d) in [1u32, 40, 96, 256].into_iter().enumerate() {
        cases.push(ShapeParams::new(
            1,
            2,
            33 + 31 * i as u32,
            d,
            i % 2 == 0,
            Dtype::Bfloat16,
        ));
    }
    for shape in cases {
        let n = shape.elements();
        let (q, k, v) = (
            random_bits(&mut rng, shape.dtype, n),
            random_bits(&mut rng, shape.dtype, n),
            random_bits(&mut rng, shape.dtype, n),
        );
        let want = cpu_attention(&shape, &q, &k, &v);
        let bound = fast_bound(shape.dtype);
        if matches!(shape.head_dim, 64 | 128) {
            let fast = attention_on_host(&gpu, Which::Fast, &shape, &q, &k, &v).unwrap();
            check(&format!("{shape} fast"), &fast, &want, bound);
            let again = attention_on_host(&gpu, Which::Fast, &shape, &q, &k, &v).unwrap();
            assert!(
                fast.iter()
                    .zip(&again)
                    .all(|(a, b)| a.to_bits() == b.to_bits()),
                "{shape}: two runs on the same inputs differ (a race?)"
            );
        }
        let reference = attention_on_host(&gpu, Which::Reference, &shape, &q, &k, &v).unwrap();
        check(&format!("{shape} reference"), &reference, &want, 1e-5);
        let tiled = attention_on_host(&gpu, Which::TiledReference, &shape, &q, &k, &v).unwrap();
        check(&format!("{shape} tiled reference"), &tiled, &want, 1e-5);
    }
}

/// Rows whose scores are all negative in some of their K/V tiles and not in others: in the
/// first half of each head's keys every key element is <= -0 and, in even heads, every query
/// element >= +0 (so q·k <= 0 there); the rest random. A kernel may take a tile's row maxima
/// from the scores' bits compared as integers, which is the float maximum only where the
/// tile holds a score >= +0 (bench/variants/im3.patch), and must fall back on the other
/// tiles; the causal shapes add masked keys (-inf) among them.
#[test]
#[ignore = "needs a CUDA GPU"]
fn kernels_are_right_where_a_tile_has_no_positive_score() {
    let gpu = gpu();
    let mut rng = ChaCha8Rng::seed_from_u64(13);
    let cases = [
        ShapeParams::new(4, 16, 512, 64, false, Dtype::Float16),
        ShapeParams::new(4, 16, 513, 64, true, Dtype::Float16),
        ShapeParams::new(1, 8, 200, 64, true, Dtype::Bfloat16),
        ShapeParams::new(2, 8, 1537, 64, false, Dtype::Bfloat16),
        ShapeParams::new(2, 4, 300, 128, true, Dtype::Float16),
        ShapeParams::new(1, 4, 1100, 128, false, Dtype::Float16),
    ];
    for shape in cases {
        let n = shape.elements();
        let (s, d) = (shape.seq_len as usize, shape.head_dim as usize);
        let mut q = random_bits(&mut rng, shape.dtype, n);
        let mut k = random_bits(&mut rng, shape.dtype, n);
        let v = random_bits(&mut rng, shape.dtype, n);
        for (bh, (qh, kh)) in q.chunks_mut(s * d).zip(k.chunks_mut(s * d)).enumerate() {
            if bh % 2 == 0 {
                qh.iter_mut().for_each(|x| *x &= 0x7fff);
            }
            kh[..(s / 2) * d].iter_mut().for_each(|x| *x |= 0x8000);
        }
        let want = cpu_attention(&shape, &q, &k, &v);
        let bound = fast_bound(shape.dtype);
        let fast = attention_on_host(&gpu, Which::Fast, &shape, &q, &k, &v).unwrap();
        check(
            &format!("{shape} fast, no positive score"),
            &fast,
            &want,
            bound,
        );
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn parity_and_measurement_of_a_pr_shape() {
    let gpu = gpu();
    let tol = Tolerance {
        max_abs: 1e-2,
        rel_l2: 1e-3,
        centered: None,
    };
    // A larger shape, then smaller ones (parity shares its reference between checks of one
    // shape, and nothing of a larger shape's may leak into a smaller one's).
    for (seq_len, causal) in [(1024, false), (512, false), (512, true), (77, true)] {
        let shape = ShapeParams::new(2, 8, seq_len, 64, causal, Dtype::Float16);
        let kernel = gpu.kernels.attention(&shape).unwrap();
        let p = check_parity(&gpu, kernel, "candidate", &shape, tol, 11, None).unwrap();
        assert!(p.passed(), "{shape}: {p:?}");
    }
    let shape = ShapeParams::new(2, 8, 512, 64, false, Dtype::Float16);
    let settings = MeasureSettings {
        cache: CacheMode::Hot,
        ..MeasureSettings::default()
    };
    let bench = Bench {
        gpu: &gpu,
        shape: &shape,
        settings: &settings,
        tolerance: tol,
    };
    let m = measure(&bench, 4, None, 3).unwrap();
    assert_eq!(m.rounds.len(), 4);
    // Every launch of every replay wrote its own output, checked against the reference: the
    // samples and each round's first replay (checked and charged, though not a sample).
    assert_eq!(
        m.checked_launches,
        4 * u64::from(settings.samples_per_round + 1) * u64::from(m.launches_per_sample)
    );
    let worst = m
        .worst_timed
        .clone()
        .expect("the timed outputs were checked");
    assert!(worst.passed(), "{worst:?}");
    assert!(
        m.rounds
            .iter()
            .all(|r| r.len() == settings.samples_per_round as usize)
    );
    assert!(
        m.rounds.iter().flatten().all(|&x| x > 0.5 && x < 10_000.0),
        "{:?}",
        m.rounds
    );
    assert!(m.launches_per_sample > 1);
    let mut addrs = m.round_addresses.clone();
    addrs.sort();
    addrs.dedup();
    assert!(
        addrs.len() > 1,
        "rounds reused one address: {:?}",
        m.round_addresses
    );
    let cold = MeasureSettings {
        cache: CacheMode::Cold,
        ..settings
    };
    let c = measure(
        &Bench {
            settings: &cold,
            ..bench
        },
        2,
        None,
        3,
    )
    .unwrap();
    assert!(
        c.working_set_bytes > 2 * gpu.info.l2_bytes,
        "cold working set {} vs L2 {}",
        c.working_set_bytes,
        gpu.info.l2_bytes
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_shape_too_large_for_the_grid_is_a_clear_error() {
    let gpu = gpu();
    let shape = ShapeParams::new(65_536, 2, 1, 64, false, Dtype::Float16);
    let kernel = gpu.kernels.attention(&shape).unwrap();
    let e = check_parity(
        &gpu,
        kernel,
        "candidate",
        &shape,
        Tolerance {
            max_abs: 1.0,
            rel_l2: 1.0,
            centered: None,
        },
        1,
        None,
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("b65536h2s1d64_f16") && e.contains("65535"),
        "{e}"
    );
}

/// The harness with the shipped kernels, and the same kernels loaded again: one kernel as
/// both sides of an A/B.
fn one_kernel_twice() -> (Gpu, AttentionSet) {
    let gpu = gpu();
    let other = gpu
        .load_attention(&Path::new(env!("CARGO_MANIFEST_DIR")).join("kernels"))
        .unwrap();
    assert_eq!(other.source_hash, gpu.kernel_source_hash);
    (gpu, other)
}

/// A bench of `shape` (fp16 tolerances).
fn bench<'a>(gpu: &'a Gpu, shape: &'a ShapeParams, settings: &'a MeasureSettings) -> Bench<'a> {
    Bench {
        gpu,
        shape,
        settings,
        tolerance: Tolerance {
            max_abs: 1e-2,
            rel_l2: 1e-3,
            centered: None,
        },
    }
}

/// Both sides' witnesses (ci_gate::witness), base first.
fn witnesses(sides: &[AbSide<'_>; 2]) -> [SideWitness; 2] {
    [&sides[0].m, &sides[1].m].map(witness_of)
}

/// What a measurement's samples record of the host's clock (ci_gate::witness).
fn witness_of(m: &ci_gate::backend::Measurement) -> SideWitness {
    SideWitness::of(
        &m.rounds,
        &m.unwitnessed_us,
        &m.after_end_us,
        &m.after_checks_us,
        m.launches_per_sample,
    )
    .unwrap()
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn ab_pairs_of_one_kernel_agree() {
    // The same kernel loaded twice, as base and candidate: A/A pairs in random order.
    let (gpu, other) = one_kernel_twice();
    let shape = ShapeParams::new(2, 8, 512, 64, false, Dtype::Float16);
    let settings = MeasureSettings::default();
    let mut sides = [
        AbSide::new(gpu.kernels.attention(&shape).unwrap(), None, "base"),
        AbSide::new(other.get(&shape).unwrap(), None, "candidate"),
    ];
    let mut coin = ChaCha8Rng::seed_from_u64(5);
    let (mut held, mut orders) = (Held::default(), Vec::new());
    let bench = bench(&gpu, &shape, &settings);
    measure_pairs(&bench, &mut sides, &mut coin, 9, &mut held, &mut orders, 10).unwrap();
    assert_eq!(orders.len(), 10);
    assert!(orders.contains(&PairOrder::BaseFirst) && orders.contains(&PairOrder::CandFirst));
    assert_eq!(sides[0].m.rounds.len(), 10);
    assert_eq!(
        sides[0].m.launches_per_sample,
        sides[1].m.launches_per_sample
    );
    let base = Rounds::new(sides[0].m.rounds.clone()).unwrap();
    let cand = Rounds::new(sides[1].m.rounds.clone()).unwrap();
    let t = paired_margin_test(&base, &cand, 0.02).unwrap();
    assert!((t.ratio() - 1.0).abs() < 0.01, "{t:?}");
    assert!(t.p_slower > 0.05 && t.p_faster > 0.05, "{t:?}");
    // The host's clock witnessed every sample of both sides (ci_gate::witness): a positive
    // unwitnessed time per sample (the lead-in spin alone is ~50 µs), the same for the two
    // sides up to the judged limit, and no judgement.
    for side in &sides {
        let u = &side.m.unwitnessed_us;
        assert!(
            u.iter().flatten().all(|&u| u > 0.0 && u < 10_000.0),
            "{u:?}"
        );
        // The wait for the checks less their own time by events: the host's wake-ups. A
        // sample's share of it moves with the moment the host woke for the end event (one
        // that woke ~1.3 ms late, after the checks had run, read -1,272 µs here, its
        // unwitnessed time as much longer: an H100, 2026-12-05); the sum of the two, what the
        // witness takes through the checks, does not. Each round's median stays small.
        let a = &side.m.after_end_us;
        for (round_u, round_a) in u.iter().zip(a) {
            assert_eq!(round_u.len(), round_a.len(), "{a:?}");
            assert!(
                round_u
                    .iter()
                    .zip(round_a)
                    .all(|(u, a)| u + a > 0.0 && u + a < 10_000.0),
                "{u:?} {a:?}"
            );
            let mut sorted = round_a.clone();
            sorted.sort_by(f64::total_cmp);
            let median = sorted.get(sorted.len() / 2);
            assert!(median.is_some_and(|m| m.abs() < 1_000.0), "{a:?}");
        }
    }
    let [b, c] = witnesses(&sides);
    let u = record(&c, Some(&b), None);
    eprintln!("unwitnessed µs per sample: base {b:?}, candidate {c:?}; recorded {u:?}");
    assert_eq!((b.samples, c.samples, u.units), (100, 100, 10));
    assert!((b.unwitnessed_us - c.unwitnessed_us).abs() < limit_us(b.sample_us));
    assert!(u.shift_us.is_some_and(|s| s.abs() < u.limit_us), "{u:?}");
    // Through the checks, their own time taken out, the sides agree as closely as up to the
    // end event (with the checks' time in it they differed by up to 13.6 µs on an H100).
    assert!(
        u.through_checks_shift_us
            .is_some_and(|s| s.abs() < u.limit_us),
        "{u:?}"
    );
    assert_eq!(judge_recorded(&u), None);
}

/// The witness on the GPU (ci_gate::witness): one kernel as both sides, the candidate's
/// lead-in spin lengthened by 200,000 cycles (~100 µs) before each of its samples, which is
/// what a start record moved later looks like to the host (time it saw that the events did
/// not). Its samples are judged and it is named; with equal lead-ins, neither is. Through
/// the checks (their own time by events taken out) the shift is the same as up to the end.
#[test]
#[ignore = "needs a CUDA GPU"]
fn time_the_events_did_not_see_on_one_side_is_judged() {
    let (gpu, other) = one_kernel_twice();
    let shape = ShapeParams::new(4, 16, 2048, 64, true, Dtype::Float16);
    let settings = MeasureSettings::default();
    let bench = bench(&gpu, &shape, &settings);
    let mut witnessed = Vec::new();
    for extra in [0, 200_000] {
        let mut sides = [
            AbSide::new(gpu.kernels.attention(&shape).unwrap(), None, "base"),
            AbSide::new(other.get(&shape).unwrap(), None, "candidate"),
        ];
        sides[1].lead_in_cycles = LEAD_CYCLES + extra;
        let mut coin = ChaCha8Rng::seed_from_u64(7);
        let (mut held, mut orders) = (Held::default(), Vec::new());
        measure_pairs(&bench, &mut sides, &mut coin, 9, &mut held, &mut orders, 5).unwrap();
        let [b, c] = witnesses(&sides);
        let u = record(&c, Some(&b), None);
        eprintln!(
            "lead-in +{extra} cycles on the candidate: base {b:?}, candidate {c:?}; recorded {u:?}"
        );
        // What the events did not see is seen through the checks too, as much of it.
        let (lead, through) = (u.shift_us.unwrap(), u.through_checks_shift_us.unwrap());
        assert!((lead - through).abs() < u.limit_us, "{u:?}");
        witnessed.push(judge_recorded(&u));
    }
    assert_eq!(witnessed[0], None);
    let why = witnessed[1].clone().expect("judged");
    assert!(
        why.contains("more of the candidate's timed samples"),
        "{why}"
    );
}

/// The witness of a side alone on the GPU (ci_gate::witness): one kernel measured round by
/// round, the harness's control (`Control::round`) sampled right after each round, as a run
/// without a base does (`run::shape`). With the kernel's own lead-in its shift against the
/// control is not judged; with its lead-in lengthened by 200,000 cycles (~100 µs: a start
/// record moved later, which moves the span through the checks alike) it is judged, the
/// candidate named.
#[test]
#[ignore = "needs a CUDA GPU"]
fn a_side_alone_is_judged_against_the_control_beside_each_round() {
    use ci_gate::backend::Measurement;
    use ci_gate::witness::CONTROL_SAMPLES_PER_ROUND;
    let gpu = gpu();
    let shape = ShapeParams::new(4, 16, 2048, 64, true, Dtype::Float16);
    let settings = MeasureSettings::default();
    let bench = bench(&gpu, &shape, &settings);
    let mut judged = Vec::new();
    for extra in [0, 200_000] {
        let mut side = AbSide::new(gpu.kernels.attention(&shape).unwrap(), None, "candidate");
        side.lead_in_cycles = LEAD_CYCLES + extra;
        let (mut held, mut control) = (Held::default(), Measurement::empty());
        let spin = Control::new(&gpu, &settings).unwrap();
        for _ in 0..8 {
            extend(&bench, &mut side, 11, &mut held, 1).unwrap();
            control.push(
                spin.round(&gpu, CONTROL_DUTY_CYCLE, CONTROL_SAMPLES_PER_ROUND)
                    .unwrap(),
            );
        }
        let (c, k) = (witness_of(&side.m), witness_of(&control));
        let u = record(&c, None, Some(&k));
        eprintln!("lead-in +{extra} cycles, alone: candidate {c:?}, control {k:?}; recorded {u:?}");
        assert_eq!((u.units, k.samples), (8, 8 * CONTROL_SAMPLES_PER_ROUND));
        // The control's span through its work after the end event, beside the side's
        // through its checks: what confirms the first test.
        assert!(
            u.through_checks_shift_us.is_some() && u.control_through_checks_us.is_some(),
            "{u:?}"
        );
        judged.push(judge_recorded(&u));
    }
    assert_eq!(judged[0], None);
    let why = judged[1].clone().expect("judged");
    assert!(
        why.contains("more of the candidate's timed samples than their events did, against the harness's own spin"),
        "{why}"
    );
}

/// The witness's control sampled without the duty cycle's idle time
/// (`CONTROL_DUTY_CYCLE`): after each of 8 rounds of a kernel alone, the control at the
/// kernel's 25% duty cycle (as the gate sampled it until 2026-12-05) and at 100%, in turns
/// (which comes first alternates), on a short and a long kernel. The side's shift against
/// each is printed with what each control cost; the two shifts must agree within the limit
/// (a cheaper control that reads elsewhere would move every side alone's judgement), and
/// neither is judged as a run judges it (`judge_recorded`: within what a side alone is
/// allowed, or a shift up to the end event that the span through the checks does not
/// confirm).
#[test]
#[ignore = "needs a CUDA GPU"]
fn the_control_reads_the_same_without_the_duty_cycles_idle_time() {
    use ci_gate::backend::Measurement;
    use ci_gate::witness::CONTROL_SAMPLES_PER_ROUND;
    let gpu = gpu();
    let settings = MeasureSettings::default();
    let spin = Control::new(&gpu, &settings).unwrap();
    for shape in [
        ShapeParams::new(4, 16, 512, 64, false, Dtype::Float16),
        ShapeParams::new(2, 16, 4096, 128, false, Dtype::Float16),
    ] {
        let bench = bench(&gpu, &shape, &settings);
        let mut side = AbSide::new(gpu.kernels.attention(&shape).unwrap(), None, "candidate");
        let mut held = Held::default();
        let (mut duty, mut idle_free) = (Measurement::empty(), Measurement::empty());
        let (mut duty_s, mut idle_free_s) = (0.0, 0.0);
        for round in 0..8 {
            extend(&bench, &mut side, 11 + round, &mut held, 1).unwrap();
            for first in [round % 2 == 0, round % 2 == 1] {
                let (d, into, wall) = if first {
                    (settings.duty_cycle, &mut duty, &mut duty_s)
                } else {
                    (CONTROL_DUTY_CYCLE, &mut idle_free, &mut idle_free_s)
                };
                let r = spin.round(&gpu, d, CONTROL_SAMPLES_PER_ROUND).unwrap();
                *wall += r.wall_s;
                into.push(r);
            }
        }
        let c = witness_of(&side.m);
        let (a, b) = (
            record(&c, None, Some(&witness_of(&duty))),
            record(&c, None, Some(&witness_of(&idle_free))),
        );
        eprintln!(
            "{}: control at {:.0}% duty {:.1} µs (shift {:?}, through the checks {:?}, {duty_s:.3} s), at {:.0}% {:.1} µs (shift {:?}, through the checks {:?}, {idle_free_s:.3} s); limit {:.1}",
            shape.name(),
            100.0 * settings.duty_cycle,
            a.control_us.unwrap_or(f64::NAN),
            a.shift_us,
            a.through_checks_shift_us,
            100.0 * CONTROL_DUTY_CYCLE,
            b.control_us.unwrap_or(f64::NAN),
            b.shift_us,
            b.through_checks_shift_us,
            a.limit_us,
        );
        // Round by round, what the shifts are taken over (a failure names which rounds moved).
        let medians = |w: &SideWitness| -> Vec<String> {
            let r = w.rounds.iter();
            r.map(|r| r.unwitnessed_us.map_or("-".into(), |u| format!("{u:.1}")))
                .collect()
        };
        eprintln!(
            "  rounds' medians: side {:?}; control at {:.0}% {:?}; at {:.0}% {:?}",
            medians(&c),
            100.0 * settings.duty_cycle,
            medians(&witness_of(&duty)),
            100.0 * CONTROL_DUTY_CYCLE,
            medians(&witness_of(&idle_free)),
        );
        let (sa, sb) = (a.shift_us.unwrap(), b.shift_us.unwrap());
        assert!((sa - sb).abs() <= a.limit_us, "{a:?} {b:?}");
        // Judged as a run judges it: within what a side alone is allowed, or a shift up to
        // the end event that the span through the checks does not confirm (the host's late
        // wake-ups at the end event: docs/PERF.md, thirty-eighth session, call 1).
        for u in [&a, &b] {
            assert!(u.control_through_checks_us.is_some(), "{u:?}");
            assert_eq!(judge_recorded(u), None, "{a:?} {b:?}");
        }
    }
}

/// Which step of a kernel's sample the control lacks: in every run without a base the
/// candidate's unwitnessed time lay 0.9–8.2 µs above the control's (73 shape-runs on H100s
/// and H200s, 2026-12-05, the same at a steady 1,980 MHz as where the clock dipped), where the
/// two kernels of an A/B differ by −1.6 … +1.0 µs (96): the offset is in how the control
/// samples, not the clock its lead-in spins at. After each of 8 rounds of a kernel alone the
/// control is sampled as a run samples it (1 ms of work queued after the end event, as a
/// kernel's checks: `ControlMimic::RUN`) and with each further step a kernel's sample has
/// outside the events' span ([`ControlMimic`]): the graph uploaded and the clock read before
/// the wait for an idle GPU; 64 MiB zeroed before (a kernel's inputs and poison); both; and a
/// graph of 150 spins where the run's has 20 (a short kernel's launches a sample); in turns,
/// the order rotating each round. Each control's shifts (up to the end event and through the
/// checks) are printed with its cost; none may be judged as a run judges it (each is an
/// honest control).
#[test]
#[ignore = "needs a CUDA GPU"]
fn which_step_of_a_kernels_sample_the_control_lacks() {
    use ci_gate::backend::Measurement;
    use ci_gate::gpu::measure::ControlMimic;
    use ci_gate::witness::CONTROL_SAMPLES_PER_ROUND;
    let gpu = gpu();
    let settings = MeasureSettings::default();
    let run = ControlMimic::RUN;
    let before = ControlMimic {
        upload: true,
        read_clock: true,
        ..run
    };
    let written = ControlMimic {
        before_bytes: 64 << 20,
        ..run
    };
    let all = ControlMimic {
        before_bytes: written.before_bytes,
        ..before
    };
    // (name, the control's spins a sample, what it mimics)
    let mimics = [
        ("as a run (1 ms after the end)", 20, run),
        ("upload and clock before", 20, before),
        ("64 MiB written before", 20, written),
        ("all three", 20, all),
        ("150 spins a sample", 150, run),
    ];
    let spins: Vec<Control> = mimics
        .iter()
        .map(|m| Control::with_launches(&gpu, &settings, m.1).unwrap())
        .collect();
    for shape in [
        ShapeParams::new(4, 16, 512, 64, false, Dtype::Float16),
        ShapeParams::new(2, 16, 4096, 128, false, Dtype::Float16),
    ] {
        let bench = bench(&gpu, &shape, &settings);
        let mut side = AbSide::new(gpu.kernels.attention(&shape).unwrap(), None, "candidate");
        let mut held = Held::default();
        let mut controls: Vec<(Measurement, f64)> =
            mimics.iter().map(|_| (Measurement::empty(), 0.0)).collect();
        for round in 0..8 {
            extend(&bench, &mut side, 11 + round, &mut held, 1).unwrap();
            for i in 0..mimics.len() {
                let which = (i + round as usize) % mimics.len();
                let r = spins[which]
                    .round_mimicking(
                        &gpu,
                        CONTROL_DUTY_CYCLE,
                        CONTROL_SAMPLES_PER_ROUND,
                        mimics[which].2,
                    )
                    .unwrap();
                controls[which].1 += r.wall_s;
                controls[which].0.push(r);
            }
        }
        let c = witness_of(&side.m);
        for ((name, _, _), (m, wall_s)) in mimics.iter().zip(&controls) {
            let u = record(&c, None, Some(&witness_of(m)));
            eprintln!(
                "{}: control {name}: {:.1} µs, candidate {:.1} µs, shift {:?}, through the checks {:?} ({wall_s:.3} s); limit {:.1}",
                shape.name(),
                u.control_us.unwrap_or(f64::NAN),
                u.candidate_us,
                u.shift_us,
                u.through_checks_shift_us,
                u.limit_us,
            );
            assert_eq!(judge_recorded(&u), None, "{name}: {u:?}");
        }
    }
}

/// Issue 23 on the GPU: every kernel a shape launches has its compiler resources with the
/// driver's CTAs per SM for its launch, its spills believed (the shipped source writes nothing
/// into the log) and no note (the driver's register count agrees with the module's).
#[test]
#[ignore = "needs a CUDA GPU"]
fn launched_kernels_have_their_compiler_resources_and_occupancy() {
    let gpu = gpu();
    let shape = |seq_len: u32, head_dim: u32, dtype: Dtype| ShapeParams {
        batch: 1,
        heads: 8,
        seq_len,
        head_dim,
        causal: false,
        dtype,
    };
    let shapes = [
        shape(512, 64, Dtype::Float16),
        shape(4096, 64, Dtype::Float16),
        shape(2048, 128, Dtype::Bfloat16),
    ];
    let all = gpu
        .kernels
        .attention
        .kernel_resources(ci_gate::resources::ResourceSide::Candidate, &shapes);
    assert!(!all.is_empty());
    for s in &shapes {
        let kernel = gpu.kernels.attention(s).unwrap();
        let r = all
            .iter()
            .find(|r| r.kernel == kernel.name)
            .unwrap_or_else(|| panic!("{} missing in {all:?}", kernel.name));
        assert_eq!(r.threads_per_block, kernel.threads, "{r:?}");
        assert_eq!(r.dynamic_smem_bytes, u64::from(kernel.smem_bytes), "{r:?}");
        assert!(r.registers > 0 && r.registers <= 255, "{r:?}");
        assert!(r.max_ctas_per_sm.is_some_and(|n| n >= 1), "{r:?}");
        assert_eq!(
            (r.spill_store_bytes, r.spill_load_bytes, r.stack_frame_bytes),
            (Some(0), Some(0), 0),
            "the shipped kernels do not spill: {r:?}"
        );
        assert_eq!(r.note, None, "{r:?}");
    }
}

/// Every timed launch computes a function of its own (gpu::integrity::LaunchSecrets): each
/// launch's q differs from every other's and changes with every refill, each has its own
/// scale, and the reference computed for each launch from the regenerated q (never read from
/// the pool) agrees with float64 on the host computed from the pool the kernel reads.
#[test]
#[ignore = "needs a CUDA GPU"]
fn every_launch_has_its_own_q_and_scale_and_its_own_reference() {
    use ci_gate::gpu::integrity::{KvRefs, LaunchSecrets, ROWS_PER_LAUNCH};
    let gpu = gpu();
    for shape in [
        ShapeParams::new(1, 3, 77, 64, true, Dtype::Float16),
        ShapeParams::new(2, 2, 130, 128, false, Dtype::Bfloat16),
    ] {
        let launches = 5u32;
        let mut rng = ChaCha8Rng::seed_from_u64(9);
        let mut kv = KvRefs::new(&gpu, &shape, vec![21, 22], gpu.run_key).unwrap();
        let mut secrets = LaunchSecrets::new(&gpu, &shape, launches, &mut rng).unwrap();
        // As after a replay: the reference's K and V filled for the replay's K/V key.
        kv.fill_for(&gpu, secrets.kv_key()).unwrap();
        secrets.reference(&gpu, &kv).unwrap();
        let first = secrets.inspect(&gpu).unwrap();
        let (k, v) = kv.host_kv(&gpu).unwrap();
        secrets.refill(&gpu).unwrap();
        kv.fill_for(&gpu, secrets.kv_key()).unwrap();
        secrets.reference(&gpu, &kv).unwrap();
        let second = secrets.inspect(&gpu).unwrap();
        let (k2, v2) = kv.host_kv(&gpu).unwrap();
        assert_ne!(k, k2, "{shape}: K is new for every replay");
        let n = first.n;
        assert_eq!(n, shape.elements());
        let slice = |x: &[u16], i: usize| x[i * n..(i + 1) * n].to_vec();
        for i in 0..launches as usize {
            for j in 0..i {
                assert_ne!(
                    slice(&first.pool, i),
                    slice(&first.pool, j),
                    "{shape}: q {i} = q {j}"
                );
            }
            assert_ne!(
                slice(&first.pool, i),
                slice(&second.pool, i),
                "{shape}: refill"
            );
        }
        let base = 1.0 / (shape.head_dim as f32).sqrt();
        assert!(
            first
                .scales
                .iter()
                .all(|s| *s >= 0.79 * base && *s <= 1.26 * base)
        );
        assert!(first.scales.windows(2).any(|w| w[0] != w[1]));
        let heads = (shape.batch * shape.heads) as usize;
        let d = shape.head_dim as usize;
        for (snap, k, v) in [(&first, &k, &v), (&second, &k2, &v2)] {
            let mut worst = 0.0f64;
            for i in 0..launches as usize {
                let set = i % 2;
                let q = decode(shape.dtype, &slice(&snap.pool, i));
                let kk = decode(shape.dtype, &k[set * n..(set + 1) * n]);
                let vv = decode(shape.dtype, &v[set * n..(set + 1) * n]);
                // The input mixture: V may have a mean of 10 and a spread of 30, so the
                // reference's error is measured in each slice's largest |v|.
                let slice_scale = |h: usize| {
                    let len = shape.seq_len as usize * d;
                    vv[h * len..(h + 1) * len]
                        .iter()
                        .fold(1.0f64, |m, x| m.max(x.abs()))
                };
                let want = attention(
                    &q,
                    &kk,
                    &vv,
                    Problem {
                        batch_heads: heads,
                        seq_len: shape.seq_len as usize,
                        head_dim: d,
                        scale: f64::from(snap.scales[i]),
                        causal: shape.causal,
                    },
                );
                let rows = &snap.rows[i * ROWS_PER_LAUNCH..(i + 1) * ROWS_PER_LAUNCH];
                assert_eq!(
                    rows[0],
                    shape.seq_len as i32 - 1,
                    "the last row is always compared"
                );
                assert!(
                    rows[1] % 64 == 0 || rows[1] % 64 == 63 || rows[1] == shape.seq_len as i32 - 1,
                    "the second row is at a tile edge: {}",
                    rows[1]
                );
                for h in 0..heads {
                    let scale = slice_scale(h);
                    for (t, &row) in rows.iter().enumerate() {
                        for c in 0..d {
                            let got = snap.refs[((i * heads + h) * ROWS_PER_LAUNCH + t) * d + c];
                            let w = want[(h * shape.seq_len as usize + row as usize) * d + c];
                            worst = worst.max((f64::from(got) - w).abs() / scale);
                        }
                    }
                }
            }
            assert!(
                worst < 1e-4,
                "{shape}: the per-launch reference is off by {worst}"
            );
        }
    }
}

/// The device fills every input from the documented mixture (kernels/util.cu), value for
/// value what the host's mirror (gpu::mixture, pinned to bench/mixture_study.py by
/// tests/vectors/mixture.json) computes, up to the dtype's rounding: the classes, their
/// parameters and the element layout agree on every slice.
#[test]
#[ignore = "needs a CUDA GPU"]
fn the_input_mixture_on_the_device_is_the_documented_one() {
    use ci_gate::gpu::mixture::{self, Role};
    use ci_gate::gpu::parity::mixture_on_device;
    let gpu = gpu();
    for (shape, seed) in [
        (
            ShapeParams::new(2, 16, 256, 64, true, Dtype::Float16),
            11u64,
        ),
        (ShapeParams::new(1, 24, 77, 128, false, Dtype::Bfloat16), 12),
        (ShapeParams::new(4, 8, 512, 64, false, Dtype::Float16), 13),
    ] {
        for role in [Role::Q, Role::K, Role::V] {
            let bits = mixture_on_device(&gpu, &shape, role, seed).unwrap();
            let got = decode(shape.dtype, &bits);
            let key = mixture::fill_key(seed);
            let half_ulp = match shape.dtype {
                Dtype::Float16 => 2f64.powi(-11),
                Dtype::Bfloat16 => 2f64.powi(-8),
            };
            let mut off = 0usize;
            for (i, g) in got.iter().enumerate() {
                let want = f64::from(mixture::value(
                    key,
                    role,
                    i as u64,
                    shape.seq_len,
                    shape.head_dim,
                ));
                // The dtype's rounding, and the last bit of logf/cosf (which may move a value
                // across a rounding boundary: one ulp).
                if (g - want).abs() > want.abs() * half_ulp * 2.0 + 6.2e-5 {
                    off += 1;
                    assert!(
                        off < 4,
                        "{shape} {role:?} element {i}: device {g}, host {want}"
                    );
                }
            }
        }
    }
}

/// The shipped kernel on every class of the input mixture: for each (batch, head) slice its
/// error against float64 on the host, as the gate measures it (max |out - ref| / s_V, the
/// relative L2 error and the centered error against uniform attention), within the config's
/// tolerance; the worst per class is printed (for docs/PERF.md).
#[test]
#[ignore = "needs a CUDA GPU"]
fn the_shipped_kernel_is_right_on_every_input_class() {
    use ci_gate::gpu::mixture::{self, Role};
    use ci_gate::gpu::parity::mixture_on_device;
    let gpu = gpu();
    let mut worst: std::collections::BTreeMap<String, (f64, f64, f64)> = Default::default();
    for (shape, seeds) in [
        (
            ShapeParams::new(2, 16, 512, 64, true, Dtype::Float16),
            0..4u64,
        ),
        (
            ShapeParams::new(1, 16, 1024, 64, false, Dtype::Float16),
            4..6,
        ),
        (
            ShapeParams::new(1, 16, 640, 128, true, Dtype::Float16),
            6..8,
        ),
        (
            ShapeParams::new(1, 16, 512, 128, true, Dtype::Bfloat16),
            8..12,
        ),
    ] {
        let tol = ci_gate::config::ParitySettings::default().tolerance(shape.dtype);
        for seed in seeds {
            let fill = |role: Role, salt: u64| {
                let s = seed.wrapping_mul(0x9e37_79b9).wrapping_add(salt);
                (s, mixture_on_device(&gpu, &shape, role, s).unwrap())
            };
            let ((qs, q), (ks, k), (vs, v)) =
                (fill(Role::Q, 1), fill(Role::K, 2), fill(Role::V, 3));
            let out = attention_on_host(&gpu, Which::Fast, &shape, &q, &k, &v).unwrap();
            let heads = (shape.batch * shape.heads) as usize;
            let (s, d) = (shape.seq_len as usize, shape.head_dim as usize);
            let want = cpu_attention(&shape, &q, &k, &v);
            for h in 0..heads {
                let class = |role: Role, seed: u64| {
                    let key = mixture::fill_key(seed);
                    mixture::class(role, mixture::head_hash(key, role, h as u64))
                };
                let name = format!(
                    "{} {}/{}/{}",
                    shape.dtype,
                    mixture::Q_CLASSES[class(Role::Q, qs)],
                    mixture::K_CLASSES[class(Role::K, ks)],
                    mixture::V_CLASSES[class(Role::V, vs)]
                );
                let s_v = f64::from(mixture::v_scale(mixture::fill_key(vs), h as u64));
                let range = h * s * d..(h + 1) * s * d;
                let got: Vec<f64> = out[range.clone()].iter().map(|x| f64::from(*x)).collect();
                let (max_abs, rel) = errors(&got, &want[range.clone()]);
                let max_abs = max_abs / s_v;
                // The centered error: over the rows that see enough keys, against uniform
                // attention on this slice's V (as rounded to the dtype).
                let v_slice: Vec<f32> = decode(shape.dtype, &v[range.clone()])
                    .iter()
                    .map(|&x| x as f32)
                    .collect();
                let unif = ci_gate::reference::uniform_attention(&v_slice, s, d, shape.causal);
                let (mut err2, mut signal2) = (0f64, 0f64);
                for ((g, w), u) in got.iter().zip(&want[range]).zip(&unif) {
                    if u.is_finite() {
                        err2 += (g - w).powi(2);
                        signal2 += (w - f64::from(*u)).powi(2);
                    }
                }
                let centered = if signal2 > 0.0 {
                    (err2 / signal2).sqrt()
                } else {
                    0.0
                };
                assert!(
                    max_abs <= tol.max_abs
                        && rel <= tol.rel_l2
                        && centered <= tol.centered.unwrap(),
                    "{shape} slice {h} ({name}): max abs/s_V {max_abs:.2e}, rel L2 {rel:.2e}, centered {centered:.2e} over {tol:?}"
                );
                let e = worst.entry(name).or_default();
                *e = (e.0.max(max_abs), e.1.max(rel), e.2.max(centered));
            }
        }
    }
    println!("class (dtype q/k/v): worst max abs/s_V, worst rel L2, worst centered L2");
    for (name, (m, r, c)) in &worst {
        println!("{name}: {m:.2e} {r:.2e} {c:.2e}");
    }
}
