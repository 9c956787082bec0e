//! The entry points and launch constants a timed `attention.cu` must have
//! (kernels/README.md, "Launch contract", "Small grids, long sequences", "Filling the GPU",
//! "TMA"), as rules on the constants' values: the GPU loader (`device`, values read through
//! the driver) and `ci-gate compile` (values read from the CUBIN, without a GPU) apply the
//! same ones.

use crate::config::{Dtype, SUPPORTED_HEAD_DIMS};

/// The main entry of a (dtype, head_dim): `attention_fwd_f16_d64` …
pub(crate) fn main_entry(dtype: Dtype, head_dim: u32) -> String {
    format!("attention_fwd_{}_d{head_dim}", dtype.short())
}

/// Every main entry the host loads: one per dtype and supported head_dim.
pub(crate) fn main_entries() -> Vec<String> {
    let mut out = Vec::new();
    for dtype in [Dtype::Float16, Dtype::Bfloat16] {
        for d in SUPPORTED_HEAD_DIMS {
            out.push(main_entry(dtype, d));
        }
    }
    out
}

/// A launch constant outside what the host accepts, naming the symbol and its value. Typed
/// so that the GPU loader and `ci-gate compile` can tell which constant is wrong; both show
/// the sentence after the source's path.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum EntryError {
    #[error(
        "{name}_launch is {{{rows}, {threads}, {smem}}}: rows and threads must be positive (threads ≤ 1024) and shared memory within the device's {max_smem} bytes"
    )]
    Launch {
        name: String,
        rows: i32,
        threads: i32,
        smem: i32,
        max_smem: u32,
    },
    #[error(
        "{name}_fill is {{{per_sm}, {max}}}: CTAs per SM must be 1..=32 and tiles per CTA 1..=64 (kernels/README.md)"
    )]
    Fill { name: String, per_sm: i32, max: i32 },
    #[error(
        "{name}_tiles_at_once is {tiles}: tiles a CTA computes at the same time must be 1..=64 (kernels/README.md)"
    )]
    AtOnce { name: String, tiles: i32 },
    #[error("{form_name}_{suffix} is {value}: it must be a seq_len of at least 1")]
    FormBound {
        form_name: String,
        suffix: &'static str,
        value: i32,
    },
    #[error(
        "{form_name}_to is {to}, below {form_name}_from ({from}): the form would take no seq_len"
    )]
    NoSeqLen {
        form_name: String,
        from: u32,
        to: u32,
    },
    #[error("{name}_tma is {layout}: the only TMA layout is 1 (kernels/README.md)")]
    Tma { name: String, layout: i32 },
    #[error("{name}_fill_or_one is {value}: it must be 0 or 1 (kernels/README.md)")]
    FillOrOne { name: String, value: i32 },
    #[error(
        "{name}_fill_or_one without {name}_fill: one tile a CTA is the only grid of a form that does not fill (kernels/README.md)"
    )]
    OrOneWithoutFill { name: String },
}

/// `NAME_launch` = {rows_per_block, threads_per_block, dynamic_smem_bytes}: positive rows,
/// 1..=1024 threads, shared memory within what the device allows (`max_smem`).
pub(crate) fn launch(name: &str, v: [i32; 3], max_smem: u32) -> Result<[u32; 3], EntryError> {
    let [rows, threads, smem] = v;
    if rows < 1 || !(1..=1024).contains(&threads) || smem < 0 || smem as u32 > max_smem {
        return Err(EntryError::Launch {
            name: name.to_owned(),
            rows,
            threads,
            smem,
            max_smem,
        });
    }
    Ok([rows as u32, threads as u32, smem as u32])
}

/// `NAME_fill` = {CTAs per SM, most tiles per CTA}: 1..=32 and 1..=64.
pub(crate) fn fill(name: &str, v: [i32; 2]) -> Result<(u32, u32), EntryError> {
    let [per_sm, max] = v;
    if !(1..=32).contains(&per_sm) || !(1..=64).contains(&max) {
        return Err(EntryError::Fill {
            name: name.to_owned(),
            per_sm,
            max,
        });
    }
    Ok((per_sm as u32, max as u32))
}

/// `NAME_fill_or_one` = {0 or 1}: whether the host also weighs one tile a CTA against the
/// fill grid (1) or not (0, as where absent); only beside a `NAME_fill` (`has_fill`).
pub(crate) fn fill_or_one(name: &str, value: i32, has_fill: bool) -> Result<bool, EntryError> {
    if !(0..=1).contains(&value) {
        return Err(EntryError::FillOrOne {
            name: name.to_owned(),
            value,
        });
    }
    if !has_fill {
        return Err(EntryError::OrOneWithoutFill {
            name: name.to_owned(),
        });
    }
    Ok(value == 1)
}

