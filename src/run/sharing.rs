//! Whether a run had its GPU to itself (issue 30: two runs on one GPU did not notice each
//! other, and one run's comparison with the stored baseline moved from −6.4% to +6.9%).
//!
//! - [`GpuHold`]: ci-gate's own runs on one GPU are serialised by a per-GPU lock
//!   (`gpu::lock`), taken once per run, before anything is launched, by whoever owns the
//!   run's GPU work (`local` and `ci` for the measuring and the profiles, a child process or
//!   the evaluator's worker for its run, `bisect` for its whole search, `sanitize` for its
//!   tools), and held by that value until it drops. [`Run::measure`](super::request::Run::measure) takes it by reference: the
//!   pipeline never locks, so nothing takes a lock twice and the lock needs no re-entry.
//! - [`ProcessWatch`]: anything else on the GPU (another user's run, a notebook, a stray
//!   training job) is seen in NVML's list of the GPU's compute processes, read at the run's
//!   start, between shapes and at its end. This run's own processes (itself and its PyTorch
//!   worker) are left out; every other one is named in the results and a warning, and the
//!   comparison with the stored baseline — which nothing measured beside it cancels — is not
//!   judged (`assemble::judge_shared`, `session::stored_side`).
//!
//! NVML names processes by the driver's pids. Inside a container with a pid namespace of its
//! own those are the host's, and this process's own pid is not among them: the watch then
//! takes this run's own to be the processes that appeared between a reading before its CUDA
//! context existed and the first reading after its worker started, and names the others by
//! their host pids only (their names are not visible from here).

use std::collections::{BTreeMap, BTreeSet};

use anyhow::Result;

use super::device::BackendChoice;
use crate::backend::{Facts, ProcessesUnlisted};
use crate::gpu::lock::{self, GpuLock};
use crate::results::GpuProcess;

/// This process's hold on its run's GPU (`gpu::lock`): one ci-gate run per GPU at a time.
/// Taken once per run, before anything is launched, and released when this drops; the
/// pipeline is handed it ([`Run::measure`](super::request::Run::measure)) and reads from it
/// the GPU's key and how long the run waited. Empty where there is no GPU to lock (no driver: opening the GPU then
/// fails with the reason) and where children measure (`--devices`: each takes its own GPU's).
pub(crate) struct GpuHold {
    lock: Option<GpuLock>,
}

impl GpuHold {
    /// Takes the lock of `device`'s GPU, saying on stderr, once, when it has to wait. An
    /// error is a sentence: the lock cannot be used, or the wait ran out.
    pub(crate) fn take(device: BackendChoice) -> Result<GpuHold> {
        let Some(key) = device.gpu_key() else {
            return Ok(GpuHold::none());
        };
        let lock = lock::acquire(&key, &lock::lock_dir(), lock::wait_bound(), &mut |line| {
            eprintln!("{line}")
        })?;
        Ok(GpuHold { lock: Some(lock) })
    }

    /// No lock: for a process that launches nothing on its GPU itself (`--devices`).
    pub(super) fn none() -> GpuHold {
        GpuHold { lock: None }
    }

    /// The locked GPU's key (its UUID), where one is held.
    pub(super) fn key(&self) -> Option<&str> {
        self.lock.as_ref().map(GpuLock::key)
    }

    /// Seconds spent waiting for the lock (the results' `timing.lock_wait_s`).
    pub(super) fn waited_s(&self) -> f64 {
        self.lock.as_ref().map_or(0.0, |l| l.waited().as_secs_f64())
    }
}

