//! A candidate's `attention.cu` as the evaluator compiles it ([`KernelText`]: its defines
//! written before the source, so that they reach the candidate's side alone), and the
//! compile ahead of its measuring ([`Precompile`]), on the CPU while the GPU measures others.
//!
//! The evaluator's side of a source; reading a kernel file as untrusted input is
//! `kernel::source`.
//!
//! Why defines go into the text rather than onto NVRTC's command line: the config's
//! `compile.defines` are passed to both sides of an A/B run (`-D`), and a candidate's own
//! must change the candidate only. `#undef NAME` then `#define NAME VALUE` before the source
//! is what `-DNAME=VALUE` means to the preprocessor (the candidate's value wins over a
//! config's define of the same name), and `#line 1` after them keeps the compiler's
//! diagnostics on the source's own line numbers. The text's SHA-256 ([`KernelText::kernel_sha256`])
//! is what the compile cache and the measuring process see, so the cache is keyed by source
//! and defines.
//!
//! Cost: [`Precompile::check`] is one sandboxed NVRTC compile on a GPU host (seconds of one
//! core for the shipped kernel; a cache hit when the same text was compiled before), one read
//! of the file on the simulated GPU.

use std::path::Path;
use std::time::Instant;

use sha2::{Digest, Sha256};

use crate::backend::GpuError;
use crate::kernel::source::MAX_SOURCE_BYTES;
use crate::kernel::{Arch, KernelSource, TIMED_FILE};

/// A candidate's source and defines, and the text compiled from them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct KernelText {
    /// SHA-256 of the source as given.
    pub source_sha256: String,
    pub source: String,
    pub defines: Vec<String>,
    /// The text compiled: the defines, then the source.
    pub text: String,
    /// SHA-256 of `text`.
    pub kernel_sha256: String,
}

fn sha256(text: &str) -> String {
    hex::encode(Sha256::digest(text.as_bytes()))
}

/// A candidate whose source with its defines is larger than a kernel source may be: the
/// evaluator refuses it unmeasured (a `Refused` verdict), the leaderboard as a bad entry.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "the source with its defines is {bytes} bytes, larger than the {} KiB a kernel source may have",
    MAX_SOURCE_BYTES >> 10
)]
pub struct TooLarge {
    pub bytes: usize,
}

impl KernelText {
    /// `source` with `defines` (each already checked as `compile.defines` are): the text is
    /// the source itself without defines, so a candidate without defines is compiled as its
    /// file is. Refused (one sentence) where the text would be larger than a kernel source
    /// may be.
    pub fn new(source: String, defines: &[String]) -> Result<KernelText, TooLarge> {
        let text = if defines.is_empty() {
            source.clone()
        } else {
            let mut t = String::from("// ci-gate eval: the candidate's defines\n");
            for d in defines {
                let (name, value) = d.split_once('=').unwrap_or((d, "1"));
                t.push_str(&format!("#undef {name}\n#define {name} {value}\n"));
            }
            t.push_str("#line 1\n");
            t.push_str(&source);
            t
        };
        if text.len() as u64 > MAX_SOURCE_BYTES {
            return Err(TooLarge { bytes: text.len() });
        }
        Ok(KernelText {
            source_sha256: sha256(&source),
            kernel_sha256: sha256(&text),
            source,
            defines: defines.to_vec(),
            text,
        })
    }

    /// Writes the text as `dir/attention.cu` (creating `dir`, a directory of the evaluator's
    /// own: never a path made from a candidate's strings).
    pub fn write(&self, dir: &Path) -> std::io::Result<()> {
        std::fs::create_dir_all(dir)?;
        std::fs::write(dir.join(TIMED_FILE), &self.text)
    }
}

