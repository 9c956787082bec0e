//! `ci-gate eval`: the evaluator for optimisation loops (`crate::eval`), and its hidden
//! measuring process `eval-worker`.
//!
//! Neither suspends GitHub's workflow commands as `local` does: the evaluator's stdout carries
//! only its JSON lines (each starts with `{`, so none is a workflow command), and a measuring
//! process's stdout, where kernel `printf` would land, is discarded by the evaluator.

use anyhow::Result;

use crate::cli::{EvalArgs, EvalWorkerArgs};
use crate::outcome::Outcome;

pub(crate) fn run_eval(args: &EvalArgs) -> Result<Outcome> {
    let input = std::io::BufReader::with_capacity(1 << 16, std::io::stdin());
    crate::eval::serve(args, input, std::io::stdout())
}

pub(crate) fn run_worker(args: &EvalWorkerArgs) -> Result<Outcome> {
    match (&args.request, args.describe) {
        (_, true) => crate::eval::worker::describe(&args.out),
        (Some(request), false) => crate::eval::worker::serve(request, &args.out),
        (None, false) => anyhow::bail!("eval-worker needs --request FILE or --describe"),
    }
}
