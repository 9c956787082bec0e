//! Peers: other implementations of the same attention, measured on the same shapes in the
//! same run, so that every report answers "how does it stand against PyTorch?". A peer never
//! decides anything: its times are shown next to the kernel's, and stored with the baseline so
//! a later run can say whether the gap moved. No GPU here: `run::peer` runs the PyTorch
//! worker; this module holds what it measured and when it measures.
//!
//! **How a peer is timed**: as a PyTorch user times it (issue 30): one q, k, v per shape, a
//! CUDA graph of about `sample_ms` (2 ms) of back-to-back calls, sized from a short graph of
//! the same calls, CUDA events around each replay, the median — the method of an independent
//! harness (`bench/sdpa_bench.py`), which the peer columns agree with. Each replay follows a
//! lead-in spin and is followed by the duty cycle's idle time, as the kernel's samples are.
//!
//! **When**: [`PEER_ROUNDS`] rounds of [`PEER_SAMPLES`] replays per peer and shape, one
//! after another, after every shape's first stage (`run::stages`): the worker, started
//! beside the setup, has had the whole first stage to import PyTorch and build its plans, so
//! no one waits for it (it cost 6 s of a 35 s PR run with a warm compile cache when the
//! rounds came right after the first pair), and a peer never decides anything, so it needs
//! no second stage. In the stored results of earlier runs (8 rounds of 10 samples per peer
//! and shape, H200 and H100) the median of 3 × 8 samples was within 0.9% of all 80 samples'
//! median on every shape but one (1.5%, a long cuDNN shape whose rounds then differed by up
//! to 10%): well inside what a peer column is read to (two decimals of a ratio; ±3% against
//! an independent harness), at about 6 s for 13 shapes and two peers instead of 18 s.
//!
//! **What differs from the kernel's timing** ([`PeerMethod::note`]): the kernel under the gate
//! gets a fresh q for every launch (refilled from a secret key before every sample, so not
//! L2-warm) and writes an fp32 output slot of its own per launch, poisoned before every
//! sample; a peer reads one q, k, v (all L2-warm in a hot cache) and writes its 16-bit output
//! into one buffer. The "×" columns compare the two as timed; on short shapes this favours the
//! peer (`bench/peers_agreement_device.sh` measures by how much, with the peer given the
//! kernel's conditions).

use serde::{Deserialize, Serialize};

/// The backend names the PyTorch worker reports.
pub(crate) const BACKENDS: [&str; 4] = ["cudnn", "flash", "efficient", "math"];

/// A peer a config can list. (The variants share their prefix because the peers are all
/// PyTorch's SDPA, with different backends: the names mirror the config's.)
#[allow(clippy::enum_variant_names)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Peer {
    /// `torch.nn.functional.scaled_dot_product_attention` with PyTorch's own backend choice;
    /// the worker reports which backend that was ([`PeerResult::backend`]).
    #[serde(rename = "torch-sdpa")]
    TorchSdpa,
    /// The same with the FlashAttention-2 backend forced.
    #[serde(rename = "torch-sdpa-flash")]
    TorchSdpaFlash,
    /// The same with the cuDNN backend forced (PyTorch's default choice on Hopper is not
    /// always cuDNN). An earlier reading that the default ran 5–15% slower than forced cuDNN
    /// where both ran cuDNN was the worker's one-call graphs (issue 30): the default, measured
    /// first, built cuDNN's plan inside its warm-up and was sized to one call per replay.
    #[serde(rename = "torch-sdpa-cudnn")]
    TorchSdpaCudnn,
}

impl Peer {
    pub(crate) const ALL: [Peer; 3] = [Peer::TorchSdpa, Peer::TorchSdpaFlash, Peer::TorchSdpaCudnn];

