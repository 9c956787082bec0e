//! Spills, from ptxas's verbose report (`--ptxas-options=-v`) in NVRTC's program log: the one
//! figure the module itself does not record. Everything else comes from the CUBIN
//! (`cubin::cubin_kernels`), which the report must agree with.
//!
//! The log is attacker-influenced: the kernel source writes into it with `#pragma message`
//! and `#warning`, whose text may hold line breaks, so any line that looks like ptxas's may be
//! forged. So a kernel's spills are believed only from exactly one complete report of that
//! entry in ptxas's exact format (four consecutive lines), naming an entry of the CUBIN,
//! whose registers and stack frame equal the CUBIN's; a second report (or a stray line naming
//! the entry), a disagreement or a log past its bound makes them unknown, with a note. A
//! forger cannot remove ptxas's own report, only add one, so what is believed is ptxas's.

use std::collections::HashMap;

use super::cubin::{CubinError, CubinKernel, cubin_kernels};

/// The largest log read (the shipped attention.cu's is under 3 KiB; front-end warnings of a
/// big source can be long).
pub(crate) const MAX_LOG_BYTES: usize = 1 << 20;

/// One report of ptxas for one entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Report {
    registers: u32,
    stack_frame_bytes: u64,
    spill_store_bytes: u64,
    spill_load_bytes: u64,
}

/// `ptxas info    : REST` → REST.
fn info(line: &str) -> Option<&str> {
    line.strip_prefix("ptxas info")?
        .trim_start_matches(' ')
        .strip_prefix(": ")
}

fn number<T: std::str::FromStr>(s: &str) -> Option<T> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// `Compiling entry function 'NAME' for 'TARGET'` → NAME.
fn compiling(line: &str) -> Option<&str> {
    let rest = info(line)?.strip_prefix("Compiling entry function '")?;
    let (name, rest) = rest.split_once('\'')?;
    let target = rest.strip_prefix(" for '")?.strip_suffix('\'')?;
    (!target.contains('\'')).then_some(name)
}

/// `ptxas         .     A bytes stack frame, B bytes spill stores, C bytes spill loads`.
fn frame_line(line: &str) -> Option<(u64, u64, u64)> {
    let rest = line
        .strip_prefix("ptxas")?
        .trim_start_matches(' ')
        .strip_prefix('.')?
        .trim_start_matches(' ');
    let (a, rest) = rest.split_once(" bytes stack frame, ")?;
    let (b, rest) = rest.split_once(" bytes spill stores, ")?;
    let c = rest.strip_suffix(" bytes spill loads")?;
    Some((number(a)?, number(b)?, number(c)?))
}

/// `Used N registers` alone or followed by `, ...`.
fn used_registers(line: &str) -> Option<u32> {
    let rest = info(line)?.strip_prefix("Used ")?;
    let (n, rest) = rest.split_once(" registers")?;
    (rest.is_empty() || rest.starts_with(", ")).then_some(())?;
    number(n)
}

/// Every complete report per entry named, and how many lines name each entry at all.
fn reports(log: &str) -> (HashMap<&str, Vec<Report>>, HashMap<&str, usize>) {
    let lines: Vec<&str> = log.lines().map(|l| l.trim_end_matches('\r')).collect();
    let mut found: HashMap<&str, Vec<Report>> = HashMap::new();
    let mut mentions: HashMap<&str, usize> = HashMap::new();
    for (i, line) in lines.iter().enumerate() {
        if let Some(name) = info(line).and_then(|r| r.strip_prefix("Function properties for ")) {
            *mentions.entry(name).or_default() += 1;
        }
        let Some(name) = compiling(line) else {
            continue;
        };
        *mentions.entry(name).or_default() += 1;
        let next = |k: usize| lines.get(i + k).copied().unwrap_or_default();
        let properties = info(next(1))
            .and_then(|r| r.strip_prefix("Function properties for "))
            .is_some_and(|n| n == name);
        if let (true, Some((frame, stores, loads)), Some(registers)) =
            (properties, frame_line(next(2)), used_registers(next(3)))
        {
            found.entry(name).or_default().push(Report {
                registers,
                stack_frame_bytes: frame,
                spill_store_bytes: stores,
                spill_load_bytes: loads,
            });
        }
    }
    (found, mentions)
}

