//! The PyTorch peer worker: `peers/torch_sdpa_worker.py`, built into the binary (so it is
//! always the one that matches this ci-gate, and in CI the trusted base's), written into a
//! private directory made for the run and run with `$CI_GATE_PYTHON` or `python3`. One JSON
//! line per request and per answer over stdin/stdout; each answer has a time limit. Without
//! Python, PyTorch or a GPU for it, the peers are left out with one note.
//!
//! Python puts the script's directory first on `sys.path`, and `/tmp` is shared with every
//! earlier job on the runner: a `json.py` planted there would run in the next trusted run.
//! So the script lives alone in a directory only this user can enter (0700), it runs
//! isolated (`python3 -I`: no `PYTHON*` variables, no user site-packages, and from Python
//! 3.11 not even the script's directory on the path), from that directory, and with only
//! the environment a GPU child needs (`child_env`).

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::Duration;

use serde_json::{Value, json};

use crate::child_env::{self, restrict};
use crate::config::{MeasureSettings, ShapeParams};
use crate::peers::{BACKENDS, PEER_SAMPLES, Peer, PeerLaunches, PeerResult};

const WORKER: &str = include_str!("../../peers/torch_sdpa_worker.py");
/// Longest wait for one answer: importing PyTorch and warming every shape, or preparing one
/// long shape.
const ANSWER_LIMIT: Duration = Duration::from_secs(120);

/// A running worker.
pub(crate) struct PeerWorker {
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<String>,
    /// "torch 2.9.0, CUDA 13.0".
    pub runtime: String,
    /// The private directory holding the script; removed after the worker (fields drop after
    /// `Drop::drop` has ended the process).
    _dir: tempfile::TempDir,
}

/// The interpreter of the worker: `$CI_GATE_PYTHON` (a runner setting: in GitHub Actions from
/// the runner's own environment file only), else `python3`.
fn python() -> std::ffi::OsString {
    crate::runner_settings::get(crate::runner_settings::PYTHON).unwrap_or_else(|| "python3".into())
}

impl PeerWorker {
    /// Starts the worker with `python` and waits for its hello (tests; runs start it with
    /// [`PeerSession::prestart`]).
    #[cfg(test)]
    fn start_with(python: &std::ffi::OsStr) -> Result<PeerWorker, String> {
        let mut w = PeerWorker::spawn(python)?;
        w.send(&json!({"cmd": "hello"}))?;
        w.hello()?;
        Ok(w)
    }

