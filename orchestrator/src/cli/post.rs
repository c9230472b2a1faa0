//! `mmci post`: GitHub check runs and sticky comments, email replies,
//! patchwork checks. Each command's options and the environment it reads
//! ($GITHUB_REPOSITORY, $GITHUB_SHA, $GITHUB_API_URL, $GITHUB_STEP_SUMMARY,
//! the tokens, $MMCI_EMAIL_FROM, $MMCI_SMTP, $MMCI_PATCHWORK_TOKEN) become
//! one checked job of `crate::post` before any request; posting is
//! `crate::post`'s.

use std::path::PathBuf;
use std::time::Duration;

use clap::Subcommand;

use super::results::AnalysisArgs;
use super::{env_var, nonempty, rate_limits};
use crate::error::{exit, AppError};
use crate::series::{fetch, SeriesSpec};

#[derive(Subcommand)]
pub enum PostCommand {
    /// A check run on the tested commit (--start: in progress; else
    /// completed with --conclusion and --body) and, with --pr, one sticky
    /// comment per series on the pull request, updated in place.
    #[command(after_help = super::help::POST_GITHUB_EXAMPLES)]
    Github(Box<GithubArgs>),
    /// The plain-text report as a reply on the series' thread: a FAIL to
    /// the author and the thread's lists and people; any other verdict to
    /// nobody of the thread (--to-author: the author alone). A dry run (the
    /// message printed) unless --send or --write.
    #[command(after_help = super::help::POST_EMAIL_EXAMPLES)]
    Email(Box<EmailArgs>),
    /// One check per patch of the series on patchwork (state, context,
    /// link, description), as NIPA and the BPF CI post theirs. A dry run
    /// (the requests printed) unless --send.
    #[command(after_help = super::help::POST_PATCHWORK_EXAMPLES)]
    Patchwork(Box<PatchworkArgs>),
}

#[derive(clap::Args)]
pub struct PatchworkArgs {
    /// Results dir whose verdict (and stages) the checks say, and whose
    /// manifest names the series (and its patchwork ids).
    #[arg(long, required_unless_present = "pw_series")]
    pub results: Option<PathBuf>,
    /// The series on --patchwork by id (read with a GET, in a dry run
    /// too): its patches get the checks, instead of those the results dir
    /// names (which has none when the series did not apply). Without
    /// --results: for --start or --state before there are results.
    #[arg(long, value_name = "ID")]
    pub pw_series: Option<u64>,
    /// The check's state [default: from the verdict: pass -> success,
    /// fail -> fail, inconclusive -> warning].
    #[arg(long, value_enum, conflicts_with = "start")]
    pub state: Option<crate::post::patchwork::CheckState>,
    /// The run is starting: post `pending`.
    #[arg(long)]
    pub start: bool,
    /// The check's name: mmci or mmci-NAME.
    #[arg(long, default_value = "mmci")]
    pub context: String,
    /// Besides the check of --context (the whole verdict), one check per
    /// stage, each with its own state: CONTEXT-apply, -build, -boot,
    /// -splats and CONTEXT-SCENARIO for each scenario the matrix ran.
    /// With --start: pending on each; a stage the results say nothing of
    /// is posted only over its pending check, as a warning saying why.
    #[arg(long)]
    pub stages: bool,
    /// Link shown with the check (e.g. the workflow run or the report).
    #[arg(long, value_name = "URL")]
    pub target_url: Option<String>,
    /// One line shown with the check [default: the verdict and its counts].
    #[arg(long, value_name = "TEXT")]
    pub description: Option<String>,
    /// Patchwork instance [default: the one the series was read from, else
    /// $MMCI_PATCHWORK_URL, the config's patchwork_url].
    #[arg(long, value_name = "URL")]
    pub patchwork: Option<String>,
    /// Patchwork project, to find patches by message-id (series not read
    /// from patchwork) [default: $MMCI_PATCHWORK_PROJECT, the config's
    /// patchwork_project].
    #[arg(long, value_name = "NAME")]
    pub project: Option<String>,
    /// Environment variable holding the patchwork token.
    #[arg(long, value_name = "VAR", default_value = crate::post::patchwork::TOKEN_ENV)]
    pub patchwork_token_env: String,
    /// File holding the patchwork token (instead of --patchwork-token-env).
    #[arg(long, value_name = "FILE")]
    pub patchwork_token_file: Option<PathBuf>,
    /// Old spelling of --patchwork-token-file (deprecated).
    #[arg(
        long,
        hide = true,
        value_name = "FILE",
        conflicts_with = "patchwork_token_file"
    )]
    pub token_file: Option<PathBuf>,
    /// Send the checks (else: print the requests; no token needed).
    #[arg(long)]
    pub send: bool,
    /// Longest wait on patchwork's rate limit (429) for one request, in seconds.
    #[arg(long, default_value_t = 300)]
    pub rate_limit_wait: u64,
    #[command(flatten)]
    pub analysis: AnalysisArgs,
}

