#![deny(unsafe_code)]

use std::process::ExitCode;

use clap::Parser;

use ci_gate::cli::Cli;
use ci_gate::commands::{self, Outcome};
use ci_gate::text::error_line;

fn main() -> ExitCode {
    let cli = Cli::parse();
    match commands::run(cli) {
        Ok(Outcome::Pass) => ExitCode::SUCCESS,
        Ok(Outcome::Fail) => ExitCode::from(1),
        Err(err) => {
            // One sentence per cause, outermost first; never a panic or a bare code. On one
            // line, without control characters: attacker text in a message cannot start a
            // line of its own (a `::workflow-command`) or drive the terminal.
            eprintln!("error: {}", error_line(&format!("{err:#}")));
            ExitCode::from(2)
        }
    }
}
