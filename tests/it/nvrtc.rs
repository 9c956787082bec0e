//! Every kernel compiles with NVRTC for the users' L4 (sm_89) and our H200 (sm_90, and sm_90a:
//! what the gate compiles for on compute capability 9.0, with the wgmma kernels), with no GPU:
//! NVRTC alone. CI installs the `nvidia-cuda-nvrtc` wheel and sets
//! CI_GATE_REQUIRE_NVRTC=1, so there a missing NVRTC fails instead of skipping. Elsewhere,
//! where build.rs finds no libnvrtc, `cargo test` lists these tests as ignored, with why.
//!
//! NVRTC runs in a sandboxed child that is the ci-gate executable (`nvrtc-sandbox`), so these
//! tests compile through the binary: its `compile` command, or the library with the binary
//! named as the compiler (a test executable cannot be that child).

use crate::common::stderr_text;
use std::path::Path;

use crate::common::{bin, require_nvrtc};
use ci_gate::kernel::compile::{
    MAX_COMPILE_THREADS, compile_uncached_for, compile_uncached_module_for,
    compile_uncached_module_on,
};
use ci_gate::kernel::cubin::check_untrusted_cubin;
use ci_gate::kernel::{Arch, KernelSource};

/// The L4, portable Hopper (the mma.sync kernels), Hopper with wgmma (what the gate uses there).
const TARGETS: [&str; 3] = ["sm_89", "sm_90", "sm_90a"];

/// The shipped attention.cu compiled for each of [`TARGETS`], in that order, CUBIN and
/// compiler log: once for the whole test binary (the suite's largest compile; four tests
/// read these).
fn shipped_attention_modules() -> &'static [(Vec<u8>, String)] {
    static MODULES: std::sync::OnceLock<Vec<(Vec<u8>, String)>> = std::sync::OnceLock::new();
    MODULES.get_or_init(|| {
        let src =
            KernelSource::read(&Path::new(env!("CARGO_MANIFEST_DIR")).join("kernels/attention.cu"))
                .unwrap();
        TARGETS
            .iter()
            .map(|target| {
                compile_uncached_module_for(&src, target)
                    .unwrap_or_else(|e| panic!("attention.cu for {target}: {e}"))
            })
            .collect()
    })
}

/// [`shipped_attention_modules`]' CUBINs.
fn shipped_attention_cubins() -> impl Iterator<Item = &'static Vec<u8>> {
    shipped_attention_modules().iter().map(|(cubin, _)| cubin)
}

/// `ci-gate compile --kernels kernels` (every shipped file for every default target), run
/// once for the whole test binary: two tests read its output.
fn shipped_compile_output() -> &'static std::process::Output {
    static OUTPUT: std::sync::OnceLock<std::process::Output> = std::sync::OnceLock::new();
    OUTPUT.get_or_init(|| {
        bin()
            .arg("compile")
            .arg("--kernels")
            .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("kernels"))
            .output()
            .unwrap()
    })
}

#[test]
fn compute_capability_9_0_compiles_for_sm_90a_and_others_for_themselves() {
    assert_eq!(Arch { major: 9, minor: 0 }.target(), "sm_90a");
    assert_eq!(Arch { major: 8, minor: 9 }.target(), "sm_89");
    assert_eq!(
        Arch {
            major: 12,
            minor: 0
        }
        .target(),
        "sm_120"
    );
}

fn contains(haystack: &[u8], needle: &str) -> bool {
    haystack
        .windows(needle.len())
        .any(|w| w == needle.as_bytes())
}

#[test]
#[cfg_attr(
    ci_gate_no_nvrtc,
    ignore = "libnvrtc not found: pip install nvidia-cuda-nvrtc and add its lib dir to LD_LIBRARY_PATH"
)]
fn kernels_compile_for_sm89_sm90_and_sm90a() {
    require_nvrtc();
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("kernels");
    let expected: &[(&str, &[&str])] = &[
        (
            "attention.cu",
            &[
                "attention_fwd_f16_d64",
                "attention_fwd_f16_d128",
                "attention_fwd_bf16_d64",
                "attention_fwd_bf16_d128",
                "attention_fwd_f16_d64_launch",
                "attention_fwd_bf16_d128_launch",
            ],
        ),
        (
            "reference.cu",
            &[
                "attention_ref_f16",
                "attention_ref_bf16",
                "attention_ref_f16_launch",
                "attention_ref_bf16_launch",
            ],
        ),
        (
            "util.cu",
            &[
                "fill_input_f16",
                "fill_input_bf16",
                "fill_u32",
                "spin_cycles",
            ],
        ),
    ];
    for (file, symbols) in expected {
        let src = KernelSource::read(&dir.join(file)).unwrap();
        for (i, target) in TARGETS.iter().enumerate() {
            let cubin = match *file {
                "attention.cu" => shipped_attention_modules()[i].0.clone(),
                _ => compile_uncached_for(&src, target)
                    .unwrap_or_else(|e| panic!("{file} for {target}: {e}")),
            };
            assert!(
                cubin.starts_with(b"\x7fELF"),
                "{file} for {target}: not a CUBIN"
            );
            // The shipped timed kernel keeps no writable state and calls no library.
            if *file == "attention.cu" {
                check_untrusted_cubin(&cubin, file)
                    .unwrap_or_else(|e| panic!("{file} for {target}: {e}"));
            }
            for s in *symbols {
                assert!(
                    contains(&cubin, s),
                    "{file} for {target}: symbol {s} missing"
                );
            }
        }
    }
}