/// `NAME_tiles_at_once`: how many of its rows_per_block-row tiles one CTA computes at the same
/// time (the host weighs forms by it, [`crate::gpu`]'s `pick_form`), 1..=64; 1 where absent.
pub(crate) fn tiles_at_once(name: &str, tiles: i32) -> Result<u32, EntryError> {
    u32::try_from(tiles)
        .ok()
        .filter(|t| (1..=64).contains(t))
        .ok_or_else(|| EntryError::AtOnce {
            name: name.to_owned(),
            tiles,
        })
}

/// Which end of its seq_lens an optional form's bound gives: `NAME_long_from` and
/// `NAME_long_noncausal_from` the shortest, `NAME_short_noncausal_to` the longest.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Bound {
    From,
    To,
}

impl Bound {
    /// The symbol's suffix after the form's name.
    pub(crate) fn suffix(self) -> &'static str {
        match self {
            Bound::From => "from",
            Bound::To => "to",
        }
    }

    /// The bound in words ("the shortest seq_len it takes").
    pub(crate) fn which(self) -> &'static str {
        match self {
            Bound::From => "shortest",
            Bound::To => "longest",
        }
    }
}

/// The optional forms of a main entry NAME that come with a seq_len bound
/// (kernels/README.md, "Small grids, long sequences").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum BoundedForm {
    Long,
    LongNonCausal,
    ShortNonCausal,
}

impl BoundedForm {
    pub(crate) const ALL: [BoundedForm; 3] = [
        BoundedForm::Long,
        BoundedForm::LongNonCausal,
        BoundedForm::ShortNonCausal,
    ];

    /// The entry's suffix after NAME.
    pub(crate) fn suffix(self) -> &'static str {
        match self {
            BoundedForm::Long => "long",
            BoundedForm::LongNonCausal => "long_noncausal",
            BoundedForm::ShortNonCausal => "short_noncausal",
        }
    }

    /// Which end of its seq_lens the bound gives.
    pub(crate) fn bound(self) -> Bound {
        match self {
            BoundedForm::Long | BoundedForm::LongNonCausal => Bound::From,
            BoundedForm::ShortNonCausal => Bound::To,
        }
    }
}

/// `NAME_long_from`, `NAME_long_noncausal_from` (the shortest seq_len a `NAME_long` or
/// `NAME_long_noncausal` takes) or `NAME_short_noncausal_to` (the longest a
/// `NAME_short_noncausal` takes): at least 1.
pub(crate) fn form_bound(form_name: &str, bound: Bound, value: i32) -> Result<u32, EntryError> {
    u32::try_from(value)
        .ok()
        .filter(|v| *v >= 1)
        .ok_or_else(|| EntryError::FormBound {
            form_name: form_name.to_owned(),
            suffix: bound.suffix(),
            value,
        })
}

/// `NAME_long_noncausal_to` (optional): the longest seq_len a `NAME_long_noncausal` takes, at
/// least 1 and not below its `NAME_long_noncausal_from` (`from`, already checked). Where it
/// is absent the form takes every seq_len from `from` on (`u32::MAX`).
pub(crate) fn upper_bound(
    form_name: &str,
    from: u32,
    value: Option<i32>,
) -> Result<u32, EntryError> {
    let Some(value) = value else {
        return Ok(u32::MAX);
    };
    let to = form_bound(form_name, Bound::To, value)?;
    if to < from {
        return Err(EntryError::NoSeqLen {
            form_name: form_name.to_owned(),
            from,
            to,
        });
    }
    Ok(to)
}

/// The TMA layouts a kernel may ask for with `NAME_tma`: 1 = q, k, v as 3-D maps
/// {head_dim, seq_len, batch·heads}, 64 × 64 boxes, 128-byte swizzle.
const TMA_LAYOUTS: [i32; 1] = [1];

/// `NAME_tma`: a layout the host can encode.
pub(crate) fn tma(name: &str, layout: i32) -> Result<(), EntryError> {
    if TMA_LAYOUTS.contains(&layout) {
        Ok(())
    } else {
        Err(EntryError::Tma {
            name: name.to_owned(),
            layout,
        })
    }
}

