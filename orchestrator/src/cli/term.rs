//! Terminal conventions for what mmci writes on standard error: colour
//! (`--color auto|always|never`, `NO_COLOR`), how much (`-q`, `-v`,
//! `$MMCI_LOG`) and the log lines' timestamps (HH:MM:SS on a terminal,
//! RFC 3339 in a log file or CI).

use std::io::IsTerminal;

/// `--color`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum ColorChoice {
    /// Colour on a terminal, unless $NO_COLOR is set (and not empty).
    #[default]
    Auto,
    /// Always colour, even into a pipe or with $NO_COLOR.
    Always,
    /// Never colour.
    Never,
}

/// Whether to colour: `--color`, else $NO_COLOR (https://no-color.org:
/// any non-empty value), else whether stderr is a terminal.
pub fn use_color(choice: ColorChoice, no_color: Option<&str>, terminal: bool) -> bool {
    match choice {
        ColorChoice::Always => true,
        ColorChoice::Never => false,
        ColorChoice::Auto => terminal && no_color.is_none_or(str::is_empty),
    }
}

/// The log filter: $MMCI_LOG when set, else by -q / -v.
pub fn level(verbose: u8, quiet: bool) -> &'static str {
    match (quiet, verbose) {
        (true, _) => "warn",
        (false, 0) => "info",
        (false, 1) => "debug",
        (false, _) => "trace",
    }
}

/// HH:MM:SS (UTC), the log lines' time on a terminal.
struct ShortTime;

impl tracing_subscriber::fmt::time::FormatTime for ShortTime {
    fn format_time(&self, w: &mut tracing_subscriber::fmt::format::Writer<'_>) -> std::fmt::Result {
        let secs = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        write!(w, "{}", short_time(secs))
    }
}

/// `secs` since the epoch as HH:MM:SS of its UTC day.
pub fn short_time(secs: u64) -> String {
    let s = secs % 86_400;
    format!("{:02}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
}

/// Log output on stderr, as [`level`], [`use_color`] and the timestamps
/// above say.
pub fn init_logging(verbose: u8, quiet: bool, color: ColorChoice) {
    let terminal = std::io::stderr().is_terminal();
    let no_color = std::env::var("NO_COLOR").ok();
    let ansi = use_color(color, no_color.as_deref(), terminal);
    let filter = tracing_subscriber::EnvFilter::try_from_env("MMCI_LOG").unwrap_or_else(|_| {
        tracing_subscriber::EnvFilter::new(format!("mmci={}", level(verbose, quiet)))
    });
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(ansi)
        .with_target(false);
    if terminal {
        builder.with_timer(ShortTime).init();
    } else {
        builder.init();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colour_follows_the_flag_then_no_color_then_the_terminal() {
        use ColorChoice::*;
        let cases = [
            (Auto, None, true, true),
            (Auto, None, false, false),
            (Auto, Some("1"), true, false),
            (Auto, Some(""), true, true),
            (Always, Some("1"), false, true),
            (Never, None, true, false),
        ];
        for (choice, no_color, terminal, want) in cases {
            assert_eq!(
                use_color(choice, no_color, terminal),
                want,
                "{choice:?} {no_color:?} {terminal}"
            );
        }
    }

    #[test]
    fn quiet_wins_over_verbose() {
        let cases = [
            (0, false, "info"),
            (1, false, "debug"),
            (3, false, "trace"),
            (2, true, "warn"),
        ];
        for (v, q, want) in cases {
            assert_eq!(level(v, q), want);
        }
    }

    #[test]
    fn short_times_are_the_utc_clock() {
        assert_eq!(short_time(0), "00:00:00");
        assert_eq!(short_time(86_400 + 3 * 3600 + 4 * 60 + 5), "03:04:05");
    }
}