/// The host finds the optional small-grid and long-sequence kernels in the cubin's symbols
/// (never by a failed driver call, which compute-sanitizer would count): `NAME_small` for the
/// d64 kernels on every target (mma.sync: a 64-row tile; sm_90a: the warp-specialised one),
/// none for d128; `NAME_long` with its `NAME_long_from`, `NAME_long_noncausal` with its
/// `NAME_long_noncausal_from` and `NAME_short_noncausal` with its `NAME_short_noncausal_to`,
/// only on sm_90a, for d64; `NAME_causal` for d64 and d128 everywhere but sm_90a; for d128
/// `NAME_long_noncausal` with
/// its `_from` on sm_89 (the L4's split-pipeline tile for non-causal launches, with a `_to`:
/// short sequences only) and on sm_90a (192-key tiles with a narrowed first one, no `_to`), not
/// on plain sm_90.
#[test]
#[cfg_attr(
    ci_gate_no_nvrtc,
    ignore = "libnvrtc not found: pip install nvidia-cuda-nvrtc and add its lib dir to LD_LIBRARY_PATH"
)]
fn the_small_grid_and_long_sequence_kernels_are_found_in_the_cubin() {
    require_nvrtc();
    for (target, cubin) in TARGETS.iter().zip(shipped_attention_cubins()) {
        let target = *target;
        use ci_gate::gpu::device::has_symbol;
        for dtype in ["f16", "bf16"] {
            assert!(has_symbol(
                cubin,
                &format!("attention_fwd_{dtype}_d64_small")
            ));
            assert!(has_symbol(cubin, &format!("attention_fwd_{dtype}_d64")));
            for suffix in [
                "long",
                "long_from",
                "long_noncausal",
                "long_noncausal_from",
                "short_noncausal",
                "short_noncausal_to",
            ] {
                assert_eq!(
                    has_symbol(cubin, &format!("attention_fwd_{dtype}_d64_{suffix}")),
                    target == "sm_90a",
                    "{target} {dtype} d64_{suffix}"
                );
            }
            // the mma.sync tiles with the units of a causal grid dealt by cost (sm_90a's
            // warp-specialised kernels deal their own)
            for d in ["d64", "d128"] {
                for suffix in ["causal", "causal_launch"] {
                    assert_eq!(
                        has_symbol(cubin, &format!("attention_fwd_{dtype}_{d}_{suffix}")),
                        target != "sm_90a",
                        "{target} {dtype} {d}_{suffix}"
                    );
                }
            }
            for suffix in ["small", "long", "short_noncausal", "one_wave_causal"] {
                assert!(!has_symbol(
                    cubin,
                    &format!("attention_fwd_{dtype}_d128_{suffix}")
                ));
            }
            for suffix in ["long_noncausal", "long_noncausal_from"] {
                assert_eq!(
                    has_symbol(cubin, &format!("attention_fwd_{dtype}_d128_{suffix}")),
                    target == "sm_89" || target == "sm_90a",
                    "{target} {dtype} d128_{suffix}"
                );
            }
            assert_eq!(
                has_symbol(
                    cubin,
                    &format!("attention_fwd_{dtype}_d128_long_noncausal_to")
                ),
                target == "sm_89",
                "{target} {dtype} d128_long_noncausal_to"
            );
            assert!(!has_symbol(
                cubin,
                &format!("attention_fwd_{dtype}_d64_long_noncausal_to")
            ));
        }
    }
}

/// Every attention entry of the shipped source, by what follows `attention_fwd_{dtype}_`.
const ATTENTION_FORMS: [&str; 7] = [
    "d128",
    "d128_long_noncausal",
    "d64",
    "d64_small",
    "d64_long",
    "d64_long_noncausal",
    "d64_short_noncausal",
];

