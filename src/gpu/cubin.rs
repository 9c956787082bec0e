//! The policy for the timed kernel's compiled module: what a CUBIN of `attention.cu` may not
//! contain, read from its ELF symbol and section tables (the CUBIN is attacker-produced, via
//! the compiler: every read is bounds-checked by the `object` crate and nothing here panics).
//!
//! Refused:
//! - writable device memory (`__device__` and `__managed__` variables, and any other
//!   writable global data such as string literals): in NVRTC 13 CUBINs these are symbols in
//!   the `.nv.global` (zero-initialised, NOBITS) and `.nv.global.init` (initialised) sections,
//!   flagged `SHF_WRITE | SHF_ALLOC`. State that survives a launch lets a kernel memoise its
//!   result and skip the work on later timed launches. Shared (`.nv.shared.*`) and local
//!   (`.nv.local.*`) memory belong to one block or thread of one launch and are allowed, as
//!   is `__constant__` data (`.nv.constant*`, read-only on the device: the `NAME_launch`
//!   arrays);
//! - calls into device-side libraries, which NVRTC 13 leaves as undefined function symbols
//!   resolved at load time: `malloc`/`free` (a heap that survives launches), `vprintf`
//!   (device `printf`: its output reaches the CI log, where a line can be a GitHub workflow
//!   command), `__assertfail` (device `assert`: a message in the log and a context that
//!   dies), and any other undefined symbol but the shared-memory reservations NVRTC itself
//!   emits for sm_90 (`.nv.reservedSmem.offset0`).

use object::Endianness;
use object::elf::{self, FileHeader64};
use object::read::elf::{FileHeader, SectionHeader, Sym};

use super::error::GpuError;
use crate::text::quote;

const README: &str = "(kernels/README.md)";

/// Refuses a CUBIN of the untrusted `file` (attention.cu) that has writable device memory or
/// calls a device-side library: one sentence naming the file, the symbol and why.
pub fn check_untrusted_cubin(cubin: &[u8], file: &str) -> Result<(), GpuError> {
    match first_violation(cubin) {
        Ok(None) => Ok(()),
        Ok(Some(v)) => Err(GpuError::Refused(v.sentence(file))),
        Err(why) => Err(GpuError::Refused(format!(
            "{file}: its compiled module cannot be checked, so it is refused: {why} {README}"
        ))),
    }
}

#[derive(Debug, PartialEq, Eq)]
enum Violation {
    /// An undefined (library) symbol.
    Call(String),
    /// Writable global data: the symbol (or none) and its section.
    Writable {
        symbol: Option<String>,
        section: String,
    },
}

impl Violation {
    fn sentence(&self, file: &str) -> String {
        match self {
            Violation::Call(name) => {
                let (what, why) = match name.as_str() {
                    "malloc" | "free" | "__nv_aligned_device_malloc" => (
                        "device-side heap memory",
                        "memory that survives a launch lets a kernel reuse earlier work instead of doing it",
                    ),
                    "vprintf" => (
                        "device printf",
                        "its output reaches the CI log, where a line can be a GitHub workflow command",
                    ),
                    "__assertfail" => (
                        "device assert",
                        "its message reaches the CI log, where a line can be a GitHub workflow command",
                    ),
                    _ => (
                        "a device-side library function",
                        "the timed kernel must be self-contained",
                    ),
                };
                format!(
                    "{file}: the kernel module calls {} ({what}), which is refused: {why} {README}",
                    quote(name)
                )
            }
            Violation::Writable { symbol, section } => {
                let what = match symbol {
                    Some(s) => format!("writable device memory {} in {}", quote(s), quote(section)),
                    None => format!("writable device memory in {}", quote(section)),
                };
                format!(
                    "{file}: the kernel module has {what}, which is refused: state that survives a launch lets a kernel reuse earlier work instead of doing it (__device__ and __managed__ variables; keep constants in __constant__ memory or an enum) {README}"
                )
            }
        }
    }
}

/// Symbols NVRTC leaves undefined in modules that do nothing outside themselves: the offsets
/// of shared memory the driver reserves (sm_90 and later).
fn is_reservation(name: &[u8]) -> bool {
    name.starts_with(b".nv.reserved") || name.starts_with(b"__nv_reserved")
}

