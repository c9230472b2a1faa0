//! `mmci watch`: its options into what to follow (an Atom feed, an mbox,
//! a maildir, or patchwork's events) and what to do with each new series
//! (a repository_dispatch, or `mmci run` here), then the passes of
//! `crate::watch`, once or every `--interval`.

use std::path::PathBuf;
use std::time::Duration;

use super::{env_var, rate_limits};
use crate::error::{exit, AppError};
use crate::host::paths::WorkDir;
use crate::post::github;
use crate::series::fetch;
use crate::watch::{Action, Source};

#[derive(clap::Args)]
pub struct WatchArgs {
    /// A public-inbox Atom feed (e.g. https://lore.kernel.org/linux-mm/new.atom).
    #[arg(long, required_unless_present_any = ["mbox", "maildir", "patchwork"], conflicts_with_all = ["mbox", "maildir", "patchwork"])]
    pub atom: Option<String>,
    /// A local mbox (e.g. kept up to date by lei or a mail client).
    #[arg(long, conflicts_with_all = ["maildir", "patchwork"])]
    pub mbox: Option<PathBuf>,
    /// A local maildir.
    #[arg(long, conflicts_with = "patchwork")]
    pub maildir: Option<PathBuf>,
    /// A patchwork instance whose series-completed events of --project are followed.
    #[arg(long, value_name = "URL")]
    pub patchwork: Option<String>,
    /// The patchwork project (its link name, e.g. linux-mm) [default:
    /// $MMCI_PATCHWORK_PROJECT, the config's patchwork_project].
    #[arg(long, value_name = "NAME", requires = "patchwork")]
    pub project: Option<String>,
    /// Where a patchwork source starts when the state has no cursor yet
    /// (ISO 8601: `2026-11-30T00:00:00Z`, an offset, or UTC without a zone;
    /// sent to patchwork as naive UTC) [default: a day ago].
    #[arg(long, value_name = "DATE", requires = "patchwork")]
    pub pw_since: Option<String>,
    /// Longest wait on patchwork's rate limit (429) for one request, in seconds.
    #[arg(long, default_value_t = 300)]
    pub rate_limit_wait: u64,
    /// Kill a --run's `mmci run` after this many seconds.
    #[arg(long, default_value_t = 6 * 3600)]
    pub run_timeout: u64,
    /// public-inbox server the threads of --atom entries are fetched from.
    #[arg(long, default_value = crate::series::fetch::LORE_URL)]
    pub lore_url: String,
    /// Path prefix a series must touch (repeatable).
    #[arg(long = "path", default_values_t = vec!["mm/".to_string()])]
    pub paths: Vec<String>,
    /// State file: the series already handled [default: <work dir>/watch/state.json].
    #[arg(long)]
    pub state: Option<PathBuf>,
    /// Send a repository_dispatch (type mmci-series) to OWNER/REPO, which runs series.yml.
    #[arg(
        long,
        value_name = "OWNER/REPO",
        required_unless_present = "run",
        conflicts_with = "run"
    )]
    pub dispatch: Option<String>,
    /// Run `mmci run --series` here on each new series.
    #[arg(long)]
    pub run: bool,
    /// Results dir of --run's runs (one subdir per series).
    #[arg(long, default_value = "mmci-results/watch")]
    pub results: PathBuf,
    /// Extra argument for --run's `mmci run` (repeatable), e.g. --run-arg=--matrix=matrix/smoke.yaml.
    #[arg(long = "run-arg", allow_hyphen_values = true)]
    pub run_args: Vec<String>,
    /// GitHub, for --dispatch.
    #[command(flatten)]
    pub github: super::GitHubAccess,
    #[command(flatten)]
    pub old_github: super::OldGitHubOptions,
    /// Poll every this many seconds [default: one pass, then exit].
    #[arg(long)]
    pub interval: Option<u64>,
    /// Dispatch or run each new series and record it (else: print what
    /// would be done, record nothing).
    #[arg(long)]
    pub send: bool,
    /// Old: a dry run is what happens without --send (deprecated).
    #[arg(long, hide = true, conflicts_with = "send")]
    pub dry_run: bool,
}