/// One entry's figures from the CUBIN, with its spills where the log is believed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct StaticResources {
    pub kernel: CubinKernel,
    pub spill_store_bytes: Option<u64>,
    pub spill_load_bytes: Option<u64>,
    /// Why the spills are unknown.
    pub note: Option<String>,
}

/// The entries of `cubin` with their spills from `log` (module doc: when they are believed).
/// An error (one clause) where the CUBIN cannot be read.
pub(crate) fn static_resources(
    cubin: &[u8],
    log: &str,
) -> Result<Vec<StaticResources>, CubinError> {
    let kernels = cubin_kernels(cubin)?;
    let too_long = log.len() > MAX_LOG_BYTES;
    let (found, mentions) = if too_long {
        Default::default()
    } else {
        reports(log)
    };
    Ok(kernels
        .into_iter()
        .map(|kernel| {
            let name = kernel.name.as_str();
            let one = match found.get(name).map(Vec::as_slice) {
                _ if too_long => Err(format!(
                    "the compiler log is longer than {} KiB",
                    MAX_LOG_BYTES >> 10
                )),
                Some([r]) if mentions.get(name) == Some(&2) => Ok(*r),
                Some([_]) | Some([_, _, ..]) => Err(
                    "the compiler log names it more than once (the source can write lines into the log)".into(),
                ),
                _ => Err("the compiler log has no complete ptxas report of it".into()),
            };
            let believed = one.and_then(|r| {
                if r.registers != kernel.registers || r.stack_frame_bytes != kernel.stack_frame_bytes {
                    Err(format!(
                        "ptxas's report ({} registers, {} bytes stack frame) disagrees with the module ({} registers, {} bytes stack frame)",
                        r.registers, r.stack_frame_bytes, kernel.registers, kernel.stack_frame_bytes
                    ))
                } else {
                    Ok(r)
                }
            });
            match believed {
                Ok(r) => StaticResources {
                    kernel,
                    spill_store_bytes: Some(r.spill_store_bytes),
                    spill_load_bytes: Some(r.spill_load_bytes),
                    note: None,
                },
                Err(why) => StaticResources {
                    note: Some(format!("spills of {name} unknown: {why}")),
                    kernel,
                    spill_store_bytes: None,
                    spill_load_bytes: None,
                },
            }
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    const REAL: &str = "ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'attention_fwd_f16_d128' for 'sm_90a'
ptxas info    : Function properties for attention_fwd_f16_d128
ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 168 registers, used 16 barriers
ptxas info    : Compile time = 270.682 ms
ptxas info    : Compiling entry function 'k' for 'sm_89'
ptxas info    : Function properties for k
ptxas         .     16 bytes stack frame, 8 bytes spill stores, 4 bytes spill loads
ptxas info    : Used 40 registers, used 1 barriers, 1200 bytes smem, 360 bytes cmem[0]
";

    #[test]
    fn ptxas_reports_are_read_in_their_exact_format() {
        let (found, mentions) = reports(REAL);
        assert_eq!(
            found["attention_fwd_f16_d128"],
            vec![Report {
                registers: 168,
                stack_frame_bytes: 0,
                spill_store_bytes: 0,
                spill_load_bytes: 0
            }]
        );
        assert_eq!(
            found["k"],
            vec![Report {
                registers: 40,
                stack_frame_bytes: 16,
                spill_store_bytes: 8,
                spill_load_bytes: 4
            }]
        );
        assert_eq!(mentions["k"], 2);
        assert_eq!(used_registers("ptxas info    : Used 40 registersX"), None);
        assert_eq!(used_registers("ptxas info    : Used -4 registers"), None);
        assert_eq!(
            frame_line("ptxas . 1 bytes stack frame, 2 bytes spill stores, 3 bytes spill loads"),
            Some((1, 2, 3))
        );
        assert_eq!(
            frame_line("ptxas . 1 bytes stack frame, 2 bytes spill stores, 3 bytes spill loads!"),
            None
        );
        assert_eq!(
            frame_line(
                "ptxas . 99999999999999999999999 bytes stack frame, 2 bytes spill stores, 3 bytes spill loads"
            ),
            None
        );
    }

    #[test]
    fn a_forged_second_report_or_stray_line_is_counted() {
        let forged = format!(
            "attention.cu(5): remark #20200-D: #pragma message: \"\n\
             ptxas info    : Compiling entry function 'k' for 'sm_89'\n\
             ptxas info    : Function properties for k\n\
             ptxas         .     16 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n\
             ptxas info    : Used 40 registers\n\"\n{REAL}"
        );
        let (found, _) = reports(&forged);
        assert_eq!(found["k"].len(), 2);
        let stray = format!("{REAL}ptxas info    : Function properties for k\n");
        let (found, mentions) = reports(&stray);
        assert_eq!((found["k"].len(), mentions["k"]), (1, 3));
    }

    fn clean_cubin() -> Vec<u8> {
        std::fs::read(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/fixtures/cubin/clean.cubin"),
        )
        .unwrap()
    }

    fn report_of(k: &CubinKernel, registers: u32, spills: u64) -> String {
        format!(
            "ptxas info    : Compiling entry function '{0}' for 'sm_89'\n\
             ptxas info    : Function properties for {0}\n\
             ptxas         .     {1} bytes stack frame, {spills} bytes spill stores, {spills} bytes spill loads\n\
             ptxas info    : Used {registers} registers, used 1 barriers\n",
            k.name, k.stack_frame_bytes
        )
    }

    #[test]
    fn spills_are_believed_only_from_one_report_that_agrees_with_the_module() {
        let cubin = clean_cubin();
        let kernels = cubin_kernels(&cubin).unwrap();
        let k = &kernels[0];
        let spills_of = |log: &str| {
            let all = static_resources(&cubin, log).unwrap();
            let r = all
                .iter()
                .find(|r| r.kernel.name == k.name)
                .unwrap()
                .clone();
            (r.spill_store_bytes, r.note)
        };
        let honest = report_of(k, k.registers, 8);
        assert_eq!(spills_of(&honest), (Some(8), None));
        let (none, why) = spills_of(&report_of(k, k.registers + 1, 8));
        assert_eq!(none, None);
        assert!(why.unwrap().contains("disagrees with the module"));
        let (none, why) = spills_of(&format!("{}{honest}", report_of(k, k.registers, 0)));
        assert_eq!(none, None);
        assert!(why.unwrap().contains("more than once"));
        let (none, why) = spills_of("");
        assert_eq!(none, None);
        assert!(why.unwrap().contains("no complete ptxas report"));
        let long = format!("{honest}{}", " ".repeat(MAX_LOG_BYTES));
        let (none, why) = spills_of(&long);
        assert_eq!(none, None);
        assert!(why.unwrap().contains("longer than"));
    }

    #[test]
    fn hostile_logs_do_not_panic() {
        use proptest::prelude::*;
        let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig {
            cases: 2000,
            ..ProptestConfig::default()
        });
        runner
            .run(
                &(
                    0..REAL.len(),
                    proptest::collection::vec((0..REAL.len(), any::<char>()), 0..8),
                ),
                |(cut, edits)| {
                    let mut chars: Vec<char> = REAL.chars().collect();
                    for (at, c) in edits {
                        if at < chars.len() {
                            chars[at] = c;
                        }
                    }
                    let text: String = chars.into_iter().collect();
                    let _ = reports(&text);
                    let _ = reports(REAL.get(..cut).unwrap_or_default());
                    Ok(())
                },
            )
            .unwrap();
    }
}
