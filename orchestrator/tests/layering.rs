//! The library's stages import only from the stages before them
//! (docs/layout.md): this reads every `crate::` path in orchestrator/src
//! and fails on any that points from a stage to a later one.

use std::path::{Path, PathBuf};

/// The stages in pipeline order; modules on one rank may not import each
/// other's later ranks. `watch`, `doctor` and `bench` are commands side by
/// side; `pipeline` and `error` come before the command line, `cli`, which
/// the binary calls.
const RANKS: &[&[&str]] = &[
    &["arch"],
    &["host"],
    &["series"],
    &["kernel"],
    &["guest"],
    &["scenario"],
    &["matrix"],
    &["results"],
    &["run"],
    &["analysis"],
    &["report"],
    &["post"],
    &["watch", "doctor", "bench"],
    &["pipeline", "error"],
    &["cli"],
];

fn rank(stage: &str) -> Option<usize> {
    RANKS.iter().position(|r| r.contains(&stage))
}

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            sources(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The stage a source file belongs to: its first path component below src.
fn stage_of(src: &Path, file: &Path) -> Option<String> {
    let rel = file.strip_prefix(src).ok()?;
    let first = rel.components().next()?.as_os_str().to_str()?;
    Some(first.trim_end_matches(".rs").to_string())
}

/// Every stage named by a `crate::<stage>` path in `text` (test modules
/// included: tests may not reach forward either).
fn imported_stages(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find("crate::") {
        rest = &rest[i + "crate::".len()..];
        let name: String = rest
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        if !name.is_empty() {
            out.push(name);
        }
    }
    // `use crate::{a, b::c}` groups.
    let mut rest = text;
    while let Some(i) = rest.find("crate::{") {
        rest = &rest[i + "crate::{".len()..];
        let group = &rest[..rest.find('}').unwrap_or(rest.len())];
        for part in group.split(',') {
            let name = part.trim().split("::").next().unwrap_or("").trim();
            if !name.is_empty() {
                out.push(name.to_string());
            }
        }
    }
    out
}

#[test]
fn no_stage_imports_from_a_later_stage() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    files.sort();
    let mut back_edges = Vec::new();
    let mut unranked = Vec::new();
    for f in &files {
        let Some(stage) = stage_of(&src, f) else {
            continue;
        };
        if stage == "main" || stage == "lib" {
            continue;
        }
        let Some(own) = rank(&stage) else {
            unranked.push(f.display().to_string());
            continue;
        };
        let text = std::fs::read_to_string(f).unwrap();
        for imported in imported_stages(&text) {
            match rank(&imported) {
                Some(r) if r > own => back_edges.push(format!(
                    "{} ({stage}) imports crate::{imported}",
                    f.strip_prefix(&src).unwrap().display()
                )),
                _ => {}
            }
        }
    }
    assert!(
        unranked.is_empty(),
        "files outside every stage: {unranked:?}"
    );
    back_edges.sort();
    back_edges.dedup();
    assert!(
        back_edges.is_empty(),
        "imports from a later stage:\n{}",
        back_edges.join("\n")
    );
}

#[test]
fn the_scanner_sees_plain_and_grouped_imports() {
    let text =
        "use crate::host::fs;\nuse crate::{report::view, run};\nfn f() { crate::analysis::x(); }";
    let mut got = imported_stages(text);
    got.sort();
    assert_eq!(got, ["analysis", "host", "report", "run"]);
}