    /// The name in configs, results and the worker's protocol.
    pub fn name(self) -> &'static str {
        match self {
            Peer::TorchSdpa => "torch-sdpa",
            Peer::TorchSdpaFlash => "torch-sdpa-flash",
            Peer::TorchSdpaCudnn => "torch-sdpa-cudnn",
        }
    }

    /// The column of the report: "vs SDPA (default)", "vs torch FA2", "vs cuDNN". FA2 is
    /// PyTorch's own build of FlashAttention-2 (cuDNN is NVIDIA's library, called by
    /// PyTorch): on an H200 at head_dim 128 it ran 8-9% slower than FA2's source built with
    /// FA2's own flags (docs/MEASURING.md, Peers), so the label says whose build it is.
    pub(crate) fn column(self) -> &'static str {
        match self {
            Peer::TorchSdpa => "vs SDPA (default)",
            Peer::TorchSdpaFlash => "vs torch FA2",
            Peer::TorchSdpaCudnn => "vs cuDNN",
        }
    }

    /// The column of its times: "SDPA µs", "torch FA2 µs", "cuDNN µs".
    pub(crate) fn label(self) -> &'static str {
        match self {
            Peer::TorchSdpa => "SDPA",
            Peer::TorchSdpaFlash => "torch FA2",
            Peer::TorchSdpaCudnn => "cuDNN",
        }
    }
}

impl std::fmt::Display for Peer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// What one peer measured on one shape.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PeerResult {
    pub peer: Peer,
    /// Per-call times in µs, by round (after the kernel's first stage).
    pub samples_us: Vec<Vec<f64>>,
    /// Median of all samples, µs.
    pub p50_us: Option<f64>,
    /// Why it has no time (the backend cannot run the shape, the worker failed).
    pub error: Option<String>,
    /// The backend PyTorch ran, as the worker read it (`cudnn`, `flash`, `efficient`,
    /// `math`): for `torch-sdpa` PyTorch's own choice on this shape.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backend: Option<String>,
}

impl PeerResult {
    /// The kernel's p50 over the peer's: below 1 the kernel is faster.
    pub fn ratio(&self, ours_us: Option<f64>) -> Option<f64> {
        match (ours_us, self.p50_us) {
            (Some(a), Some(b)) if a > 0.0 && b > 0.0 => Some(a / b),
            _ => None,
        }
    }

    /// Recomputes `p50_us` from the samples (after each round).
    pub(crate) fn update_p50(&mut self) {
        self.p50_us = self.p50_of_samples();
    }

    /// The median of all the samples, none below 2 of them: what `p50_us` is.
    pub(crate) fn p50_of_samples(&self) -> Option<f64> {
        let all: Vec<f64> = self.samples_us.iter().flatten().copied().collect();
        crate::stats::Sample::new(all).ok().map(|s| s.median())
    }
}

/// A peer's p50 kept with a stored baseline.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StoredPeer {
    pub peer: Peer,
    pub p50_us: f64,
}

/// How the peers of a run went.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PeersInfo {
    /// "torch 2.9.0, CUDA 13.0".
    pub runtime: Option<String>,
    /// How they were timed, and what differs from the kernel's timing (for the table's
    /// label and footnote). Absent in files of earlier versions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method: Option<PeerMethod>,
    /// Calls per sample (per CUDA-graph replay) of each peer on each shape.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub launches: Vec<PeerLaunches>,
}

/// Calls per sample of one peer on one shape.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PeerLaunches {
    pub shape: String,
    pub peer: Peer,
    pub launches: u32,
}

/// Rounds per peer and shape.
pub(crate) const PEER_ROUNDS: u32 = 3;
/// Samples (CUDA-graph replays) per peer round.
pub(crate) const PEER_SAMPLES: u32 = 8;
/// Whether a peer's replay follows a lead-in spin (as the kernel's do: the host's submission
/// of the replay is then not timed).
pub(crate) const PEER_LEAD_IN: bool = true;

