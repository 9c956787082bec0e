//! The shipped configs load, and hold what the PR gate promises.

use std::path::Path;

use ci_gate::config::{Config, Dtype};

fn load(name: &str) -> Config {
    Config::load(
        &Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("configs")
            .join(name),
    )
    .unwrap()
}

#[test]
fn pr_config_has_the_promised_shapes() {
    let c = load("pr.yaml");
    assert_eq!(c.name, "pr");
    let has = |b, h, s, d, causal, dtype| {
        c.shapes.iter().any(|x| {
            (x.batch, x.heads, x.seq_len, x.head_dim, x.causal, x.dtype)
                == (b, h, s, d, causal, dtype)
        })
    };
    for causal in [false, true] {
        for (b, h) in [(1, 8), (2, 8), (4, 16), (8, 16)] {
            assert!(
                has(b, h, 512, 64, causal, Dtype::Float16),
                "b{b}h{h} causal={causal}"
            );
        }
        assert!(has(4, 16, 2048, 64, causal, Dtype::Float16));
        assert!(has(2, 16, 4096, 128, causal, Dtype::Float16));
    }
    assert!(c.shapes.iter().any(|s| s.dtype == Dtype::Bfloat16));
    assert_eq!(c.gate.max_p50_regression, 0.02);
}

#[test]
fn nightly_config_is_wider() {
    let pr = load("pr.yaml");
    let n = load("nightly.yaml");
    assert!(n.shapes.len() > 3 * pr.shapes.len());
    for d in [64, 128] {
        for dtype in [Dtype::Float16, Dtype::Bfloat16] {
            assert!(n.shapes.iter().any(|s| s.head_dim == d && s.dtype == dtype));
        }
    }
    assert!(
        n.shapes.iter().any(|s| s.seq_len % 64 != 0),
        "odd lengths test the tails"
    );
}

/// The L4's tiles on our GPU: the d128 shapes of the PR config, same gate, compiled with
/// CG_ADA_TILES; the sanitize config reaches both head_dims and dtypes.
#[test]
fn the_ada_and_sanitize_configs_hold_what_they_promise() {
    let pr = load("pr.yaml");
    let ada = load("pr-ada.yaml");
    assert_eq!(ada.compile.defines, ["CG_ADA_TILES"]);
    assert!(pr.compile.defines.is_empty());
    let d128: Vec<_> = pr.shapes.iter().filter(|s| s.head_dim == 128).collect();
    assert_eq!(ada.shapes.iter().collect::<Vec<_>>(), d128);
    assert_eq!(ada.gate, pr.gate);
    let san = load("sanitize.yaml");
    for d in [64, 128] {
        for dtype in [Dtype::Float16, Dtype::Bfloat16] {
            assert!(
                san.shapes
                    .iter()
                    .any(|s| s.head_dim == d && s.dtype == dtype),
                "sanitize.yaml lacks d{d} {dtype}"
            );
        }
    }
    assert!(san.shapes.iter().any(|s| s.seq_len % 2 == 1 && s.causal));
    assert!(san.shapes.iter().any(|s| s.seq_len == 1));
    // every form of kernels/README.md on sm_90a: d64 from seq_len 1536 on, causal (`_long`)
    // and not (`_long_noncausal`, which the host takes only on a grid of NAME, 64 rows per
    // CTA, with at least one CTA per SM: 132 on an H100 SXM or H200)
    for causal in [true, false] {
        assert!(
            san.shapes.iter().any(|s| s.head_dim == 64
                && s.seq_len > 1536
                && s.causal == causal
                && (causal || s.seq_len.div_ceil(64) * s.batch * s.heads >= 132)),
            "sanitize.yaml lacks a long d64 shape with causal {causal}"
        );
    }
    // the sm_90a d128 `_long_noncausal` (non-causal from seq_len 1408, 192-key tiles), with a
    // narrowed first tile (the keys end at most 64 into the last tile) and without
    for narrowed in [true, false] {
        assert!(
            san.shapes.iter().any(|s| s.head_dim == 128
                && !s.causal
                && s.seq_len >= 1408
                && ((s.seq_len - 1) % 192 < 64) == narrowed),
            "sanitize.yaml lacks a d128 non-causal shape from 1408 keys, narrowed {narrowed}"
        );
    }
    // The L4's kernels under the sanitizer: compiled as pr-ada compiles them, and reaching
    // its d128 non-causal form (kernels/README.md: from seq_len 256, on a grid of NAME, 128
    // rows per CTA, with at least one CTA per SM: 132 on an H100 SXM or H200)
    let san_ada = load("sanitize-ada.yaml");
    assert_eq!(san_ada.compile.defines, ada.compile.defines);
    for dtype in [Dtype::Float16, Dtype::Bfloat16] {
        assert!(
            san_ada.shapes.iter().any(|s| s.head_dim == 128
                && !s.causal
                && s.dtype == dtype
                && s.seq_len >= 256
                && s.seq_len.div_ceil(128) * s.batch * s.heads >= 132),
            "sanitize-ada.yaml lacks a {dtype} shape on the L4's d128 non-causal form"
        );
    }
    // and its causal d64 form (NAME_causal, kernels/README.md) both ways it deals its units: a
    // grid of one wave paired (more 128-row CTAs than the 132 SMs, at most two a SM) and one of
    // several waves heaviest first, each with a last row tile not full
    for (what, waves) in [("one wave", 132..=264), ("several waves", 265..=u32::MAX)] {
        assert!(
            san_ada.shapes.iter().any(|s| {
                let ctas = s.seq_len.div_ceil(128) * s.batch * s.heads;
                s.head_dim == 64 && s.causal && waves.contains(&ctas) && s.seq_len % 128 != 0
            }),
            "sanitize-ada.yaml lacks a causal d64 shape on NAME_causal's grid of {what}"
        );
    }
    // The nightly names all three: PyTorch's own choice, forced cuDNN and FlashAttention-2.
    assert_eq!(load("nightly.yaml").peers.len(), 3);
}

/// The evaluator's config: four shapes of the PR config, the PR gate's margin and parity, the
/// seeds' rule, and a design that spends less of the GPU than the PR config's.
#[test]
fn the_eval_config_is_four_pr_shapes_under_the_seeds_rule() {
    let pr = load("pr.yaml");
    let e = load("eval.yaml");
    assert_eq!(e.shapes.len(), 4);
    assert!(e.shapes.iter().all(|s| pr.shapes.contains(s)));
    assert_eq!(e.gate, pr.gate);
    assert_eq!(e.parity, pr.parity);
    assert!(e.peers.is_empty());
    assert_eq!((e.eval.min_speedup, e.eval.min_shapes), (0.03, 2));
    let planned = |c: &ci_gate::config::Config| {
        let m = &c.measure;
        f64::from(m.min_rounds) * f64::from(m.samples_per_round) * m.sample_ms / m.duty_cycle
    };
    assert!(planned(&e) < planned(&pr) / 4.0);
}