/// The TMA ABI (kernels/README.md, `NAME_tma`): on sm_90a every attention kernel is the
/// warp-specialised one and declares layout 1, so the host passes it the q, k, v tensor maps;
/// the L4's sm_89 and plain sm_90 builds keep the eight-argument kernels (sm_89's
/// `d128_long_noncausal` too). `NAME_fill` on sm_90a's main d64 kernel and its `_long` and
/// `_long_noncausal` forms (not `_small` nor `_short_noncausal`: one tile per CTA) and on the
/// other targets' mma.sync d64 NAME, which alone also declares `NAME_fill_or_one` (one tile a
/// CTA where the fill grid costs an L4's busiest SM a round). (The host reads these symbols
/// from the cubin, as `NAME_small`.)
#[test]
#[cfg_attr(
    ci_gate_no_nvrtc,
    ignore = "libnvrtc not found: pip install nvidia-cuda-nvrtc and add its lib dir to LD_LIBRARY_PATH"
)]
fn the_warp_specialised_kernels_take_tensor_maps_and_the_d64_forms_fill() {
    require_nvrtc();
    use ci_gate::gpu::device::has_symbol;
    for (target, cubin) in TARGETS.iter().zip(shipped_attention_cubins()) {
        let target = *target;
        for dtype in ["f16", "bf16"] {
            for name in ATTENTION_FORMS {
                assert_eq!(
                    has_symbol(cubin, &format!("attention_fwd_{dtype}_{name}_tma")),
                    target == "sm_90a",
                    "{target} {dtype} {name}"
                );
            }
            // NAME_fill: on sm_90a the main d64 kernel and its long-sequence forms size their
            // grids to fill the GPU, elsewhere the mma.sync d64 NAME, which alone asks for one
            // tile a CTA where that costs less; the d128 forms, the small-grid and the short
            // forms do not fill
            for name in ATTENTION_FORMS {
                let fills = if target == "sm_90a" {
                    ["d64", "d64_long", "d64_long_noncausal"].contains(&name)
                } else {
                    name == "d64"
                };
                assert_eq!(
                    has_symbol(cubin, &format!("attention_fwd_{dtype}_{name}_fill")),
                    fills,
                    "{target} {dtype} {name}_fill"
                );
                assert_eq!(
                    has_symbol(cubin, &format!("attention_fwd_{dtype}_{name}_fill_or_one")),
                    target != "sm_90a" && name == "d64",
                    "{target} {dtype} {name}_fill_or_one"
                );
            }
            // the mma.sync causal forms: eight arguments, NAME's one-tile grid
            for (d, symbol) in [
                ("d64", "tma"),
                ("d64", "fill"),
                ("d128", "tma"),
                ("d128", "fill"),
            ] {
                assert!(
                    !has_symbol(cubin, &format!("attention_fwd_{dtype}_{d}_causal_{symbol}")),
                    "{target} {dtype} {d}_causal_{symbol}"
                );
            }
        }
    }
}

/// What a CUBIN holds, in a form two builds of one program can be compared by: every
/// section's bytes by name, but the notes (`.note.nv.tkinfo` records the compiler's command
/// line), the symbol and string tables and the sections of data symbols; and every named
/// symbol with its kind, binding, section, size and, for data, its bytes. NVRTC 13.5 lays out
/// the `__constant__` variables (`.nv.constant3`: `NAME_launch`, `NAME_tma`, ...) and the
/// symbol table in another order when it compiles on several threads; the host reads them by
/// name, so they are compared by name.
struct CubinContents {
    sections: std::collections::BTreeMap<String, Vec<u8>>,
    data_section_sizes: std::collections::BTreeMap<String, u64>,
    symbols: std::collections::BTreeMap<String, (String, String, Vec<u8>)>,
}

fn cubin_contents(cubin: &[u8]) -> CubinContents {
    use object::read::elf::ElfFile64;
    use object::{Object, ObjectSection, ObjectSymbol, SectionKind, SymbolKind};
    let elf = ElfFile64::<object::Endianness>::parse(cubin).expect("a CUBIN parses as ELF64");
    let mut symbols = std::collections::BTreeMap::new();
    let mut data_section_sizes = std::collections::BTreeMap::new();
    for sym in elf.symbols() {
        let name = sym.name().expect("a symbol name");
        if name.is_empty() {
            continue;
        }
        let section = sym
            .section_index()
            .and_then(|i| elf.section_by_index(i).ok());
        let section_name = section
            .as_ref()
            .map_or("", |s| s.name().expect("a section name"));
        let bytes = match &section {
            Some(s) if sym.kind() == SymbolKind::Data => {
                data_section_sizes.insert(section_name.to_owned(), s.size());
                let data = s.data().expect("a section's bytes");
                let at = usize::try_from(sym.address() - s.address()).unwrap();
                let size = usize::try_from(sym.size()).unwrap();
                data.get(at..at + size)
                    .expect("a data symbol within its section")
                    .to_vec()
            }
            _ => Vec::new(),
        };
        let what = format!(
            "{:?} global={} size={}",
            sym.kind(),
            sym.is_global(),
            sym.size()
        );
        symbols.insert(name.to_owned(), (section_name.to_owned(), what, bytes));
    }
    let sections = elf
        .sections()
        .filter(|s| s.kind() != SectionKind::Note)
        .map(|s| (s.name().expect("a section name").to_owned(), s))
        .filter(|(name, _)| {
            ![".symtab", ".strtab"].contains(&name.as_str())
                && !data_section_sizes.contains_key(name)
        })
        .map(|(name, s)| (name, s.data().expect("a section's bytes").to_vec()))
        .collect();
    CubinContents {
        sections,
        data_section_sizes,
        symbols,
    }
}