    /// Starts the process; nothing asked yet.
    fn spawn(python: &std::ffi::OsStr) -> Result<PeerWorker, String> {
        let (dir, script) =
            private_script().map_err(|e| format!("cannot write the worker script: {e}"))?;
        let mut cmd = Command::new(python);
        let mut child = restrict(&mut cmd, child_env::Child::Gpu)
            .arg("-I")
            .arg("-u")
            .arg(&script)
            .current_dir(dir.path())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", python.to_string_lossy()))?;
        let stdin = child.stdin.take().ok_or("the worker has no stdin")?;
        let stdout = child.stdout.take().ok_or("the worker has no stdout")?;
        let (tx, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Ok(PeerWorker {
            child,
            stdin,
            lines,
            runtime: String::new(),
            _dir: dir,
        })
    }

    /// The worker's process id (its GPU context is this run's own, not another process's).
    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Reads the answer to `hello` and keeps the runtime it names.
    fn hello(&mut self) -> Result<(), String> {
        let hello = self.recv()?;
        self.runtime = format!(
            "torch {}, CUDA {}",
            hello["torch"].as_str().unwrap_or("?"),
            hello["cuda"].as_str().unwrap_or("?")
        );
        self.runtime =
            crate::validate::clip_text(&crate::validate::terminal_text(&self.runtime), 100);
        Ok(())
    }

    fn send(&mut self, request: &Value) -> Result<(), String> {
        writeln!(self.stdin, "{request}")
            .and_then(|_| self.stdin.flush())
            .map_err(|_| self.exited("stopped reading requests"))
    }

    fn recv(&mut self) -> Result<Value, String> {
        let line = match self.lines.recv_timeout(ANSWER_LIMIT) {
            Ok(l) => l,
            Err(RecvTimeoutError::Timeout) => {
                let _ = self.child.kill();
                return Err(format!(
                    "the worker gave no answer in {} s",
                    ANSWER_LIMIT.as_secs()
                ));
            }
            Err(RecvTimeoutError::Disconnected) => return Err(self.exited("exited")),
        };
        let v: Value = serde_json::from_str(&line)
            .map_err(|_| "the worker answered something that is not JSON".to_string())?;
        if v["ok"].as_bool() == Some(true) {
            Ok(v)
        } else {
            let e = v["error"].as_str().unwrap_or("no reason given");
            Err(crate::validate::clip_text(
                &crate::validate::terminal_text(e),
                500,
            ))
        }
    }

    fn ask(&mut self, request: &Value) -> Result<Value, String> {
        self.send(request)?;
        self.recv()
    }

    fn exited(&mut self, what: &str) -> String {
        let status = self
            .child
            .try_wait()
            .ok()
            .flatten()
            .map(|s| format!(" ({s})"))
            .unwrap_or_default();
        format!("the PyTorch worker {what}{status}")
    }

    /// Prepares `peer` on `shape` (inputs from `seed`, `sets` of them; a graph of about
    /// `settings.sample_ms` of calls): its calls per sample and the backend PyTorch runs.
    pub(crate) fn prepare(
        &mut self,
        peer: Peer,
        shape: &ShapeParams,
        settings: &MeasureSettings,
        sets: usize,
        seed: u64,
    ) -> Result<(u32, Option<String>), String> {
        let v = self.ask(&json!({
            "cmd": "prepare",
            "peer": peer.name(),
            "shape": shape_json(shape),
            "seed": seed,
            "sets": sets,
            "sample_ms": settings.sample_ms,
            "warmup_ms": settings.warmup_ms,
        }))?;
        let launches = v["launches"]
            .as_u64()
            .filter(|n| (1..=20_000).contains(n))
            .ok_or("the worker named no number of calls per sample")? as u32;
        // Untrusted only in the sense that it is another program's word: one of four names.
        let backend = v["backend"]
            .as_str()
            .filter(|b| BACKENDS.contains(b))
            .map(str::to_owned);
        Ok((launches, backend))
    }

    /// One round of the prepared `peer`: per-call times in µs.
    pub fn round(
        &mut self,
        peer: Peer,
        samples: u32,
        settings: &MeasureSettings,
    ) -> Result<Vec<f64>, String> {
        let v = self.ask(&json!({
            "cmd": "round",
            "peer": peer.name(),
            "samples": samples,
            "duty_cycle": settings.duty_cycle,
        }))?;
        let samples: Vec<f64> = v["samples_us"]
            .as_array()
            .map(|a| a.iter().filter_map(Value::as_f64).collect())
            .unwrap_or_default();
        if samples.is_empty() || samples.iter().any(|x| !(x.is_finite() && *x > 0.0)) {
            return Err("the worker returned no usable times".into());
        }
        Ok(samples)
    }

    /// Frees what the worker prepared.
    fn release(&mut self) -> Result<(), String> {
        self.ask(&json!({"cmd": "release"})).map(|_| ())
    }
}

fn shape_json(shape: &ShapeParams) -> Value {
    json!({
        "batch": shape.batch,
        "heads": shape.heads,
        "seq_len": shape.seq_len,
        "head_dim": shape.head_dim,
        "causal": shape.causal,
        "dtype": shape.dtype.to_string(),
    })
}

/// A new directory only this user can enter (0700: tempfile's default is 0777 less the
/// umask, usually 0755), holding the worker script and nothing else; its path and the
/// script's.
fn private_script() -> std::io::Result<(tempfile::TempDir, std::path::PathBuf)> {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::Builder::new()
        .prefix("ci-gate-peer-")
        .permissions(std::fs::Permissions::from_mode(0o700))
        .tempdir()?;
    let script = dir.path().join("torch_sdpa_worker.py");
    // create_new: the name cannot already be there, as a file or a link someone planted.
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&script)?;
    file.write_all(WORKER.as_bytes())?;
    Ok((dir, script))
}