/// The GPU's compute processes before this process opened its CUDA context (`None` when
/// simulating, or without a key): whatever is listed then is not this run's.
pub(crate) fn processes_before(
    device: BackendChoice,
    key: Option<&str>,
) -> Option<Result<Vec<GpuProcess>, ProcessesUnlisted>> {
    if device.simulated() {
        return None;
    }
    let monitor = crate::gpu::env::Monitor::new(key?);
    // The run that held the lock before this one has let it go, but the driver may list its
    // process for a moment longer while its context is torn down: a process still listed
    // after a second is another's.
    let mut reading = monitor.compute_processes();
    for _ in 0..5 {
        if !reading.as_ref().is_ok_and(|l| !l.is_empty()) {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
        reading = monitor.compute_processes();
    }
    Some(reading.map(|list| {
        list.into_iter()
            .map(|(pid, bytes)| GpuProcess {
                pid,
                name: None,
                used_mib: bytes.map(|b| b.div_ceil(1 << 20)),
            })
            .collect()
    }))
}

/// How this run tells its own GPU processes from others'.
#[derive(Clone, Debug, PartialEq)]
enum Namespace {
    /// Not known yet (no reading listed anything).
    Unknown,
    /// NVML's pids are this process's view: its own are itself and its worker.
    Same,
    /// NVML's pids are the host's (a container): its own are these, learned at the start.
    Foreign(BTreeSet<u32>),
}

/// Other processes seen on the GPU during a run.
pub(crate) struct ProcessWatch {
    me: u32,
    ours: BTreeSet<u32>,
    before: Option<BTreeSet<u32>>,
    namespace: Namespace,
    seen: BTreeMap<u32, GpuProcess>,
    unknown: Option<String>,
}

impl ProcessWatch {
    /// A watch for this process, with what NVML listed before its CUDA context (if read):
    /// every process listed then is another's, and seen.
    pub fn new(before: Option<Result<Vec<GpuProcess>, ProcessesUnlisted>>) -> ProcessWatch {
        let mut w = ProcessWatch {
            me: std::process::id(),
            ours: BTreeSet::new(),
            before: None,
            namespace: Namespace::Unknown,
            seen: BTreeMap::new(),
            unknown: None,
        };
        match before {
            Some(Ok(list)) => {
                w.before = Some(list.iter().map(|p| p.pid).collect());
                for p in list {
                    if p.pid != w.me {
                        w.seen.insert(p.pid, p);
                    }
                }
            }
            Some(Err(why)) => w.unknown = Some(why.0),
            None => {}
        }
        w
    }

    /// A process of this run's own (the PyTorch worker).
    pub(crate) fn add_ours(&mut self, pid: Option<u32>) {
        self.ours.extend(pid);
    }

    /// Reads the backend's list now.
    pub fn sample(&mut self, backend: &dyn Facts) {
        self.record(backend.gpu_processes());
    }

    /// Adds one reading.
    pub fn record(&mut self, reading: Result<Vec<GpuProcess>, ProcessesUnlisted>) {
        let list = match reading {
            Ok(list) => list,
            Err(why) => {
                self.unknown.get_or_insert(why.0);
                return;
            }
        };
        if self.namespace == Namespace::Unknown && !list.is_empty() {
            self.namespace = if list.iter().any(|p| p.pid == self.me) {
                // The processes seen before this one had a context can be named now.
                for p in self.seen.values_mut().filter(|p| p.name.is_none()) {
                    p.name = process_name(p.pid);
                }
                Namespace::Same
            } else {
                // This process holds a context, yet NVML does not list its pid: the pids are
                // another namespace's. Its own are those that were not there before it.
                let before = self.before.clone().unwrap_or_default();
                Namespace::Foreign(
                    list.iter()
                        .map(|p| p.pid)
                        .filter(|pid| !before.contains(pid))
                        .collect(),
                )
            };
        }
        for mut p in list {
            let ours = match &self.namespace {
                Namespace::Foreign(own) => own.contains(&p.pid),
                _ => p.pid == self.me || self.ours.contains(&p.pid),
            };
            if ours || self.seen.contains_key(&p.pid) {
                continue;
            }
            if p.name.is_none() && self.namespace == Namespace::Same {
                p.name = process_name(p.pid);
            }
            self.seen.insert(p.pid, p);
        }
    }

    /// Whether another process was seen.
    pub(crate) fn shared(&self) -> bool {
        !self.seen.is_empty()
    }

    /// The other processes seen, by pid.
    pub(crate) fn others(&self) -> Vec<GpuProcess> {
        self.seen.values().cloned().collect()
    }

    /// Why the processes could not be listed, where they could not.
    pub(crate) fn unknown(&self) -> Option<String> {
        self.unknown.clone()
    }

    /// "sim-neighbour, pid 4200000" for each other process (for the notes).
    fn named(&self) -> String {
        self.seen
            .values()
            .map(|p| match &p.name {
                Some(n) => format!("{}, pid {}", crate::text::terminal_text(n), p.pid),
                None => format!("pid {}", p.pid),
            })
            .collect::<Vec<_>>()
            .join("; ")
    }

    fn who(&self) -> String {
        let one = self.seen.len() == 1;
        format!(
            "{} ({}) used the GPU during this run",
            if one {
                "another process"
            } else {
                "other processes"
            },
            self.named()
        )
    }

    /// The warning of a shared run: who, and what it does to the timings.
    pub(crate) fn warning(&self) -> Option<String> {
        if !self.shared() {
            return None;
        }
        let list: Vec<String> = self.seen.values().map(GpuProcess::describe).collect();
        let host = if matches!(self.namespace, Namespace::Foreign(_)) {
            " (process ids as the host knows them: this run is in a container)"
        } else {
            ""
        };
        Some(format!(
            "{} shared the GPU with this run: {}{host}; its work slowed the timings by an unknown amount",
            if self.seen.len() == 1 {
                "another process"
            } else {
                "other processes"
            },
            list.join(", ")
        ))
    }

    /// The note on the stored comparison of a shared run.
    pub(crate) fn stored_note(&self) -> Option<String> {
        self.shared().then(|| {
            format!(
                "the comparison with the stored baseline is not judged: {}",
                self.who()
            )
        })
    }

    /// Why the host's clock's witness of the samples is not judged (`run::decide`), in a
    /// shared run.
    pub(crate) fn witness_note(&self) -> Option<String> {
        self.shared().then(|| {
            format!(
                "the host's clock as the witness of the samples is not judged: {}",
                self.who()
            )
        })
    }

    /// The error of a shape whose only reference is the stored baseline, in a shared run.
    pub(crate) fn unjudged_error(&self) -> String {
        format!(
            "the stored baseline is this shape's only reference and {}, so it has no verdict: run it again when the GPU is free",
            self.who()
        )
    }
}

/// A process's name as /proc shows it to this process, if it does (one printable line).
fn process_name(pid: u32) -> Option<String> {
    let raw = std::fs::read(format!("/proc/{pid}/comm")).ok()?;
    let name =
        crate::text::terminal_text(String::from_utf8_lossy(&raw[..raw.len().min(64)]).trim());
    (!name.is_empty()).then_some(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(pid: u32, name: Option<&str>) -> GpuProcess {
        GpuProcess {
            pid,
            name: name.map(str::to_owned),
            used_mib: Some(100),
        }
    }

    #[test]
    fn own_processes_are_left_out_and_others_named_once() {
        let me = std::process::id();
        let mut w = ProcessWatch::new(None);
        w.add_ours(Some(77));
        w.record(Ok(vec![p(me, None), p(77, None)]));
        assert!(!w.shared() && w.warning().is_none() && w.stored_note().is_none());
        w.record(Ok(vec![p(me, None), p(4_200_000, Some("trainer"))]));
        w.record(Ok(vec![p(4_200_000, Some("trainer"))]));
        assert_eq!(w.others(), [p(4_200_000, Some("trainer"))]);
        assert_eq!(
            w.stored_note().unwrap(),
            "the comparison with the stored baseline is not judged: another process (trainer, pid 4200000) used the GPU during this run"
        );
        assert_eq!(
            w.warning().unwrap(),
            "another process shared the GPU with this run: trainer (pid 4200000, 100 MiB); its work slowed the timings by an unknown amount"
        );
        // Our own pid with a name from /proc: this process is not another.
        assert!(w.others().iter().all(|o| o.pid != me));
    }

    #[test]
    fn in_a_container_the_run_learns_its_own_host_pids() {
        // Before the context: one process already there (another's); then this run's two
        // (host pids 9001, 9002) appear, and later a third.
        let mut w = ProcessWatch::new(Some(Ok(vec![p(500, None)])));
        assert!(
            w.shared(),
            "a process present before the run's context is another's"
        );
        w.record(Ok(vec![p(500, None), p(9001, None), p(9002, None)]));
        assert_eq!(w.others().iter().map(|o| o.pid).collect::<Vec<_>>(), [500]);
        w.record(Ok(vec![p(9001, None), p(9002, None), p(9100, None)]));
        assert_eq!(
            w.others().iter().map(|o| o.pid).collect::<Vec<_>>(),
            [500, 9100]
        );
        assert!(w.warning().unwrap().contains("this run is in a container"));
        // A clean container run: nothing before, only its own after.
        let mut clean = ProcessWatch::new(Some(Ok(Vec::new())));
        clean.record(Ok(vec![p(9001, None), p(9002, None)]));
        clean.record(Ok(vec![p(9001, None)]));
        assert!(!clean.shared());
    }

    #[test]
    fn a_list_nvml_cannot_read_is_said_not_guessed() {
        let mut w = ProcessWatch::new(Some(Err(ProcessesUnlisted(
            "NVML could not be initialised".into(),
        ))));
        w.record(Err(ProcessesUnlisted(
            "NVML cannot list the GPU's compute processes: x".into(),
        )));
        assert!(!w.shared());
        assert_eq!(
            w.unknown().as_deref(),
            Some("NVML could not be initialised")
        );
    }
}
