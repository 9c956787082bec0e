//! A deadline on every wait for the GPU.
//!
//! A kernel under test can spin forever, and every CUDA call that waits for it (a stream
//! synchronisation, a device-to-host copy, freeing a buffer, destroying the context) then
//! blocks with it. So the waits are not timed by the thread that waits: each is armed here
//! with a deadline, and one watchdog thread checks the deadlines. Past one, the process
//! cannot go on (the context is hung, and unwinding would free buffers on it): the watchdog
//! hands the message to the hang handler the engine installed (`backend::hang`: it writes the
//! results file and says which shape and side hung) and ends the process with exit code 2
//! without running destructors.

use std::sync::{Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use crate::backend::hang;

#[derive(Default)]
struct State {
    /// Armed waits, innermost last: (deadline, limit, what is waited for).
    armed: Vec<(Instant, Duration, String)>,
}

fn state() -> MutexGuard<'static, State> {
    static STATE: OnceLock<Mutex<State>> = OnceLock::new();
    let m = STATE.get_or_init(|| {
        std::thread::Builder::new()
            .name("ci-gate-watchdog".into())
            .spawn(watch)
            .ok();
        Mutex::new(State::default())
    });
    // A panic while the lock was held leaves plain data behind: keep using it.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Runs `f` (a call that waits for the GPU) with a deadline `limit` from now; `what` names
/// the work waited for (kernel, shape, side), e.g. "kernel attention_fwd_f16_d64 of the
/// candidate on shape b1h8s512d64".
pub(crate) fn guarded<T>(
    limit: Duration,
    what: impl FnOnce() -> String,
    f: impl FnOnce() -> T,
) -> T {
    let depth = {
        let mut s = state();
        s.armed.push((Instant::now() + limit, limit, what()));
        s.armed.len()
    };
    let out = f();
    state().armed.truncate(depth - 1);
    out
}

fn watch() {
    loop {
        std::thread::sleep(Duration::from_millis(50));
        let expired = {
            let s = state();
            let now = Instant::now();
            s.armed
                .iter()
                .find(|(deadline, _, _)| now >= *deadline)
                .map(|(_, limit, what)| hang::message(what, *limit))
        };
        if let Some(message) = expired {
            hang::report(&message);
            crate::ffi::exit_now(2)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wait_that_returns_in_time_disarms_its_deadline() {
        let v = guarded(
            Duration::from_secs(30),
            || "a quick wait".into(),
            || {
                guarded(Duration::from_secs(30), || "a nested wait".into(), || 7)
                    + state().armed.len()
            },
        );
        // Both were armed inside; the outer one is the only one left after the inner.
        assert_eq!(v, 7 + 1);
        assert!(
            state()
                .armed
                .iter()
                .all(|(_, _, w)| w != "a quick wait" && w != "a nested wait")
        );
    }
}