/// How the peers of a run were timed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PeerMethod {
    pub rounds: u32,
    pub samples_per_round: u32,
    /// Target length of one replay (the config's `measure.sample_ms`).
    pub sample_ms: f64,
    pub duty_cycle: f64,
    pub lead_in: bool,
    /// One sentence for the table's footnote: how the peers were timed, and what differs
    /// from the kernel's timing ([`PeerMethod::note_for`]).
    pub note: String,
}

impl PeerMethod {
    /// The method of this build with a config's sample length and duty cycle.
    pub fn new(sample_ms: f64, duty_cycle: f64) -> PeerMethod {
        let mut m = PeerMethod {
            rounds: PEER_ROUNDS,
            samples_per_round: PEER_SAMPLES,
            sample_ms,
            duty_cycle,
            lead_in: PEER_LEAD_IN,
            note: String::new(),
        };
        m.note = m.note_for();
        m
    }

    /// "PyTorch timed as a user times it: …; unlike ours, …".
    pub(crate) fn note_for(&self) -> String {
        format!(
            "PyTorch's SDPA is timed as a PyTorch user times it: one q, k, v per shape (L2-warm), a CUDA graph of about {} ms of back-to-back calls writing their 16-bit output into one buffer, the median of {} replays ({} rounds after the kernel's first stage, {}at a {}% duty cycle). Our kernel's times are taken with a fresh q for every call (not L2-warm) and an fp32 output of its own per call, poisoned before each replay, so on short shapes the × columns favour PyTorch.",
            fmt_num(self.sample_ms),
            self.rounds * self.samples_per_round,
            self.rounds,
            if self.lead_in {
                "each after the same lead-in spin as ours, "
            } else {
                ""
            },
            fmt_num(self.duty_cycle * 100.0)
        )
    }
}

fn fmt_num(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e9 {
        format!("{x:.0}")
    } else {
        format!("{x}")
    }
}

/// "0.93×" for a ratio, "—" without one.
pub(crate) fn ratio_text(r: Option<f64>) -> String {
    r.map(|r| format!("{r:.2}×")).unwrap_or_else(|| "—".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_ratios_need_both_times() {
        for p in Peer::ALL {
            let json = serde_json::to_string(&p).unwrap();
            assert_eq!(json, format!("\"{}\"", p.name()));
            assert_eq!(serde_json::from_str::<Peer>(&json).unwrap(), p);
        }
        assert!(serde_json::from_str::<Peer>("\"torch-sdpa-mem\"").is_err());
        let mut r = PeerResult {
            peer: Peer::TorchSdpa,
            samples_us: vec![vec![10.0, 12.0], vec![11.0]],
            p50_us: None,
            error: None,
            backend: None,
        };
        r.update_p50();
        assert_eq!(r.p50_us, Some(11.0));
        assert_eq!(r.ratio(Some(9.9)), Some(0.9));
        assert_eq!(r.ratio(None), None);
        assert_eq!(ratio_text(r.ratio(Some(11.0))), "1.00×");
    }

    #[test]
    fn the_method_note_says_what_differs() {
        let m = PeerMethod::new(2.0, 0.25);
        assert_eq!((m.rounds, m.samples_per_round), (3, 8));
        assert!(
            m.note.contains("about 2 ms of back-to-back calls")
                && m.note.contains("median of 24 replays")
                && m.note.contains("25% duty cycle")
                && m.note.contains("fresh q for every call")
                && m.note.contains("fp32 output"),
            "{}",
            m.note
        );
        assert_eq!(m.note, m.note_for());
        let json = serde_json::to_string(&PeersInfo {
            runtime: None,
            method: None,
            launches: Vec::new(),
        })
        .unwrap();
        assert_eq!(json, r#"{"runtime":null}"#);
        let old: PeersInfo = serde_json::from_str(r#"{"runtime":"torch 2.9"}"#).unwrap();
        assert_eq!((old.method, old.launches.len()), (None, 0));
    }
}
