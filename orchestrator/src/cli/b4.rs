//! `mmci b4-check`: the command b4 review runs as
//! `b4.review-perpatch-check-cmd` or `b4.review-series-check-cmd`. Reads
//! the message on standard input (or takes `--message-id`), finds the
//! newest results dir under `--results` (the config's `results`, else
//! ./mmci-results) whose series holds it, and prints its verdict as b4's
//! JSON list ([`crate::report::b4`]); `[]` when no run has the message.

use std::io::Read;
use std::path::PathBuf;

use super::results::AnalysisArgs;
use crate::error::{exit, AppError};
use crate::report::b4;

#[derive(clap::Args)]
#[command(after_help = "EXAMPLES:
  # In ~/.gitconfig (or the kernel tree's .git/config), for `b4 review`:
  [b4]
      review-perpatch-check-cmd = mmci b4-check --results ~/mmci-results
      review-series-check-cmd = mmci b4-check --results ~/mmci-results

  # By hand
  mmci b4-check --results mmci-results --message-id '<20250101.1234-1-me@example.org>'")]
pub struct B4CheckArgs {
    /// Where the results dirs are: one, or a folder of them (two levels
    /// down) [default: $MMCI_RESULTS, the config's `results`, else ./mmci-results].
    #[arg(long, value_name = "DIR")]
    pub results: Option<PathBuf>,
    /// The message to look up, instead of reading it from standard input.
    #[arg(long, value_name = "ID")]
    pub message_id: Option<String>,
    /// Link shown with the check (the published report, a CI run).
    #[arg(long, value_name = "URL")]
    pub url: Option<String>,
    #[command(flatten)]
    pub analysis: AnalysisArgs,
}

/// Longest message read from standard input.
const MAX_MESSAGE: u64 = 64 << 20;

/// The message-id of the mail on standard input.
fn message_id_from_stdin() -> Result<String, AppError> {
    let mut raw = Vec::new();
    std::io::stdin()
        .take(MAX_MESSAGE)
        .read_to_end(&mut raw)
        .map_err(|e| {
            AppError::BadOption(format!(
                "b4-check: reading the message on standard input: {e}"
            ))
        })?;
    crate::series::mail::parse_mail(&raw)
        .map(|m| m.message_id)
        .filter(|id| !id.is_empty())
        .ok_or_else(|| {
            AppError::BadOption(
                "b4-check: the message on standard input has no Message-ID header (give --message-id)"
                    .into(),
            )
        })
}

/// `mmci b4-check`.
pub fn b4_check(a: &B4CheckArgs) -> Result<i32, AppError> {
    let id = match &a.message_id {
        Some(id) => id.clone(),
        None => message_id_from_stdin()?,
    };
    let root = a
        .results
        .clone()
        .or_else(|| super::nonempty(super::env_var("MMCI_RESULTS")).map(PathBuf::from))
        .unwrap_or_else(|| PathBuf::from("mmci-results"));
    if !root.is_dir() {
        return Err(AppError::BadOption(format!(
            "b4-check --results {}: no such directory (give the results dir of `mmci run`, or set `results` in mmci.toml)",
            root.display()
        )));
    }
    let checks = match crate::results::find::latest_for(&root, &id)? {
        Some(dir) => vec![b4::check(
            &a.analysis.analyse(&dir)?,
            &dir,
            a.url.as_deref(),
        )],
        None => vec![],
    };
    println!("{}", b4::json(&checks));
    Ok(exit::OK)
}