/// Asserts that `a` and `b` have the same keys, and the same value under each (a value is
/// shown only by name: a section's bytes would fill the log).
fn same_entries<V: PartialEq>(
    target: &str,
    what: &str,
    a: &std::collections::BTreeMap<String, V>,
    b: &std::collections::BTreeMap<String, V>,
) {
    assert_eq!(
        a.keys().collect::<Vec<_>>(),
        b.keys().collect::<Vec<_>>(),
        "{target}: each {what}"
    );
    for (name, value) in a {
        assert!(b[name] == *value, "{target}: {what} {name} differs");
    }
}

/// Split compilation (`--split-compile`, what the gate asks NVRTC 13 for: one program's
/// entries compiled on several threads) changes no code: for every target the shipped
/// attention.cu compiled on one thread and on [`MAX_COMPILE_THREADS`] has the same sections,
/// byte for byte (code, relocations, the driver's attributes), the same symbols with the same
/// data (the `__constant__` variables, by name: [`CubinContents`]), and the same ptxas report
/// (registers, spills, barriers; all but its timings), which is where the gate reads each
/// entry's resources.
#[test]
#[cfg_attr(
    ci_gate_no_nvrtc,
    ignore = "libnvrtc not found: pip install nvidia-cuda-nvrtc and add its lib dir to LD_LIBRARY_PATH"
)]
fn compiling_on_several_threads_gives_the_same_cubin_as_on_one() {
    require_nvrtc();
    let src =
        KernelSource::read(&Path::new(env!("CARGO_MANIFEST_DIR")).join("kernels/attention.cu"))
            .unwrap();
    let report = |log: &str| -> Vec<String> {
        log.lines()
            .filter(|l| !l.contains("Compile time"))
            .map(str::to_owned)
            .collect()
    };
    for target in TARGETS {
        let compile = |threads| {
            compile_uncached_module_on(&src, target, threads)
                .unwrap_or_else(|e| panic!("attention.cu for {target} on {threads} threads: {e}"))
        };
        let (one, one_log) = compile(1);
        let (many, many_log) = compile(MAX_COMPILE_THREADS);
        let (one, many) = (cubin_contents(&one), cubin_contents(&many));
        assert!(
            one.sections
                .keys()
                .any(|k| k.starts_with(".text.attention_fwd_"))
        );
        // A data symbol's bytes are read: NAME_launch is three ints (rows per block, threads
        // per block, dynamic shared memory).
        assert_eq!(one.symbols["attention_fwd_f16_d64_launch"].2.len(), 12);
        same_entries(target, "section", &one.sections, &many.sections);
        same_entries(
            target,
            "data section's size",
            &one.data_section_sizes,
            &many.data_section_sizes,
        );
        same_entries(target, "symbol", &one.symbols, &many.symbols);
        assert_eq!(
            report(&one_log),
            report(&many_log),
            "{target}: ptxas's report"
        );
        assert!(one_log.contains("Used "), "{target}: no ptxas report");
    }
}

/// The kernels with planted bugs that `ci-gate sanitize` must catch (tests/sanitize/) are
/// valid code for both architectures: what catches them is the sanitizer, not the compiler.
#[test]
#[cfg_attr(
    ci_gate_no_nvrtc,
    ignore = "libnvrtc not found: pip install nvidia-cuda-nvrtc and add its lib dir to LD_LIBRARY_PATH"
)]
fn planted_bug_kernels_compile_for_every_target() {
    require_nvrtc();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/sanitize");
    for plant in ["oob", "race", "misaligned"] {
        let src = KernelSource::read(&root.join(plant).join("attention.cu")).unwrap();
        for target in TARGETS {
            let cubin = compile_uncached_for(&src, target)
                .unwrap_or_else(|e| panic!("{plant} for {target}: {e}"));
            // `sanitize` loads them as the timed kernel: they pass its policy.
            check_untrusted_cubin(&cubin, plant)
                .unwrap_or_else(|e| panic!("{plant} for {target}: {e}"));
            for s in [
                "attention_fwd_f16_d64_launch",
                "attention_fwd_f16_d128",
                "attention_fwd_bf16_d64",
                "attention_fwd_bf16_d128",
            ] {
                assert!(contains(&cubin, s), "{plant} for {target}: {s} missing");
            }
        }
    }
}

