//! This run's secrets, drawn from the operating system's random numbers: keys of the
//! device-side hashes, poison patterns and output-slot placements (gpu::integrity).

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Secrets of one run, drawn from the OS: keys of the device-side hashes and the seed of the
/// poison patterns and slot placements. Never derived from the config (a kernel author reads
/// the config).
#[derive(Clone, Copy, Debug)]
pub struct RunKey(pub u64);

impl RunKey {
    pub(crate) fn from_os() -> RunKey {
        RunKey(rand::rng().next_u64())
    }

    /// A generator for one round's placements and poison, from the run's key and `salt`.
    pub(crate) fn rng(&self, salt: u64) -> ChaCha8Rng {
        ChaCha8Rng::seed_from_u64(self.0 ^ salt.wrapping_mul(0x9e37_79b9_7f4a_7c15))
    }
}