/// What compiling ahead means on this evaluator's device.
#[derive(Clone, Debug)]
pub(crate) enum Precompile {
    /// NVRTC for each target (its architecture and, where known, the most shared memory a
    /// block may opt into there), with the config's defines: into the compile cache the
    /// measuring process then reads, through the sandbox and the CUBIN policy (and the entry
    /// checks where the limit is known), so that a refusal is found here.
    Nvrtc {
        targets: Vec<(Arch, Option<u32>)>,
        defines: Vec<String>,
    },
    /// The simulated GPU: the file read and checked as the simulation reads it (the source
    /// rules, and its `ci-gate-sim` directives).
    Simulated,
}

impl Precompile {
    /// Compiles (or reads) `dir/attention.cu` of the text `text`; an error is the gate's own
    /// (a refusal: `GpuError::Refused`; a compile error with its diagnostics). The submitted
    /// source is checked for file access on its own first, so that a refusal names the
    /// source's line.
    pub fn check(&self, text: &KernelText, dir: &Path) -> Result<f64, GpuError> {
        let started = Instant::now();
        crate::kernel::lexcheck::check_no_file_access(&text.source, TIMED_FILE)?;
        let source = KernelSource::read(&dir.join(TIMED_FILE))?;
        match self {
            Precompile::Simulated => {
                crate::sim::SimKernel::parse(&source.text, &source.hash)
                    .map_err(|e| GpuError::Kernel(format!("{TIMED_FILE}: {e}")))?;
            }
            Precompile::Nvrtc { targets, defines } => {
                let source = source.with_defines(defines);
                for (arch, max_smem) in targets {
                    let module = crate::kernel::compile::compile_module(&source, *arch)?;
                    crate::kernel::cubin::check_untrusted_cubin(&module.cubin, TIMED_FILE)?;
                    if let Some(max) = max_smem {
                        crate::kernel::entries::check_static(&module.cubin, *max).map_err(
                            |problems| {
                                GpuError::Refused(format!(
                                    "{TIMED_FILE} is refused for {}: the gate could not launch it: {}",
                                    arch.target(),
                                    problems.join("; ")
                                ))
                            },
                        )?;
                    }
                }
            }
        }
        Ok(started.elapsed().as_secs_f64())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defines_go_before_the_source_and_line_numbers_stay_the_source_s() {
        let plain = KernelText::new("int a;\n".into(), &[]).unwrap();
        assert_eq!(plain.text, "int a;\n");
        assert_eq!(plain.kernel_sha256, plain.source_sha256);
        let d = KernelText::new("int a;\n".into(), &["BN=64".into(), "FAST".into()]).unwrap();
        assert_eq!(
            d.text,
            "// ci-gate eval: the candidate's defines\n#undef BN\n#define BN 64\n#undef FAST\n#define FAST 1\n#line 1\nint a;\n"
        );
        assert_eq!(d.source_sha256, plain.source_sha256);
        assert_ne!(d.kernel_sha256, plain.kernel_sha256);
        let near = "/".repeat(MAX_SOURCE_BYTES as usize - 10);
        assert!(KernelText::new(near.clone(), &[]).is_ok());
        let e = KernelText::new(near, &["X=1".into()]).unwrap_err();
        assert!(e.to_string().contains("larger than the 1024 KiB"), "{e}");
    }

    #[test]
    fn the_simulated_precompile_reads_and_checks_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let ok = KernelText::new("// ci-gate-sim: factor=0.9\n".into(), &[]).unwrap();
        ok.write(dir.path()).unwrap();
        assert!(Precompile::Simulated.check(&ok, dir.path()).is_ok());
        let bad = KernelText::new("// ci-gate-sim: speed=2\n".into(), &[]).unwrap();
        bad.write(dir.path()).unwrap();
        let e = Precompile::Simulated
            .check(&bad, dir.path())
            .unwrap_err()
            .to_string();
        assert!(e.contains("unknown key"), "{e}");
        let include = KernelText::new("\n#include \"/proc/self/environ\"\n".into(), &[]).unwrap();
        include.write(dir.path()).unwrap();
        match Precompile::Simulated.check(&include, dir.path()) {
            Err(GpuError::Refused(why)) => assert!(why.contains(":2"), "{why}"),
            other => panic!("{other:?}"),
        }
    }
}
