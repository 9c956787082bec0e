//! What the compiler gave each timed kernel (registers, spills, stack, shared memory) and what
//! its launch asks of an SM (threads, dynamic shared memory, CTAs per SM), per side: plain data
//! that results files, baselines and reports carry. Never part of a verdict: a pull request
//! that trades registers for speed is judged by its speed; these figures say why it moved.
//!
//! Read from results and baseline files, so every value is checked ([`check_resources`]) and
//! kernel names are shown only through `text::quote`/escaping by the reports.

use serde::{Deserialize, Serialize};

use crate::validate::{Check, Checker, MAX_SHORT_LABEL_LEN, MAX_WARNING_LEN};

/// Which kernel set a figure is of.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ResourceSide {
    Base,
    Candidate,
    /// The stored baseline's (its candidate's when it was recorded): what a run without a
    /// base compares the candidate's with.
    Baseline,
}

/// One compiled kernel of one side, as it is launched.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct KernelResources {
    pub side: ResourceSide,
    /// The entry's name in the module (`attention_fwd_f16_d128`).
    pub kernel: String,
    pub registers: u32,
    /// From ptxas's own report; `None` where that report could not be trusted (see `note`).
    pub spill_store_bytes: Option<u64>,
    pub spill_load_bytes: Option<u64>,
    pub stack_frame_bytes: u64,
    /// The module's `.nv.shared.<kernel>` section (on sm_90 it holds the 1 KiB the driver
    /// reserves per CTA too).
    pub static_smem_bytes: u64,
    /// The launch's, from `<kernel>_launch`.
    pub dynamic_smem_bytes: u64,
    pub threads_per_block: u32,
    /// The driver's occupancy for this launch; `None` without a GPU.
    pub max_ctas_per_sm: Option<u32>,
    /// Why a figure is missing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl KernelResources {
    /// Every figure but the side and the note: what a diff compares.
    #[allow(clippy::type_complexity)]
    fn figures(
        &self,
    ) -> (
        u32,
        Option<u64>,
        Option<u64>,
        u64,
        u64,
        u64,
        u32,
        Option<u32>,
    ) {
        (
            self.registers,
            self.spill_store_bytes,
            self.spill_load_bytes,
            self.stack_frame_bytes,
            self.static_smem_bytes,
            self.dynamic_smem_bytes,
            self.threads_per_block,
            self.max_ctas_per_sm,
        )
    }
}

/// Most kernels recorded per file (both sides together).
pub(crate) const MAX_KERNEL_RESOURCES: usize = 256;

/// A kernel whose figures differ between the two sets (or that only one set has).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct ResourceChange<'a> {
    pub kernel: &'a str,
    pub before: Option<&'a KernelResources>,
    pub after: Option<&'a KernelResources>,
}

/// The kernels whose figures changed from `before` to `after`, by name, and how many did not.
pub(crate) fn resource_changes<'a>(
    before: &'a [KernelResources],
    after: &'a [KernelResources],
) -> (Vec<ResourceChange<'a>>, usize) {
    let mut names: Vec<&str> = before
        .iter()
        .chain(after)
        .map(|k| k.kernel.as_str())
        .collect();
    names.sort_unstable();
    names.dedup();
    let mut changes = Vec::new();
    let mut unchanged = 0;
    for kernel in names {
        let b = before.iter().find(|k| k.kernel == kernel);
        let a = after.iter().find(|k| k.kernel == kernel);
        match (b, a) {
            (Some(x), Some(y)) if x.figures() == y.figures() => unchanged += 1,
            _ => changes.push(ResourceChange {
                kernel,
                before: b,
                after: a,
            }),
        }
    }
    (changes, unchanged)
}

/// The figures of one side.
pub(crate) fn of_side(all: &[KernelResources], side: ResourceSide) -> Vec<KernelResources> {
    all.iter().filter(|k| k.side == side).cloned().collect()
}

/// The reports' "Compiler resources" section: the kernels whose figures moved, as text
/// (kernel names unescaped: each report escapes them its own way).
#[derive(Clone, Debug, PartialEq)]
pub struct ResourceSection {
    /// What the candidate is compared with: "base" or "stored baseline".
    pub against: &'static str,
    /// `kernel` and [`COLUMNS`].
    pub header: Vec<String>,
    pub rows: Vec<Vec<String>>,
    pub unchanged: usize,
}