#[derive(clap::Args)]
pub struct GithubArgs {
    /// Create the check run as in progress (the run is starting).
    #[arg(long, conflicts_with_all = ["conclusion", "body"])]
    pub start: bool,
    /// The verdict of the completed check run.
    #[arg(long, value_enum, required_unless_present = "start")]
    pub conclusion: Option<crate::post::github::Conclusion>,
    /// The rendered markdown report.
    #[arg(long, required_unless_present = "start")]
    pub body: Option<PathBuf>,
    /// Results dir whose manifest names the series (title, sticky key).
    #[arg(long)]
    pub results: Option<PathBuf>,
    /// OWNER/REPO [default: $GITHUB_REPOSITORY].
    #[arg(long)]
    pub repo: Option<String>,
    /// Commit the check run belongs to [default: $GITHUB_SHA].
    #[arg(long)]
    pub sha: Option<String>,
    /// Pull request for the sticky comment.
    #[arg(long)]
    pub pr: Option<u64>,
    /// Or the open pull request whose head is this branch at --sha, looked
    /// up and refused unless found (a fork's pull request, whose number a
    /// workflow_run event does not carry).
    #[arg(long, value_name = "OWNER/REPO:BRANCH", conflicts_with = "pr")]
    pub pr_head: Option<String>,
    /// The check run's name.
    #[arg(long, default_value = "mmci")]
    pub check_name: String,
    /// Complete this check run [default: the open one of --check-name on --sha].
    #[arg(long)]
    pub check_run_id: Option<u64>,
    /// The check run's title [default: the series' title].
    #[arg(long)]
    pub title: Option<String>,
    /// Key of the sticky comment [default: the series' title, stable across revisions].
    #[arg(long)]
    pub sticky_key: Option<String>,
    /// Link shown on the check run (e.g. the workflow run).
    #[arg(long)]
    pub details_url: Option<String>,
    #[command(flatten)]
    pub github: super::GitHubAccess,
    #[command(flatten)]
    pub old_github: super::OldGitHubOptions,
    /// Authenticate as this GitHub App (with --app-key).
    #[arg(long)]
    pub app_id: Option<u64>,
    /// The App's private key (PEM).
    #[arg(long, requires = "app_id")]
    pub app_key: Option<PathBuf>,
    /// The App's installation [default: the one on --repo].
    #[arg(long, requires = "app_id")]
    pub installation_id: Option<u64>,
    /// Send the check run and the comment (else: print the requests; no
    /// credentials needed).
    #[arg(long)]
    pub send: bool,
    /// Old: a dry run is what happens without --send (deprecated).
    #[arg(long, hide = true, conflicts_with = "send")]
    pub dry_run: bool,
}

/// A verdict given on the command line (`mmci post email --verdict`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum VerdictArg {
    Pass,
    Fail,
    Inconclusive,
    NoVerdict,
}

impl VerdictArg {
    pub fn status(self) -> crate::analysis::Status {
        use crate::analysis::Status;
        match self {
            VerdictArg::Pass => Status::Pass,
            VerdictArg::Fail => Status::Fail,
            VerdictArg::Inconclusive => Status::Inconclusive,
            VerdictArg::NoVerdict => Status::NoVerdict,
        }
    }
}

