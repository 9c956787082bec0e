//! One module per subcommand (`worker` is the hidden `kernel-run`); [`run`] dispatches. The
//! other hidden commands are the engine's, the sandbox's and the evaluator's: `run-request`
//! (`run::child::run_request`), `nvrtc-sandbox` (`kernel::sandbox::serve`) and `eval-worker`
//! (`eval::worker`). What several commands share lives below them, in `run` (the engine),
//! `eval` (the evaluator) and the modules they use. The engine takes no clap types:
//! `requests` converts the command line into its requests.
//!
//! Names: a file here is named after its subcommand, so `baseline`, `comment`, `compile`,
//! `env`, `merge` and `sanitize` repeat the name of the library module the subcommand is a
//! front for (`crate::baseline`, `github::comment`, `kernel::compile`, `gpu::env`,
//! `shard::merge`, `crate::sanitize`): here the arguments and the exit code, there the work.

mod baseline;
mod bisect;
mod ci;
mod comment;
mod compare;
mod compile;
mod env;
mod eval;
mod history;
mod local;
mod merge;
mod requests;
mod sanitize;
mod selftest;
mod worker;

use anyhow::Result;

use crate::cli::{BaselineCommand, Cli, Command};

pub use crate::outcome::Outcome;

/// Runs one parsed command line.
pub fn run(cli: Cli) -> Result<Outcome> {
    let mut cli = cli;
    if let Ok(here) = std::env::current_dir() {
        match &mut cli.command {
            Command::Local(a) => a.config.find_defaults(&here),
            Command::Ci(a) => a.config.find_defaults(&here),
            Command::Selftest(a) => a.config.find_defaults(&here),
            Command::Baseline(BaselineCommand::Update(a)) => a.config.find_defaults(&here),
            Command::Baseline(BaselineCommand::Show(a)) => a.find_defaults(&here),
            Command::Sanitize(a) => a.find_defaults(&here),
            Command::Merge(a) => a.find_defaults(&here),
            Command::Compile(a) => a.find_defaults(&here),
            Command::Bisect(a) => a.find_defaults(&here),
            Command::Eval(a) => a.find_defaults(&here),
            _ => {}
        }
    }
    match cli.command {
        Command::Compare(args) => compare::run(&args),
        Command::Baseline(BaselineCommand::Show(args)) => baseline::show(&args),
        // The commands that compile or launch kernels in this process (or whose report quotes
        // a tool's findings about them) run with workflow commands suspended; `ci` suspends
        // them around its GPU section only, so that its own annotations still work.
        Command::Baseline(BaselineCommand::Update(args)) => {
            crate::run::untrusted::suspended(|| baseline::update(&args))
        }
        Command::Local(args) => crate::run::untrusted::suspended(|| local::run_local(&args)),
        Command::Selftest(args) => {
            crate::run::untrusted::suspended(|| selftest::run_selftest(&args))
        }
        Command::Env(args) => env::run_env(&args),
        Command::Ci(args) => ci::run_ci(&args),
        Command::Comment(args) => comment::run_comment(&args),
        Command::Sanitize(args) => {
            crate::run::untrusted::suspended(|| sanitize::run_sanitize(&args))
        }
        Command::KernelRun(args) => worker::run_kernels(&args),
        Command::RunRequest(args) => crate::run::child::run_request(&args.request, &args.out),
        Command::History(args) => history::run(&args),
        Command::Bisect(args) => crate::run::untrusted::suspended(|| bisect::run_bisect(&args)),
        Command::Merge(args) => merge::run_merge(&args),
        Command::Compile(args) => compile::run_compile(&args),
        Command::Eval(args) => eval::run_eval(&args),
        Command::EvalWorker(args) => eval::run_worker(&args),
        Command::NvrtcSandbox => Ok(if crate::kernel::sandbox::serve() {
            Outcome::Pass
        } else {
            Outcome::Fail
        }),
    }
}
