//! Where a measuring process's time went, finer than its phases: named spans (opening the
//! device, the spin-up, each part of a parity check, of preparing and of finishing a round),
//! summed over the process and written into the results' `timing.detail_s`, which `ci-gate
//! eval` passes on per candidate. They name work, not kernels: nothing a kernel controls is
//! in a name.
//!
//! Cost: one `Instant::now()` and one uncontended mutex per span; spans wrap work of
//! milliseconds, never a single launch.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Instant;

static SPANS: Mutex<BTreeMap<&'static str, f64>> = Mutex::new(BTreeMap::new());

/// Adds the time since `since` to the span `name`.
pub(crate) fn add(name: &'static str, since: Instant) {
    let s = since.elapsed().as_secs_f64();
    let mut spans = SPANS.lock().unwrap_or_else(|e| e.into_inner());
    *spans.entry(name).or_default() += s;
}

/// Runs `f`, adding its time to the span `name`.
pub(crate) fn time<T>(name: &'static str, f: impl FnOnce() -> T) -> T {
    let t = Instant::now();
    let r = f();
    add(name, t);
    r
}

/// Whether `CI_GATE_SYNC_SPANS` is set: a maintainer's diagnosis, never a measurement. The
/// GPU work of a sample's preparation and checks is queued without waiting, so its spans
/// would time only the queueing; with this set, [`gpu_step`] waits for the GPU before and
/// after each step so that its span holds the step's GPU time (and the samples are slower
/// by the waits: the timings of such a run mean nothing).
pub(crate) fn sync_spans() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| std::env::var_os("CI_GATE_SYNC_SPANS").is_some_and(|v| !v.is_empty()))
}

/// Runs the queueing step `f` under the span `name`; with [`sync_spans`], `wait` (the
/// stream's synchronisation) before and after it, so the span holds its GPU time.
pub(crate) fn gpu_step<T, E>(
    name: &'static str,
    wait: impl Fn() -> Result<(), E>,
    f: impl FnOnce() -> Result<T, E>,
) -> Result<T, E> {
    if !sync_spans() {
        return f();
    }
    wait()?;
    let t = Instant::now();
    let r = f()?;
    wait()?;
    add(name, t);
    Ok(r)
}

/// Every span so far in this process, seconds.
pub(crate) fn all() -> BTreeMap<String, f64> {
    let spans = SPANS.lock().unwrap_or_else(|e| e.into_inner());
    spans.iter().map(|(k, v)| ((*k).to_owned(), *v)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_add_up() {
        add("test.span", Instant::now());
        let a = all()["test.span"];
        time("test.span", || {
            std::thread::sleep(std::time::Duration::from_millis(2))
        });
        assert!(all()["test.span"] >= a + 0.002);
        for name in all().keys() {
            assert!(crate::results::valid_span_name(name), "{name}");
        }
    }
}