/// What `mmci watch` follows and does, checked before the first pass.
pub struct WatchJob {
    /// The feed, mbox or maildir; `None` for a patchwork source.
    pub source: Option<Source>,
    pub patchwork: Option<crate::watch::patchwork::Source>,
    pub action: Action,
    pub state: PathBuf,
}

/// `mmci watch`'s options as a job, in the environment `env` ($GITHUB_API_URL,
/// the token of --dispatch).
pub fn watch_job(
    a: &WatchArgs,
    work: &WorkDir,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<WatchJob, AppError> {
    let project = a
        .project
        .clone()
        .or_else(|| super::nonempty(env("MMCI_PATCHWORK_PROJECT")));
    let patchwork = match (&a.patchwork, project) {
        (Some(_), None) => {
            return Err(AppError::BadOption(
                "--patchwork: give --project NAME (or patchwork_project in mmci.toml)".into(),
            ))
        }
        (Some(url), Some(project)) => Some(crate::watch::patchwork::Source {
            url: crate::series::patchwork::check_url("--patchwork", url)
                .map_err(|e| AppError::BadOption(e.to_string()))?,
            project,
            since: match &a.pw_since {
                Some(s) => crate::watch::patchwork::check_since(s).map_err(AppError::BadOption)?,
                None => crate::watch::patchwork::default_since(github::now()),
            },
            limits: rate_limits(a.rate_limit_wait),
        }),
        _ => None,
    };
    let source = match (&a.atom, &a.mbox, &a.maildir) {
        (Some(url), _, _) => {
            fetch::check_base_url("--atom", url).map_err(|e| AppError::BadOption(e.to_string()))?;
            fetch::check_base_url("--lore-url", &a.lore_url)
                .map_err(|e| AppError::BadOption(e.to_string()))?;
            Some(Source::Atom {
                url: url.clone(),
                lore_url: a.lore_url.clone(),
            })
        }
        (_, Some(p), _) => Some(Source::Mbox(p.clone())),
        (_, _, Some(d)) => Some(Source::Maildir(d.clone())),
        // The patchwork source, which has a pass of its own.
        _ => None,
    };
    let gh = |e: github::GitHubError| AppError::Watch(e.into());
    let action = match &a.dispatch {
        Some(repo) => {
            let api = a.github.api(env).map_err(gh)?;
            let auth = if !a.send {
                None
            } else {
                Some(a.github.auth().resolve_with(env).map_err(gh)?)
            };
            Action::Dispatch {
                api,
                repo: repo.parse().map_err(gh)?,
                auth,
            }
        }
        None => Action::Run {
            mmci: std::env::current_exe()
                .map_err(|e| AppError::BadOption(format!("cannot find the mmci binary: {e}")))?,
            results: a.results.clone(),
            args: a.run_args.clone(),
        },
    };
    let state = a
        .state
        .clone()
        .unwrap_or_else(|| work.root().join("watch/state.json"));
    Ok(WatchJob {
        source,
        patchwork,
        action,
        state,
    })
}

/// `mmci watch`: one pass, or one every `--interval` seconds.
pub async fn watch(a: &WatchArgs, work: &WorkDir) -> Result<i32, AppError> {
    let job = watch_job(a, work, &env_var)?;
    let fetcher = fetch::Fetcher::default();
    loop {
        let lines = match (&job.source, &job.patchwork) {
            (None, Some(src)) => {
                crate::watch::patchwork::pass(
                    src,
                    &a.paths,
                    &job.action,
                    &job.state,
                    !a.send,
                    Duration::from_secs(a.run_timeout),
                )
                .await?
            }
            (Some(source), _) => {
                crate::watch::pass(source, &a.paths, &job.action, &job.state, !a.send, &fetcher)
                    .await?
            }
            (None, None) => unreachable!("clap requires a source"),
        };
        for l in &lines {
            println!("{l}");
        }
        match a.interval {
            Some(s) => tokio::time::sleep(Duration::from_secs(s.max(1))).await,
            None => break,
        }
    }
    Ok(exit::OK)
}
