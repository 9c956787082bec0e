//! compute-sanitizer's findings: parsing its text log into findings that name the kernel, and
//! the report of a `ci-gate sanitize` run (which kernels, shapes and tools ran, and what each
//! found). No GPU here: `commands::sanitize` runs the tool; this module reads what it wrote.
//!
//! The log is compute-sanitizer's default text report (every line starts with `========= `).
//! A report starts on an unindented line ("Invalid __global__ write of size 4 bytes",
//! "Error: Race reported between Write access at K+0x1f0 …", "Program hit
//! CUDA_ERROR_… on CUDA API call to …") and continues on indented lines, one of which
//! names the device function (`at KERNEL+0xOFFSET [in FILE:LINE]`). The tool's own count
//! (`ERROR SUMMARY: N errors`, racecheck's `RACECHECK SUMMARY: … (N errors, M warnings)`)
//! is authoritative: reports the parser could not read are still counted, so a change in
//! the log's wording can hide details but never a finding.

use serde::{Deserialize, Serialize};

use crate::text::{clip_text, terminal_text};

/// Longest text kept of one log line.
const MAX_LINE: usize = 500;

/// A log line made safe to keep and show: one line, no control characters, bounded.
fn clean(line: &str) -> String {
    clip_text(&terminal_text(line), MAX_LINE)
}

/// The compute-sanitizer tools `ci-gate sanitize` runs, in this order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Tool {
    /// Out-of-bounds and misaligned accesses to global, shared and local memory.
    Memcheck,
    /// Shared-memory data races between threads of a block.
    Racecheck,
    /// Reads of global memory that nothing wrote.
    Initcheck,
    /// Invalid uses of barriers and warp synchronisation.
    Synccheck,
}

impl Tool {
    pub(crate) const ALL: [Tool; 4] = [
        Tool::Memcheck,
        Tool::Racecheck,
        Tool::Initcheck,
        Tool::Synccheck,
    ];

    /// The `--tool` value of compute-sanitizer.
    pub fn name(self) -> &'static str {
        match self {
            Tool::Memcheck => "memcheck",
            Tool::Racecheck => "racecheck",
            Tool::Initcheck => "initcheck",
            Tool::Synccheck => "synccheck",
        }
    }
}

impl std::fmt::Display for Tool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// One report of compute-sanitizer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Finding {
    /// The kernel (entry point) it happened in: from the log's frames, else from the file of
    /// its location and the kernels that run launched (see [`ToolRun::judge`]). `None` for a
    /// host API error after a fault.
    pub kernel: Option<String>,
    /// The device function of the access (the innermost frame: with line info, an inlined
    /// helper such as `copy_v<(int)64, (bool)0>`).
    #[serde(default)]
    pub function: Option<String>,
    /// Its first line, e.g. "Invalid __global__ write of size 4 bytes".
    pub message: String,
    /// Where, when the kernel was compiled with line info: `attention.cu:155`.
    pub location: Option<String>,
    /// The details that follow (thread, block, address), at most a few lines.
    pub details: Vec<String>,
}

/// What one run of one tool found.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct ParsedLog {
    /// Findings the parser could read, in the order of the log.
    pub findings: Vec<Finding>,
    /// The tool's own count of errors, when the log has its summary line.
    pub summary_errors: Option<u64>,
    /// Racecheck's warnings (possible hazards it does not count as errors).
    pub warnings: u64,
}

impl ParsedLog {
    /// Errors in all: the tool's count, or the findings read when it gave none.
    pub fn errors(&self) -> u64 {
        self.summary_errors
            .unwrap_or(0)
            .max(self.findings.len() as u64)
    }

    /// Whether the log ended with the tool's summary (else the run was cut short).
    pub(crate) fn complete(&self) -> bool {
        self.summary_errors.is_some()
    }
}

const PREFIX: &str = "=========";
/// Detail lines kept per finding.
const MAX_DETAILS: usize = 4;
/// Findings kept per log (the count is still the tool's).
const MAX_FINDINGS: usize = 50;

