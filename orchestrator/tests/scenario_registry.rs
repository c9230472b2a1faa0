//! One dispatch point for scenarios: code outside a scenario's folders
//! (`orchestrator/src/scenario/<name>/` or `<name>.rs`, the same under
//! `guest-init/src/scenario/`) and the registry files (`registry.rs`, and
//! `mod.rs` which declares the modules, on both sides; the host's
//! `metrics.rs`, whose `ScenarioMetrics` has a variant per scenario) asks
//! the registry by `mmci_record::Scenario` id instead of naming a
//! scenario. The other shared files of `scenario/` (`catalog.rs`,
//! `report.rs`) are scanned like the rest.
//!
//! For every registered scenario this scans the sources of
//! `orchestrator/src` and `guest-init/src` for its identifiers: its
//! variant as `Scenario::<Variant>` (and the variant alone where it is no
//! common word: `MglruIsolation`, `NoioVerity`), its module as a path
//! segment (`mglru::`, `scenario::noio`), and its metrics types
//! (`MglruMetrics`, ...). It fails naming each file and line.
//!
//! Not scanned, by decision:
//! - comments (they may say which scenario a piece of text is about);
//! - unit tests: a file is read up to its first `#[cfg(test)]` line (the
//!   `mod tests` at the end), and the integration tests in
//!   `orchestrator/tests/` are not read at all: tests may name the scenario
//!   they exercise;
//! - `record/`: it defines the ids themselves (and the job's defaults).
//!
//! The few places outside the folders that still name a scenario are in
//! `ALLOWED`, each with its reason; an entry that no longer matches fails
//! too, so the list only shrinks.

use std::path::{Path, PathBuf};

use mmci::scenario::registry;

/// Per scenario id: its module (folder) name and its metrics types.
const IDENTIFIERS: &[(&str, &str, &[&str])] = &[
    ("probe", "probe", &[]),
    ("mglru_isolation", "mglru", &["MglruMetrics"]),
    ("noio_verity", "noio", &["NoioMetrics"]),
    ("script", "script", &["ScriptMetrics"]),
    ("compaction_stall", "compaction", &["CompactionMetrics"]),
];

/// (file under the workspace, identifier, why it may name it).
const ALLOWED: &[(&str, &str, &str)] = &[
    (
        "orchestrator/src/run/accel.rs",
        "Scenario::Probe",
        "the KVM probe boots the probe scenario: it is the tool, not a dispatch",
    ),
    (
        "orchestrator/src/bench/boot.rs",
        "Scenario::Probe",
        "`mmci bench boot` times boots with the probe scenario",
    ),
    (
        "orchestrator/src/analysis/synthetic.rs",
        "MglruMetrics",
        "synthetic scenario A results for the analysis bench and its tests",
    ),
];

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

/// The scenario folders and registry files: where naming a scenario is the
/// point.
fn exempt(rel: &str) -> bool {
    let registry_files = ["registry", "mod", "metrics"];
    ["orchestrator/src/scenario/", "guest-init/src/scenario/"]
        .iter()
        .filter_map(|dir| rel.strip_prefix(dir))
        .any(|rest| {
            // `<name>/...` or `<name>.rs`.
            let first = rest.split('/').next().unwrap_or(rest);
            let stem = first.strip_suffix(".rs").unwrap_or(first);
            IDENTIFIERS.iter().any(|(_, module, _)| *module == stem)
                || (first.ends_with(".rs") && registry_files.contains(&stem))
        })
}

