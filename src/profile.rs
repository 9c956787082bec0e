//! Nsight Compute figures of one kernel launch, base against candidate: what the report shows
//! for a shape that regressed (or one asked for with `--profile`). No GPU here:
//! `run::profile` runs ncu; this module reads its raw CSV page
//! (`ncu --import R.ncu-rep --csv --page raw --print-units base`) and holds the figures.
//!
//! The raw page has one header row of metric names, one row of units and one row per
//! profiled launch. Only the metrics below are kept; a metric ncu did not collect (another
//! version, a section left out) is `None` and shows as "—".

use serde::{Deserialize, Serialize};

/// Why a shape was profiled.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProfileReason {
    /// Its verdict is `regression`.
    Regression,
    /// Named with `--profile`.
    Requested,
    /// Among the `--profile-slowest N`.
    Slowest,
}

impl std::fmt::Display for ProfileReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ProfileReason::Regression => "regression",
            ProfileReason::Requested => "requested",
            ProfileReason::Slowest => "slowest",
        })
    }
}

/// One warp-stall reason: warps stalled for it per issued instruction (ncu's
/// `smsp__average_warps_issue_stalled_<reason>_per_issue_active.ratio`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Stall {
    pub reason: String,
    pub per_issue: f64,
}

/// The figures of one profiled launch.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct KernelProfile {
    /// The kernel's name, as ncu reports it.
    pub kernel: String,
    pub duration_us: Option<f64>,
    /// Compute (SM) throughput, % of peak.
    pub sm_throughput_pct: Option<f64>,
    /// Memory throughput, % of peak.
    pub memory_throughput_pct: Option<f64>,
    pub achieved_occupancy_pct: Option<f64>,
    pub registers_per_thread: Option<f64>,
    /// Static and dynamic shared memory per block, bytes.
    pub shared_memory_per_block: Option<f64>,
    pub l2_hit_rate_pct: Option<f64>,
    /// The largest stall reasons, largest first (at most [`TOP_STALLS`]).
    pub top_stalls: Vec<Stall>,
    /// File name of the `.ncu-rep` (in the results' profile directory).
    pub report_file: Option<String>,
}

/// Stall reasons kept per launch.
pub(crate) const TOP_STALLS: usize = 3;

/// Sets one figure of a profile from a raw metric's value.
type Setter = fn(&mut KernelProfile, f64);

/// The raw metric names read, with the field each fills.
const METRICS: &[(&str, Setter)] = &[
    ("gpu__time_duration.sum", |p, v| {
        p.duration_us = Some(v / 1000.0)
    }),
    (
        "sm__throughput.avg.pct_of_peak_sustained_elapsed",
        |p, v| p.sm_throughput_pct = Some(v),
    ),
    (
        "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
        |p, v| p.memory_throughput_pct = Some(v),
    ),
    (
        "sm__warps_active.avg.pct_of_peak_sustained_active",
        |p, v| p.achieved_occupancy_pct = Some(v),
    ),
    ("launch__registers_per_thread", |p, v| {
        p.registers_per_thread = Some(v)
    }),
    ("launch__shared_mem_per_block_static", |p, v| {
        p.shared_memory_per_block = Some(p.shared_memory_per_block.unwrap_or(0.0) + v)
    }),
    ("launch__shared_mem_per_block_dynamic", |p, v| {
        p.shared_memory_per_block = Some(p.shared_memory_per_block.unwrap_or(0.0) + v)
    }),
    ("lts__t_sector_hit_rate.pct", |p, v| {
        p.l2_hit_rate_pct = Some(v)
    }),
];

/// Every raw metric the profile needs beyond ncu's sections (`--metrics`).
pub(crate) const EXTRA_METRICS: &[&str] = &[
    "lts__t_sector_hit_rate.pct",
    "launch__registers_per_thread",
    "launch__shared_mem_per_block_static",
    "launch__shared_mem_per_block_dynamic",
];

/// ncu's sections the profile needs (`--section`).
pub(crate) const SECTIONS: &[&str] =
    &["SpeedOfLight", "Occupancy", "LaunchStats", "WarpStateStats"];

const STALL_PREFIX: &str = "smsp__average_warps_issue_stalled_";
const STALL_SUFFIX: &str = "_per_issue_active.ratio";
/// Kernel names longer than this are cut (ncu prints the demangled signature).
const MAX_NAME: usize = 200;

