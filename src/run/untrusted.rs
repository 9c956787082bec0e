//! Output of untrusted code on this process's stdout. A pull request's kernel can `printf`,
//! and the CUDA driver writes that text to stdout, where GitHub Actions reads every line as
//! a possible workflow command (`::error ...`, `::add-mask::`, `::stop-commands::`). So while
//! untrusted code is compiled or run, command processing is suspended with a token the
//! kernel cannot know, and resumed only when all of that work has ended.

use std::io::Write;
use std::sync::Mutex;

use anyhow::{Context, Result};

use crate::github::actions::{resume_commands, stop_commands, stop_token};

/// The token of the suspension in force, so that a hang handler (which ends the process
/// without unwinding) can still resume commands before it reports.
static ACTIVE: Mutex<Option<String>> = Mutex::new(None);

/// Workflow commands suspended (in GitHub Actions; elsewhere nothing happens) until this is
/// ended or dropped.
#[must_use = "commands resume when this is dropped"]
pub(crate) struct SuspendedCommands {
    active: bool,
}

impl SuspendedCommands {
    /// With `GITHUB_ACTIONS=true`, prints `::stop-commands::TOKEN` on stdout, with a fresh
    /// 128-bit token from the operating system, and flushes it. Call it before anything
    /// untrusted is compiled or launched. An error (no random bytes, stdout closed) means
    /// untrusted code must not run.
    pub(crate) fn begin() -> Result<SuspendedCommands> {
        if std::env::var("GITHUB_ACTIONS").as_deref() != Ok("true") {
            return Ok(SuspendedCommands { active: false });
        }
        let token = stop_token().context("cannot suspend workflow commands")?;
        let mut out = std::io::stdout().lock();
        writeln!(out, "{}", stop_commands(&token))
            .and_then(|()| out.flush())
            .context("cannot suspend workflow commands: stdout cannot be written")?;
        *ACTIVE.lock().unwrap_or_else(|e| e.into_inner()) = Some(token);
        Ok(SuspendedCommands { active: true })
    }

    /// Resumes command processing: call it after every GPU context of the untrusted work is
    /// gone, before the gate's own annotations are printed.
    pub(crate) fn end(self) {}
}

impl Drop for SuspendedCommands {
    fn drop(&mut self) {
        if self.active {
            resume_now();
        }
    }
}

/// Resumes the suspension in force, if any (once): what dropping [`SuspendedCommands`]
/// does, and what a hang handler calls before it reports and the process ends.
pub(crate) fn resume_now() {
    let token = ACTIVE.lock().unwrap_or_else(|e| e.into_inner()).take();
    if let Some(token) = token {
        // Kernel printf text goes out through the C library's stdout, not Rust's. The CUDA 13
        // driver flushed it at each synchronisation even into a pipe (checked on an H100),
        // but a driver or C library that left it buffered would print it at exit, after the
        // resume line: flushed now, it lands before it.
        crate::gpu::flush_kernel_output();
        let mut out = std::io::stdout().lock();
        // A newline first: untrusted output that ended without one would otherwise make the
        // resume line the tail of its line, and GitHub would not read it.
        let _ = write!(out, "\n{}\n", resume_commands(&token));
        let _ = out.flush();
    }
}

/// Runs `work` with workflow commands suspended (see [`SuspendedCommands`]).
pub(crate) fn suspended<T>(work: impl FnOnce() -> Result<T>) -> Result<T> {
    let commands = SuspendedCommands::begin()?;
    let result = work();
    commands.end();
    result
}
