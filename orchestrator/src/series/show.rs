//! `mmci series show`: what would be applied, without building. Renders a
//! series (revision, how it was chosen, base, each patch with its provenance,
//! every left-out mail with the reason) as text or JSON. Pure rendering.

use std::fmt::Write;

use super::Series;

/// The base the series would be applied on, as far as it is known without
/// a tree: the `base-commit:` trailer, or the cascade.
pub fn base_text(series: &Series) -> String {
    if let Some(b) = &series.base {
        return format!("{} {} ({})", b.name, b.commit, b.how);
    }
    match &series.base_commit {
        Some(c) => format!(
            "{c} (base-commit: trailer; applied there when the tree has it, else the first tree of the cascade where it applies)"
        ),
        None => "no base-commit: trailer; the configured tree, then each further tree of the cascade, until it applies".to_string(),
    }
}

/// The JSON document of `mmci series show --json`.
#[derive(serde::Serialize)]
pub struct ShowJson<'a> {
    pub source: &'a str,
    pub revision: u32,
    pub rfc: bool,
    pub total: u32,
    pub chosen: &'a str,
    pub assembly: &'a str,
    pub base: BaseJson<'a>,
    pub cover: Option<&'a super::Cover>,
    pub patches: Vec<PatchJson<'a>>,
    pub prerequisite_patch_ids: &'a [String],
    /// The prerequisites found, applied first in this order.
    pub prerequisites: Vec<PrerequisiteJson<'a>>,
    pub missing_prerequisites: &'a [String],
    pub versions_seen: &'a [u32],
    pub hash: &'a str,
    pub left_out: &'a [super::LeftOut],
}

#[derive(serde::Serialize)]
pub struct BaseJson<'a> {
    pub base_commit: Option<&'a str>,
    /// The base chosen in the tree (`--tree`), when one was given.
    pub name: Option<&'a str>,
    pub commit: Option<&'a str>,
    pub how: String,
}

#[derive(serde::Serialize)]
pub struct PrerequisiteJson<'a> {
    pub subject: &'a str,
    pub message_id: &'a str,
}

#[derive(serde::Serialize)]
pub struct PatchJson<'a> {
    pub index: u32,
    pub subject: &'a str,
    pub title: &'a str,
    pub author: &'a str,
    pub message_id: &'a str,
    pub from_version: u32,
}

pub fn json(source: &str, s: &Series) -> String {
    let doc = ShowJson {
        source,
        revision: s.version,
        rfc: s.rfc,
        total: s.total,
        chosen: &s.chosen,
        assembly: &s.assembly,
        base: BaseJson {
            base_commit: s.base_commit.as_deref(),
            name: s.base.as_ref().map(|b| b.name.as_str()),
            commit: s.base.as_ref().map(|b| b.commit.as_str()),
            how: base_text(s),
        },
        cover: s.cover.as_ref(),
        patches: s
            .patches
            .iter()
            .map(|p| PatchJson {
                index: p.index,
                subject: &p.subject,
                title: &p.title,
                author: if p.author.is_empty() {
                    &p.from
                } else {
                    &p.author
                },
                message_id: &p.message_id,
                from_version: p.from_version,
            })
            .collect(),
        prerequisite_patch_ids: &s.prerequisite_patch_ids,
        prerequisites: s
            .prerequisites
            .iter()
            .map(|p| PrerequisiteJson {
                subject: &p.subject,
                message_id: &p.message_id,
            })
            .collect(),
        missing_prerequisites: &s.missing_prerequisites,
        versions_seen: &s.versions_seen,
        hash: &s.hash,
        left_out: &s.left_out,
    };
    serde_json::to_string_pretty(&doc).unwrap_or_default()
}

/// The cover letter's before/after tables as `mmci run` will check them:
/// per table its set-up and columns, per row the claimed change.
fn claims_text(o: &mut String, tables: &[super::claims::ClaimTable]) {
    if tables.is_empty() {
        return;
    }
    let rows: usize = tables.iter().map(|t| t.rows.len()).sum();
    let _ = writeln!(
        o,
        "claims:    {rows} row(s) in {} table(s) of the cover letter",
        tables.len()
    );
    for t in tables {
        let _ = writeln!(
            o,
            "  line {}: {} ({} -> {})",
            t.line,
            tail_words(&t.setup, 100),
            t.base_column,
            t.candidate_column
        );
        for r in &t.rows {
            let _ = writeln!(o, "    {}: {} -> {}", r.name, r.base.text, r.candidate.text);
        }
        for (line, text) in &t.unread {
            let _ = writeln!(o, "    not read (line {line}): {text}");
        }
    }
}

/// The end of a long set-up text (the clause next to the table says most),
/// cut at a word: `..., base -> v1 -> v2 [64 threads]`.
fn tail_words(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let start = s
        .char_indices()
        .map(|(i, _)| i)
        .nth(s.chars().count() - max)
        .unwrap_or(0);
    let cut = s[start..].find(' ').map_or(start, |i| start + i + 1);
    format!("...{}", &s[cut..])
}

/// The terminal form.
pub fn text(source: &str, s: &Series) -> String {
    let mut o = String::new();
    let rfc = if s.rfc { " RFC" } else { "" };
    let _ = writeln!(
        o,
        "{source}: v{}{rfc}, {} patch{}",
        s.version,
        s.total,
        if s.total == 1 { "" } else { "es" }
    );
    let _ = writeln!(o, "revision:  {}", s.chosen);
    let _ = writeln!(o, "assembly:  {}", s.assembly);
    let _ = writeln!(o, "base:      {}", base_text(s));
    for p in &s.prerequisites {
        let _ = writeln!(
            o,
            "prerequisite: applied first: {}\n              <{}>",
            p.subject, p.message_id
        );
    }
    for id in &s.missing_prerequisites {
        let _ = writeln!(
            o,
            "prerequisite: {id} not found in the thread (give it with --prerequisites MBOX)"
        );
    }
    // Trailers read before any lookup (a series assembled without one).
    if s.prerequisites.is_empty() && s.missing_prerequisites.is_empty() {
        for id in &s.prerequisite_patch_ids {
            let _ = writeln!(o, "prerequisite-patch-id: {id}");
        }
    }
    match &s.cover {
        Some(c) => {
            let _ = writeln!(o, "cover:     {}\n           <{}>", c.subject, c.message_id);
            claims_text(&mut o, &c.claims);
        }
        None => {
            let _ = writeln!(o, "cover:     none");
        }
    }
    let _ = writeln!(o, "patches:");
    let width = s.total.to_string().len();
    for p in &s.patches {
        let author = if p.author.is_empty() {
            &p.from
        } else {
            &p.author
        };
        let _ = writeln!(
            o,
            "  {:>width$}/{} v{:<3} {}\n  {:>width$}  {:<4} author: {author}\n  {:>width$}  {:<4} <{}>",
            p.index, s.total, p.from_version, p.title, "", "", "", "", p.message_id
        );
    }
    let _ = writeln!(o, "left out ({}):", s.left_out.len());
    for l in &s.left_out {
        let detail = if l.detail.is_empty() {
            String::new()
        } else {
            format!(" ({})", l.detail)
        };
        let _ = writeln!(
            o,
            "  {}{detail}: {}\n      <{}>",
            l.reason.text(),
            l.subject,
            l.message_id
        );
    }
    o
}