impl Drop for PeerWorker {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A worker started early (beside the setup: its PyTorch import, CUDA context and every
/// shape's first call run while ci-gate compiles), not yet waited for.
pub(crate) struct PendingPeers {
    worker: Result<PeerWorker, String>,
    peers: Vec<Peer>,
}

impl PendingPeers {
    /// The worker's process id, once started.
    pub(crate) fn pid(&self) -> Option<u32> {
        self.worker.as_ref().ok().map(PeerWorker::pid)
    }

    /// Waits for the worker's hello (and its warm-up); a worker that cannot measure leaves a
    /// note and no peers.
    pub fn finish(self, notes: &mut Vec<String>) -> PeerSession {
        let ready = self.worker.and_then(|mut w| w.hello().map(|()| w));
        let mut session = PeerSession::none();
        match ready {
            Ok(w) => {
                session.runtime = Some(w.runtime.clone());
                session.worker = Some(w);
                session.peers = self.peers;
            }
            Err(why) => notes.push(format!(
                "the peer columns ({}) are left out: {why} (set CI_GATE_PYTHON to a Python with PyTorch)",
                self.peers
                    .iter()
                    .map(|p| p.name())
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
        }
        session
    }
}

/// The peers of one run: the worker (if it started) and what each shape's peers measured.
pub(crate) struct PeerSession {
    worker: Option<PeerWorker>,
    peers: Vec<Peer>,
    /// The worker's runtime, once it answered.
    pub runtime: Option<String>,
    /// The (peer, shape) the worker holds prepared.
    prepared: Vec<(Peer, ShapeParams)>,
    /// Calls per sample of each peer on each shape, as prepared.
    pub launches: Vec<PeerLaunches>,
}

impl PeerSession {
    /// No peers.
    pub(crate) fn none() -> PeerSession {
        PeerSession {
            worker: None,
            peers: Vec::new(),
            runtime: None,
            prepared: Vec::new(),
            launches: Vec::new(),
        }
    }

    /// Starts the worker for `peers` without waiting for it, and asks it to make its CUDA
    /// context and run one call of every peer on every shape of `shapes` (cuDNN builds a
    /// shape's plan on its first call); `None` without peers.
    pub(crate) fn prestart(peers: &[Peer], shapes: &[ShapeParams]) -> Option<PendingPeers> {
        if peers.is_empty() {
            return None;
        }
        let warm: Vec<Value> = shapes
            .iter()
            .flat_map(|s| {
                peers
                    .iter()
                    .map(move |p| json!({"peer": p.name(), "shape": shape_json(s)}))
            })
            .collect();
        let worker = PeerWorker::spawn(&python()).and_then(|mut w| {
            w.send(&json!({"cmd": "hello", "warm": warm}))?;
            Ok(w)
        });
        Some(PendingPeers {
            worker,
            peers: peers.to_vec(),
        })
    }

    /// [`PeerSession::prestart`] and [`PendingPeers::finish`] at once.
    pub fn start(peers: &[Peer], shapes: &[ShapeParams], notes: &mut Vec<String>) -> PeerSession {
        match PeerSession::prestart(peers, shapes) {
            Some(pending) => pending.finish(notes),
            None => PeerSession::none(),
        }
    }

    /// The worker's process id, while it runs.
    pub(crate) fn pid(&self) -> Option<u32> {
        self.worker.as_ref().map(PeerWorker::pid)
    }

    /// Empty results for a new shape, one per peer that runs.
    pub fn results(&self) -> Vec<PeerResult> {
        self.peers
            .iter()
            .map(|&peer| PeerResult {
                peer,
                samples_us: Vec::new(),
                p50_us: None,
                error: None,
                backend: None,
            })
            .collect()
    }

    /// One round ([`PEER_SAMPLES`] samples) of every peer of `results` still without an
    /// error, each prepared on `shape` first where it is not yet. A peer that cannot run the
    /// shape keeps its error; a worker that died is dropped, with a note.
    pub fn round(
        &mut self,
        results: &mut [PeerResult],
        shape: &ShapeParams,
        settings: &MeasureSettings,
        sets: usize,
        seed: u64,
        notes: &mut Vec<String>,
    ) {
        for r in results.iter_mut() {
            if r.error.is_some() {
                continue;
            }
            let Some(worker) = self.worker.as_mut() else {
                r.error = Some("the PyTorch worker stopped earlier in this run".into());
                continue;
            };
            let measured = (|| {
                if !self.prepared.contains(&(r.peer, *shape)) {
                    self.prepared.retain(|(p, _)| *p != r.peer);
                    let (launches, backend) =
                        worker.prepare(r.peer, shape, settings, sets, seed)?;
                    self.prepared.push((r.peer, *shape));
                    self.launches
                        .retain(|l| !(l.peer == r.peer && l.shape == shape.name()));
                    self.launches.push(PeerLaunches {
                        shape: shape.name(),
                        peer: r.peer,
                        launches,
                    });
                    if r.backend.is_none() {
                        r.backend = backend;
                    }
                }
                worker.round(r.peer, PEER_SAMPLES, settings)
            })();
            match measured {
                Ok(samples) => {
                    r.samples_us.push(samples);
                    r.update_p50();
                }
                Err(e) => {
                    self.prepared.retain(|(p, _)| *p != r.peer);
                    let alive = worker.child.try_wait().ok().flatten().is_none()
                        && !e.starts_with("the worker gave no answer");
                    if !alive {
                        notes.push(format!(
                            "the PyTorch worker stopped on {shape} ({e}): later shapes have no peer times"
                        ));
                        self.worker = None;
                    }
                    r.error = Some(e);
                }
            }
        }
    }

    /// Frees the peers prepared for a shape whose peer rounds are done.
    pub(crate) fn release(&mut self, notes: &mut Vec<String>) {
        if self.prepared.is_empty() {
            return;
        }
        self.prepared.clear();
        if let Some(w) = self.worker.as_mut()
            && let Err(e) = w.release()
        {
            notes.push(format!(
                "the PyTorch worker stopped ({e}): later shapes have no peer times"
            ));
            self.worker = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Without a GPU (or without PyTorch) the worker starts and says why it cannot measure;
    /// without Python it cannot start. Either way: an error for the note, no panic, no hang.
    #[test]
    fn a_worker_that_cannot_measure_says_why() {
        let e = PeerWorker::start_with(std::ffi::OsStr::new("/nonexistent/python3"))
            .err()
            .expect("no such interpreter");
        assert!(e.contains("cannot start /nonexistent/python3"), "{e}");
        if std::process::Command::new("python3")
            .arg("--version")
            .output()
            .is_err()
        {
            eprintln!("SKIPPED: no python3 here");
            return;
        }
        if crate::gpu::driver_present() {
            eprintln!("SKIPPED: this machine has a CUDA driver (the worker may well measure)");
            return;
        }
        let e = PeerWorker::start_with(std::ffi::OsStr::new("python3"))
            .err()
            .expect("no GPU here");
        assert!(
            e.contains("PyTorch cannot be imported") || e.contains("is_available"),
            "{e}"
        );
    }

    /// The worker runs as `python -I -u SCRIPT` from a private (0700) directory that holds
    /// the script alone, with the environment of a GPU child: a planted module in a shared
    /// directory, or a variable of the parent, cannot reach it.
    #[cfg(target_os = "linux")]
    #[test]
    fn the_worker_runs_isolated_from_a_private_directory() {
        use std::os::unix::fs::PermissionsExt;
        let scratch = tempfile::tempdir().unwrap();
        let seen = scratch.path().join("seen");
        let fake = scratch.path().join("fake-python");
        std::fs::write(
            &fake,
            format!(
                "#!/bin/sh\n{{ echo \"args: $*\"; echo \"cwd: $(pwd -P)\"; echo \"mode: $(stat -c %a .)\"; echo \"files: $(ls -A .)\"; env | sed 's/^/env: /'; }} > '{}'\necho '{{\"ok\": true, \"torch\": \"fake\", \"cuda\": \"none\"}}'\n",
                seen.display()
            ),
        )
        .unwrap();
        std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
        let worker = PeerWorker::start_with(fake.as_os_str()).expect("the fake answers hello");
        assert_eq!(worker.runtime, "torch fake, CUDA none");
        let named = worker._dir.path().to_owned();
        let dir = named.canonicalize().unwrap();
        drop(worker);
        let seen = std::fs::read_to_string(&seen).unwrap();
        let script = named.join("torch_sdpa_worker.py");
        assert!(
            seen.contains(&format!("args: -I -u {}\n", script.display())),
            "{seen}"
        );
        assert!(
            seen.contains(&format!("cwd: {}\n", dir.display())),
            "{seen}"
        );
        assert!(seen.contains("mode: 700\n"), "{seen}");
        assert!(seen.contains("files: torch_sdpa_worker.py\n"), "{seen}");
        // Cargo gives test processes CARGO_MANIFEST_DIR: the parent has it, the worker not.
        if std::env::var_os("CARGO_MANIFEST_DIR").is_some() {
            assert!(!seen.contains("env: CARGO_MANIFEST_DIR="), "{seen}");
        }
        assert!(seen.contains("env: PATH="), "{seen}");
        assert!(!dir.exists(), "the private directory outlived the worker");
    }
}