/// What users and CI run: `ci-gate compile` on the shipped kernels, every file for every
/// default target, exit 0.
#[test]
#[cfg_attr(
    ci_gate_no_nvrtc,
    ignore = "libnvrtc not found: pip install nvidia-cuda-nvrtc and add its lib dir to LD_LIBRARY_PATH"
)]
fn the_compile_command_passes_the_shipped_kernels() {
    require_nvrtc();
    let kernels = Path::new(env!("CARGO_MANIFEST_DIR")).join("kernels");
    let out = shipped_compile_output();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}{}",
        stderr_text(&out.stderr)
    );
    for file in ["attention.cu", "reference.cu", "util.cu"] {
        for target in TARGETS {
            let line = format!("{}/{file} {target}: ok (", kernels.display());
            assert!(stdout.contains(&line), "{line} missing in {stdout}");
        }
    }
    // One line per file and target, and under attention.cu's the entry check and a table
    // of one row per kernel with its compiler resources, within 80 columns.
    let (files, indented): (Vec<&str>, Vec<&str>) =
        stdout.lines().partition(|l| !l.starts_with("  "));
    assert_eq!(files.len(), 9, "{stdout}");
    let rows: Vec<&&str> = indented
        .iter()
        .filter(|l| l.starts_with("  attention_fwd_"))
        .collect();
    assert!(rows.len() >= 18, "{stdout}");
    assert_eq!(
        indented
            .iter()
            .filter(|l| l.starts_with("  entry points and launch constants: ok ("))
            .count(),
        3,
        "{stdout}"
    );
    assert!(stdout.lines().all(|l| l.chars().count() <= 80), "{stdout}");
}

/// A timed kernel the host could not launch is refused by `compile`, naming what is
/// missing: a renamed entry point, a launch constant out of range.
#[test]
#[cfg_attr(
    ci_gate_no_nvrtc,
    ignore = "libnvrtc not found: pip install nvidia-cuda-nvrtc and add its lib dir to LD_LIBRARY_PATH"
)]
fn the_compile_command_refuses_missing_entry_points_and_bad_launch_constants() {
    require_nvrtc();
    let shipped =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("kernels/attention.cu"))
            .unwrap();
    let renamed = shipped.replace("attention_fwd_f16_d64,", "attention_fwd_f16_d64_renamed,");
    assert_ne!(
        renamed, shipped,
        "the shipped source names its entries this way"
    );
    for (source, wanted) in [
        (renamed, "the entry point attention_fwd_f16_d64 is missing"),
        (
            with_entries("", "{64, 2048, 0}"),
            "attention_fwd_f16_d64_launch is {64, 2048, 0}: rows and threads must be positive",
        ),
        // a non-causal long form without the length it starts at: the host would guess
        (
            with_entries(
                &form("attention_fwd_f16_d64_long_noncausal"),
                "{64, 128, 0}",
            ),
            "attention_fwd_f16_d64_long_noncausal has no attention_fwd_f16_d64_long_noncausal_from",
        ),
        // a short form without the longest length it takes
        (
            with_entries(
                &form("attention_fwd_f16_d64_short_noncausal"),
                "{64, 128, 0}",
            ),
            "attention_fwd_f16_d64_short_noncausal has no attention_fwd_f16_d64_short_noncausal_to: the longest seq_len it takes",
        ),
        // one that starts at 0
        (
            with_entries(
                &(form("attention_fwd_f16_d64_long_noncausal")
                    + "extern \"C\" __constant__ int attention_fwd_f16_d64_long_noncausal_from[1] = {0};\n"),
                "{64, 128, 0}",
            ),
            "attention_fwd_f16_d64_long_noncausal_from is 0: it must be a seq_len of at least 1",
        ),
        // one that ends before it starts (the optional _to below its _from): it would take
        // no launch
        (
            with_entries(
                &(form("attention_fwd_f16_d64_long_noncausal")
                    + "extern \"C\" __constant__ int attention_fwd_f16_d64_long_noncausal_from[1] = {256};\n"
                    + "extern \"C\" __constant__ int attention_fwd_f16_d64_long_noncausal_to[1] = {255};\n"),
                "{64, 128, 0}",
            ),
            "attention_fwd_f16_d64_long_noncausal_to is 255, below attention_fwd_f16_d64_long_noncausal_from (256): the form would take no seq_len",
        ),
        // tiles computed at once out of 1..=64: the host would weigh the form wrongly
        (
            with_entries(
                &(form("attention_fwd_f16_d64_long_noncausal")
                    + "extern \"C\" __constant__ int attention_fwd_f16_d64_long_noncausal_from[1] = {512};\n"
                    + "extern \"C\" __constant__ int attention_fwd_f16_d64_long_noncausal_tiles_at_once[1] = {0};\n"),
                "{64, 128, 0}",
            ),
            "attention_fwd_f16_d64_long_noncausal_tiles_at_once is 0: tiles a CTA computes at the same time must be 1..=64",
        ),
        // NAME_fill_or_one neither 0 nor 1
        (
            with_entries(
                "extern \"C\" __constant__ int attention_fwd_f16_d64_fill[2] = {2, 2};\n\
                 extern \"C\" __constant__ int attention_fwd_f16_d64_fill_or_one[1] = {2};\n",
                "{64, 128, 0}",
            ),
            "attention_fwd_f16_d64_fill_or_one is 2: it must be 0 or 1",
        ),
        // NAME_fill_or_one without NAME_fill: the form has no other grid than one tile a CTA
        (
            with_entries(
                "extern \"C\" __constant__ int attention_fwd_f16_d64_fill_or_one[1] = {1};\n",
                "{64, 128, 0}",
            ),
            "attention_fwd_f16_d64_fill_or_one without attention_fwd_f16_d64_fill",
        ),
    ] {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("attention.cu"), source).unwrap();
        let out = bin()
            .args(["compile", "--arch", "sm_89", "--kernels"])
            .arg(dir.path())
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(2), "{stdout}");
        assert!(
            stdout.contains("attention.cu sm_89: ")
                && stdout
                    .contains("attention.cu is refused for sm_89: the gate could not launch it: ")
                && stdout.contains(wanted),
            "{stdout}"
        );
        // The harness the gate runs is built in: a kernel directory needs only attention.cu.
        assert!(
            stdout.contains("reference.cu: built into ci-gate")
                && stdout.contains("util.cu: built into ci-gate"),
            "{stdout}"
        );
    }
}