/// The entries of a CUBIN checked without a GPU, as the loader will check them: every main
/// entry with its `NAME_launch`, and each optional `NAME_small` / `NAME_causal` /
/// `NAME_long` / `NAME_long_noncausal` / `NAME_short_noncausal` with theirs (and `NAME_long_from` /
/// `NAME_long_noncausal_from` / `NAME_short_noncausal_to`),
/// every `NAME_fill`, `NAME_fill_or_one`, `NAME_tiles_at_once` and `NAME_tma` valid.
/// `max_smem` is the target's opt-in shared memory per block. One line per entry found, or every problem found (each a
/// clause naming the symbol).
pub(crate) fn check_static(cubin: &[u8], max_smem: u32) -> Result<Vec<String>, Vec<String>> {
    use super::cubin::{has_symbol, i32_constant};
    let mut problems = Vec::new();
    let mut found = Vec::new();
    let mut check_one = |name: &str, required: bool, problems: &mut Vec<String>| {
        if !has_symbol(cubin, name) {
            if required {
                problems.push(format!(
                    "the entry point {name} is missing (the host loads one for each dtype and head_dim: {})",
                    main_entries().join(", ")
                ));
            }
            return;
        }
        let mut line = name.to_string();
        match i32_constant(cubin, &format!("{name}_launch"), 3) {
            None => problems.push(format!(
                "{name} has no {name}_launch of three ints (rows_per_block, threads_per_block, dynamic_smem_bytes)"
            )),
            Some(v) => match launch(name, [v[0], v[1], v[2]], max_smem) {
                Ok([rows, threads, smem]) => line.push_str(&format!(
                    ": {{{rows}, {threads}, {smem}}}"
                )),
                Err(e) => problems.push(e.to_string()),
            },
        }
        if has_symbol(cubin, &format!("{name}_fill")) {
            match i32_constant(cubin, &format!("{name}_fill"), 2) {
                Some(v) => match fill(name, [v[0], v[1]]) {
                    Ok((a, b)) => line.push_str(&format!(", fill {{{a}, {b}}}")),
                    Err(e) => problems.push(e.to_string()),
                },
                None => problems.push(format!("{name}_fill is not two ints")),
            }
        }
        if has_symbol(cubin, &format!("{name}_fill_or_one")) {
            let has_fill = has_symbol(cubin, &format!("{name}_fill"));
            match i32_constant(cubin, &format!("{name}_fill_or_one"), 1) {
                Some(v) => match fill_or_one(name, v[0], has_fill) {
                    Ok(true) => line.push_str(", or one tile a CTA"),
                    Ok(false) => {}
                    Err(e) => problems.push(e.to_string()),
                },
                None => problems.push(format!("{name}_fill_or_one is not an int")),
            }
        }
        if has_symbol(cubin, &format!("{name}_tiles_at_once")) {
            match i32_constant(cubin, &format!("{name}_tiles_at_once"), 1) {
                Some(v) => match tiles_at_once(name, v[0]) {
                    Ok(t) => line.push_str(&format!(", {t} tiles at once")),
                    Err(e) => problems.push(e.to_string()),
                },
                None => problems.push(format!("{name}_tiles_at_once is not an int")),
            }
        }
        if has_symbol(cubin, &format!("{name}_tma")) {
            match i32_constant(cubin, &format!("{name}_tma"), 1) {
                Some(v) => match tma(name, v[0]) {
                    Ok(()) => line.push_str(", tma"),
                    Err(e) => problems.push(e.to_string()),
                },
                None => problems.push(format!("{name}_tma is not an int")),
            }
        }
        found.push(line);
    };
    for main in main_entries() {
        check_one(&main, true, &mut problems);
        check_one(&format!("{main}_small"), false, &mut problems);
        check_one(&format!("{main}_causal"), false, &mut problems);
        for kind in BoundedForm::ALL {
            let (form, bound) = (format!("{main}_{}", kind.suffix()), kind.bound());
            if !has_symbol(cubin, &form) {
                continue;
            }
            check_one(&form, false, &mut problems);
            problems.extend(bound_problems(cubin, kind, &form, bound));
        }
    }
    if problems.is_empty() {
        Ok(found)
    } else {
        Err(problems)
    }
}