/// Code of `text`: up to its unit tests, comments removed (string
/// contents are kept: a scenario named in a string is still named).
fn code_lines(text: &str) -> Vec<(usize, String)> {
    let mut out = vec![];
    for (i, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("#[cfg(test)]") {
            break;
        }
        let code = match line.find("//") {
            // `//` inside a string (a URL) is kept.
            Some(at) if line[..at].matches('"').count() % 2 == 0 => &line[..at],
            _ => line,
        };
        out.push((i + 1, code.to_string()));
    }
    out
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// `needle` in `hay` with no identifier character right before it, nor
/// right after it unless the needle ends in `::`.
fn names(hay: &str, needle: &str) -> bool {
    hay.match_indices(needle).any(|(at, _)| {
        let before = hay[..at].chars().next_back();
        let after = hay[at + needle.len()..].chars().next();
        !before.is_some_and(is_ident) && (needle.ends_with("::") || !after.is_some_and(is_ident))
    })
}

/// Every identifier that names scenario `id`.
fn needles(id: mmci_record::Scenario) -> Vec<String> {
    let (_, module, types) = IDENTIFIERS
        .iter()
        .find(|(name, _, _)| *name == id.name())
        .unwrap_or_else(|| {
            panic!(
                "scenario {} is registered but has no identifiers in IDENTIFIERS",
                id.name()
            )
        });
    let variant = format!("{id:?}");
    let mut out = vec![format!("Scenario::{variant}"), format!("{module}::")];
    if !["Probe", "Script"].contains(&variant.as_str()) {
        out.push(variant);
    }
    out.extend(types.iter().map(|t| t.to_string()));
    out
}

/// (file, line number, identifier, line) of every scenario named outside
/// the folders, the allowed ones included.
fn findings() -> Vec<(String, usize, String, String)> {
    let root = workspace();
    let mut files = vec![];
    for dir in ["orchestrator/src", "guest-init/src"] {
        rust_files(&root.join(dir), &mut files);
    }
    let all_needles: Vec<String> = registry::ALL.iter().flat_map(|d| needles(d.id)).collect();
    let mut out = vec![];
    for f in files {
        let rel = f.strip_prefix(&root).unwrap().to_string_lossy().to_string();
        if exempt(&rel) {
            continue;
        }
        let text = std::fs::read_to_string(&f).unwrap();
        for (n, line) in code_lines(&text) {
            for needle in &all_needles {
                if names(&line, needle) {
                    out.push((rel.clone(), n, needle.clone(), line.trim().to_string()));
                }
            }
        }
    }
    out
}

#[test]
fn no_scenario_is_named_outside_its_folders_and_the_registry() {
    let found = findings();
    let bad: Vec<String> = found
        .iter()
        .filter(|(file, _, needle, _)| !ALLOWED.iter().any(|(f, n, _)| f == file && n == needle))
        .map(|(file, n, needle, line)| format!("{file}:{n}: names `{needle}`: {line}"))
        .collect();
    assert!(
        bad.is_empty(),
        "ask scenario::registry instead (docs/scenarios.md):\n{}",
        bad.join("\n")
    );
    let stale: Vec<String> = ALLOWED
        .iter()
        .filter(|(f, n, _)| {
            !found
                .iter()
                .any(|(file, _, needle, _)| file == f && needle == n)
        })
        .map(|(f, n, why)| format!("{f}: {n} ({why})"))
        .collect();
    assert!(
        stale.is_empty(),
        "ALLOWED entries that no longer match: remove them:\n{}",
        stale.join("\n")
    );
}

#[test]
fn every_registered_scenario_has_identifiers_to_look_for() {
    for d in registry::ALL {
        assert!(needles(d.id).len() >= 2, "{}", d.id.name());
    }
    assert_eq!(IDENTIFIERS.len(), registry::ALL.len());
}

#[test]
fn the_scan_sees_a_planted_name() {
    // What the scan reads and ignores, on text rather than the tree.
    let planted = "fn f() {\n    let _ = Scenario::NoioVerity; // mglru::x\n}\n#[cfg(test)]\nmod tests { use crate::scenario::MglruMetrics; }\n";
    let lines = code_lines(planted);
    assert_eq!(lines.len(), 3, "stops at the unit tests");
    assert!(lines.iter().any(|(_, l)| names(l, "Scenario::NoioVerity")));
    assert!(!lines.iter().any(|(_, l)| names(l, "mglru::")), "comments");
    assert!(names("use crate::scenario::noio::disks;", "noio::"));
    assert!(!names("let noio_anatomy = 1;", "noio::"));
    assert!(!names("ScriptMetricsX", "ScriptMetrics"));
    assert!(!names("crate::scenario::registry", "script::"));
    assert!(exempt("orchestrator/src/scenario/noio/report.rs"));
    assert!(exempt("guest-init/src/scenario/probe.rs"));
    assert!(exempt("orchestrator/src/scenario/registry.rs"));
    assert!(!exempt("orchestrator/src/scenario/catalog.rs"));
    assert!(!exempt("orchestrator/src/report/run.rs"));
}
