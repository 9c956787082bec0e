#![deny(unsafe_code)]

use std::process::ExitCode;

use clap::Parser;

use ci_gate::cli::Cli;
use ci_gate::commands::{self, Outcome};
use ci_gate::text::error_message;

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return usage_error(e),
    };
    match commands::run(cli) {
        Ok(Outcome::Pass) => ExitCode::SUCCESS,
        Ok(Outcome::Fail) => ExitCode::from(1),
        Err(err) => {
            // One sentence per cause, outermost first; never a panic or a bare code. Without
            // control characters, wrapped to 80 columns so that no continuation line can
            // start with attacker text such as a `::workflow-command` (`text::error_message`).
            eprintln!("{}", error_message(&format!("{err:#}")));
            ExitCode::from(2)
        }
    }
}

/// clap's answer to the command line: help and the version as clap prints them; a usage
/// error with its first line, the message, wrapped as every error is (exit 2, as clap's).
fn usage_error(e: clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    if matches!(
        e.kind(),
        ErrorKind::DisplayHelp
            | ErrorKind::DisplayVersion
            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    ) {
        e.exit();
    }
    let text = e.render().to_string();
    match text.split_once('\n') {
        Some((first, rest)) if first.starts_with("error: ") => {
            eprint!("{}\n{rest}", error_message(first));
        }
        _ => eprint!("{text}"),
    }
    ExitCode::from(u8::try_from(e.exit_code()).unwrap_or(2))
}
