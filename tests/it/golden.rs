//! The CPU float64 reference against PyTorch's float64 outputs in tests/golden.
//! Where that directory is absent `cargo test` lists the test as ignored, with why (run
//! anyway, with `--ignored`, it fails).

use crate::common::{golden_dir, read_f32, read_u16};
use ci_gate::config::Dtype;
use ci_gate::reference::{Problem, attention, decode, errors};

#[test]
#[cfg_attr(
    ci_gate_no_golden,
    ignore = "no golden data at tests/golden (set CI_GATE_GOLDEN_DIR)"
)]
fn cpu_reference_matches_pytorch_float64() {
    let dir = golden_dir().expect("no golden data at tests/golden (set CI_GATE_GOLDEN_DIR)");
    let cases: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("cases.json")).unwrap()).unwrap();
    let cases = cases.as_object().unwrap();
    assert!(cases.len() >= 5, "expected the 5 golden cases");
    for (name, c) in cases {
        let get = |k: &str| c[k].as_u64().unwrap() as usize;
        let dtype = match c["dtype"].as_str().unwrap() {
            "float16" => Dtype::Float16,
            "bfloat16" => Dtype::Bfloat16,
            other => panic!("{name}: unknown dtype {other}"),
        };
        let (b, h, s, d) = (get("batch"), get("heads"), get("seq_len"), get("head_dim"));
        let load = |t: &str| decode(dtype, &read_u16(&dir.join(format!("{name}.{t}.bin"))));
        let (q, k, v) = (load("q"), load("k"), load("v"));
        let want = read_f32(&dir.join(format!("{name}.out_f32.bin")));
        assert_eq!(want.len(), b * h * s * d, "{name}");
        let scale = c["scale"].as_f64().unwrap();
        let problem = Problem {
            batch_heads: b * h,
            seq_len: s,
            head_dim: d,
            scale,
            causal: c["causal"].as_bool().unwrap(),
        };
        let got = attention(&q, &k, &v, problem);
        let (max_abs, rel_l2) = errors(&got, &want);
        // The expected output was rounded to fp32: float64 vs that is ~1e-8 relative.
        assert!(
            rel_l2 < 1e-6 && max_abs < 1e-6,
            "{name}: max_abs {max_abs:e}, rel_l2 {rel_l2:e}"
        );
    }
}