/// Why ncu's raw CSV page gave no profile.
#[derive(Debug, thiserror::Error)]
pub(crate) enum RawCsvError {
    #[error("ncu's CSV has no header row: {0}")]
    NoHeader(csv::Error),
    #[error("ncu's CSV has no \"Kernel Name\" column")]
    NoKernelColumn,
    #[error("ncu's CSV is malformed: {0}")]
    Malformed(csv::Error),
    #[error("ncu's CSV has no launch of a kernel named {prefix}…")]
    NoLaunch { prefix: String },
}

/// Reads the first launch of ncu's raw CSV page whose kernel name starts with `kernel_prefix`.
pub(crate) fn parse_raw_csv(text: &str, kernel_prefix: &str) -> Result<KernelProfile, RawCsvError> {
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(true)
        .flexible(true)
        .from_reader(text.as_bytes());
    let headers = reader.headers().map_err(RawCsvError::NoHeader)?.clone();
    let column = |name: &str| headers.iter().position(|h| h == name);
    let name_col = column("Kernel Name").ok_or(RawCsvError::NoKernelColumn)?;
    for record in reader.records() {
        let record = record.map_err(RawCsvError::Malformed)?;
        let Some(name) = record.get(name_col) else {
            continue;
        };
        if !name.starts_with(kernel_prefix) {
            // The units row, or another kernel.
            continue;
        }
        let mut p = KernelProfile {
            kernel: clean_name(name),
            ..KernelProfile::default()
        };
        for (metric, set) in METRICS {
            if let Some(v) = column(metric).and_then(|i| record.get(i)).and_then(number) {
                set(&mut p, v);
            }
        }
        let mut stalls: Vec<Stall> = headers
            .iter()
            .enumerate()
            .filter_map(|(i, h)| {
                let reason = h.strip_prefix(STALL_PREFIX)?.strip_suffix(STALL_SUFFIX)?;
                // `_not_issued` variants repeat the same reasons for cycles with no issue;
                // "selected" is the warp that issued, not a stall.
                if reason.ends_with("not_issued") || reason == "selected" || !is_reason(reason) {
                    return None;
                }
                let v = record.get(i).and_then(number)?;
                (v > 0.0).then(|| Stall {
                    reason: reason.to_owned(),
                    per_issue: v,
                })
            })
            .collect();
        stalls.sort_by(|a, b| b.per_issue.total_cmp(&a.per_issue));
        stalls.truncate(TOP_STALLS);
        p.top_stalls = stalls;
        return Ok(p);
    }
    Err(RawCsvError::NoLaunch {
        prefix: kernel_prefix.to_owned(),
    })
}

/// A number as ncu prints it ("1,234.5", "n/a" → None). Finite only.
fn number(field: &str) -> Option<f64> {
    let cleaned: String = field.trim().chars().filter(|&c| c != ',').collect();
    cleaned.parse::<f64>().ok().filter(|v| v.is_finite())
}

fn is_reason(s: &str) -> bool {
    !s.is_empty() && s.len() <= 64 && s.bytes().all(|b| b.is_ascii_lowercase() || b == b'_')
}

/// The kernel's name without its signature, bounded, printable ASCII.
fn clean_name(name: &str) -> String {
    let base = name.split('(').next().unwrap_or(name);
    base.chars()
        .filter(|c| c.is_ascii_graphic())
        .take(MAX_NAME)
        .collect()
}

/// Why a profile read from a results file is refused: one clause, which `results` places
/// under the shape's `profile` key. Typed so that a caller can tell which part of the
/// profile is at fault without reading the sentence.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum ProfileInvalid {
    #[error("kernel name {kernel:?} is not a symbol")]
    KernelName { kernel: String },
    #[error("{figure} is {value}")]
    Figure { figure: &'static str, value: f64 },
    #[error("more than {TOP_STALLS} stall reasons")]
    TooManyStalls,
    #[error("stall reason {reason:?} is malformed")]
    Stall { reason: String },
    #[error("report file {file:?} is not a plain file name")]
    ReportFile { file: String },
}