#[derive(clap::Args)]
pub struct EmailArgs {
    /// The rendered plain-text report (`mmci report --format email`).
    #[arg(long)]
    pub body: PathBuf,
    /// Results dir whose manifest holds the series and its thread, and
    /// whose verdict decides who gets the reply.
    #[arg(long, required_unless_present = "series", conflicts_with = "series")]
    pub results: Option<PathBuf>,
    /// The series' mbox (or format-patch dir) instead of --results; needs
    /// --verdict.
    #[arg(long, requires = "verdict")]
    pub series: Option<PathBuf>,
    /// The verdict the body reports, instead of analysing --results.
    #[arg(long, value_enum)]
    pub verdict: Option<VerdictArg>,
    /// Send a verdict that is not a FAIL to the series' author alone (a
    /// PASS, INCONCLUSIVE or NO VERDICT never goes to the thread's lists).
    #[arg(long)]
    pub to_author: bool,
    /// Sender [default: $MMCI_EMAIL_FROM].
    #[arg(long)]
    pub from: Option<String>,
    /// Extra To (repeatable), whatever the verdict; on a FAIL (or with
    /// --to-author) the series' author is To too.
    #[arg(long)]
    pub to: Vec<String>,
    /// Extra Cc (repeatable), whatever the verdict; on a FAIL the mailing
    /// lists among the thread's To and Cc are Cc too (25 recipients in
    /// all at most; the people there are left out, and said).
    #[arg(long)]
    pub cc: Vec<String>,
    /// A host whose addresses are mailing lists (repeatable), beyond
    /// vger.kernel.org, kvack.org, lists.linux.dev, lists.infradead.org
    /// and the other kernel list hosts: a FAIL Cc's the thread's lists.
    #[arg(long, value_name = "HOST")]
    pub list_domain: Vec<String>,
    /// Only --to and --cc: leave out the author and the lists.
    #[arg(long)]
    pub only_given_recipients: bool,
    /// Message-ID [default: the one the body's `| Closes:` names, else a
    /// fresh one].
    #[arg(long)]
    pub message_id: Option<String>,
    /// Date as Unix seconds instead of now.
    #[arg(long)]
    pub date: Option<u64>,
    /// Send it over SMTP (else: print it, or store it with --output).
    #[arg(long)]
    pub send: bool,
    /// Store it: FILE.eml, or appended to FILE.mbox (for git send-email).
    #[arg(long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Old spelling of --output (deprecated).
    #[arg(long, hide = true, value_name = "FILE", conflicts_with = "output")]
    pub write: Option<PathBuf>,
    /// SMTP server HOST[:PORT] [default: $MMCI_SMTP].
    #[arg(long)]
    pub smtp: Option<String>,
    /// How the SMTP connection is encrypted: starttls (port 587), tls
    /// (implicit TLS, port 465) or none (a local relay only).
    #[arg(long, value_enum, default_value = "starttls")]
    pub smtp_tls: crate::post::email::SmtpTls,
    /// Extra CA certificate (PEM) to trust for the SMTP server.
    #[arg(long)]
    pub smtp_ca: Option<PathBuf>,
    /// SMTP user name to log in as [default: no login].
    #[arg(long)]
    pub smtp_user: Option<String>,
    /// Environment variable with the SMTP password.
    #[arg(long, default_value = "MMCI_SMTP_PASSWORD")]
    pub smtp_password_env: String,
    /// File holding the SMTP password (instead of --smtp-password-env).
    #[arg(long)]
    pub smtp_password_file: Option<PathBuf>,
    /// Seconds before an SMTP exchange gives up.
    #[arg(long, default_value_t = 60)]
    pub smtp_timeout: u64,
    #[command(flatten)]
    pub analysis: AnalysisArgs,
}

