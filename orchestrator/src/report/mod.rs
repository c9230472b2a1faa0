//! The reports of a comparison for people: GitHub markdown, a plain-text
//! email for the patch thread and a self-contained HTML page, each a
//! minijinja template under `orchestrator/templates/` (embedded in the
//! binary) filled from one [`view::View`] of the model. The JSON of the
//! model itself is `analysis::write_json`.
//!
//! Everything here is pure: a comparison and its manifest in, a string
//! out. Numbers are formatted in Rust (`analysis::text`, [`view`]) so
//! that every format reads the same; templates only lay them out.

pub mod b4;
pub mod checks;
pub mod comparison;
pub mod comparison_text;
pub mod email;
pub mod email_verdict;
pub mod html;
pub mod markdown;
pub mod reproduce;
pub mod resample;
pub mod run;
pub mod runs_table;
pub mod screenshot;
pub mod spread;
pub mod svg;
pub mod untrusted;
pub mod view;

use minijinja::Environment;
use serde::Serialize;

use crate::analysis::Comparison;
use crate::results::dir::Manifest;

/// What every renderer gets.
pub struct ReportInput<'a> {
    pub comparison: &'a Comparison,
    pub manifest: &'a Manifest,
    /// Where the full results are (a URL, or a path on the CI machine).
    pub results_url: Option<String>,
    /// The series' cover letter, whole: the email quotes its first lines.
    pub cover_letter: Option<String>,
    /// The email's trailers and who it comes from.
    pub mail: Mail,
}

/// What the email says of itself: its trailers, which `mmci post email`
/// reads back (the Message-ID from `Closes:`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mail {
    /// `Tested-by:`, when the operator asks for one (`--tested-by`): it
    /// goes only with a PASS not all under TCG
    /// ([`email_verdict::tested_by_refused`]).
    pub tested_by: Option<String>,
    /// Who the email comes from: its `Reported-by:` on a FAIL.
    pub from: String,
    /// The email's own Message-ID, without <>: its `Closes:` on a FAIL.
    pub message_id: Option<String>,
}

impl Default for Mail {
    fn default() -> Self {
        Mail {
            tested_by: None,
            from: DEFAULT_FROM.into(),
            message_id: None,
        }
    }
}

impl<'a> ReportInput<'a> {
    pub fn new(comparison: &'a Comparison, manifest: &'a Manifest) -> Self {
        ReportInput {
            comparison,
            manifest,
            results_url: None,
            cover_letter: None,
            mail: Mail::default(),
        }
    }
}

/// The `Tested-by:` of a bare `--tested-by`.
pub const DEFAULT_TESTED_BY: &str = "mmci <mmci@kernel-ci.invalid>";
/// Who the email comes from without `--from` or $MMCI_EMAIL_FROM.
pub const DEFAULT_FROM: &str = DEFAULT_TESTED_BY;

/// The output formats of `mmci report`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Markdown,
    Email,
    Html,
    Json,
}

/// Renders `input` in `format`.
pub fn render(format: Format, input: &ReportInput) -> String {
    match format {
        Format::Markdown => markdown::render(input, markdown::CHECK_RUN_LIMIT),
        Format::Email => email::render(input),
        Format::Html => html::render(input),
        Format::Json => {
            let mut s = serde_json::to_string_pretty(input.comparison).expect("serializable");
            s.push('\n');
            s
        }
    }
}

/// Fills the template `name` (one of the embedded ones) with `ctx`. The
/// templates are part of the binary and tested, so an error is a bug.
fn fill(name: &str, source: &'static str, ctx: impl Serialize) -> String {
    let mut env = Environment::new();
    // Trailing newlines matter in the plain-text formats.
    env.set_keep_trailing_newline(true);
    env.set_trim_blocks(true);
    env.set_lstrip_blocks(true);
    env.add_filter("md", markdown::escape);
    env.add_filter("html", markdown::escape_html);
    env.add_filter("code", markdown::code);
    env.add_filter("fence", markdown::fence);
    env.add_template(name, source)
        .unwrap_or_else(|e| panic!("template {name}: {e:#}"));
    env.get_template(name)
        .and_then(|t| t.render(ctx))
        .unwrap_or_else(|e| panic!("template {name}: {e:#}"))
}

/// `mmci report`: renders the comparison of `dir` in `format` to `output`
/// (standard output without one) and, with `github_summary` (the path in
/// `$GITHUB_STEP_SUMMARY`, read by cli/ when asked for and set), appends
/// the markdown to that file.
/// Returns what was written, for the log. Secrets this process holds are
/// redacted (a report quotes what the build and the kernel printed), and
/// an empty report is an error, never a file that stops posting.
#[allow(clippy::too_many_arguments)]
pub fn write_report(
    dir: &std::path::Path,
    comparison: &Comparison,
    format: Format,
    output: Option<&std::path::Path>,
    results_url: Option<String>,
    cover_letter: Option<String>,
    mail: Mail,
    github_summary: Option<std::ffi::OsString>,
) -> Result<Vec<String>, String> {
    let manifest = crate::results::dir::read_manifest(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .ok_or_else(|| format!("{}: no manifest.json", dir.display()))?;
    let input = ReportInput {
        comparison,
        manifest: &manifest,
        results_url,
        cover_letter,
        mail,
    };
    let mut written = vec![];
    let outgoing = |text: String| -> Result<String, String> {
        if text.trim().is_empty() {
            return Err(format!(
                "{}: the {format:?} report rendered empty; nothing written (a bug: please report it)",
                dir.display()
            ));
        }
        Ok(crate::host::secrets::redact_outgoing(
            &text,
            &crate::host::secrets::process_env,
            &[],
        ))
    };
    let text = outgoing(render(format, &input))?;
    match output {
        Some(path) => {
            crate::host::fs::write_atomic(path, text.as_bytes())
                .map_err(|e| format!("--output {}: {e}", path.display()))?;
            written.push(format!("{} ({} bytes)", path.display(), text.len()));
        }
        None => {
            use std::io::Write;
            std::io::stdout()
                .write_all(text.as_bytes())
                .map_err(|e| format!("standard output: {e}"))?;
        }
    }
    {
        if let Some(path) = github_summary {
            let md = if format == Format::Markdown {
                text
            } else {
                outgoing(render(Format::Markdown, &input))?
            };
            use std::io::Write;
            // Appended: other steps of the job write their own summaries.
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&path)
                .and_then(|mut f| f.write_all(md.as_bytes()))
                .map_err(|e| format!("$GITHUB_STEP_SUMMARY {}: {e}", path.to_string_lossy()))?;
            written.push(format!("$GITHUB_STEP_SUMMARY ({} bytes)", md.len()));
        }
    }
    Ok(written)
}