/// What is wrong with the seq_len bounds of a bounded form `form` (of `kind`) in a CUBIN:
/// its `_from` or `_to` ([`form_bound`]) and, for a `NAME_long_noncausal`, its optional
/// `_to` ([`upper_bound`]).
fn bound_problems(cubin: &[u8], kind: BoundedForm, form: &str, bound: Bound) -> Vec<String> {
    use super::cubin::{has_symbol, i32_constant};
    let symbol = format!("{form}_{}", bound.suffix());
    let Some(v) = i32_constant(cubin, &symbol, 1) else {
        return vec![format!(
            "{form} has no {symbol}: the {} seq_len it takes (kernels/README.md)",
            bound.which()
        )];
    };
    let from = match form_bound(form, bound, v[0]) {
        Ok(value) => value,
        Err(e) => return vec![e.to_string()],
    };
    let to_symbol = format!("{form}_to");
    if kind != BoundedForm::LongNonCausal || !has_symbol(cubin, &to_symbol) {
        return Vec::new();
    }
    let Some(to) = i32_constant(cubin, &to_symbol, 1) else {
        return vec![format!("{to_symbol} is not an int")];
    };
    match upper_bound(form, from, Some(to[0])) {
        Ok(_) => Vec::new(),
        Err(e) => vec![e.to_string()],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rules_refuse_what_the_host_cannot_launch() {
        assert_eq!(launch("k", [64, 256, 83040], 232_448), Ok([64, 256, 83040]));
        for bad in [
            [0, 256, 0],
            [64, 0, 0],
            [64, 1025, 0],
            [64, 256, -1],
            [64, 256, 232_449],
        ] {
            assert!(launch("k", bad, 232_448).is_err(), "{bad:?}");
        }
        assert_eq!(fill("k", [2, 4]), Ok((2, 4)));
        assert!(fill("k", [0, 4]).is_err() && fill("k", [2, 65]).is_err());
        assert_eq!(fill_or_one("k", 1, true), Ok(true));
        assert_eq!(fill_or_one("k", 0, true), Ok(false));
        for bad in [-1, 2, i32::MAX] {
            assert_eq!(
                fill_or_one("k", bad, true),
                Err(EntryError::FillOrOne {
                    name: "k".into(),
                    value: bad
                })
            );
        }
        assert_eq!(
            fill_or_one("k", 1, false),
            Err(EntryError::OrOneWithoutFill { name: "k".into() })
        );
        assert_eq!(form_bound("k_long", Bound::From, 1536), Ok(1536));
        assert_eq!(form_bound("k_short_noncausal", Bound::To, 640), Ok(640));
        // NAME_long_noncausal_to: optional (no end), at least 1, not below the form's from
        assert_eq!(upper_bound("k_long_noncausal", 256, None), Ok(u32::MAX));
        assert_eq!(upper_bound("k_long_noncausal", 256, Some(447)), Ok(447));
        assert_eq!(upper_bound("k_long_noncausal", 256, Some(256)), Ok(256));
        assert_eq!(
            upper_bound("k_long_noncausal", 256, Some(255)),
            Err(EntryError::NoSeqLen {
                form_name: "k_long_noncausal".into(),
                from: 256,
                to: 255
            })
        );
        for bad in [0, -1, i32::MIN] {
            assert!(
                upper_bound("k_long_noncausal", 1, Some(bad)).is_err(),
                "{bad}"
            );
        }
        assert_eq!(
            form_bound("k_short_noncausal", Bound::To, 0)
                .map_err(|e| e.to_string())
                .unwrap_err(),
            "k_short_noncausal_to is 0: it must be a seq_len of at least 1"
        );
        assert!(form_bound("k_long", Bound::From, -5).is_err());
        assert!(tma("k", 1).is_ok() && tma("k", 2).is_err());
        assert_eq!(tiles_at_once("k", 3), Ok(3));
        assert_eq!(tiles_at_once("k", 64), Ok(64));
        for bad in [0, -3, 65] {
            assert_eq!(
                tiles_at_once("k", bad),
                Err(EntryError::AtOnce {
                    name: "k".into(),
                    tiles: bad
                })
            );
        }
        assert_eq!(main_entries().len(), 4);
        assert!(main_entries().contains(&"attention_fwd_bf16_d128".to_string()));
    }

    #[test]
    fn a_module_without_the_entries_is_refused_naming_them() {
        // clean.cubin has one kernel `k` and `k_launch`: none of the entries the host loads.
        let cubin = std::fs::read(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/fixtures/cubin/clean.cubin"),
        )
        .unwrap();
        let problems = check_static(&cubin, 101_376).unwrap_err();
        assert_eq!(problems.len(), 4, "{problems:?}");
        assert!(problems[0].contains("the entry point attention_fwd_f16_d64 is missing"));
        assert!(check_static(b"garbage", 1).is_err());
    }
}
