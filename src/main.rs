use std::process::ExitCode;

use clap::Parser;

use ci_gate::cli::Cli;
use ci_gate::commands::{self, Outcome};

fn main() -> ExitCode {
    let cli = Cli::parse();
    match commands::run(cli) {
        Ok(Outcome::Pass) => ExitCode::SUCCESS,
        Ok(Outcome::Fail) => ExitCode::from(1),
        Err(err) => {
            // One sentence per cause, outermost first; never a panic or a bare code.
            eprintln!("error: {err:#}");
            ExitCode::from(2)
        }
    }
}