impl ResourceSection {
    /// The candidate against the base where the file has the base's figures, else against
    /// the stored baseline's; `None` where it has neither (nothing to compare).
    pub(crate) fn of(all: &[KernelResources]) -> Option<ResourceSection> {
        let candidate = of_side(all, ResourceSide::Candidate);
        let (before, against) = [
            (ResourceSide::Base, "base"),
            (ResourceSide::Baseline, "stored baseline"),
        ]
        .into_iter()
        .map(|(side, label)| (of_side(all, side), label))
        .find(|(k, _)| !k.is_empty())?;
        if candidate.is_empty() {
            return None;
        }
        // A stored baseline may hold kernels this run did not launch: not a change.
        let before: Vec<KernelResources> = before
            .into_iter()
            .filter(|b| against == "base" || candidate.iter().any(|c| c.kernel == b.kernel))
            .collect();
        let (changes, unchanged) = resource_changes(&before, &candidate);
        let rows = changes
            .iter()
            .map(|c| {
                std::iter::once(c.kernel.to_string())
                    .chain(change_cells(c))
                    .collect()
            })
            .collect();
        Some(ResourceSection {
            against,
            header: std::iter::once("kernel")
                .chain(COLUMNS)
                .map(str::to_string)
                .collect(),
            rows,
            unchanged,
        })
    }

    /// What the columns are, for the line under the table: the register count is the one
    /// the kernel is launched with (a kernel that reallocates with `setmaxnreg` runs its
    /// warps with others), and the CUBIN's static shared memory includes what the module
    /// reserves for the driver (1 KiB on sm_90).
    pub(crate) const LEGEND: &'static str = "regs: per thread at launch (setmaxnreg can move them while it runs); spills from ptxas's report (? where it could not be believed); static smem: the CUBIN's, with the 1 KiB sm_90 reserves for the driver; CTAs/SM: the driver's occupancy for this launch's block and dynamic shared memory";

    /// The line under the table (or alone, where nothing moved).
    pub fn summary(&self) -> String {
        let kernels = |n: usize| if n == 1 { "kernel" } else { "kernels" };
        match (self.rows.len(), self.unchanged) {
            (0, n) => format!(
                "Compiler resources: unchanged vs {} ({n} {}).",
                self.against,
                kernels(n)
            ),
            (_, 0) => format!("(vs {}: before → after)", self.against),
            (_, n) => format!(
                "(vs {}: before → after; {n} {} unchanged)",
                self.against,
                kernels(n)
            ),
        }
    }
}

/// The columns of the reports' "Compiler resources" table, each with how to show one side.
pub(crate) const COLUMNS: [&str; 7] = [
    "regs",
    "spill st/ld B",
    "stack B",
    "static smem B",
    "dyn smem B",
    "threads",
    "CTAs/SM",
];

fn opt<T: ToString>(v: Option<T>) -> String {
    v.map_or_else(|| "?".to_string(), |v| v.to_string())
}

/// The cells of one kernel's figures, in [`COLUMNS`] order.
fn cells(k: &KernelResources) -> [String; 7] {
    [
        k.registers.to_string(),
        format!("{}/{}", opt(k.spill_store_bytes), opt(k.spill_load_bytes)),
        k.stack_frame_bytes.to_string(),
        k.static_smem_bytes.to_string(),
        k.dynamic_smem_bytes.to_string(),
        k.threads_per_block.to_string(),
        opt(k.max_ctas_per_sm),
    ]
}

/// A change as cells: `before → after` where a figure moved, the figure alone where it did
/// not, `—` for a side without the kernel.
pub(crate) fn change_cells(change: &ResourceChange<'_>) -> [String; 7] {
    let none = || std::array::from_fn(|_| "—".to_string());
    let b = change.before.map_or_else(none, cells);
    let a = change.after.map_or_else(none, cells);
    std::array::from_fn(|i| {
        if b[i] == a[i] {
            a[i].clone()
        } else {
            format!("{} → {}", b[i], a[i])
        }
    })
}

