//! Progress of a matrix: bars on a terminal (builds, guests done/total with
//! an ETA), one plain log line per event otherwise (CI logs) or with `-q`
//! (info lines, which `-q` hides: only warnings and errors are left).

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

/// `-q`, as the command line gave it ([`set_quiet`]).
static QUIET: AtomicBool = AtomicBool::new(false);

/// Tells every later [`Progress`] of the process that `-q` was given (the
/// command line calls it once, beside setting up the log).
pub fn set_quiet(quiet: bool) {
    QUIET.store(quiet, Ordering::Relaxed);
}

/// Whether to draw bars: on a terminal (stderr), unless `-q`.
pub fn draws_bars(terminal: bool, quiet: bool) -> bool {
    terminal && !quiet
}

pub enum Progress {
    Bars {
        multi: MultiProgress,
        builds: ProgressBar,
        guests: ProgressBar,
    },
    Lines {
        runs_total: u64,
        runs_done: u64,
    },
}

impl Progress {
    /// Bars when stderr is a terminal and not `-q`, lines otherwise.
    pub fn new(builds: u64, runs: u64) -> Progress {
        let terminal = std::io::IsTerminal::is_terminal(&std::io::stderr());
        if draws_bars(terminal, QUIET.load(Ordering::Relaxed)) {
            let multi = MultiProgress::with_draw_target(ProgressDrawTarget::stderr());
            let style = |t: &str| ProgressStyle::with_template(t).expect("valid template");
            let b = multi.add(ProgressBar::new(builds));
            b.set_style(style("builds  [{bar:30}] {pos}/{len} {msg}"));
            let g = multi.add(ProgressBar::new(runs));
            g.set_style(style(
                "guests  [{bar:30}] {pos}/{len} elapsed {elapsed} eta {eta} {msg}",
            ));
            b.enable_steady_tick(Duration::from_millis(500));
            Progress::Bars {
                multi,
                builds: b,
                guests: g,
            }
        } else {
            Progress::Lines {
                runs_total: runs,
                runs_done: 0,
            }
        }
    }

    fn say(&self, line: &str) {
        match self {
            Progress::Bars { multi, .. } => {
                let _ = multi.println(line);
            }
            Progress::Lines { .. } => tracing::info!("{line}"),
        }
    }

    pub fn build_started(&self, what: &str) {
        if let Progress::Bars { builds, .. } = self {
            builds.set_message(format!("building {what}"));
        } else {
            self.say(&format!("building kernel {what}"));
        }
    }

    pub fn build_finished(&self, line: &str) {
        if let Progress::Bars { builds, .. } = self {
            builds.inc(1);
            builds.set_message(String::new());
        }
        self.say(line);
    }

    pub fn builds_done(&self) {
        if let Progress::Bars { builds, .. } = self {
            builds.finish_and_clear();
        }
    }

    pub fn run_started(&self, id: &str) {
        if let Progress::Bars { guests, .. } = self {
            guests.set_message(id.to_string());
        }
    }

    pub fn run_finished(&mut self, line: &str) {
        match self {
            Progress::Bars { guests, .. } => guests.inc(1),
            Progress::Lines {
                runs_done,
                runs_total,
            } => {
                *runs_done += 1;
                tracing::info!("[{}/{}] {line}", runs_done, runs_total);
                return;
            }
        }
        self.say(line);
    }

    pub fn finish(&self) {
        if let Progress::Bars { builds, guests, .. } = self {
            builds.finish_and_clear();
            guests.finish_and_clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bars_only_on_a_terminal_and_never_quiet() {
        for (terminal, quiet, want) in [
            (true, false, true),
            (true, true, false),
            (false, false, false),
            (false, true, false),
        ] {
            assert_eq!(
                draws_bars(terminal, quiet),
                want,
                "terminal {terminal}, quiet {quiet}"
            );
        }
    }

    #[test]
    fn quiet_gives_lines_even_where_bars_would_be_drawn() {
        // Lines whether or not this test's stderr is a terminal. (Another
        // test's Progress made meanwhile gets lines too: none asserts bars,
        // which need a terminal.)
        set_quiet(true);
        let p = Progress::new(1, 2);
        set_quiet(false);
        assert!(matches!(
            p,
            Progress::Lines {
                runs_total: 2,
                runs_done: 0
            }
        ));
    }
}
