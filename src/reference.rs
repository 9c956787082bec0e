//! A CPU attention reference in float64, written to be obviously correct: it is what the
//! GPU kernels are checked against in tests, and it is itself checked against PyTorch's
//! float64 outputs in `tests/golden` (made by `bench/make_golden.py`).

use crate::config::Dtype;

/// Decodes an IEEE binary16 bit pattern.
pub(crate) fn f16_to_f32(bits: u16) -> f32 {
    let sign = if bits & 0x8000 != 0 { -1.0f32 } else { 1.0 };
    let exp = i32::from((bits >> 10) & 0x1f);
    let frac = f32::from(bits & 0x3ff);
    match exp {
        0 => sign * frac * 2f32.powi(-24),
        31 if frac == 0.0 => sign * f32::INFINITY,
        31 => f32::NAN,
        e => sign * (1.0 + frac / 1024.0) * 2f32.powi(e - 15),
    }
}

/// Decodes a bfloat16 bit pattern (the top half of an f32).
pub(crate) fn bf16_to_f32(bits: u16) -> f32 {
    f32::from_bits(u32::from(bits) << 16)
}

/// Decodes 16-bit values of `dtype`.
pub fn decode(dtype: Dtype, bits: &[u16]) -> Vec<f64> {
    bits.iter()
        .map(|&b| {
            f64::from(match dtype {
                Dtype::Float16 => f16_to_f32(b),
                Dtype::Bfloat16 => bf16_to_f32(b),
            })
        })
        .collect()
}

/// The layout and options of one attention problem: [batch·heads, seq_len, head_dim].
#[derive(Clone, Copy, Debug)]
pub struct Problem {
    pub batch_heads: usize,
    pub seq_len: usize,
    pub head_dim: usize,
    pub scale: f64,
    pub causal: bool,
}

/// Attention over [batch·heads, seq_len, head_dim] row-major inputs:
/// out[i] = Σ_j softmax_j(scale · q_i·k_j) v_j, with query i seeing keys 0..=i when causal.
/// Plain two-pass softmax in float64. Cost: O(batch·heads·seq_len²·head_dim).
pub fn attention(q: &[f64], k: &[f64], v: &[f64], p: Problem) -> Vec<f64> {
    let Problem {
        batch_heads,
        seq_len,
        head_dim,
        scale,
        causal,
    } = p;
    let n = batch_heads * seq_len * head_dim;
    assert!(
        q.len() == n && k.len() == n && v.len() == n,
        "inputs must hold {n} values"
    );
    let mut out = vec![0.0; n];
    let mut scores = vec![0.0; seq_len];
    for bh in 0..batch_heads {
        let base = bh * seq_len * head_dim;
        fn row(t: &[f64], start: usize, len: usize) -> &[f64] {
            &t[start..start + len]
        }
        for i in 0..seq_len {
            let visible = if causal { i + 1 } else { seq_len };
            let qi = row(q, base + i * head_dim, head_dim);
            for (j, s) in scores.iter_mut().enumerate().take(visible) {
                *s = scale
                    * qi.iter()
                        .zip(row(k, base + j * head_dim, head_dim))
                        .map(|(a, b)| a * b)
                        .sum::<f64>();
            }
            let max = scores[..visible]
                .iter()
                .copied()
                .fold(f64::NEG_INFINITY, f64::max);
            let mut denom = 0.0;
            for s in &mut scores[..visible] {
                *s = (*s - max).exp();
                denom += *s;
            }
            let o = &mut out[base + i * head_dim..base + (i + 1) * head_dim];
            for (j, p) in scores[..visible].iter().enumerate() {
                for (od, vd) in o.iter_mut().zip(row(v, base + j * head_dim, head_dim)) {
                    *od += p * vd;
                }
            }
            for od in o.iter_mut() {
                *od /= denom;
            }
        }
    }
    out
}

/// The fewest keys a row must see for its error to count in the centered error: below it
/// the part of a row's output that depends on q can be as small as an honest kernel's
/// rounding (two keys of nearly equal weight; `bench/mixture_study.py`), and no cheaper
/// function saves anything worth timing on rows so short.
pub const CENTERED_MIN_KEYS: usize = 32;

/// Uniform attention over [batch·heads, seq_len, head_dim] values `v`: attention with every
/// visible key weighted alike, so each output row is the mean of the V rows its query sees
/// (all of them; rows 0..=i when causal). It is the best any output that ignores q can do
/// in general, and the point parity's centered error is measured from: attention minus this
/// is the part of the output that depends on q. Rows that see fewer than
/// [`CENTERED_MIN_KEYS`] keys are NaN (left out of the centered error). Float64 running
/// sums; a partial last slice is left NaN. Cost: O(batch·heads·seq_len·head_dim), one pass
/// (two without causal).
pub fn uniform_attention(v: &[f32], seq_len: usize, head_dim: usize, causal: bool) -> Vec<f32> {
    let slice = seq_len * head_dim;
    let mut out = vec![f32::NAN; v.len()];
    if slice == 0 {
        return out;
    }
    let mut sum = vec![0f64; head_dim];
    for (src, dst) in v.chunks_exact(slice).zip(out.chunks_exact_mut(slice)) {
        sum.iter_mut().for_each(|s| *s = 0.0);
        for (i, (row, o)) in src
            .chunks_exact(head_dim)
            .zip(dst.chunks_exact_mut(head_dim))
            .enumerate()
        {
            for (s, &x) in sum.iter_mut().zip(row) {
                *s += f64::from(x);
            }
            if causal && i + 1 >= CENTERED_MIN_KEYS {
                for (o, s) in o.iter_mut().zip(&sum) {
                    *o = (s / (i + 1) as f64) as f32;
                }
            }
        }
        if !causal && seq_len >= CENTERED_MIN_KEYS {
            let mean: Vec<f32> = sum.iter().map(|s| (s / seq_len as f64) as f32).collect();
            for o in dst.chunks_exact_mut(head_dim) {
                o.copy_from_slice(&mean);
            }
        }
    }
    out
}

