//! The `mmci` command: parses the command line, installs the signal
//! handling and calls the library ([`mmci::cli::execute`]).

use std::process::ExitCode;

use tokio::signal::unix::{signal, SignalKind};

use clap::Parser;
use mmci::error::exit;

/// Prints an error and its causes on one line each, as `error: a: b: c`.
fn print_error(err: &(dyn std::error::Error + 'static)) {
    eprintln!("mmci: error: {}", mmci::host::error_chain(err));
}

fn main() -> ExitCode {
    let cli = mmci::cli::Cli::parse();
    mmci::cli::init_logging(cli.verbose);
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(r) => r,
        Err(e) => {
            print_error(&e);
            return ExitCode::from(exit::ENVIRONMENT as u8);
        }
    };
    let code = runtime.block_on(async {
        // Listen before any work starts: a Ctrl-C that arrives while the first
        // guest boots must still stop everything and exit 130, not kill us
        // with the default action and leave the result half-written.
        let mut interrupt = match signal(SignalKind::interrupt()) {
            Ok(s) => s,
            Err(e) => {
                print_error(&e);
                return exit::ENVIRONMENT;
            }
        };
        let mut terminate = match signal(SignalKind::terminate()) {
            Ok(s) => s,
            Err(e) => {
                print_error(&e);
                return exit::ENVIRONMENT;
            }
        };
        tokio::select! {
            biased;
            _ = interrupt.recv() => {
                eprintln!("mmci: interrupted; stopping every guest and build");
                exit::INTERRUPTED
            }
            _ = terminate.recv() => {
                eprintln!("mmci: terminated; stopping every guest and build");
                exit::INTERRUPTED
            }
            r = mmci::cli::execute(cli) => match r {
                Ok(code) => code,
                Err(e) => {
                    print_error(&e);
                    e.exit_code()
                }
            },
        }
    });
    // Whatever is still running belongs to us: no QEMU or make outlives mmci.
    mmci::host::process::kill_all();
    drop(runtime);
    ExitCode::from(code as u8)
}
