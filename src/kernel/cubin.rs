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

use crate::gpu_error::GpuError;
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

type Sections<'a> = object::read::elf::SectionTable<'a, FileHeader64<Endianness>>;
type Symbols<'a> = object::read::elf::SymbolTable<'a, FileHeader64<Endianness>>;

/// Why a CUBIN cannot be read (one clause, after the file's name in the caller's sentence).
/// Typed so that a caller can tell a file that is no CUDA module from one whose tables or
/// entries are malformed; the GPU loader, `ci-gate compile` and the policy check show it as
/// it is.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum CubinError {
    #[error("it is not a 64-bit ELF file ({0})")]
    NotElf(object::Error),
    #[error("its ELF header is invalid ({0})")]
    Header(object::Error),
    #[error("it is not a CUDA module (ELF machine type)")]
    NotCuda,
    /// `table` is "section" or "symbol".
    #[error("its {table} table is invalid ({error})")]
    Table {
        table: &'static str,
        error: object::Error,
    },
    /// `what` is one of "a symbol name", "a section name", "a symbol's section".
    #[error("{what} is invalid ({error})")]
    Entry {
        what: &'static str,
        error: object::Error,
    },
    #[error("section {section} is unreadable ({error})")]
    Unreadable {
        section: String,
        error: object::Error,
    },
    #[error("it records no register count for {}", quote(kernel))]
    NoRegisterCount { kernel: String },
    #[error("it records no stack frame size for {}", quote(kernel))]
    NoFrameSize { kernel: String },
    #[error("a constant symbol's name is not UTF-8")]
    ConstantNotUtf8,
    #[error("a constant symbol has no usable name")]
    ConstantUnnamed,
    #[error("the constant symbol {} lies outside its section", quote(symbol))]
    ConstantOutside { symbol: String },
}

/// A `map_err` for a malformed entry of a table (`what` names it, as in [`CubinError::Entry`]).
fn invalid(what: &'static str) -> impl Fn(object::Error) -> CubinError {
    move |error| CubinError::Entry { what, error }
}

/// A CUDA module's byte order, section table and symbol table, or why it is not one (one
/// clause). Every read is bounds-checked by `object`.
fn cuda_elf(data: &[u8]) -> Result<(Endianness, Sections<'_>, Symbols<'_>), CubinError> {
    let header = FileHeader64::<Endianness>::parse(data).map_err(CubinError::NotElf)?;
    let endian = header.endian().map_err(CubinError::Header)?;
    if header.e_machine(endian) != elf::EM_CUDA {
        return Err(CubinError::NotCuda);
    }
    let sections = header
        .sections(endian, data)
        .map_err(|error| CubinError::Table {
            table: "section",
            error,
        })?;
    let symbols = sections
        .symbols(endian, data, elf::SHT_SYMTAB)
        .map_err(|error| CubinError::Table {
            table: "symbol",
            error,
        })?;
    Ok((endian, sections, symbols))
}