/// Reads a compute-sanitizer text log. Lines without the tool's prefix (the program's own
/// output) are ignored; any input is accepted.
pub(crate) fn parse_log(text: &str) -> ParsedLog {
    let mut log = ParsedLog::default();
    let mut current: Option<Finding> = None;
    let flush = |current: &mut Option<Finding>, log: &mut ParsedLog| {
        if let Some(f) = current.take()
            && log.findings.len() < MAX_FINDINGS
        {
            log.findings.push(f);
        }
    };
    for raw in text.lines() {
        let Some(rest) = raw.strip_prefix(PREFIX) else {
            continue;
        };
        let rest = rest.strip_prefix(' ').unwrap_or(rest);
        if rest.trim().is_empty() {
            flush(&mut current, &mut log);
            continue;
        }
        let indented = rest.starts_with(' ') || rest.starts_with('\t');
        let line = rest.trim();
        if indented {
            if let Some(f) = current.as_mut() {
                read_detail(f, line);
            }
            continue;
        }
        flush(&mut current, &mut log);
        if let Some(n) = summary_count(line, "ERROR SUMMARY:") {
            log.summary_errors = Some(log.summary_errors.unwrap_or(0).max(n));
            continue;
        }
        if line.starts_with("RACECHECK SUMMARY:") {
            let (errors, warnings) = racecheck_counts(line);
            log.summary_errors = Some(log.summary_errors.unwrap_or(0).max(errors));
            log.warnings = warnings;
            continue;
        }
        if is_banner(line) {
            continue;
        }
        let mut f = Finding {
            kernel: None,
            function: None,
            message: clean(line),
            location: None,
            details: Vec::new(),
        };
        // Racecheck names the access on the report's own line.
        read_at(&mut f, line);
        if line.starts_with("Warning:") {
            // Racecheck's possible hazards: counted in its summary as warnings, not errors.
            continue;
        }
        current = Some(f);
    }
    flush(&mut current, &mut log);
    log
}

/// Lines of the tool that are not reports.
fn is_banner(line: &str) -> bool {
    const BANNERS: &[&str] = &[
        "COMPUTE-SANITIZER",
        "LEAK SUMMARY",
        "Target application returned",
        "Internal Sanitizer Error",
        "This can happen",
        "Error: No attachable process",
        "SYNCCHECK SUMMARY",
        "INITCHECK SUMMARY",
    ];
    BANNERS.iter().any(|b| line.starts_with(b))
}

/// `ERROR SUMMARY: 3 errors` → 3.
fn summary_count(line: &str, label: &str) -> Option<u64> {
    let rest = line.strip_prefix(label)?.trim();
    rest.split_whitespace().next()?.parse().ok()
}

/// `RACECHECK SUMMARY: 1 hazard displayed (1 error, 0 warnings)` → (1, 0).
fn racecheck_counts(line: &str) -> (u64, u64) {
    let inner = line
        .split_once('(')
        .and_then(|(_, r)| r.split_once(')'))
        .map(|(i, _)| i)
        .unwrap_or("");
    let mut errors = 0;
    let mut warnings = 0;
    for part in inner.split(',') {
        let mut words = part.split_whitespace();
        let (Some(n), Some(kind)) = (words.next(), words.next()) else {
            continue;
        };
        let Ok(n) = n.parse::<u64>() else { continue };
        if kind.starts_with("error") {
            errors = n;
        } else if kind.starts_with("warning") {
            warnings = n;
        }
    }
    (errors, warnings)
}

/// A device frame as compute-sanitizer prints it: `SIGNATURE+0xOFFSET [in FILE:LINE]`, where
/// the signature is a kernel's name (`attention_fwd_f16_d64`) or, with line info, a device
/// function's (`void copy_v<(int)64, (bool)0>(const unsigned short *, float *, int, int)`).
/// Returns the function's name without return type and parameters, and the location.
fn read_frame(text: &str) -> Option<(String, Option<String>)> {
    let plus = text.find("+0x")?;
    let signature = text[..plus].trim();
    // Cut the parameter list: the first '(' outside template brackets.
    let mut depth = 0i32;
    let mut cut = signature.len();
    let mut last_space = None;
    for (i, c) in signature.char_indices() {
        match c {
            '<' => depth += 1,
            '>' => depth -= 1,
            '(' if depth == 0 => {
                cut = i;
                break;
            }
            ' ' if depth == 0 => last_space = Some(i),
            _ => {}
        }
    }
    // Drop a return type ("void ").
    let start = last_space.filter(|&s| s < cut).map_or(0, |s| s + 1);
    let name = signature[start..cut].trim();
    if name.is_empty() || name.starts_with("0x") {
        return None;
    }
    let location = text[plus..].split_once(" in ").and_then(|(_, loc)| {
        let loc = loc.split_whitespace().next().unwrap_or("");
        // The file name, not the directory it was compiled in.
        let loc = loc.rsplit('/').next().unwrap_or(loc);
        (!loc.is_empty() && loc.contains(':')).then(|| clean(loc))
    });
    Some((clean(name), location))
}