/// An entry point `name`: an empty kernel with the attention signature and `launch` as its
/// `NAME_launch`.
fn entry(name: &str, launch: &str) -> String {
    format!(
        "extern \"C\" __constant__ int {name}_launch[3] = {launch};\n\
         extern \"C\" __global__ void {name}(const unsigned short* q, const unsigned short* k, \
         const unsigned short* v, float* out, int s, int d, float sc, int c) {{}}\n"
    )
}

/// An optional form `name` (an empty kernel with `NAME_launch` {64, 128, 0}).
fn form(name: &str) -> String {
    entry(name, "{64, 128, 0}")
}

/// `source` with the four entry points the host loads (empty kernels, `launch` as each
/// `NAME_launch`), so that a test kernel of its own passes the entry check.
fn with_entries(source: &str, launch: &str) -> String {
    let mut s = source.to_string();
    for name in [
        "attention_fwd_f16_d64",
        "attention_fwd_bf16_d64",
        "attention_fwd_f16_d128",
        "attention_fwd_bf16_d128",
    ] {
        s.push_str(&entry(name, launch));
    }
    s
}

/// `--arch` picks the targets; a name that is not a CUBIN target is refused by the parser.
#[test]
#[cfg_attr(
    ci_gate_no_nvrtc,
    ignore = "libnvrtc not found: pip install nvidia-cuda-nvrtc and add its lib dir to LD_LIBRARY_PATH"
)]
fn the_compile_command_takes_targets() {
    require_nvrtc();
    let kernels = Path::new(env!("CARGO_MANIFEST_DIR")).join("kernels");
    let out = bin()
        .args(["compile", "--arch", "sm_89", "--kernels"])
        .arg(&kernels)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    let files: Vec<&str> = stdout.lines().filter(|l| !l.starts_with("  ")).collect();
    assert_eq!(files.len(), 3, "{stdout}");
    assert!(files.iter().all(|l| l.contains(" sm_89: ok (")), "{stdout}");
    let bad = bin()
        .args(["compile", "--arch", "compute_89"])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
    assert!(stderr_text(&bad.stderr).contains("not an NVRTC CUBIN target"));
}

#[test]
#[cfg_attr(
    ci_gate_no_nvrtc,
    ignore = "libnvrtc not found: pip install nvidia-cuda-nvrtc and add its lib dir to LD_LIBRARY_PATH"
)]
fn a_compile_error_names_the_file_and_arch() {
    require_nvrtc();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("attention.cu"),
        "extern \"C\" __global__ void k() {\n    this is not cuda;\n}\n",
    )
    .unwrap();
    let kernels = Path::new(env!("CARGO_MANIFEST_DIR")).join("kernels");
    let out = bin()
        .args(["compile", "--arch", "sm_89", "--kernels"])
        .arg(dir.path())
        .arg("--harness")
        .arg(&kernels)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = stderr_text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stdout}{stderr}");
    let file = dir.path().join("attention.cu").display().to_string();
    assert!(
        stdout.contains(&format!(
            "{file} sm_89: {file} does not compile for sm_89 with NVRTC"
        )),
        "{stdout}"
    );
    // NVRTC's own diagnostic, as file:line:column, indented under it; no echoed source.
    assert!(
        stdout
            .lines()
            .any(|l| l.starts_with("  attention.cu:2:") && l.contains(": error: ")),
        "{stdout}"
    );
    assert!(
        !stdout.contains("this is not cuda;"),
        "the source line is echoed: {stdout}"
    );
    assert!(stdout.contains(&format!("{}/util.cu sm_89: ok", kernels.display())));
    assert!(
        stderr.starts_with("error: 1 of 3 compiles failed or were refused"),
        "{stderr}"
    );
}

