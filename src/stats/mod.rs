//! Statistics for comparing two timing samples. (Being written; see the stats issue.)

use std::fmt;

use serde::{Deserialize, Serialize};

/// Cliff's delta magnitude labels (Romano et al. 2006):
/// negligible < 0.147 ≤ small < 0.33 ≤ medium < 0.474 ≤ large.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Magnitude {
    Negligible,
    Small,
    Medium,
    Large,
}

impl Magnitude {
    /// The label of |delta|.
    pub fn of(delta: f64) -> Magnitude {
        let d = delta.abs();
        if d < 0.147 {
            Magnitude::Negligible
        } else if d < 0.33 {
            Magnitude::Small
        } else if d < 0.474 {
            Magnitude::Medium
        } else {
            Magnitude::Large
        }
    }
}

impl fmt::Display for Magnitude {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Magnitude::Negligible => "negligible",
            Magnitude::Small => "small",
            Magnitude::Medium => "medium",
            Magnitude::Large => "large",
        })
    }
}