impl KernelProfile {
    /// Checks a profile read from a results file (which may be hostile): names of the
    /// expected form, figures finite and not negative.
    pub fn check(&self) -> Result<(), ProfileInvalid> {
        if self.kernel.is_empty()
            || self.kernel.len() > MAX_NAME
            || !self
                .kernel
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_')
        {
            return Err(ProfileInvalid::KernelName {
                kernel: self.kernel.clone(),
            });
        }
        for (figure, v) in self.figures() {
            if let Some(value) = v
                && !(value.is_finite() && value >= 0.0)
            {
                return Err(ProfileInvalid::Figure { figure, value });
            }
        }
        if self.top_stalls.len() > TOP_STALLS {
            return Err(ProfileInvalid::TooManyStalls);
        }
        for s in &self.top_stalls {
            if !(is_reason(&s.reason) && s.per_issue.is_finite() && s.per_issue >= 0.0) {
                return Err(ProfileInvalid::Stall {
                    reason: s.reason.clone(),
                });
            }
        }
        if let Some(f) = &self.report_file
            && crate::validate::path_component(f).is_err()
        {
            return Err(ProfileInvalid::ReportFile { file: f.clone() });
        }
        Ok(())
    }

    /// The figures by their labels in the report, in its order.
    pub(crate) fn figures(&self) -> [(&'static str, Option<f64>); 7] {
        [
            ("duration (µs)", self.duration_us),
            ("SM throughput (%)", self.sm_throughput_pct),
            ("memory throughput (%)", self.memory_throughput_pct),
            ("achieved occupancy (%)", self.achieved_occupancy_pct),
            ("registers per thread", self.registers_per_thread),
            ("shared memory per block (B)", self.shared_memory_per_block),
            ("L2 hit rate (%)", self.l2_hit_rate_pct),
        ]
    }
}

/// Base and candidate figures of one shape.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ShapeProfile {
    pub reason: ProfileReason,
    pub base: Option<KernelProfile>,
    pub candidate: Option<KernelProfile>,
    /// Why a side is missing (ncu failed, the budget ran out).
    pub error: Option<String>,
}

impl ShapeProfile {
    /// Rows of the base-versus-candidate table: label, base, candidate, change. The stall rows
    /// list each side's top reasons.
    pub(crate) fn rows(&self) -> Vec<[String; 4]> {
        let fmt = |v: Option<f64>| match v {
            Some(v) if v.abs() >= 1000.0 => format!("{v:.0}"),
            Some(v) => format!("{v:.2}"),
            None => "—".into(),
        };
        let empty = KernelProfile::default();
        let base = self.base.as_ref().unwrap_or(&empty);
        let cand = self.candidate.as_ref().unwrap_or(&empty);
        let mut rows: Vec<[String; 4]> = base
            .figures()
            .iter()
            .zip(cand.figures())
            .map(|((label, b), (_, c))| {
                let change = match (b, c) {
                    (Some(b), Some(c)) if *b > 0.0 => format!("{:+.1}%", (c / b - 1.0) * 100.0),
                    _ => "—".into(),
                };
                [label.to_string(), fmt(*b), fmt(c), change]
            })
            .collect();
        for i in 0..TOP_STALLS {
            let stall = |p: &KernelProfile| {
                p.top_stalls
                    .get(i)
                    .map(|s| format!("{} {:.2}", s.reason, s.per_issue))
                    .unwrap_or_else(|| "—".into())
            };
            let (b, c) = (stall(base), stall(cand));
            if b == "—" && c == "—" {
                continue;
            }
            rows.push([
                format!("stall #{} (warps/issue)", i + 1),
                b,
                c,
                String::new(),
            ]);
        }
        rows
    }

    /// Checks both sides' figures ([`KernelProfile::check`]).
    pub fn check(&self) -> Result<(), ProfileInvalid> {
        for p in self.base.iter().chain(&self.candidate) {
            p.check()?;
        }
        Ok(())
    }
}