/// Reads and checks every input of `mmci post github` before any request.
pub fn github_post(
    a: &GithubArgs,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<crate::post::GitHubPost, AppError> {
    use crate::post::{self, github, GitHubPhase, PostError};
    let gh = |e: github::GitHubError| AppError::Post(PostError::GitHub(e));
    let api = a.github.api(env).map_err(gh)?;
    let repo: github::Repo = a
        .repo
        .clone()
        .or_else(|| nonempty(env("GITHUB_REPOSITORY")))
        .unwrap_or_default()
        .parse()
        .map_err(gh)?;
    let head_sha = a
        .sha
        .clone()
        .or_else(|| nonempty(env("GITHUB_SHA")))
        .ok_or(github::GitHubError::NoSha)
        .map_err(gh)?;
    let series = match &a.results {
        Some(dir) => post::series_from_results(dir)?,
        None => None,
    };
    let series_title = series.as_ref().map(post::series_title);
    let title = a
        .title
        .clone()
        .or_else(|| series_title.clone())
        .unwrap_or_else(|| "mmci report".into());
    let phase = if a.start {
        GitHubPhase::Start
    } else {
        let markdown = post::read_body(a.body.as_deref().expect("clap requires --body"))?;
        GitHubPhase::Finish {
            conclusion: a.conclusion.expect("clap requires --conclusion"),
            markdown,
            pr: match (a.pr, &a.pr_head) {
                (Some(n), _) => Some(github::PullRequest::Number(n)),
                (None, Some(head)) => Some(head.parse().map_err(gh)?),
                (None, None) => None,
            }
            .map(|pr| {
                let key = a
                    .sticky_key
                    .clone()
                    .or_else(|| series_title.clone())
                    .unwrap_or_else(|| a.check_name.clone());
                (pr, key)
            }),
            check_run_id: a.check_run_id,
        }
    };
    let auth = if !a.send {
        None
    } else {
        Some(
            github::AuthOptions {
                app_id: a.app_id,
                app_key: a.app_key.clone(),
                installation_id: a.installation_id,
                ..a.github.auth()
            }
            .resolve_with(env)
            .map_err(gh)?,
        )
    };
    Ok(crate::post::GitHubPost {
        api,
        target: github::CheckTarget {
            repo,
            head_sha,
            name: a.check_name.clone(),
            details_url: a.details_url.clone(),
        },
        title,
        phase,
        auth,
        step_summary: nonempty(env("GITHUB_STEP_SUMMARY"))
            .filter(|_| a.send)
            .map(PathBuf::from),
    })
}

/// Reads and checks every input of `mmci post patchwork` before any request.
pub async fn patchwork_post(
    a: &PatchworkArgs,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<crate::post::patchwork::PatchworkPost, AppError> {
    use crate::post::patchwork::{self as pw, CheckState, PatchworkPostError};
    use crate::post::PostError;
    let bad = |e: PatchworkPostError| AppError::Post(PostError::Patchwork(e));
    pw::check_context(&a.context).map_err(bad)?;
    if let Some(u) = &a.target_url {
        pw::check_target_url(u).map_err(bad)?;
    }
    if a.results.is_none() && !a.start && a.state.is_none() {
        return Err(AppError::BadOption(
            "--pw-series without --results: give --start or --state (there is no verdict yet)"
                .into(),
        ));
    }
    // The patches: the series by id (--pw-series), else the results dir's.
    let (targets, instance) = match (&a.results, a.pw_series) {
        (Some(dir), None) => pw::targets_from_results(dir)?,
        (Some(dir), Some(id)) => {
            let origin = pw::origin_in_results(dir)?;
            if let Some(o) = origin.as_ref().filter(|o| o.series != id) {
                return Err(AppError::BadOption(format!(
                    "--pw-series {id}: the results dir {} tested patchwork series {} of {}",
                    dir.display(),
                    o.series,
                    o.url
                )));
            }
            (vec![], origin.map(|o| o.url))
        }
        (None, _) => (vec![], None),
    };
    let url = match (&a.patchwork, instance, &a.results) {
        (Some(u), _, _) => u.clone(),
        (None, Some(u), _) => u,
        // The config's patchwork_url ($MMCI_PATCHWORK_URL) last.
        (None, None, Some(dir)) => nonempty(env("MMCI_PATCHWORK_URL"))
            .ok_or_else(|| bad(PatchworkPostError::NoInstance(dir.clone())))?,
        (None, None, None) => nonempty(env("MMCI_PATCHWORK_URL")).ok_or_else(|| {
            AppError::BadOption(
                "--pw-series: give --patchwork URL (or patchwork_url in mmci.toml)".into(),
            )
        })?,
    };
    let url = crate::series::patchwork::check_url("--patchwork", &url)
        .map_err(|e| bad(PatchworkPostError::Api(e)))?;
    let targets = match a.pw_series {
        Some(id) => pw::targets_of_series(&url, id, rate_limits(a.rate_limit_wait))
            .await
            .map_err(bad)?,
        None => targets,
    };
    // The verdict only when it decides something: a state, a text, stages.
    // A summary given whole (--state and --description) is posted even
    // when the results cannot be analysed (a build or shard failed and left
    // a partial dir): the stages then say they have no result.
    let given = a.state.is_some() && a.description.is_some();
    let verdict = match &a.results {
        _ if a.start || (given && !a.stages) => None,
        Some(dir) if given => match a.analysis.analyse(dir) {
            Ok(c) => Some(c),
            Err(e) => {
                tracing::warn!(error = %e, "the results cannot be analysed: the stages get no result");
                None
            }
        },
        Some(dir) => Some(a.analysis.analyse(dir)?),
        None => None,
    };
    let state = match (a.start, a.state, &verdict) {
        (true, _, _) => CheckState::Pending,
        (_, Some(s), _) => s,
        (_, None, Some(c)) => CheckState::of_verdict(c.verdict.status),
        (_, None, None) => unreachable!("analysed above"),
    };
    let description = a
        .description
        .clone()
        .unwrap_or_else(|| pw::default_description(state, verdict.as_ref()));
    let mut checks = vec![pw::Posting::of(pw::Check {
        state,
        context: a.context.clone(),
        target_url: a.target_url.clone(),
        description,
    })];
    if a.stages {
        checks.extend(stage_checks(a, verdict.as_ref())?);
        for c in &checks {
            pw::check_context(&c.check.context).map_err(bad)?;
        }
    }
    let token = if a.send {
        Some(
            pw::resolve_token(
                a.patchwork_token_file.as_deref(),
                &a.patchwork_token_env,
                |k| nonempty(env(k)),
            )
            .map_err(bad)?,
        )
    } else {
        None
    };
    Ok(pw::PatchworkPost {
        url,
        project: a
            .project
            .clone()
            .or_else(|| nonempty(env("MMCI_PATCHWORK_PROJECT"))),
        targets,
        checks,
        token,
        limits: rate_limits(a.rate_limit_wait),
    })
}

/// The stages' checks of `--stages`: pending on each (`--start`: the
/// fixed stages, and the scenarios of the results dir's matrix when there
/// is one), else each stage as the results dir says, or, without one,
/// none of them has a result.
fn stage_checks(
    a: &PatchworkArgs,
    verdict: Option<&crate::analysis::Comparison>,
) -> Result<Vec<crate::post::patchwork::Posting>, AppError> {
    use crate::post::patchwork::{self as pw, stages};
    // Without a readable manifest, a summary given whole still goes out
    // (see patchwork_post); otherwise it is bad input.
    let given = a.state.is_some() && a.description.is_some();
    let manifest = match &a.results {
        Some(dir) => match crate::results::dir::read_manifest(dir) {
            Ok(Some(m)) => Some(m),
            Ok(None) | Err(_) if given => None,
            Ok(None) => return Err(crate::post::PostError::NoManifest(dir.clone()).into()),
            Err(e) => return Err(e.into()),
        },
        None => None,
    };
    let url = a.target_url.as_deref();
    if a.start {
        return Ok(pw::start_postings(
            &a.context,
            &stages::names(manifest.as_ref()),
            url,
        ));
    }
    let list = match (&a.results, manifest, verdict) {
        (Some(dir), Some(m), Some(c)) => {
            let (runs, _) = crate::results::dir::runs_checked(dir);
            stages::stages(&m, &runs, c)
        }
        _ => stages::FIXED
            .iter()
            .map(|n| stages::Stage {
                name: n.to_string(),
                outcome: stages::StageOutcome::NoData("the run left no results".into()),
            })
            .collect(),
    };
    Ok(pw::stage_postings(&a.context, &list, url))
}

/// Reads and checks every input of `mmci post email` before anything is sent.
pub async fn email_post(
    a: &EmailArgs,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<crate::post::EmailPost, AppError> {
    use crate::post::{self, email, PostError};
    let body = post::read_body(&a.body)?;
    let series = match (&a.results, &a.series) {
        (Some(dir), _) => post::series_from_results(dir)?.ok_or_else(|| {
            AppError::BadOption(format!(
                "--results {}: no kernel in it had a series applied: give the series with --series",
                dir.display()
            ))
        })?,
        (None, Some(path)) => {
            if !path.exists() {
                return Err(AppError::BadOption(format!(
                    "--series {}: no such file or directory",
                    path.display()
                )));
            }
            let store = tempfile::tempdir()
                .map_err(|e| AppError::BadOption(format!("cannot create a temporary dir: {e}")))?;
            crate::series::load(
                &SeriesSpec::from_path(path),
                &fetch::Fetcher::default(),
                store.path(),
            )
            .await
            .map_err(|e| AppError::Kernel(crate::kernel::KernelError::Series(e)))?
        }
        (None, None) => unreachable!("clap requires --results or --series"),
    };
    let from = a.from.clone().or_else(|| nonempty(env("MMCI_EMAIL_FROM")));
    email::mailbox(
        "--from",
        from.as_deref()
            .ok_or(email::EmailError::NoFrom)
            .map_err(PostError::Email)?,
    )
    .map_err(PostError::Email)?;
    let verdict = match (a.verdict, &a.results) {
        (Some(v), _) => v.status(),
        (None, Some(dir)) => a.analysis.analyse(dir)?.verdict.status,
        (None, None) => unreachable!("clap requires --verdict with --series"),
    };
    let message_id =
        email::message_id_of(a.message_id.as_deref(), &body).map_err(PostError::Email)?;
    for d in &a.list_domain {
        if !email::recipients::is_host_name(d) {
            return Err(AppError::BadOption(format!(
                "--list-domain {}: not a host name; give the host of the list's addresses (lists.example.org for dev@lists.example.org)",
                d.escape_debug()
            )));
        }
    }
    let options = email::EmailOptions {
        from,
        to: a.to.clone(),
        cc: a.cc.clone(),
        list_domains: a.list_domain.clone(),
        audience: email::audience(verdict, a.to_author, a.only_given_recipients),
        message_id,
        date: a.date,
    };
    // A verdict that goes to nobody: said, and nothing else done.
    if email::addressed_to_nobody(&options) {
        return Ok(crate::post::EmailPost {
            series,
            body,
            options,
            verdict,
            write: None,
            smtp: None,
        });
    }
    // Build once now so that a bad address fails before the SMTP set-up.
    email::build(&series, &body, &options).map_err(PostError::Email)?;
    let smtp = if a.send {
        let server = a
            .smtp
            .clone()
            .or_else(|| nonempty(env("MMCI_SMTP")))
            .ok_or(PostError::Email(email::EmailError::NoSmtp))?;
        Some(
            email::Smtp::new(&email::SmtpOptions {
                server,
                tls: a.smtp_tls,
                ca: a.smtp_ca.clone(),
                user: a.smtp_user.clone(),
                password_env: a.smtp_password_env.clone(),
                password_file: a.smtp_password_file.clone(),
                timeout: Duration::from_secs(a.smtp_timeout),
            })
            .map_err(PostError::Email)?,
        )
    } else {
        None
    };
    Ok(crate::post::EmailPost {
        series,
        body,
        options,
        verdict,
        write: a.output.clone(),
        smtp,
    })
}

/// `mmci post ...`.
pub async fn post(command: PostCommand) -> Result<i32, AppError> {
    match command {
        PostCommand::Github(a) => {
            let job = github_post(&a, &env_var)?;
            print!("{}", crate::post::post_github(&job).await?);
        }
        PostCommand::Patchwork(a) => {
            let job = patchwork_post(&a, &env_var).await?;
            print!("{}", crate::post::post_patchwork(&job).await?);
        }
        PostCommand::Email(a) => {
            let job = email_post(&a, &env_var).await?;
            print!("{}", crate::post::post_email(&job).await?);
        }
    }
    Ok(exit::OK)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::tests::env_of;
    use crate::cli::{Cli, Command};
    use crate::post::github::{Auth, GitHubError};
    use crate::post::PostError;
    use clap::Parser;

    fn github_args(args: &[&str]) -> GithubArgs {
        let argv = ["mmci", "post", "github"].iter().chain(args);
        match Cli::try_parse_from(argv).unwrap().command {
            Command::Post {
                command: PostCommand::Github(a),
            } => *a,
            _ => unreachable!(),
        }
    }

    /// What a GitHub job was read as: api, OWNER/REPO, sha, token, summary.
    type Read = (String, String, String, Option<String>, Option<PathBuf>);

    fn read(p: &crate::post::GitHubPost) -> Read {
        let t = &p.target;
        (
            p.api.clone(),
            format!("{}/{}", t.repo.owner, t.repo.name),
            t.head_sha.clone(),
            match &p.auth {
                Some(Auth::Token(t)) => Some(t.clone()),
                Some(_) => Some("app".into()),
                None => None,
            },
            p.step_summary.clone(),
        )
    }

    /// Options, environment, and what they are read as or the error.
    type Case<'a> = (
        &'a [&'a str],
        &'a [(&'a str, &'a str)],
        Result<Read, &'a str>,
    );

    #[test]
    fn github_posts_take_the_actions_environment() {
        let actions: &[(&str, &str)] = &[
            ("GITHUB_REPOSITORY", "o/r"),
            ("GITHUB_SHA", "abc"),
            ("GITHUB_API_URL", "https://ghe.example/api/v3"),
            ("GITHUB_STEP_SUMMARY", "/tmp/summary.md"),
            ("GITHUB_TOKEN", "t0ken"),
            ("OTHER_TOKEN", "other"),
        ];
        let read_as = |api: &str, repo: &str, sha: &str, token: Option<&str>, summary: bool| {
            (
                api.to_string(),
                repo.to_string(),
                sha.to_string(),
                token.map(str::to_string),
                summary.then(|| PathBuf::from("/tmp/summary.md")),
            )
        };
        let ghe = "https://ghe.example/api/v3";
        let cases: Vec<Case> = vec![
            (
                &["--start", "--send"],
                actions,
                Ok(read_as(ghe, "o/r", "abc", Some("t0ken"), true)),
            ),
            // A dry run (no --send) needs no token and appends no summary.
            (
                &["--start"],
                actions,
                Ok(read_as(ghe, "o/r", "abc", None, false)),
            ),
            (
                &[
                    "--start",
                    "--repo",
                    "x/y",
                    "--sha",
                    "def",
                    "--github-api",
                    "http://127.0.0.1:9",
                    "--github-token-env",
                    "OTHER_TOKEN",
                    "--send",
                ],
                actions,
                Ok(read_as(
                    "http://127.0.0.1:9",
                    "x/y",
                    "def",
                    Some("other"),
                    true,
                )),
            ),
            (
                &["--start", "--repo", "x/y", "--sha", "def"],
                &[("GITHUB_SHA", " ")],
                Ok(read_as("https://api.github.com", "x/y", "def", None, false)),
            ),
            (&["--start", "--repo", "x/y"], &[], Err("--sha")),
            (&["--start", "--sha", "def"], &[], Err("--repo")),
            (
                &["--start", "--repo", "x/y", "--sha", "def", "--send"],
                &[],
                Err("no GitHub credentials"),
            ),
        ];
        for (args, vars, want) in cases {
            let got = github_post(&github_args(args), &env_of(vars));
            match (got, want) {
                (Ok(p), Ok(want)) => {
                    assert_eq!(read(&p), want, "{args:?}");
                    assert!(matches!(p.phase, crate::post::GitHubPhase::Start));
                }
                (Err(e), Err(want)) => {
                    assert_eq!(e.exit_code(), exit::USAGE, "{args:?}");
                    assert!(e.to_string().contains(want), "{args:?}: {e}");
                }
                (Ok(p), Err(want)) => panic!("{args:?}: {:?} instead of {want}", read(&p)),
                (Err(e), Ok(want)) => panic!("{args:?}: {e} instead of {want:?}"),
            }
        }
    }

    #[test]
    fn a_bad_api_url_is_bad_input() {
        let e = github_post(
            &github_args(&["--start", "--repo", "o/r", "--sha", "a"]),
            &env_of(&[("GITHUB_API_URL", "api.github.com")]),
        )
        .unwrap_err();
        assert!(
            matches!(e, AppError::Post(PostError::GitHub(GitHubError::BadApi(_)))),
            "{e}"
        );
    }
}
