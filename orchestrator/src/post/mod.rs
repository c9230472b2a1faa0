//! Posting a rendered report where the series' author and its maintainers
//! read it: a GitHub check run and one sticky pull-request comment
//! (`github`), a reply on the patch thread (`email`), or a check on each
//! patch in patchwork (`patchwork`).
//!
//! The renderers live elsewhere: posting takes the rendered body as text and
//! the series' metadata ([`Series`], read from the results dir's manifest or
//! given on the command line), and never writes into the results dir.
//!
//! What is posted quotes what a hostile build or kernel printed, and such a
//! build may have read a secret (an environment variable, a token file):
//! every body, comment and description is scanned for the secrets this
//! process holds and has them replaced before it leaves
//! ([`redact_outgoing`]).

pub mod email;
pub mod github;
pub mod patchwork;

use std::path::{Path, PathBuf};

use crate::results::dir as results_dir;
use crate::series::Series;

#[derive(Debug, thiserror::Error)]
pub enum PostError {
    #[error("--body {path}: cannot read the rendered report")]
    Body {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("--body {0}: the rendered report is empty")]
    EmptyBody(PathBuf),
    #[error(transparent)]
    ResultsDir(#[from] results_dir::ResultsDirError),
    #[error("--results {0}: no manifest.json (not an mmci results dir)")]
    NoManifest(PathBuf),
    #[error(transparent)]
    GitHub(#[from] github::GitHubError),
    #[error(transparent)]
    Email(#[from] email::EmailError),
    #[error(transparent)]
    Patchwork(#[from] patchwork::PatchworkPostError),
}

impl PostError {
    /// Bad input (exit 2) or a service that refused or failed (exit 9).
    pub fn is_remote(&self) -> bool {
        match self {
            PostError::GitHub(e) => e.is_remote(),
            PostError::Email(e) => e.is_remote(),
            PostError::Patchwork(e) => e.is_remote(),
            _ => false,
        }
    }
}

/// Largest `--body` read (a rendered report is KiBs; GitHub takes 64 KiB).
pub const MAX_BODY_BYTES: u64 = 16 << 20;

/// Reads the rendered report, capped by the bytes read (a FIFO or
/// `<(...)` is fine; /dev/zero is refused at the cap).
pub fn read_body(path: &Path) -> Result<String, PostError> {
    let text = crate::host::fs::read_capped_to_string(
        path,
        MAX_BODY_BYTES,
        "MAX_BODY_BYTES",
        crate::host::fs::Accept::Any,
    )
    .map_err(|source| PostError::Body {
        path: path.to_path_buf(),
        source,
    })?;
    if text.trim().is_empty() {
        return Err(PostError::EmptyBody(path.to_path_buf()));
    }
    Ok(text)
}

/// A token file (`--github-token-file`, `--patchwork-token-file`) that
/// holds no token; `option` names the option that gave it.
#[derive(Debug, thiserror::Error)]
pub enum TokenFileError {
    #[error("{option} {path}: cannot read")]
    Unreadable {
        option: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{option} {path}: the file is empty")]
    Empty { option: &'static str, path: PathBuf },
}

/// The token the file `path` (given as `option`) holds, without the white
/// space around it. It is remembered as one of the process's secrets.
pub fn read_token_file(option: &'static str, path: &Path) -> Result<String, TokenFileError> {
    let text = std::fs::read_to_string(path).map_err(|source| TokenFileError::Unreadable {
        option,
        path: path.to_path_buf(),
        source,
    })?;
    match text.trim() {
        "" => Err(TokenFileError::Empty {
            option,
            path: path.to_path_buf(),
        }),
        token => {
            remember_secret(token);
            Ok(token.to_string())
        }
    }
}

pub use crate::host::secrets::{
    own_secrets, process_env, redact, redact_outgoing, remember_secret, SECRET_ENV,
};

/// The series tested in a results dir: that of the first kernel that had
/// one applied (the patched side). None when every kernel is a plain tree.
pub fn series_from_results(dir: &Path) -> Result<Option<Series>, PostError> {
    let manifest =
        results_dir::read_manifest(dir)?.ok_or_else(|| PostError::NoManifest(dir.to_path_buf()))?;
    Ok(manifest
        .kernels
        .iter()
        .find_map(|k| k.kernel.series.clone()))
}

/// The series' name without its `[PATCH vN n/M]` prefix: the cover
/// letter's title, else the first patch's. Stable across revisions, so it
/// keys the sticky comment.
pub fn series_title(series: &Series) -> String {
    series
        .cover
        .as_ref()
        .and_then(|c| crate::series::parse_subject(&c.subject).map(|t| t.title))
        .or_else(|| series.patches.first().map(|p| p.title.clone()))
        .unwrap_or_default()
}

/// Cuts `text` to at most `max` bytes on a char boundary, saying so at the
/// end (GitHub refuses check-run summaries and comments over 65535).
pub fn truncate_note(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let note = "\n\n[... truncated: the full report is in the results dir]\n";
    let mut end = max.saturating_sub(note.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}{note}", &text[..end])
}

/// What `mmci post github` does.
#[derive(Clone, Debug)]
pub enum GitHubPhase {
    /// The run starts: an `in_progress` check run.
    Start,
    /// The run is over: the check run completed with the verdict and the
    /// report, the sticky comment on the pull request created or updated.
    Finish {
        conclusion: github::Conclusion,
        markdown: String,
        /// The pull request and the key of its sticky comment.
        pr: Option<(github::PullRequest, String)>,
        check_run_id: Option<u64>,
    },
}

/// `mmci post github`, validated: every input was read and checked.
#[derive(Clone, Debug)]
pub struct GitHubPost {
    pub api: String,
    pub target: github::CheckTarget,
    pub title: String,
    pub phase: GitHubPhase,
    /// None for a dry run, which needs no credentials.
    pub auth: Option<github::Auth>,
    /// `$GITHUB_STEP_SUMMARY` in GitHub Actions.
    pub step_summary: Option<PathBuf>,
}

/// The secrets of GitHub credentials, for redaction.
fn auth_secrets(auth: Option<&github::Auth>) -> Vec<String> {
    match auth {
        Some(github::Auth::Token(t)) => vec![t.clone()],
        Some(github::Auth::App { key_pem, .. }) => {
            vec![String::from_utf8_lossy(key_pem).into_owned()]
        }
        None => vec![],
    }
}

/// Posts to GitHub, or prints what would be sent. Returns the lines to
/// print.
pub async fn post_github(p: &GitHubPost) -> Result<String, PostError> {
    let GitHubPhase::Finish {
        conclusion,
        markdown,
        pr,
        check_run_id,
    } = &p.phase
    else {
        let Some(auth) = &p.auth else {
            let req = github::check_run_start(&p.target, &p.title, github::now());
            return Ok(format!(
                "# dry run: nothing is sent (--send sends it)\n{}",
                req.render(&p.api)
            ));
        };
        let client = github::Client::connect(&p.api, auth, &p.target.repo).await?;
        let id = client.start_check(&p.target, &p.title).await?;
        return Ok(format!(
            "check run {id} `{}` in progress on {}@{}\n",
            p.target.name, p.target.repo, p.target.head_sha
        ));
    };
    let secrets = auth_secrets(p.auth.as_ref());
    let secrets: Vec<&str> = secrets.iter().map(String::as_str).collect();
    let markdown = &redact_outgoing(markdown, &process_env, &secrets);
    let Some(auth) = &p.auth else {
        return Ok(format!(
            "# dry run: nothing is sent (--send sends it)\n{}",
            github::dry_run(
                &p.api,
                &p.target,
                &p.title,
                *conclusion,
                markdown,
                pr.as_ref().map(|(n, k)| (n, k.as_str()))
            )
        ));
    };
    // Credentials are checked (an App's token minted) before anything is
    // written anywhere.
    let client = github::Client::connect(&p.api, auth, &p.target.repo).await?;
    // A pull request given by its head is found (or refused) before
    // anything is posted.
    let pr = match pr {
        Some((n, key)) => Some((
            client
                .resolve_pull_request(&p.target.repo, n, &p.target.head_sha)
                .await?,
            key,
        )),
        None => None,
    };
    if let Some(path) = &p.step_summary {
        github::write_step_summary(path, markdown)?;
    }
    let id = client
        .finish_check(&p.target, *check_run_id, &p.title, *conclusion, markdown)
        .await?;
    let mut out = format!(
        "check run {id} `{}` completed: {} on {}@{}\n",
        p.target.name,
        conclusion.as_str(),
        p.target.repo,
        p.target.head_sha
    );
    if let Some((n, key)) = pr {
        let (cid, created) = client
            .upsert_comment(&p.target.repo, n, key, markdown)
            .await?;
        out.push_str(&format!(
            "comment {cid} {} on pull request #{n}\n",
            if created { "created" } else { "updated" }
        ));
    }
    Ok(out)
}

/// Posts the checks to patchwork (or prints them), their description
/// redacted like every other outgoing text.
pub async fn post_patchwork(p: &patchwork::PatchworkPost) -> Result<String, PostError> {
    let mut p = p.clone();
    let extra: Vec<&str> = p.token.iter().map(String::as_str).collect();
    for c in &mut p.checks {
        c.check.description = redact_outgoing(&c.check.description, &process_env, &extra);
    }
    Ok(patchwork::post(&p).await?)
}

/// `mmci post email`, validated.
pub struct EmailPost {
    pub series: Series,
    pub body: String,
    pub options: email::EmailOptions,
    /// The verdict the body reports: who gets it.
    pub verdict: crate::analysis::Status,
    /// Store the message here (.eml, or appended to a .mbox).
    pub write: Option<PathBuf>,
    /// Send it (else: a dry run).
    pub smtp: Option<email::Smtp>,
}

/// Builds the reply and prints, writes or sends it.
pub async fn post_email(p: &EmailPost) -> Result<String, PostError> {
    if email::addressed_to_nobody(&p.options) {
        return Ok(email::not_mailed(p.verdict));
    }
    let body = redact_outgoing(&p.body, &process_env, &[]);
    let o = email::build(&p.series, &body, &p.options)?;
    let mut out = String::new();
    if let Some(path) = &p.write {
        email::write(&o, path)?;
        out.push_str(&format!("wrote <{}> to {}\n", o.message_id, path.display()));
    }
    match &p.smtp {
        Some(smtp) => {
            let answer = smtp.send(&o).await?;
            out.push_str(&format!(
                "sent <{}> to {} recipient(s) via {}: {answer}\n",
                o.message_id,
                o.envelope_to.len(),
                smtp.server()
            ));
        }
        None if p.write.is_none() => out.push_str(&email::render_dry_run(&o)),
        None => {}
    }
    if p.write.is_some() || p.smtp.is_some() {
        // Who of the thread it did not go to (the dry run says it after
        // its envelope).
        out.push_str(&o.left_out.text());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redaction_and_truncation() {
        assert_eq!(
            redact("bad token ghp_abc123 in ghp_abc123", &["ghp_abc123"]),
            "bad token [redacted] in [redacted]"
        );
        let long = "é".repeat(40_000);
        let cut = truncate_note(&long, 65_535);
        assert!(cut.len() <= 65_535);
        assert!(cut.ends_with("results dir]\n"));
        assert_eq!(truncate_note("short", 10), "short");
    }

    #[test]
    fn the_body_is_read_capped() {
        let e = read_body(Path::new("/dev/zero")).unwrap_err();
        assert!(
            crate::host::error_chain(&e)
                .contains("larger than 16777216 bytes, the limit (MAX_BODY_BYTES)"),
            "{e}"
        );
        let tmp = tempfile::tempdir().unwrap();
        let body = tmp.path().join("report.md");
        std::fs::write(&body, "## mmci: PASS\n").unwrap();
        assert_eq!(read_body(&body).unwrap(), "## mmci: PASS\n");
    }

    #[test]
    fn outgoing_text_loses_every_secret_the_process_holds() {
        let env = |k: &str| match k {
            "GITHUB_TOKEN" => Some("ghs_envtoken1234".to_string()),
            "MMCI_SMTP_PASSWORD" => Some("smtp-pass-5678".to_string()),
            "HOME" => Some("/root".to_string()),
            _ => None,
        };
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("tok");
        std::fs::write(&file, "  pw-file-token-9012\n").unwrap();
        assert_eq!(
            read_token_file("--patchwork-token-file", &file).unwrap(),
            "pw-file-token-9012"
        );
        let pem = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAabcdefghij\nshort\n-----END RSA PRIVATE KEY-----\n";
        let text = "release ghs_envtoken1234, console smtp-pass-5678 and \
                    pw-file-token-9012; key line MIIEowIBAAKCAQEAabcdefghij; \
                    given tok-extra-3456; home /root stays";
        let out = redact_outgoing(text, &env, &["tok-extra-3456", pem]);
        assert_eq!(
            out,
            "release [redacted], console [redacted] and [redacted]; key line [redacted]; \
             given [redacted]; home /root stays"
        );
        // A secret inside a longer one: the longer goes whole.
        let out = redact_outgoing("abcd1234abcd", &|_| None, &["abcd", "abcd1234abcd"]);
        assert_eq!(out, "[redacted]");
    }

    #[test]
    fn title_of_the_bundled_series() {
        let path =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../kernels/series/mglru-isolation-v1.mbox");
        let mails = crate::series::mails_from_mbox(&std::fs::read(path).unwrap());
        let s = crate::series::assemble(&mails, "bundled").unwrap();
        assert_eq!(
            series_title(&s),
            "mm/vmscan: account and throttle MGLRU isolation"
        );
        let cover = s.cover.unwrap();
        assert_eq!(cover.to, ["linux-mm@kvack.org"]);
        assert_eq!(
            cover.cc,
            [
                "Andrew Morton <akpm@linux-foundation.org>",
                "linux-kernel@vger.kernel.org"
            ]
        );
    }
}