/// How profiling went in a run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProfilingInfo {
    /// `ncu --version`'s last line.
    pub ncu_version: Option<String>,
    /// Wall time spent profiling, and the limit it had.
    pub seconds: f64,
    pub budget_s: f64,
    /// Directory (as given) that holds the `.ncu-rep` files.
    pub dir: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn csv_of(rows: &[&[&str]]) -> String {
        rows.iter()
            .map(|r| {
                r.iter()
                    .map(|f| format!("\"{f}\""))
                    .collect::<Vec<_>>()
                    .join(",")
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    #[test]
    fn reads_the_figures_and_the_top_stalls() {
        let text = csv_of(&[
            &[
                "ID",
                "Kernel Name",
                "gpu__time_duration.sum",
                "launch__registers_per_thread",
                "launch__shared_mem_per_block_static",
                "launch__shared_mem_per_block_dynamic",
                "lts__t_sector_hit_rate.pct",
                "smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio",
                "smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio",
                "smsp__average_warps_issue_stalled_math_pipe_throttle_per_issue_active.ratio",
                "smsp__average_warps_issue_stalled_mio_throttle_per_issue_active.ratio",
                "smsp__average_warps_issue_stalled_barrier_not_issued_per_issue_active.ratio",
            ],
            &[
                "",
                "",
                "nsecond",
                "register/thread",
                "byte",
                "byte",
                "%",
                "",
                "",
                "",
                "",
                "",
            ],
            &[
                "0",
                "attention_fwd_f16_d64",
                "12,345.6",
                "128",
                "0",
                "32768",
                "81.5",
                "0.5",
                "2.25",
                "1.5",
                "0.25",
                "9.0",
            ],
        ]);
        let p = parse_raw_csv(&text, "attention_fwd_").unwrap();
        assert_eq!(p.kernel, "attention_fwd_f16_d64");
        assert!((p.duration_us.unwrap() - 12.3456).abs() < 1e-9);
        assert_eq!(p.registers_per_thread, Some(128.0));
        assert_eq!(p.shared_memory_per_block, Some(32768.0));
        assert_eq!(p.l2_hit_rate_pct, Some(81.5));
        assert_eq!(p.sm_throughput_pct, None);
        let reasons: Vec<&str> = p.top_stalls.iter().map(|s| s.reason.as_str()).collect();
        assert_eq!(
            reasons,
            ["long_scoreboard", "math_pipe_throttle", "barrier"]
        );
        assert!(p.check().is_ok());
    }

    /// ncu 2025.3.1's raw page of one launch on an H100 (`ncu --import R --csv --page raw
    /// --print-units base`), 558 columns.
    #[test]
    fn reads_a_real_raw_page() {
        let text = include_str!("../tests/fixtures/ncu-raw-page.csv");
        let p = parse_raw_csv(text, "attention_fwd_").unwrap();
        assert_eq!(p.kernel, "attention_fwd_f16_d64");
        assert_eq!(p.duration_us, Some(12.64));
        assert_eq!(p.registers_per_thread, Some(244.0));
        assert_eq!(p.shared_memory_per_block, Some(32768.0));
        assert_eq!(p.l2_hit_rate_pct, Some(59.34));
        assert_eq!(p.sm_throughput_pct, Some(13.06));
        assert_eq!(p.memory_throughput_pct, Some(12.44));
        assert_eq!(p.achieved_occupancy_pct, Some(6.22));
        assert_eq!(p.top_stalls[0].reason, "wait");
        assert!(p.top_stalls.iter().all(|s| s.reason != "selected"));
        assert!(p.check().is_ok());
    }

    #[test]
    fn no_matching_launch_is_an_error() {
        let text = csv_of(&[&["ID", "Kernel Name"], &["0", "fill_normal_f16"]]);
        assert!(parse_raw_csv(&text, "attention_fwd_").is_err());
        assert!(parse_raw_csv("", "attention_fwd_").is_err());
        assert!(parse_raw_csv("\"a\",\"b\"\n", "x").is_err());
    }

    #[test]
    fn hostile_profiles_are_refused() {
        let mut p = KernelProfile {
            kernel: "k".into(),
            ..KernelProfile::default()
        };
        assert!(p.check().is_ok());
        p.duration_us = Some(f64::NAN);
        assert!(p.check().is_err());
        p.duration_us = None;
        p.kernel = "<img src=x>".into();
        assert!(p.check().is_err());
        p.kernel = "k".into();
        p.report_file = Some("../../etc/passwd".into());
        assert!(p.check().is_err());
        p.report_file = None;
        p.top_stalls = vec![Stall {
            reason: "@team".into(),
            per_issue: 1.0,
        }];
        assert!(p.check().is_err());
    }

    #[test]
    fn rows_show_the_change() {
        let side = |d| KernelProfile {
            kernel: "k".into(),
            duration_us: Some(d),
            top_stalls: vec![Stall {
                reason: "barrier".into(),
                per_issue: 1.0,
            }],
            ..KernelProfile::default()
        };
        let s = ShapeProfile {
            reason: ProfileReason::Regression,
            base: Some(side(10.0)),
            candidate: Some(side(11.0)),
            error: None,
        };
        let rows = s.rows();
        assert_eq!(rows[0][3], "+10.0%");
        assert_eq!(rows[1][1], "—");
        assert_eq!(rows.last().unwrap()[1], "barrier 1.00");
    }
}