/// Errors of `got` against `want`: (max |got − want|, ‖got − want‖₂ / ‖want‖₂).
/// NaN in `got` makes both NaN.
pub fn errors(got: &[f64], want: &[f64]) -> (f64, f64) {
    let mut max_abs: f64 = 0.0;
    let mut diff2 = 0.0;
    let mut ref2 = 0.0;
    for (g, w) in got.iter().zip(want) {
        let d = g - w;
        if d.is_nan() {
            return (f64::NAN, f64::NAN);
        }
        max_abs = max_abs.max(d.abs());
        diff2 += d * d;
        ref2 += w * w;
    }
    (max_abs, (diff2 / ref2).sqrt())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn half_and_bfloat_decode() {
        assert_eq!(f16_to_f32(0x3c00), 1.0);
        assert_eq!(f16_to_f32(0xc000), -2.0);
        assert_eq!(f16_to_f32(0x0001), 2f32.powi(-24));
        assert_eq!(f16_to_f32(0x7bff), 65504.0);
        assert!(f16_to_f32(0x7c00).is_infinite());
        assert!(f16_to_f32(0x7e00).is_nan());
        assert_eq!(bf16_to_f32(0x3f80), 1.0);
        assert_eq!(bf16_to_f32(0xc040), -3.0);
    }

    #[test]
    fn one_key_returns_its_value_and_uniform_scores_average() {
        // seq_len 2, causal: row 0 sees only key 0 → v0; identical keys → mean of values.
        let q = vec![1.0, 0.0, 1.0, 0.0];
        let k = vec![0.5, 0.5, 0.5, 0.5];
        let v = vec![1.0, 2.0, 3.0, 4.0];
        let p = |causal| Problem {
            batch_heads: 1,
            seq_len: 2,
            head_dim: 2,
            scale: 1.0,
            causal,
        };
        let out = attention(&q, &k, &v, p(true));
        assert_eq!(&out[..2], &[1.0, 2.0]);
        assert!((out[2] - 2.0).abs() < 1e-15 && (out[3] - 3.0).abs() < 1e-15);
        let out = attention(&q, &k, &v, p(false));
        assert!((out[0] - 2.0).abs() < 1e-15);
    }

    #[test]
    fn uniform_attention_is_each_rows_mean_of_the_values_it_sees() {
        // Two slices of 40 rows × 2 channels, row j of slice b holding (j + 100 b, −j).
        let (s, d) = (40usize, 2usize);
        let v: Vec<f32> = (0..2 * s)
            .flat_map(|r| {
                let (b, j) = (r / s, (r % s) as f32);
                [j + 100.0 * b as f32, -j]
            })
            .collect();
        let full = uniform_attention(&v, s, d, false);
        // Every row of slice 1: the mean of 100..139 and of 0..−39.
        assert_eq!(&full[s * d..s * d + 2], &[119.5, -19.5]);
        assert_eq!(&full[2 * s * d - 2..], &[119.5, -19.5]);
        let causal = uniform_attention(&v, s, d, true);
        // Rows that see fewer than CENTERED_MIN_KEYS keys are left out (NaN).
        assert!(
            causal[..(CENTERED_MIN_KEYS - 1) * d]
                .iter()
                .all(|x| x.is_nan())
        );
        // Row 31 of slice 0 sees rows 0..=31: (15.5, −15.5).
        let r = (CENTERED_MIN_KEYS - 1) * d;
        assert_eq!(&causal[r..r + 2], &[15.5, -15.5]);
        // A slice shorter than CENTERED_MIN_KEYS has no row counted, and a partial slice
        // at the end none either.
        assert!(
            uniform_attention(&v[..20 * d], 20, d, false)
                .iter()
                .all(|x| x.is_nan())
        );
        assert!(
            uniform_attention(&v[..s * d + 6], s, d, false)[s * d..]
                .iter()
                .all(|x| x.is_nan())
        );
    }

    #[test]
    fn errors_measure_max_and_relative_l2() {
        let (m, r) = errors(&[1.0, 2.0, 2.0], &[1.0, 2.0, 3.0]);
        assert_eq!(m, 1.0);
        assert!((r - (1.0f64 / 14.0).sqrt()).abs() < 1e-15);
        assert!(errors(&[f64::NAN], &[1.0]).0.is_nan());
    }
}
