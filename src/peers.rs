//! Peers: other implementations of the same attention, measured on the same shapes in the
//! same run by the same method, so that every report answers "how does it stand against
//! PyTorch?". A peer never decides anything: its times are shown next to the kernel's, and
//! stored with the baseline so a later run can say whether the gap moved. No GPU here:
//! `commands::peer` runs the PyTorch worker; this module holds what it measured.

use serde::{Deserialize, Serialize};

/// The backend names the PyTorch worker reports.
pub const BACKENDS: [&str; 4] = ["cudnn", "flash", "efficient", "math"];

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
    /// always cuDNN, and not always its fastest engine: measured 5–15% slower than forced
    /// cuDNN on 9 of 13 PR shapes on an H200).
    #[serde(rename = "torch-sdpa-cudnn")]
    TorchSdpaCudnn,
}

impl Peer {
    pub const ALL: [Peer; 3] = [Peer::TorchSdpa, Peer::TorchSdpaFlash, Peer::TorchSdpaCudnn];

    /// The name in configs, results and the worker's protocol.
    pub fn name(self) -> &'static str {
        match self {
            Peer::TorchSdpa => "torch-sdpa",
            Peer::TorchSdpaFlash => "torch-sdpa-flash",
            Peer::TorchSdpaCudnn => "torch-sdpa-cudnn",
        }
    }

    /// The column of the report: "vs SDPA (default)", "vs FA2", "vs cuDNN".
    pub fn column(self) -> &'static str {
        match self {
            Peer::TorchSdpa => "vs SDPA (default)",
            Peer::TorchSdpaFlash => "vs FA2",
            Peer::TorchSdpaCudnn => "vs cuDNN",
        }
    }

    /// The column of its times: "SDPA µs", "FA2 µs", "cuDNN µs".
    pub fn label(self) -> &'static str {
        match self {
            Peer::TorchSdpa => "SDPA",
            Peer::TorchSdpaFlash => "FA2",
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
    /// Per-call times in µs, by round (one round after each of the kernel's rounds or pairs).
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
    pub fn update_p50(&mut self) {
        let all: Vec<f64> = self.samples_us.iter().flatten().copied().collect();
        self.p50_us = crate::stats::Sample::new(all).ok().map(|s| s.median());
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
}

/// "0.93×" for a ratio, "—" without one.
pub fn ratio_text(r: Option<f64>) -> String {
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
}
