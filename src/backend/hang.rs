//! What a hung device does to this process, for every backend alike: the one hang handler
//! the engine installs ([`set_handler`], from `run::pipeline::on_hang`: the results file
//! without a verdict, saved or published as the command publishes any), run with one sentence that names what hung ([`report`]); the
//! process then ends with exit code 2. The GPU's watchdog (`gpu::watchdog`) reports a wait
//! past its deadline here and ends the process without running destructors (the driver's
//! teardown could wait on the hung kernel); the simulated GPU's hung kernel takes the same
//! path ([`end_simulated`]), so that the hang handling of every command is tested without a
//! GPU.

use std::sync::{Arc, Mutex};
use std::time::Duration;

/// What the command does when the device hangs, before the process exits with code 2: it
/// gets one sentence naming what hung.
pub(crate) type HangHandler = Box<dyn Fn(&str) + Send + Sync>;

static HANDLER: Mutex<Option<Arc<HangHandler>>> = Mutex::new(None);

/// Installs what runs when the device hangs (replacing any earlier handler).
pub(crate) fn set_handler(handler: HangHandler) {
    *HANDLER.lock().unwrap_or_else(|e| e.into_inner()) = Some(Arc::new(handler));
}

/// The sentence the hang handler gets: `what` hung (kernel, shape, side), waited for `limit`.
pub(crate) fn message(what: &str, limit: Duration) -> String {
    format!(
        "{what} did not finish within {:.0} s (a kernel that never returns, or one too slow to wait for), so the run ends here without a verdict",
        limit.as_secs_f64().max(1.0)
    )
}

/// Runs the hang handler with `message` (without one: the message on stderr). The caller
/// ends the process right after.
pub(crate) fn report(message: &str) {
    // A panic while the lock was held leaves plain data behind: keep using it.
    let handler = HANDLER.lock().unwrap_or_else(|e| e.into_inner()).clone();
    match handler {
        Some(h) => h(message),
        None => eprintln!("{}", crate::text::error_message(message)),
    }
}

/// A simulated kernel's hang (`what`, waited for `limit`): reported as the GPU's watchdog
/// reports one, then the process ends with exit code 2 (nothing of a device to tear down).
pub(crate) fn end_simulated(what: &str, limit: Duration) -> ! {
    use std::io::Write;
    report(&message(what, limit));
    let _ = std::io::stdout().flush();
    let _ = std::io::stderr().flush();
    std::process::exit(2)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_message_names_what_hung_and_the_limit() {
        let m = message(
            "kernel attention_fwd_f16_d64 of the candidate on shape b1h8s512d64",
            Duration::from_secs(60),
        );
        assert!(m.starts_with("kernel attention_fwd_f16_d64 of the candidate"));
        assert!(m.contains("within 60 s"));
    }
}
