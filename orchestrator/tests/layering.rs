//! The library's stages import only from the stages before them
//! (docs/layout.md): this reads every `crate::` path in orchestrator/src
//! and fails on any that points from a stage to a later one. Below: no two
//! modules (files) import each other, directly or in a longer circle, and
//! no source file grows past 800 lines.

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

// ---- Import circles between modules (files) -------------------------------

/// The module path of a source file below src: `a/b.rs` -> `a::b`,
/// `a/mod.rs` -> `a`, `lib.rs` / `main.rs` -> the crate root (empty).
fn module_of(src: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src).unwrap().with_extension("");
    let mut parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if matches!(parts.last().map(String::as_str), Some("mod")) {
        parts.pop();
    }
    if parts.len() == 1 && (parts[0] == "lib" || parts[0] == "main") {
        parts.clear();
    }
    parts
}

/// Reads one use-tree starting at `s` (after `crate::` or `super::`): the
/// full paths it names, `{a, b::{c, d}}` groups expanded. Returns the paths
/// and how many bytes were read.
fn use_tree(s: &str) -> (Vec<Vec<String>>, usize) {
    let bytes = s.as_bytes();
    let mut i = 0;
    let mut prefix: Vec<String> = Vec::new();
    loop {
        while i < bytes.len() && bytes[i].is_ascii_whitespace() {
            i += 1;
        }
        if i < bytes.len() && bytes[i] == b'{' {
            i += 1;
            let mut out = Vec::new();
            loop {
                while i < bytes.len() && (bytes[i].is_ascii_whitespace() || bytes[i] == b',') {
                    i += 1;
                }
                if i >= bytes.len() || bytes[i] == b'}' {
                    i += 1;
                    break;
                }
                let (paths, n) = use_tree(&s[i..]);
                if n == 0 {
                    i += 1;
                    continue;
                }
                i += n;
                for p in paths {
                    let mut full = prefix.clone();
                    full.extend(p);
                    out.push(full);
                }
            }
            return (out, i);
        }
        let start = i;
        while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
            i += 1;
        }
        if i == start {
            return (vec![prefix], i);
        }
        prefix.push(s[start..i].to_string());
        if s[i..].starts_with("::") {
            i += 2;
        } else {
            return (vec![prefix], i);
        }
    }
}

/// Every module path named by a `crate::` or `super::` path in `text`,
/// resolved against `module` (the file's own module path). Items after a
/// top-level `mod tests {` (inline test modules come last) sit one module
/// deeper, so their `super::` is the file itself.
fn imported_paths(module: &[String], text: &str) -> Vec<Vec<String>> {
    let inline_tests = text.find("\nmod tests {").unwrap_or(text.len());
    let mut out = Vec::new();
    for (key, is_super) in [("crate::", false), ("super::", true)] {
        let mut from = 0;
        while let Some(i) = text[from..].find(key) {
            let at = from + i;
            from = at + key.len();
            let before = text[..at].chars().last();
            if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':') {
                continue; // `super::super::` is read from its first `super::`
            }
            let mut base: Vec<String> = if is_super {
                let mut m = module.to_vec();
                if at > inline_tests {
                    m.push("tests".to_string());
                }
                m.pop();
                m
            } else {
                Vec::new()
            };
            let mut rest = &text[from..];
            let mut used = 0;
            while is_super && rest.starts_with("super::") {
                base.pop();
                rest = &rest["super::".len()..];
                used += "super::".len();
            }
            let (paths, n) = use_tree(rest);
            from += used + n;
            for p in paths {
                let mut full = base.clone();
                full.extend(p);
                out.push(full);
            }
        }
    }
    out
}