/// Without NVRTC, `compile` ends in exit 2 with the sentence that says how to install it. On a
/// machine with a system-wide NVRTC (found without LD_LIBRARY_PATH) the test is ignored, with
/// why.
#[test]
#[cfg_attr(
    ci_gate_system_nvrtc,
    ignore = "NVRTC is installed system-wide here; this test checks the path without it"
)]
fn without_nvrtc_the_compile_command_says_how_to_get_it() {
    let out = bin()
        .arg("compile")
        .env_remove("LD_LIBRARY_PATH")
        .output()
        .unwrap();
    assert_ne!(
        out.status.code(),
        Some(0),
        "compile succeeded without LD_LIBRARY_PATH: NVRTC is installed system-wide here, and \
         this test checks the path without it (build.rs found none when the tests were built; \
         rebuilt here, the test is ignored)"
    );
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        stderr_text(&out.stderr).trim(),
        format!("error: {}", ci_gate::gpu::GpuError::NoNvrtc)
    );
    assert!(out.stdout.is_empty());
}

/// ptxas's own figures for each entry, read here independently of ci-gate's parser: the
/// `Used N registers` and frame lines after `Compiling entry function 'NAME'`.
fn ptxas_figures(log: &str) -> std::collections::HashMap<String, (u32, u64, u64, u64, u64)> {
    let lines: Vec<&str> = log.lines().collect();
    let mut out = std::collections::HashMap::new();
    for (i, line) in lines.iter().enumerate() {
        let Some(rest) = line.split("Compiling entry function '").nth(1) else {
            continue;
        };
        let name = rest.split('\'').next().unwrap().to_owned();
        let nums = |l: &str| -> Vec<u64> {
            l.split(|c: char| !c.is_ascii_digit())
                .filter(|w| !w.is_empty())
                .map(|w| w.parse().unwrap())
                .collect()
        };
        let frame = nums(lines[i + 2]); // stack frame, spill stores, spill loads
        let used = lines[i + 3];
        let regs = nums(used)[0] as u32;
        let smem = used
            .split(", ")
            .find(|p| p.ends_with(" bytes smem"))
            .map_or(0, |p| nums(p)[0]);
        assert!(
            out.insert(name, (regs, frame[0], frame[1], frame[2], smem))
                .is_none()
        );
    }
    out
}

/// `ci-gate compile`'s table row for `kernel` under `target` in its output, with the notes
/// under the table that name it.
fn resource_line(stdout: &str, target: &str, kernel: &str) -> String {
    let section = stdout
        .split(&format!("attention.cu {target}: ok"))
        .nth(1)
        .unwrap_or_else(|| panic!("no {target} build in:\n{stdout}"));
    let lines: Vec<&str> = section
        .lines()
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .collect();
    let at = lines
        .iter()
        .position(|l| l.split_whitespace().next() == Some(kernel))
        .unwrap_or_else(|| panic!("no {kernel} for {target} in:\n{stdout}"));
    // a name longer than its cell is alone on its line, the figures on the next
    let mut out = lines[at].to_string();
    if out.split_whitespace().count() == 1 {
        let figures = lines
            .get(at + 1)
            .unwrap_or_else(|| panic!("no figures under {kernel} in:\n{stdout}"));
        out = format!("{} {}", out.trim_end(), figures.trim_start());
    }
    let notes: Vec<&&str> = lines
        .iter()
        .filter(|l| l.trim_start().starts_with(&format!("{kernel}: ")))
        .collect();
    for n in notes {
        out.push('\n');
        out.push_str(n);
    }
    out
}

/// The figures of a table row: registers, spill stores, spill loads, stack frame, static
/// shared memory (`None` for a `?`).
fn row_figures(row: &str) -> [Option<u64>; 5] {
    let cells: Vec<&str> = row.lines().next().unwrap().split_whitespace().collect();
    let num = |s: &str| s.parse::<u64>().ok();
    let (stores, loads) = cells[2].split_once('/').unwrap();
    let (static_smem, _) = cells[4].split_once('+').unwrap();
    [
        num(cells[1]),
        num(stores),
        num(loads),
        num(cells[3]),
        num(static_smem),
    ]
}