/// Whether `name` is a kernel's entry point (`extern "C"`: a plain identifier), not a
/// device function with a template or namespace.
fn is_entry_symbol(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 200
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// Reads the first `… at FRAME` of a report line (the access it reports).
fn read_at(f: &mut Finding, line: &str) {
    if f.function.is_some() {
        return;
    }
    let Some(pos) = line.find("at ") else { return };
    if pos > 0 && !line[..pos].ends_with(' ') {
        return;
    }
    if let Some((name, location)) = read_frame(&line[pos + 3..]) {
        if is_entry_symbol(&name) {
            f.kernel = Some(name.clone());
        }
        f.function = Some(name);
        f.location = location;
    }
}

fn read_detail(f: &mut Finding, line: &str) {
    // Inlined frames, innermost first: the last is the kernel's entry point.
    if let Some(frame) = line.strip_prefix("Device Frame:") {
        if let Some((name, _)) = read_frame(frame.trim())
            && is_entry_symbol(&name)
        {
            f.kernel = Some(name);
        }
        return;
    }
    // Host backtraces say nothing about the kernel.
    if line.starts_with("Host Frame") || line.starts_with("Saved host backtrace") {
        return;
    }
    if line.starts_with("at ") {
        read_at(f, line);
        return;
    }
    if f.details.len() < MAX_DETAILS {
        f.details.push(clean(line));
    }
}

/// One kernel set, shape and tool: how it went.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct ToolRun {
    pub tool: Tool,
    /// The shape's name (as in the config).
    pub shape: String,
    /// Errors the tool counted (0 is clean).
    pub errors: u64,
    pub warnings: u64,
    pub findings: Vec<Finding>,
    /// Why the run gave no answer (the tool missing its summary, a timeout, a program that
    /// failed with nothing found); `None` when it ran to the end.
    pub failure: Option<String>,
    pub seconds: f64,
}

/// How the program under the tool ended.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Exit {
    Success,
    /// A non-zero exit; the output's last line.
    Failed(String),
    /// Killed at the time limit (seconds).
    TimedOut(u64),
}

impl ToolRun {
    /// Judges one run from its log and how the process ended. Findings always count, however
    /// the process ended; with none, the run has an answer only if the tool wrote its summary
    /// and the program succeeded (a program that failed with nothing found, or a log cut
    /// short, is no answer: never a pass).
    ///
    /// `launched` maps each source file of the run to the kernel it launched from it (e.g.
    /// `attention.cu` → `attention_fwd_f16_d64`): a finding whose frames name no entry point
    /// (racecheck prints only the inlined device function) gets its kernel from its file.
    pub(crate) fn judge(
        tool: Tool,
        shape: &str,
        log_text: &str,
        exit: Exit,
        seconds: f64,
        launched: &[(&str, &str)],
    ) -> ToolRun {
        let mut log = parse_log(log_text);
        for f in &mut log.findings {
            if f.kernel.is_none()
                && let Some(file) = f.location.as_deref().and_then(|l| l.split(':').next())
                && let Some((_, kernel)) = launched.iter().find(|(src, _)| *src == file)
            {
                f.kernel = Some((*kernel).to_owned());
            }
        }
        let failure = if log.errors() > 0 {
            None
        } else {
            match exit {
                Exit::TimedOut(limit) => Some(format!("timed out after {limit} s")),
                _ if !log.complete() => Some(format!(
                    "compute-sanitizer wrote no summary{}",
                    match &exit {
                        Exit::Failed(line) => format!(": {}", clean(line)),
                        _ => String::new(),
                    }
                )),
                Exit::Failed(line) => Some(format!(
                    "the kernels failed with nothing found: {}",
                    clean(&line)
                )),
                Exit::Success => None,
            }
        };
        ToolRun {
            tool,
            shape: shape.to_owned(),
            errors: log.errors(),
            warnings: log.warnings,
            findings: log.findings,
            failure,
            seconds,
        }
    }

    /// The kernels its findings name, deduplicated, in order.
    pub fn kernels(&self) -> Vec<&str> {
        let mut names: Vec<&str> = Vec::new();
        for f in &self.findings {
            let k = f.kernel.as_deref().unwrap_or("(host API)");
            if !names.contains(&k) {
                names.push(k);
            }
        }
        names
    }
}

