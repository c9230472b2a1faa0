//! The options that name a series, declared once ([`SeriesArgs`]) and
//! flattened into every command that reads one (`run`, `kernel build`,
//! `bench boot` through `KernelArgs`; `series show`), and their one
//! translation into a checked [`SeriesSpec`].

use std::path::Path;

use super::AppError;
use crate::series::{fetch, SeriesSpec};

/// `--lore`, `--github-pr`, `--patchwork`/`--pw-series` (with the servers
/// they are fetched from) and `--revision`. A series' path is the
/// command's own (`--series PATH`, or `series show`'s positional
/// argument): it conflicts with these.
#[derive(clap::Args, Clone, Debug)]
#[command(next_help_heading = super::help::SERIES)]
pub struct SeriesArgs {
    /// Patch series from a lore thread: a message-id (or lore URL) of any mail in it.
    #[arg(long, value_name = "MESSAGE-ID", conflicts_with_all = ["github_pr", "pw_series"])]
    pub lore: Option<String>,
    /// public-inbox server for --lore.
    #[arg(long, default_value = fetch::LORE_URL)]
    pub lore_url: String,
    /// Patch series from a GitHub pull request: OWNER/REPO#NUMBER (token:
    /// --github-token-file, else $GITHUB_TOKEN; a public one needs none).
    #[arg(long, value_name = "OWNER/REPO#N", conflicts_with = "pw_series")]
    pub github_pr: Option<String>,
    /// Patchwork instance of --pw-series (e.g. https://patchwork.kernel.org)
    /// [default: $MMCI_PATCHWORK_URL, the config's patchwork_url].
    #[arg(long, value_name = "URL", requires = "pw_series")]
    pub patchwork: Option<String>,
    /// Patch series from patchwork: the series id (its REST API 1.3 series and mbox).
    #[arg(long, value_name = "ID")]
    pub pw_series: Option<u64>,
    /// GitHub, for --github-pr.
    #[command(flatten)]
    pub github: super::GitHubAccess,
    /// Revision N of the series instead of the newest complete one.
    #[arg(long, value_name = "N")]
    pub revision: Option<u32>,
    /// Only these patches of the series, as b4's cherry-pick: 1, 1-2, 2-, 1,3
    /// (patch 1 alone is the baseline that isolates patch 2's effect).
    #[arg(long, value_name = "LIST")]
    pub patches: Option<crate::series::pick::PatchPick>,
}

impl SeriesArgs {
    /// The series named by `path` (given as `--series`), `--lore`,
    /// `--github-pr` or `--pw-series`, checked, in the environment `env`
    /// (the GitHub token, $GITHUB_API_URL, the patchwork URL); `None`
    /// without one.
    pub fn spec(
        &self,
        path: Option<&Path>,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Option<SeriesSpec>, AppError> {
        let bad = |option: &str, value: &str, why: &str| {
            AppError::BadOption(format!("{option} {value}: {why}"))
        };
        if let Some(path) = path {
            if !path.exists() {
                return Err(bad(
                    "--series",
                    &path.display().to_string(),
                    "no such file or directory",
                ));
            }
            return Ok(Some(SeriesSpec::from_path(path)));
        }
        if let Some(given) = &self.lore {
            fetch::check_base_url("--lore-url", &self.lore_url)
                .map_err(|e| AppError::BadOption(e.to_string()))?;
            let message_id = fetch::normalize_message_id(given)
                .map_err(|e| bad("--lore", given, &e.to_string()))?;
            return Ok(Some(SeriesSpec::Lore {
                message_id,
                base_url: self.lore_url.clone(),
            }));
        }
        if let Some(given) = &self.github_pr {
            let api = self
                .github
                .api(env)
                .map_err(|e| AppError::BadOption(e.to_string()))?;
            fetch::check_base_url("--github-api", &api)
                .map_err(|e| AppError::BadOption(e.to_string()))?;
            let (repo, number) = fetch::parse_pull_request(given)
                .ok_or_else(|| bad("--github-pr", given, "expected OWNER/REPO#NUMBER"))?;
            return Ok(Some(SeriesSpec::GitHub {
                api,
                repo,
                number,
                token: self.github.optional_token(env)?,
            }));
        }
        if let Some(series) = self.pw_series {
            let url = self
                .patchwork
                .clone()
                .or_else(|| super::nonempty(env("MMCI_PATCHWORK_URL")))
                .ok_or_else(|| {
                    AppError::BadOption(
                        "--pw-series: give --patchwork URL (or patchwork_url in mmci.toml)".into(),
                    )
                })?;
            let url = crate::series::patchwork::check_url("--patchwork", &url)
                .map_err(|e| AppError::BadOption(e.to_string()))?;
            return Ok(Some(SeriesSpec::Patchwork { url, series }));
        }
        Ok(None)
    }
}