/// `text` without its `//` comments (doc links name modules without
/// importing them). A `//` inside a string literal cuts the rest of its
/// line too, which at worst hides an import written after a URL.
fn without_comments(text: &str) -> String {
    text.lines()
        .map(|l| l.find("//").map_or(l, |i| &l[..i]))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The longest prefix of `path` that is a module of `modules`.
fn resolve(modules: &[Vec<String>], path: &[String]) -> Option<Vec<String>> {
    (0..=path.len())
        .rev()
        .map(|n| path[..n].to_vec())
        .find(|p| modules.contains(p))
}

/// The strongly connected components of more than one module (Tarjan).
fn circles(edges: &[Vec<usize>]) -> Vec<Vec<usize>> {
    struct State<'a> {
        edges: &'a [Vec<usize>],
        index: Vec<Option<usize>>,
        low: Vec<usize>,
        on_stack: Vec<bool>,
        stack: Vec<usize>,
        next: usize,
        out: Vec<Vec<usize>>,
    }
    fn visit(s: &mut State, v: usize) {
        s.index[v] = Some(s.next);
        s.low[v] = s.next;
        s.next += 1;
        s.stack.push(v);
        s.on_stack[v] = true;
        for &w in &s.edges[v] {
            match s.index[w] {
                None => {
                    visit(s, w);
                    s.low[v] = s.low[v].min(s.low[w]);
                }
                Some(iw) if s.on_stack[w] => s.low[v] = s.low[v].min(iw),
                _ => {}
            }
        }
        if Some(s.low[v]) == s.index[v] {
            let mut comp = Vec::new();
            loop {
                let w = s.stack.pop().unwrap();
                s.on_stack[w] = false;
                comp.push(w);
                if w == v {
                    break;
                }
            }
            if comp.len() > 1 {
                comp.sort();
                s.out.push(comp);
            }
        }
    }
    let n = edges.len();
    let mut s = State {
        edges,
        index: vec![None; n],
        low: vec![0; n],
        on_stack: vec![false; n],
        stack: Vec::new(),
        next: 0,
        out: Vec::new(),
    };
    for v in 0..n {
        if s.index[v].is_none() {
            visit(&mut s, v);
        }
    }
    s.out.sort();
    s.out
}

#[test]
fn no_import_circles_between_modules() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    files.sort();
    let modules: Vec<Vec<String>> = files.iter().map(|f| module_of(&src, f)).collect();
    let mut edges = vec![Vec::new(); files.len()];
    for (i, f) in files.iter().enumerate() {
        let text = without_comments(&std::fs::read_to_string(f).unwrap());
        for path in imported_paths(&modules[i], &text) {
            let Some(target) = resolve(&modules, &path) else {
                continue;
            };
            let j = modules.iter().position(|m| *m == target).unwrap();
            // A module reaching its own parents (a facade's re-exports) or
            // itself is not a circle between files.
            if j != i && !modules[i].starts_with(&modules[j]) && !edges[i].contains(&j) {
                edges[i].push(j);
            }
        }
    }
    let found: Vec<String> = circles(&edges)
        .iter()
        .map(|c| {
            c.iter()
                .map(|&m| modules[m].join("::"))
                .collect::<Vec<_>>()
                .join(" <-> ")
        })
        .collect();
    assert!(
        found.is_empty(),
        "modules importing each other, in a circle:\n{}",
        found.join("\n")
    );
}

#[test]
fn the_circle_finder_reads_super_groups_and_test_modules() {
    let m = |s: &str| s.split("::").map(String::from).collect::<Vec<_>>();
    let text = "use super::fs;\nuse crate::{kernel::{tree, build::Build}, arch};\n\
                fn f() { super::super::x(); }\nmod tests {\n    use super::*;\n}\n";
    let got = imported_paths(&m("host::process"), text);
    assert_eq!(
        got,
        [
            m("kernel::tree"),
            m("kernel::build::Build"),
            m("arch"),
            m("host::fs"),
            m("x"),
            m("host::process"),
        ]
    );
    assert_eq!(circles(&[vec![1], vec![0], vec![]]), [vec![0, 1]]);
    assert!(circles(&[vec![1], vec![2], vec![]]).is_empty());
}

// ---- File size -------------------------------------------------------------

/// No source file of the library or of mmci-record grows past this many
/// lines (tests included): past it, a file is split along its seams.
const MAX_LINES: usize = 800;

#[test]
fn no_source_file_is_over_800_lines() {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let mut files = Vec::new();
    sources(&workspace.join("orchestrator/src"), &mut files);
    sources(&workspace.join("record/src"), &mut files);
    files.sort();
    let over: Vec<String> = files
        .iter()
        .filter_map(|f| {
            let lines = std::fs::read_to_string(f).unwrap().lines().count();
            let shown = f.strip_prefix(workspace).unwrap().display();
            (lines > MAX_LINES).then(|| format!("{shown} ({lines} lines)"))
        })
        .collect();
    assert!(
        over.is_empty(),
        "files over {MAX_LINES} lines:\n{}",
        over.join("\n")
    );
}