/// A kernel name as ci-gate ever records one: a C identifier of at most 128 characters.
pub(crate) fn is_kernel_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_SHORT_LABEL_LEN
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// Checks figures read from a file: names are identifiers, numbers are within what any GPU
/// has (255 registers, 1024 threads, 64 CTAs per SM, 16 MiB of memory per figure).
pub(crate) fn check_resources(c: &Checker<'_>, key: &str, all: &[KernelResources]) -> Check {
    const MAX_BYTES: u64 = 16 << 20;
    c.count(key, all.len(), MAX_KERNEL_RESOURCES, "kernels")?;
    for (i, k) in all.iter().enumerate() {
        let key = format!("{key}[{i}]");
        if !is_kernel_name(&k.kernel) {
            return Err(c.fail(
                &format!("{key}.kernel"),
                format!(
                    "{} is not a kernel name (a C identifier of at most {MAX_SHORT_LABEL_LEN} characters)",
                    crate::text::quote(&k.kernel)
                ),
            ));
        }
        let bytes = [
            ("spill_store_bytes", k.spill_store_bytes),
            ("spill_load_bytes", k.spill_load_bytes),
            ("stack_frame_bytes", Some(k.stack_frame_bytes)),
            ("static_smem_bytes", Some(k.static_smem_bytes)),
            ("dynamic_smem_bytes", Some(k.dynamic_smem_bytes)),
        ];
        for (field, v) in bytes {
            if v.is_some_and(|v| v > MAX_BYTES) {
                return Err(c.fail(
                    &format!("{key}.{field}"),
                    format!("more than {MAX_BYTES} bytes"),
                ));
            }
        }
        if k.registers > 255 {
            return Err(c.fail(&format!("{key}.registers"), "more than 255 registers"));
        }
        if !(1..=1024).contains(&k.threads_per_block) {
            return Err(c.fail(
                &format!("{key}.threads_per_block"),
                "not between 1 and 1024 threads",
            ));
        }
        if k.max_ctas_per_sm.is_some_and(|n| n > 64) {
            return Err(c.fail(&format!("{key}.max_ctas_per_sm"), "more than 64 CTAs"));
        }
        if let Some(n) = &k.note {
            c.text(&format!("{key}.note"), n, MAX_WARNING_LEN)?;
        }
    }
    Ok(())
}

/// Replaces control, bidirectional and zero-width characters in the notes.
pub(crate) fn neutralise_resources(all: &mut [KernelResources]) {
    for k in all {
        if let Some(n) = &mut k.note {
            *n = crate::text::clean_text(n);
        }
    }
}

#[cfg(test)]
pub(crate) fn sample(side: ResourceSide, kernel: &str, registers: u32) -> KernelResources {
    KernelResources {
        side,
        kernel: kernel.into(),
        registers,
        spill_store_bytes: Some(0),
        spill_load_bytes: Some(0),
        stack_frame_bytes: 0,
        static_smem_bytes: 0,
        dynamic_smem_bytes: 32768,
        threads_per_block: 128,
        max_ctas_per_sm: Some(2),
        note: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn only_kernels_whose_figures_moved_are_changes() {
        let base = [
            sample(ResourceSide::Base, "a", 128),
            sample(ResourceSide::Base, "b", 128),
        ];
        let mut cand = [
            sample(ResourceSide::Candidate, "a", 168),
            sample(ResourceSide::Candidate, "b", 128),
        ];
        cand[1].note = Some("a note is not a figure".into());
        let (changes, unchanged) = resource_changes(&base, &cand);
        assert_eq!(unchanged, 1);
        assert_eq!(changes.len(), 1);
        assert_eq!(changes[0].kernel, "a");
        let cells = change_cells(&changes[0]);
        assert_eq!(cells[0], "128 → 168");
        assert_eq!(cells[1], "0/0");
        cand[0].spill_store_bytes = None;
        let (changes, _) = resource_changes(&base, &cand);
        assert_eq!(change_cells(&changes[0])[1], "0/0 → ?/0");
        let (changes, unchanged) = resource_changes(&base[..1], &[]);
        assert_eq!((changes.len(), unchanged), (1, 0));
        assert_eq!(change_cells(&changes[0])[0], "128 → —");
    }

    #[test]
    fn files_with_odd_names_or_figures_are_refused() {
        let c = Checker::at(Path::new("r.json"), None);
        let good = sample(ResourceSide::Base, "attention_fwd_f16_d128", 168);
        assert!(check_resources(&c, "kernel_resources", std::slice::from_ref(&good)).is_ok());
        for bad in [
            KernelResources {
                kernel: "a\u{202e}b".into(),
                ..good.clone()
            },
            KernelResources {
                kernel: "".into(),
                ..good.clone()
            },
            KernelResources {
                kernel: "9k".into(),
                ..good.clone()
            },
            KernelResources {
                registers: 256,
                ..good.clone()
            },
            KernelResources {
                threads_per_block: 0,
                ..good.clone()
            },
            KernelResources {
                spill_load_bytes: Some(u64::MAX),
                ..good.clone()
            },
            KernelResources {
                max_ctas_per_sm: Some(1000),
                ..good.clone()
            },
        ] {
            let e = check_resources(&c, "kernel_resources", &[bad]).unwrap_err();
            assert!(
                e.to_string().starts_with("r.json: kernel_resources[0]."),
                "{e}"
            );
        }
    }
}
