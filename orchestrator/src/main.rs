//! The `mmci` command: parses the command line, installs the signal
//! handling and calls the library ([`mmci::cli::execute`]).
//!
//! SIGINT and SIGTERM are taken by a thread of their own, not by a future
//! of the runtime: thread assembly, analysis and rendering run on the
//! thread that polls `execute`, and while they compute nothing else on it
//! is polled. On the first signal that thread tells `execute` to stop (it
//! is dropped, so scratch dirs and half-written files are cleaned up), and
//! if `execute` has not returned after [`GRACE`] it kills every child
//! process group itself and exits: 130 for SIGINT, 143 for SIGTERM.

use std::process::ExitCode;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use clap::Parser;
use mmci::error::exit;
use signal_hook::consts::{SIGINT, SIGTERM};

/// How long a stop request waits for `execute` to unwind before the
/// signal thread ends the process itself.
const GRACE: Duration = Duration::from_secs(1);

/// Prints an error and its causes on one line each, as `error: a: b: c`.
fn print_error(err: &(dyn std::error::Error + 'static)) {
    eprintln!("mmci: error: {}", mmci::host::error_chain(err));
}

/// The exit code of a stopping signal, and what is printed for it.
fn stop_code(signal: i32) -> (i32, &'static str) {
    if signal == SIGINT {
        (exit::INTERRUPTED, "interrupted")
    } else {
        (exit::TERMINATED, "terminated")
    }
}

/// A stop request from the signal thread, for the runtime.
struct Stop {
    code: AtomicI32,
    notify: tokio::sync::Notify,
}

/// Listens for SIGINT and SIGTERM on a thread of its own (before any work
/// starts: a Ctrl-C while the first guest boots must still stop everything
/// and exit 130, not kill mmci with the default action and leave the
/// result half-written).
fn install_signals() -> std::io::Result<Arc<Stop>> {
    let mut signals = signal_hook::iterator::Signals::new([SIGINT, SIGTERM])?;
    let stop = Arc::new(Stop {
        code: AtomicI32::new(0),
        notify: tokio::sync::Notify::new(),
    });
    let for_thread = stop.clone();
    std::thread::Builder::new()
        .name("signals".into())
        .spawn(move || {
            let Some(signal) = signals.forever().next() else {
                return;
            };
            let (code, what) = stop_code(signal);
            eprintln!("mmci: {what}; stopping every guest and build");
            for_thread.code.store(code, Ordering::SeqCst);
            for_thread.notify.notify_one();
            std::thread::sleep(GRACE);
            // Still here: `execute` is computing and was never polled again.
            mmci::host::process::kill_all();
            std::process::exit(code);
        })?;
    Ok(stop)
}

fn main() -> ExitCode {
    let cli = mmci::cli::Cli::parse();
    mmci::cli::init_logging(&cli);
    let stop = match install_signals() {
        Ok(s) => s,
        Err(e) => {
            print_error(&e);
            return ExitCode::from(exit::ENVIRONMENT as u8);
        }
    };
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(r) => r,
        Err(e) => {
            print_error(&e);
            return ExitCode::from(exit::ENVIRONMENT as u8);
        }
    };
    let code = runtime.block_on(async {
        tokio::select! {
            biased;
            _ = stop.notify.notified() => stop.code.load(Ordering::SeqCst),
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
    // Tasks still blocked (a lock wait) must not hold the exit up.
    runtime.shutdown_timeout(GRACE);
    ExitCode::from(code as u8)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signals_exit_as_a_shell_reports_them() {
        assert_eq!(stop_code(SIGINT), (130, "interrupted"));
        assert_eq!(stop_code(SIGTERM), (143, "terminated"));
        assert_eq!(128 + SIGINT, exit::INTERRUPTED);
        assert_eq!(128 + SIGTERM, exit::TERMINATED);
    }
}