/// Issue 23: the figures `ci-gate compile` prints (registers and stack frame from the CUBIN,
/// spills from ptxas's report) equal what ptxas itself reports, for every entry of the real
/// attention.cu on every target; static shared memory too, but for the 1 KiB the sm_90
/// module adds to its shared section for the driver's reservation.
#[test]
#[cfg_attr(
    ci_gate_no_nvrtc,
    ignore = "libnvrtc not found: pip install nvidia-cuda-nvrtc and add its lib dir to LD_LIBRARY_PATH"
)]
fn compiler_resources_agree_with_ptxas_on_every_target() {
    require_nvrtc();
    let out = shipped_compile_output();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    for (target, (_, log)) in TARGETS.iter().zip(shipped_attention_modules()) {
        let figures = ptxas_figures(log);
        assert!(figures.contains_key("attention_fwd_f16_d128"), "{log}");
        for (kernel, (regs, frame, stores, loads, smem)) in figures {
            let line = resource_line(&stdout, target, &kernel);
            let reserved = if target.starts_with("sm_90") { 1024 } else { 0 };
            assert_eq!(
                row_figures(&line),
                [
                    Some(u64::from(regs)),
                    Some(stores),
                    Some(loads),
                    Some(frame),
                    Some(smem + reserved)
                ],
                "{target}: {line}"
            );
            // threads per block and dynamic shared memory from NAME_launch
            assert!(!line.lines().next().unwrap().contains('?'), "{line}");
        }
    }
}

fn compile_timed(source: &str, target: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("attention.cu"),
        with_entries(source, "{64, 128, 0}"),
    )
    .unwrap();
    let harness = Path::new(env!("CARGO_MANIFEST_DIR")).join("kernels");
    let out = bin()
        .arg("compile")
        .arg("--kernels")
        .arg(dir.path())
        .arg("--harness")
        .arg(&harness)
        .args(["--arch", target])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{stdout}");
    stdout
}

/// A kernel that indexes a large local array at run time has a stack frame, and one held to
/// few registers (`__launch_bounds__`) spills; both are reported as ptxas reports them.
#[test]
#[cfg_attr(
    ci_gate_no_nvrtc,
    ignore = "libnvrtc not found: pip install nvidia-cuda-nvrtc and add its lib dir to LD_LIBRARY_PATH"
)]
fn a_large_local_array_has_a_stack_frame_and_register_pressure_spills() {
    require_nvrtc();
    let source = r#"
extern "C" __global__ void local_array(const float* in, float* out, int n) {
    float a[512];
    for (int i = 0; i < 512; i++) a[i] = in[i * n + threadIdx.x];
    out[threadIdx.x] = a[(int)in[0] & 511] + a[(int)in[1] & 511];
}
extern "C" __global__ void __launch_bounds__(1024, 2) pressure(const float* in, float* out) {
    float v[96];
    #pragma unroll
    for (int i = 0; i < 96; i++) v[i] = in[i * 1024 + threadIdx.x];
    float s = 0.f;
    #pragma unroll
    for (int i = 0; i < 96; i++) s += v[i] * v[95 - i] * v[(i * 7) % 96];
    #pragma unroll
    for (int i = 0; i < 96; i++) out[i * 1024 + threadIdx.x] = v[i] * s;
}
"#;
    let stdout = compile_timed(source, "sm_89");
    let line = resource_line(&stdout, "sm_89", "local_array");
    let [_, stores, loads, frame, _] = row_figures(&line);
    assert!(frame.is_some_and(|f| f > 0), "{line}");
    assert!(stores.is_some() && loads.is_some(), "{line}");
    let line = resource_line(&stdout, "sm_89", "pressure");
    let [_, stores, loads, _, _] = row_figures(&line);
    assert!(stores.is_some_and(|s| s > 0) && loads.is_some(), "{line}");
}

/// A source that writes a complete, well-formed ptxas report into the log (a `#pragma
/// message` with line breaks) is not believed: the entry's spills are unknown, with why.
#[test]
#[cfg_attr(
    ci_gate_no_nvrtc,
    ignore = "libnvrtc not found: pip install nvidia-cuda-nvrtc and add its lib dir to LD_LIBRARY_PATH"
)]
fn a_forged_ptxas_report_makes_spills_unknown() {
    require_nvrtc();
    let forged = "#pragma message(\"\\nptxas info    : Compiling entry function 'k' for 'sm_89'\\nptxas info    : Function properties for k\\nptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\\nptxas info    : Used 2 registers, used 0 barriers\\n\")\n";
    let kernel = "extern \"C\" __global__ void k(float* o) { o[threadIdx.x] = 1.f; }\n";
    let honest = compile_timed(kernel, "sm_89");
    let line = resource_line(&honest, "sm_89", "k");
    assert_eq!(row_figures(&line)[1..3], [Some(0), Some(0)], "{line}");
    let stdout = compile_timed(&format!("{forged}{kernel}"), "sm_89");
    let line = resource_line(&stdout, "sm_89", "k");
    assert_eq!(row_figures(&line)[1..3], [None, None], "{line}");
    assert!(line.contains("names it more than once"), "{line}");
}
