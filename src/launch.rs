//! How the host launched each shape's kernel: the module entry its form rules picked
//! (kernels/README.md, "Small grids, long sequences") and the grid it sized ("Filling the
//! GPU"). Results record it per shape and side, and baselines store the candidate's, so that
//! a comparison with a stored run can say when the same shape ran as another launch: the
//! time then moved with no change of the code measured (a release that changes the host's
//! launch rules) or with the kernel's own launch constants (a change under test). Plain
//! data, never part of a verdict.
//!
//! Read from results and baseline files, so every value is checked ([`check_launch`]) and
//! the kernel name is an identifier before any report shows it.

use serde::{Deserialize, Serialize};

use crate::validate::{Check, Checker};

/// One shape's launch, as the host made it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Launch {
    /// The module entry launched (`attention_fwd_f16_d64_small`).
    pub kernel: String,
    /// gridDim (x: CTAs per (batch, head); y: batch · heads).
    pub grid: [u32; 3],
    pub threads_per_block: u32,
    pub dynamic_smem_bytes: u32,
}

impl Launch {
    /// `attention_fwd_f16_d64 with grid 4 × 64` (the block and shared memory only where they
    /// are what differs).
    fn describe(&self, with_block: bool) -> String {
        let [x, y, z] = self.grid;
        let grid = if z == 1 {
            format!("{x} × {y}")
        } else {
            format!("{x} × {y} × {z}")
        };
        let mut s = format!("{} with grid {grid}", self.kernel);
        if with_block {
            s.push_str(&format!(
                ", {} threads and {} B of dynamic shared memory",
                self.threads_per_block, self.dynamic_smem_bytes
            ));
        }
        s
    }
}

/// What a comparison with a stored run should say of one shape: `None` where either launch is
/// unknown (files of earlier versions) or the two are the same.
pub fn launched_differently(
    shape: &str,
    now: Option<&Launch>,
    stored: Option<&Launch>,
) -> Option<String> {
    let (now, stored) = (now?, stored?);
    if now == stored {
        return None;
    }
    let block = now.threads_per_block != stored.threads_per_block
        || now.dynamic_smem_bytes != stored.dynamic_smem_bytes;
    Some(format!(
        "{shape}: launched as {} where the stored run launched {}: the comparison with it times the launch as well as the code",
        now.describe(block),
        stored.describe(block)
    ))
}

/// Checks a launch read from a file (`key` names it): the kernel is an identifier, the grid
/// within CUDA's limits (x < 2³¹, y and z < 2¹⁶), 1 to 1024 threads, at most 16 MiB of
/// shared memory.
pub(crate) fn check_launch(c: &Checker<'_>, key: &str, l: &Launch) -> Check {
    if !crate::resources::is_kernel_name(&l.kernel) {
        return Err(c.fail(
            &format!("{key}.kernel"),
            format!(
                "{} is not a kernel name (a C identifier)",
                crate::text::quote(&l.kernel)
            ),
        ));
    }
    let [x, y, z] = l.grid;
    if !(1..1 << 31).contains(&x) || !(1..1 << 16).contains(&y) || !(1..1 << 16).contains(&z) {
        return Err(c.fail(
            &format!("{key}.grid"),
            format!("{x} × {y} × {z} is not a CUDA grid"),
        ));
    }
    if !(1..=1024).contains(&l.threads_per_block) {
        return Err(c.fail(
            &format!("{key}.threads_per_block"),
            "not between 1 and 1024 threads",
        ));
    }
    if l.dynamic_smem_bytes > 16 << 20 {
        return Err(c.fail(&format!("{key}.dynamic_smem_bytes"), "more than 16 MiB"));
    }
    Ok(())
}

#[cfg(test)]
pub(crate) fn sample(kernel: &str, grid_x: u32) -> Launch {
    Launch {
        kernel: kernel.into(),
        grid: [grid_x, 64, 1],
        threads_per_block: 256,
        dynamic_smem_bytes: 83_040,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_launch_or_an_unknown_one_says_nothing() {
        let a = sample("attention_fwd_f16_d64", 4);
        assert_eq!(launched_differently("s", Some(&a), Some(&a.clone())), None);
        assert_eq!(launched_differently("s", Some(&a), None), None);
        assert_eq!(launched_differently("s", None, Some(&a)), None);
    }

    #[test]
    fn another_grid_or_entry_is_named_with_both_launches() {
        let now = sample("attention_fwd_f16_d64", 1);
        let stored = sample("attention_fwd_f16_d64", 2);
        let note = launched_differently("b6h16s512d64_f16", Some(&now), Some(&stored)).unwrap();
        assert_eq!(
            note,
            "b6h16s512d64_f16: launched as attention_fwd_f16_d64 with grid 1 × 64 where the \
             stored run launched attention_fwd_f16_d64 with grid 2 × 64: the comparison with it \
             times the launch as well as the code"
        );
        let mut small = sample("attention_fwd_f16_d64_small", 8);
        small.dynamic_smem_bytes = 74_824;
        let note = launched_differently("s", Some(&small), Some(&stored)).unwrap();
        assert!(
            note.contains("attention_fwd_f16_d64_small with grid 8 × 64, 256 threads and 74824 B")
                && note.contains("attention_fwd_f16_d64 with grid 2 × 64, 256 threads and 83040 B"),
            "{note}"
        );
    }

    #[test]
    fn a_hostile_launch_is_refused_naming_the_key() {
        let c = Checker::at(std::path::Path::new("baselines/x/pr.json"), None);
        let ok = sample("attention_fwd_f16_d64", 4);
        assert!(check_launch(&c, "shapes[0].launch", &ok).is_ok());
        type Spoil = fn(&mut Launch);
        let cases: [(&str, Spoil); 6] = [
            ("shapes[0].launch.kernel", |l| l.kernel = "a b; rm".into()),
            ("shapes[0].launch.kernel", |l| l.kernel = String::new()),
            ("shapes[0].launch.grid", |l| l.grid = [0, 64, 1]),
            ("shapes[0].launch.grid", |l| l.grid = [1, 1 << 16, 1]),
            ("shapes[0].launch.threads_per_block", |l| {
                l.threads_per_block = 2048
            }),
            ("shapes[0].launch.dynamic_smem_bytes", |l| {
                l.dynamic_smem_bytes = u32::MAX
            }),
        ];
        for (key, spoil) in cases {
            let mut bad = ok.clone();
            spoil(&mut bad);
            let e = check_launch(&c, "shapes[0].launch", &bad)
                .unwrap_err()
                .to_string();
            assert!(e.contains(key) && e.contains("baselines/x/pr.json"), "{e}");
        }
    }
}