fn first_violation(data: &[u8]) -> Result<Option<Violation>, CubinError> {
    let (endian, sections, symbols) = cuda_elf(data)?;
    let name_of = |sym: &elf::Sym64<Endianness>| {
        symbols
            .symbol_name(endian, sym)
            .map_err(invalid("a symbol name"))
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
            .map_err(invalid("a section name"))?;
        if is_launch_memory(section_name) {
            continue;
        }
        let mut symbol = None;
        for (sym_index, sym) in symbols.enumerate() {
            let in_section = symbols
                .symbol_section(endian, sym, sym_index)
                .map_err(invalid("a symbol's section"))?;
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

/// What the module itself records of one entry (a `__global__` function): its register
/// count (`EIATTR_REGCOUNT` in `.nv.info`, else the high byte of `.text.<name>`'s `sh_info`,
/// where older toolchains put it), its stack frame (`EIATTR_FRAME_SIZE`) and its static shared
/// memory (the size of `.nv.shared.<name>`, none where there is no such section).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct CubinKernel {
    pub name: String,
    pub registers: u32,
    pub stack_frame_bytes: u64,
    pub static_smem_bytes: u64,
}

/// `.nv.info` attributes (cuobjdump's EIATTR numbering) read here.
const EIATTR_FRAME_SIZE: u8 = 0x11;
const EIATTR_REGCOUNT: u8 = 0x2f;
/// An attribute whose 16-bit field is the size of the payload that follows.
const EIFMT_SVAL: u8 = 0x04;

/// The (symbol index, value) attributes of an `.nv.info` section: each attribute is a 4-byte
/// header (format, attribute, 16-bit field); with [`EIFMT_SVAL`] the field is the size of a
/// payload that follows, which for the per-function attributes read here is the function's
/// symbol index and the value, two u32. A truncated section ends the walk, it never panics.
fn info_attributes(section: &[u8]) -> Vec<(u8, usize, u32)> {
    let mut out = Vec::new();
    let mut rest = section;
    while let Some((header, tail)) = rest.split_first_chunk::<4>() {
        let [format, attribute, lo, hi] = *header;
        rest = tail;
        if format != EIFMT_SVAL {
            continue;
        }
        let size = usize::from(u16::from_le_bytes([lo, hi]));
        let Some((payload, tail)) = rest.split_at_checked(size) else {
            break;
        };
        rest = tail;
        if let Some((symbol, value)) = payload.split_first_chunk::<4>()
            && let Ok(value) = <[u8; 4]>::try_from(value)
        {
            let symbol = u32::from_le_bytes(*symbol);
            if let Ok(symbol) = usize::try_from(symbol) {
                out.push((attribute, symbol, u32::from_le_bytes(value)));
            }
        }
    }
    out
}

/// The entries of a CUBIN with what the module records of each ([`CubinKernel`]), in symbol
/// order; an error (one clause) where the ELF cannot be read or an entry has no register
/// count or frame size. The CUBIN is attacker-produced: every read is bounds-checked.
pub(crate) fn cubin_kernels(data: &[u8]) -> Result<Vec<CubinKernel>, CubinError> {
    let (endian, sections, symbols) = cuda_elf(data)?;
    let mut named = std::collections::HashMap::new();
    for (index, section) in sections.enumerate() {
        let name = sections
            .section_name(endian, section)
            .map_err(invalid("a section name"))?;
        named.insert(name.to_vec(), (index, section));
    }
    let mut registers = std::collections::HashMap::new();
    let mut frames = std::collections::HashMap::new();
    for (name, (_, section)) in &named {
        if !name.starts_with(b".nv.info") {
            continue;
        }
        let bytes = section
            .data(endian, data)
            .map_err(|error| CubinError::Unreadable {
                section: text(name),
                error,
            })?;
        for (attribute, symbol, value) in info_attributes(bytes) {
            match attribute {
                EIATTR_REGCOUNT => registers.insert(symbol, value),
                EIATTR_FRAME_SIZE => frames.insert(symbol, value),
                _ => None,
            };
        }
    }
    let mut kernels = Vec::new();
    for (index, sym) in symbols.enumerate() {
        if sym.st_type() != elf::STT_FUNC || sym.is_undefined(endian) {
            continue;
        }
        let name = symbols
            .symbol_name(endian, sym)
            .map_err(invalid("a symbol name"))?;
        let text_name = [b".text.".as_slice(), name].concat();
        let info_name = [b".nv.info.".as_slice(), name].concat();
        let Some((text_index, text_section)) = named.get(&text_name) else {
            continue;
        };
        let in_section = symbols
            .symbol_section(endian, sym, index)
            .map_err(invalid("a symbol's section"))?;
        // An entry has its own attribute section; a device function called by one does not.
        if in_section != Some(*text_index) || !named.contains_key(&info_name) {
            continue;
        }
        let shown = text(name);
        let packed = text_section.sh_info(endian) >> 24;
        let registers = match registers.get(&index.0) {
            Some(&r) => r,
            None if packed > 0 => packed,
            None => {
                return Err(CubinError::NoRegisterCount { kernel: shown });
            }
        };
        let frame = frames
            .get(&index.0)
            .ok_or_else(|| CubinError::NoFrameSize {
                kernel: shown.clone(),
            })?;
        let static_smem_bytes = named
            .get(&[b".nv.shared.".as_slice(), name].concat())
            .map_or(0, |(_, s)| s.sh_size(endian));
        kernels.push(CubinKernel {
            name: shown,
            registers,
            stack_frame_bytes: u64::from(*frame),
            static_smem_bytes,
        });
    }
    Ok(kernels)
}

/// Whether a CUBIN defines `name`: its string table holds it as a whole, NUL-delimited
/// string (so `NAME_small` is not found inside `NAME_small_launch`).
pub fn has_symbol(cubin: &[u8], name: &str) -> bool {
    let mut needle = Vec::with_capacity(name.len() + 2);
    needle.push(0);
    needle.extend_from_slice(name.as_bytes());
    needle.push(0);
    cubin.windows(needle.len()).any(|w| w == needle.as_slice())
}

/// A `__constant__` section of a module (other than a kernel's own parameter bank,
/// `.nv.constant0.<kernel>`, which every launch fills afresh), located by one of its symbols:
/// on the device the section starts at that symbol's address less `symbol_offset`, and
/// spans `size` bytes (padding between symbols and after the last included).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ConstantSection {
    pub section: String,
    pub symbol: String,
    pub symbol_offset: u64,
    pub size: u64,
}

/// The `__constant__` sections of a module that hold at least one defined data symbol (the
/// first such symbol locates each). An error (one clause) where the ELF cannot be read. The
/// CUBIN is attacker-produced: every read is bounds-checked.
pub(crate) fn constant_sections(data: &[u8]) -> Result<Vec<ConstantSection>, CubinError> {
    let (endian, sections, symbols) = cuda_elf(data)?;
    let mut out: Vec<(usize, ConstantSection)> = Vec::new();
    for (index, sym) in symbols.enumerate() {
        if sym.is_undefined(endian) || sym.st_type() != elf::STT_OBJECT || sym.st_size(endian) == 0
        {
            continue;
        }
        let Some(section) = symbols
            .symbol_section(endian, sym, index)
            .map_err(invalid("a symbol's section"))?
        else {
            continue;
        };
        if out.iter().any(|(s, _)| *s == section.0) {
            continue;
        }
        let header = sections
            .section(section)
            .map_err(invalid("a symbol's section"))?;
        let name = sections
            .section_name(endian, header)
            .map_err(invalid("a section name"))?;
        if !name.starts_with(b".nv.constant") || name.starts_with(b".nv.constant0") {
            continue;
        }
        let symbol = symbols
            .symbol_name(endian, sym)
            .map_err(invalid("a symbol name"))?;
        let symbol = std::str::from_utf8(symbol).map_err(|_| CubinError::ConstantNotUtf8)?;
        if symbol.is_empty() || symbol.contains('\0') {
            return Err(CubinError::ConstantUnnamed);
        }
        let (offset, size) = (sym.st_value(endian), header.sh_size(endian));
        if offset
            .checked_add(sym.st_size(endian))
            .is_none_or(|end| end > size)
        {
            return Err(CubinError::ConstantOutside {
                symbol: symbol.to_owned(),
            });
        }
        out.push((
            section.0,
            ConstantSection {
                section: text(name),
                symbol: symbol.to_owned(),
                symbol_offset: offset,
                size,
            },
        ));
    }
    Ok(out.into_iter().map(|(_, s)| s).collect())
}

/// The `NAME_launch` constant of a module ({rows_per_block, threads_per_block,
/// dynamic_smem_bytes}, kernels/README.md), read from the symbol's bytes in its constant
/// section: what `ci-gate compile` can say of a launch without a GPU. `None` where the module
/// has no such symbol or its bytes are out of bounds.
pub(crate) fn launch_constant(data: &[u8], kernel: &str) -> Option<[u32; 3]> {
    let v = i32_constant(data, &format!("{kernel}_launch"), 3)?;
    Some([v[0] as u32, v[1] as u32, v[2] as u32])
}

/// The first `n` i32 of the `__constant__` array `symbol` of a module, read from the
/// symbol's bytes in its section: what the host reads with `cuModuleGetGlobal`, known
/// without a GPU. `None` where the module has no such symbol, it holds fewer than `n`
/// values, or its bytes are out of bounds.
pub(crate) fn i32_constant(data: &[u8], symbol: &str, n: usize) -> Option<Vec<i32>> {
    let header = FileHeader64::<Endianness>::parse(data).ok()?;
    let endian = header.endian().ok()?;
    let sections = header.sections(endian, data).ok()?;
    let symbols = sections.symbols(endian, data, elf::SHT_SYMTAB).ok()?;
    let len = n.checked_mul(4)?;
    for (index, sym) in symbols.enumerate() {
        if symbols.symbol_name(endian, sym).ok()? != symbol.as_bytes()
            || sym.st_size(endian) < len as u64
        {
            continue;
        }
        let section = symbols.symbol_section(endian, sym, index).ok()??;
        let bytes = sections.section(section).ok()?.data(endian, data).ok()?;
        let start = usize::try_from(sym.st_value(endian)).ok()?;
        let value = bytes.get(start..start.checked_add(len)?)?;
        return value
            .chunks_exact(4)
            .map(|w| <[u8; 4]>::try_from(w).ok().map(i32::from_le_bytes))
            .collect();
    }
    None
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
    fn constant_sections_are_found_by_a_symbol_and_nothing_else() {
        // clean.cubin: one `__constant__` array, one kernel (whose parameter bank is its own).
        let found = constant_sections(&fixture("clean")).unwrap();
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].symbol, "k_launch");
        assert!(found[0].section.starts_with(".nv.constant"));
        assert!(found[0].symbol_offset + 12 <= found[0].size);
        // writable globals are not constant data
        assert_eq!(constant_sections(&fixture("device_var")), Ok(vec![]));
        assert!(constant_sections(b"not an ELF").is_err());
        assert!(constant_sections(&fixture("clean")[..64]).is_err());
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
        assert_eq!(first_violation(&other_machine), Err(CubinError::NotCuda));
    }

    #[test]
    fn entries_are_read_with_their_registers_frame_and_shared_memory() {
        let kernels = cubin_kernels(&fixture("clean")).unwrap();
        assert!(!kernels.is_empty());
        for k in &kernels {
            assert!(k.registers > 0 && k.registers <= 255, "{k:?}");
        }
    }

    #[test]
    fn info_attributes_survive_truncation() {
        // REGCOUNT of symbol 7 = 38, then a header whose payload is cut short.
        let mut bytes = vec![
            0x04, 0x2f, 8, 0, 7, 0, 0, 0, 38, 0, 0, 0, 0x03, 0x1b, 0xff, 0,
        ];
        assert_eq!(info_attributes(&bytes), vec![(0x2f, 7, 38)]);
        bytes.extend_from_slice(&[0x04, 0x11, 8, 0, 7, 0]);
        assert_eq!(info_attributes(&bytes), vec![(0x2f, 7, 38)]);
        for cut in 0..bytes.len() {
            let _ = info_attributes(&bytes[..cut]);
        }
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
                    let _ = cubin_kernels(&bytes);
                    let _ = cubin_kernels(&bytes[..cut]);
                    let _ = launch_constant(&bytes, "k");
                    Ok(())
                },
            )
            .unwrap();
    }
}