/// Shared memory (per block) and local memory (per thread) of one launch.
fn is_launch_memory(section: &[u8]) -> bool {
    section == b".nv.shared"
        || section.starts_with(b".nv.shared.")
        || section == b".nv.local"
        || section.starts_with(b".nv.local.")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn first_violation(data: &[u8]) -> Result<Option<Violation>, String> {
    let header = FileHeader64::<Endianness>::parse(data)
        .map_err(|e| format!("it is not a 64-bit ELF file ({e})"))?;
    let endian = header
        .endian()
        .map_err(|e| format!("its ELF header is invalid ({e})"))?;
    if header.e_machine(endian) != elf::EM_CUDA {
        return Err("it is not a CUDA module (ELF machine type)".into());
    }
    let sections = header
        .sections(endian, data)
        .map_err(|e| format!("its section table is invalid ({e})"))?;
    let symbols = sections
        .symbols(endian, data, elf::SHT_SYMTAB)
        .map_err(|e| format!("its symbol table is invalid ({e})"))?;
    let name_of = |sym: &elf::Sym64<Endianness>| {
        symbols
            .symbol_name(endian, sym)
            .map_err(|e| format!("a symbol name is invalid ({e})"))
    };

    // Calls first: printf's format strings are writable data too, and "calls vprintf" says
    // what the kernel does.
    for sym in symbols.iter() {
        if sym.is_undefined(endian) {
            let name = name_of(sym)?;
            if !name.is_empty() && !is_reservation(name) {
                return Ok(Some(Violation::Call(text(name))));
            }
        }
    }

    for (index, section) in sections.enumerate() {
        let flags = section.sh_flags(endian);
        if !(flags.contains(elf::SHF_WRITE) && flags.contains(elf::SHF_ALLOC)) {
            continue;
        }
        let section_name = sections
            .section_name(endian, section)
            .map_err(|e| format!("a section name is invalid ({e})"))?;
        if is_launch_memory(section_name) {
            continue;
        }
        let mut symbol = None;
        for (sym_index, sym) in symbols.enumerate() {
            let in_section = symbols
                .symbol_section(endian, sym, sym_index)
                .map_err(|e| format!("a symbol's section is invalid ({e})"))?;
            if in_section == Some(index) && sym.st_type() != elf::STT_SECTION {
                symbol = Some(text(name_of(sym)?));
                break;
            }
        }
        if symbol.is_some() || section.sh_size(endian) > 0 {
            return Ok(Some(Violation::Writable {
                symbol,
                section: text(section_name),
            }));
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> Vec<u8> {
        std::fs::read(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/fixtures/cubin")
                .join(format!("{name}.cubin")),
        )
        .unwrap()
    }

    #[test]
    fn a_self_contained_module_passes() {
        assert_eq!(first_violation(&fixture("clean")), Ok(None));
        assert!(check_untrusted_cubin(&fixture("clean"), "attention.cu").is_ok());
    }

    #[test]
    fn writable_device_memory_is_refused_by_symbol() {
        for (name, symbol, section) in [
            ("device_var", "memo", ".nv.global"),
            ("device_init", "counter", ".nv.global.init"),
            ("managed", "m", ".nv.global"),
        ] {
            assert_eq!(
                first_violation(&fixture(name)),
                Ok(Some(Violation::Writable {
                    symbol: Some(symbol.into()),
                    section: section.into()
                })),
                "{name}"
            );
        }
        let e = check_untrusted_cubin(&fixture("device_var"), "kernels/attention.cu")
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("kernels/attention.cu: the kernel module has writable device memory \"memo\" in \".nv.global\", which is refused: state that survives a launch"),
            "{e}"
        );
    }

    #[test]
    fn device_library_calls_are_refused_by_symbol() {
        for (name, symbol, why) in [
            ("malloc", "malloc", "device-side heap memory"),
            ("printf", "vprintf", "workflow command"),
            ("assert", "__assertfail", "workflow command"),
        ] {
            let e = check_untrusted_cubin(&fixture(name), "kernels/attention.cu")
                .unwrap_err()
                .to_string();
            assert!(
                e.starts_with(&format!(
                    "kernels/attention.cu: the kernel module calls \"{symbol}\""
                )) && e.contains(why),
                "{name}: {e}"
            );
        }
    }

    #[test]
    fn what_is_not_a_cuda_elf_is_refused() {
        for bad in [
            &b""[..],
            b"\x7fELF",
            b"not an elf at all, just bytes of text",
        ] {
            let e = check_untrusted_cubin(bad, "a.cu").unwrap_err().to_string();
            assert!(
                e.starts_with("a.cu: its compiled module cannot be checked"),
                "{e}"
            );
        }
        let mut other_machine = fixture("clean");
        other_machine[18] = 62; // EM_X86_64
        assert_eq!(
            first_violation(&other_machine),
            Err("it is not a CUDA module (ELF machine type)".into())
        );
    }

    #[test]
    fn no_input_panics() {
        use proptest::prelude::*;
        let base = fixture("printf");
        let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig {
            cases: 2000,
            ..ProptestConfig::default()
        });
        runner
            .run(
                &(
                    0..base.len(),
                    proptest::collection::vec((0..base.len(), any::<u8>()), 1..16),
                ),
                |(cut, edits)| {
                    let mut bytes = base.clone();
                    for (at, b) in edits {
                        bytes[at] = b;
                    }
                    let _ = check_untrusted_cubin(&bytes, "x.cu");
                    let _ = check_untrusted_cubin(&bytes[..cut], "x.cu");
                    Ok(())
                },
            )
            .unwrap();
    }
}