/// The outcome of `ci-gate sanitize`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum SanitizeOutcome {
    /// Every tool ran on every shape and found nothing (exit 0).
    Clean,
    /// At least one finding (exit 1).
    Findings,
    /// Nothing found, but some run gave no answer (exit 2).
    Incomplete,
}

/// Everything one `ci-gate sanitize` run did.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct SanitizeReport {
    /// The kernels directory (as given) and the SHA-256 of its attention.cu.
    pub kernels: String,
    pub kernel_source_hash: Option<String>,
    pub config: String,
    /// `compute-sanitizer --version`'s last line.
    pub sanitizer_version: Option<String>,
    pub gpu: Option<String>,
    pub runs: Vec<ToolRun>,
    pub seconds: f64,
}

impl SanitizeReport {
    pub(crate) fn outcome(&self) -> SanitizeOutcome {
        if self.runs.iter().any(|r| r.errors > 0) {
            SanitizeOutcome::Findings
        } else if self.runs.is_empty() || self.runs.iter().any(|r| r.failure.is_some()) {
            SanitizeOutcome::Incomplete
        } else {
            SanitizeOutcome::Clean
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Logs of compute-sanitizer 2025.3.1 on an H100, from the planted-bug kernels of
    // tests/sanitize/ (host backtraces shortened).
    const MEMCHECK: &str = include_str!("../tests/fixtures/sanitizer/memcheck-oob.log");
    const MISALIGNED: &str = include_str!("../tests/fixtures/sanitizer/memcheck-misaligned.log");
    const RACECHECK: &str = include_str!("../tests/fixtures/sanitizer/racecheck-race.log");
    const LAUNCHED: &[(&str, &str)] = &[
        ("attention.cu", "attention_fwd_bf16_d64"),
        ("reference.cu", "attention_ref_bf16"),
    ];

    #[test]
    fn memcheck_names_the_kernel_function_and_line() {
        let log = parse_log(MEMCHECK);
        assert_eq!(log.summary_errors, Some(11));
        assert_eq!(log.errors(), 11);
        let f = &log.findings[0];
        assert_eq!(f.kernel.as_deref(), Some("attention_fwd_f16_d64"));
        assert_eq!(f.function.as_deref(), Some("copy_v<(int)64, (bool)0>"));
        assert_eq!(f.location.as_deref(), Some("attention.cu:23"));
        assert_eq!(f.message, "Invalid __global__ write of size 4 bytes");
        assert_eq!(f.details[0], "by thread (0,0,0) in block (2,1,0)");
        assert!(f.details[2].contains("1 bytes after the nearest allocation"));
        let host = &log.findings[1];
        assert_eq!(
            (host.kernel.as_deref(), host.function.as_deref()),
            (None, None)
        );
        assert!(
            host.message
                .starts_with("Program hit CUDA_ERROR_LAUNCH_FAILED")
        );
    }

    #[test]
    fn a_misaligned_cp_async_is_a_misaligned_16_byte_read() {
        let log = parse_log(MISALIGNED);
        // "182 errors were not printed" is a second summary line: the total stays.
        assert_eq!(log.errors(), 282);
        let f = &log.findings[0];
        assert_eq!(f.message, "Invalid __global__ read of size 16 bytes");
        assert_eq!(f.kernel.as_deref(), Some("attention_fwd_f16_d128"));
        assert_eq!(f.location.as_deref(), Some("attention.cu:31"));
        assert!(f.details.iter().any(|d| d.contains("is misaligned")));
    }

    #[test]
    fn racecheck_gets_its_kernel_from_the_file_launched() {
        let log = parse_log(RACECHECK);
        assert_eq!((log.summary_errors, log.warnings), (Some(4), 0));
        assert_eq!(log.findings.len(), 4);
        let f = &log.findings[0];
        assert_eq!(f.kernel, None, "racecheck prints no entry point");
        assert_eq!(f.function.as_deref(), Some("mirror_v<(int)64, (bool)1>"));
        assert_eq!(f.location.as_deref(), Some("attention.cu:22"));
        let run = ToolRun::judge(
            Tool::Racecheck,
            "s",
            RACECHECK,
            Exit::Success,
            1.0,
            LAUNCHED,
        );
        assert_eq!(run.kernels(), ["attention_fwd_bf16_d64"]);
        assert_eq!(run.errors, 4);
    }

    #[test]
    fn frames_are_read_with_and_without_line_info() {
        assert_eq!(
            read_frame("attention_fwd_f16_d64+0x10 in /tmp/attention.cu:35"),
            Some((
                "attention_fwd_f16_d64".into(),
                Some("attention.cu:35".into())
            ))
        );
        assert_eq!(
            read_frame("attention_ref_f16+0x1f0"),
            Some(("attention_ref_f16".into(), None))
        );
        assert_eq!(
            read_frame("void ns::f<(int)1, T<2>>(int, float *)+0x8 in a.cu:1"),
            Some(("ns::f<(int)1, T<2>>".into(), Some("a.cu:1".into())))
        );
        assert_eq!(read_frame("error"), None);
        assert_eq!(read_frame("0x1234+0x8"), None);
    }

    #[test]
    fn racecheck_warnings_are_not_errors() {
        let text = "\
========= Warning: Race reported between Write access at other+0x10
=========     and Write access at other+0x10 [4 hazards]
=========
========= RACECHECK SUMMARY: 1 hazard displayed (0 errors, 1 warning)
";
        let log = parse_log(text);
        assert_eq!((log.errors(), log.warnings, log.findings.len()), (0, 1, 0));
    }

    #[test]
    fn the_tools_count_wins_over_what_was_read() {
        // A report in a wording the parser does not know is still counted.
        let text = "========= Something new happened\n========= ERROR SUMMARY: 5 errors\n";
        let log = parse_log(text);
        assert_eq!(log.errors(), 5);
        let clean = parse_log("========= COMPUTE-SANITIZER\n========= ERROR SUMMARY: 0 errors\n");
        assert_eq!((clean.errors(), clean.complete()), (0, true));
        // A log cut short has no summary: not complete, whatever it found.
        assert!(!parse_log(&MEMCHECK[..400]).complete());
    }

    #[test]
    fn program_output_and_garbage_are_ignored() {
        let log = parse_log("hello\n\u{0}\u{202e}==========\n=========\n");
        assert_eq!(log, ParsedLog::default());
        assert_eq!(summary_count("ERROR SUMMARY: many", "ERROR SUMMARY:"), None);
        // Control characters in a log never reach a finding.
        let log = parse_log("========= Bad \u{1b}[31mthing\u{202e}\n=========     at k+0x1\n");
        assert_eq!(log.findings[0].message, "Bad thing");
    }

    #[test]
    fn a_run_without_findings_answers_only_when_complete_and_successful() {
        let clean_log = "========= COMPUTE-SANITIZER\n========= ERROR SUMMARY: 0 errors\n";
        let judge =
            |log: &str, exit| ToolRun::judge(Tool::Memcheck, "s1", log, exit, 1.0, LAUNCHED);
        assert_eq!(judge(clean_log, Exit::Success).failure, None);
        let r = judge(clean_log, Exit::Failed("CUDA_ERROR_X".into()));
        assert!(r.failure.unwrap().contains("CUDA_ERROR_X"));
        assert!(
            judge("", Exit::Success)
                .failure
                .unwrap()
                .contains("no summary")
        );
        assert!(
            judge(clean_log, Exit::TimedOut(5))
                .failure
                .unwrap()
                .contains("5 s")
        );
        // Findings count whatever happened to the process.
        for exit in [Exit::Success, Exit::Failed("x".into()), Exit::TimedOut(1)] {
            let r = judge(MEMCHECK, exit);
            assert_eq!((r.errors, r.failure.is_none()), (11, true));
            assert_eq!(r.kernels(), ["attention_fwd_f16_d64", "(host API)"]);
        }
    }

    #[test]
    fn outcome_is_findings_then_incomplete_then_clean() {
        let run = |errors, failure: Option<&str>| ToolRun {
            tool: Tool::Memcheck,
            shape: "s".into(),
            errors,
            warnings: 0,
            findings: vec![],
            failure: failure.map(Into::into),
            seconds: 0.0,
        };
        let mut r = SanitizeReport {
            kernels: "k".into(),
            kernel_source_hash: None,
            config: "c".into(),
            sanitizer_version: None,
            gpu: None,
            runs: vec![],
            seconds: 0.0,
        };
        assert_eq!(r.outcome(), SanitizeOutcome::Incomplete);
        r.runs = vec![run(0, None)];
        assert_eq!(r.outcome(), SanitizeOutcome::Clean);
        r.runs.push(run(0, Some("timed out")));
        assert_eq!(r.outcome(), SanitizeOutcome::Incomplete);
        r.runs.push(run(3, None));
        assert_eq!(r.outcome(), SanitizeOutcome::Findings);
    }
}
