//! What a report says so that anyone can run it again, off this host: the
//! mmci that ran (version and commit), the commands (`mmci run` with the
//! bundled matrix by its path in mmci's repository, the series as
//! upstream serves it: `--lore`, `--patchwork --pw-series`, `--github-pr`,
//! a git tree as `--tree URL --ref COMMIT`), what cannot be fetched
//! (a local mbox without a Message-ID, a local matrix), and the facts a
//! reader compares with their own: the host (CPU model, cores, QEMU), each
//! kernel's base, compiler and .config, each cell's guest shape.
//!
//! Strings here come from the manifest, which a hostile shard may have
//! written: commands are POSIX-shell quoted ([`shell_word`]), and every
//! template filters what it shows.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::kernel::tree::Upstream;
use crate::matrix::plan::{Cell, Plan, Variant};
use crate::results::dir::{Manifest, VariantKernel};
use crate::series::{fetch, patchwork, Series, SeriesSpec};

use super::untrusted;

/// Reproduce commands for at most this many cells (failing ones first):
/// nobody reads a thousand commands.
pub const MAX_REPRODUCE: usize = 5;

/// The matrices in mmci's repository (`matrix/*.yaml`): a plan from one
/// of them is named by that path, which resolves in any checkout.
pub const BUNDLED_MATRICES: [&str; 13] = [
    "author-script.yaml",
    "compaction.yaml",
    "debug.yaml",
    "default.yaml",
    "mglru-isolation-revisions.yaml",
    "mglru-isolation.yaml",
    "mglru-throttle.yaml",
    "mglru-v2.yaml",
    "noio-mglru.yaml",
    "noio-ubsan.yaml",
    "noio.yaml",
    "real-workloads.yaml",
    "smoke.yaml",
];

#[derive(Clone, Debug, Serialize)]
pub struct ReproduceView {
    pub cell: String,
    pub command: String,
}

/// One argument of a shell command as POSIX `sh` reads it back: quoted
/// when it needs to be (`'x'\''$(id)'` stays a string), without control
/// characters (which no quoting makes safe to paste into a terminal).
pub fn shell_word(arg: &str) -> String {
    let arg = untrusted::line(arg);
    // try_quote refuses only a NUL, which line() removed.
    shlex::try_quote(&arg).map_or_else(|_| "''".to_string(), |q| q.into_owned())
}

/// `mmci 0.1.0, commit 0123456789ab...`: the mmci that ran the matrix.
pub fn mmci_line(m: &Manifest) -> String {
    match &m.mmci_commit {
        Some(c) => format!(
            "mmci {}, commit {}",
            untrusted::line(&m.mmci_version),
            untrusted::line(c)
        ),
        None => format!(
            "mmci {} (commit not recorded: not built from a git checkout, or an older mmci)",
            untrusted::line(&m.mmci_version)
        ),
    }
}

/// `Intel(R) Xeon(R) ..., 2 cores, 7937 MiB RAM; x86_64: QEMU emulator
/// version 10.0.2 (...)`: the host the runs had.
pub fn host_line(m: &Manifest) -> String {
    let h = &m.host;
    let mut s = format!(
        "{}, {} cores, {} MiB RAM",
        h.cpu_model.as_deref().unwrap_or("CPU model not recorded"),
        h.cpus,
        h.memory_mb
    );
    if h.qemu.is_empty() {
        s.push_str("; QEMU version not recorded");
    }
    for (arch, v) in &h.qemu {
        s.push_str(&format!("; {arch}: {v}"));
    }
    untrusted::line(&s)
}

/// The matrix as `--matrix` names it on another machine: nothing for the
/// embedded default, `matrix/NAME.yaml` for a bundled one, else the
/// file's name and a note that it is not part of mmci.
pub fn matrix_arg(source: &str) -> (Option<String>, Option<String>) {
    if source.ends_with("(embedded)") {
        return (None, None);
    }
    let path = std::path::Path::new(source);
    let name = path
        .file_name()
        .map_or_else(|| source.to_string(), |n| n.to_string_lossy().into_owned());
    let in_matrix_dir = path
        .parent()
        .and_then(|p| p.file_name())
        .is_some_and(|d| d == "matrix");
    if in_matrix_dir && BUNDLED_MATRICES.contains(&name.as_str()) {
        return (Some(format!("matrix/{name}")), None);
    }
    (
        Some(name.clone()),
        Some(format!(
            "the matrix {name} is a local file, not one of mmci's: send it along"
        )),
    )
}

/// The options that fetch the series of `spec` (as the run's plan has it)
/// anywhere, and what a reader should know when they cannot: `series` is
/// the series as read (its Message-IDs), `origin` its patchwork identity.
/// A local file is named by its Message-ID on lore, by patchwork when it
/// came from there, and by its path only when nothing else names it.
pub fn series_args(
    spec: &SeriesSpec,
    series: Option<&Series>,
    origin: Option<&patchwork::Origin>,
) -> (Vec<(&'static str, String)>, Option<String>) {
    match spec {
        SeriesSpec::Lore {
            message_id,
            base_url,
        } => {
            let mut out = vec![("--lore", message_id.clone())];
            if base_url.trim_end_matches('/') != fetch::LORE_URL {
                out.push(("--lore-url", base_url.clone()));
            }
            (out, None)
        }
        SeriesSpec::GitHub { api, .. } => {
            let mut out = spec.options();
            if api.trim_end_matches('/') != fetch::GITHUB_API {
                out.push(("--github-api", api.clone()));
            }
            (out, None)
        }
        SeriesSpec::Patchwork { .. } => (spec.options(), None),
        SeriesSpec::Mbox(p) | SeriesSpec::PatchDir(p) => {
            let file = p
                .file_name()
                .map_or_else(|| p.display().to_string(), |f| f.to_string_lossy().into());
            if let Some(o) = origin {
                let pw = SeriesSpec::Patchwork {
                    url: o.url.clone(),
                    series: o.series,
                };
                return (pw.options(), None);
            }
            let id = series.and_then(|s| {
                s.cover
                    .as_ref()
                    .map(|c| c.message_id.clone())
                    .or_else(|| s.patches.first().map(|p| p.message_id.clone()))
                    .filter(|id| !id.trim().is_empty())
            });
            match id {
                None if series.is_none() => (
                    vec![("--series", file.clone())],
                    Some(format!(
                        "the series is the local file {file}; the results do not record its Message-ID: send the file along, or name it with --lore MESSAGE-ID if it was posted"
                    )),
                ),
                Some(id) => (
                    vec![("--lore", id)],
                    Some(format!(
                        "the series was read from the local file {file}: --lore fetches it by its Message-ID, which lore has if the series was posted to a list it archives"
                    )),
                ),
                None => (
                    vec![("--series", file.clone())],
                    Some(format!(
                        "the series is the local file {file}, without a Message-ID: it cannot be fetched elsewhere, send it along"
                    )),
                ),
            }
        }
    }
}

/// The kernels' tree given on the command line (`--tree`), pinned to the
/// commit the runs' kernels were built on: a variant without its own
/// `tree:` whose kernel came from a git tree.
fn tree_args(plan: &Plan, kernels: &[VariantKernel]) -> Option<(String, String)> {
    kernels.iter().find_map(|k| {
        let v = plan.variants.iter().find(|v| v.name == k.variant)?;
        let up = k.kernel.upstream.as_ref()?;
        (v.tree.is_none() && v.image.is_none())
            .then(|| Some((up.url.clone()?, up.commit.clone())))
            .flatten()
    })
}

/// The variant the command line gave, if any.
fn command_line_variant(plan: &Plan) -> Option<&Variant> {
    plan.variants.iter().find(|v| v.from_command_line)
}

/// The command that runs exactly `cell` of `plan` again on another
/// machine: the same matrix, the one-cell shard that holds it (with as
/// many shards as cells, each shard is one cell: `shard_of` is the plan's
/// split that many ways), the tree and the series as upstream serves them.
pub fn reproduce_command(
    plan: &Plan,
    kernels: &[VariantKernel],
    cell: &Cell,
    shard_of: &BTreeMap<String, u32>,
) -> String {
    let mut cmd = vec!["mmci".to_string(), "run".into()];
    if let (Some(m), _) = matrix_arg(&plan.source) {
        cmd.push(format!("--matrix {}", shell_word(&m)));
    }
    let n = plan.cells.len() as u32;
    if n > 1 {
        if let Some(index) = shard_of.get(&cell.id) {
            cmd.push(format!("--shard {index}/{n}"));
        }
    }
    if let Some((url, commit)) = tree_args(plan, kernels) {
        cmd.push(format!(
            "--tree {} --ref {}",
            shell_word(&url),
            shell_word(&commit)
        ));
    }
    if let Some(v) = command_line_variant(plan) {
        if let Some(spec) = &v.series {
            let k = kernels.iter().find(|k| k.variant == v.name);
            let (args, _) = series_args(
                spec,
                k.and_then(|k| k.kernel.series.as_ref()),
                k.and_then(|k| k.kernel.patchwork.as_ref()),
            );
            for (o, val) in args {
                cmd.push(format!("{o} {}", shell_word(&val)));
            }
        }
        if let Some(r) = v.revision {
            cmd.push(format!("--revision {r}"));
        }
        if let Some(p) = &v.patches {
            cmd.push(format!("--patches {}", shell_word(&p.to_string())));
        }
    }
    cmd.push(format!("--repeats {}", plan.repeats));
    cmd.join(" ")
}

/// What a reader of the commands should know: where mmci comes from,
/// what the tarball base is, and what cannot be fetched elsewhere.
pub fn notes(m: &Manifest) -> Vec<String> {
    let plan = &m.plan;
    let mut out = vec![match &m.mmci_commit {
        Some(c) => format!(
            "in mmci's repository at commit {} (git checkout it, then ./mmci-setup)",
            untrusted::line(c)
        ),
        None => format!(
            "with mmci {}; its commit was not recorded",
            untrusted::line(&m.mmci_version)
        ),
    }];
    if let (_, Some(note)) = matrix_arg(&plan.source) {
        out.push(note);
    }
    let tarballs: Vec<String> = m
        .kernels
        .iter()
        .filter_map(|k| {
            let up = k.kernel.upstream.as_ref()?;
            up.url.is_none().then(|| {
                format!(
                    "{} from the tarball {}",
                    up.describe,
                    k.kernel.tree.as_deref().unwrap_or("?")
                )
            })
        })
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    for t in tarballs {
        out.push(format!(
            "base {t}: ./mmci-setup installs Debian's linux-source-6.12; another package version is another base"
        ));
    }
    if tree_args(plan, &m.kernels).is_some_and(|(url, _)| url.contains("***@")) {
        out.push("the tree's URL needs credentials (masked here)".into());
    }
    if let Some(v) = command_line_variant(plan) {
        if let Some(spec) = &v.series {
            let k = m.kernels.iter().find(|k| k.variant == v.name);
            if let (_, Some(note)) = series_args(
                spec,
                k.and_then(|k| k.kernel.series.as_ref()),
                k.and_then(|k| k.kernel.patchwork.as_ref()),
            ) {
                out.push(note);
            }
        }
    }
    out.into_iter().map(|n| untrusted::line(&n)).collect()
}

/// The base as upstream names it, or what the manifest has instead
/// (the commit of the tree it was built on, for manifests written before
/// the base was kept).
pub fn base_name(up: Option<&Upstream>, tree_commit: Option<&str>) -> String {
    match (up, tree_commit) {
        (Some(u), _) => untrusted::line(&u.name()),
        (None, Some(c)) => untrusted::line(&c.chars().take(12).collect::<String>()),
        (None, None) => "-".into(),
    }
}

/// Where a kernel's .config copy is, as a link from the report: under
/// `results_url` when that is a web address, else relative to the
/// results dir (where `mmci report --output` puts reports).
/// A path or URL that is not `kernels/NAME.config` under a plain address
/// (a manifest is untrusted, and a link target is markup) gets no link.
pub fn config_href(k: &VariantKernel, results_url: Option<&str>) -> Option<String> {
    let rel = k.config.as_deref()?;
    let name = rel.strip_prefix("kernels/")?.strip_suffix(".config")?;
    let plain = |s: &str, extra: &str| {
        !s.is_empty()
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c) || extra.contains(c))
    };
    if !plain(name, "") || name.starts_with('.') {
        return None;
    }
    Some(match results_url {
        Some(u)
            if (u.starts_with("https://") || u.starts_with("http://"))
                && plain(u, ":/~%+=&?#@") =>
        {
            format!("{}/{rel}", u.trim_end_matches('/'))
        }
        _ => rel.to_string(),
    })
}

/// The THP mode of the kernels a cell boots (`always`), `always (base),
/// madvise (patched)` when they differ, or that it was not recorded.
fn thp_of(cell: &Cell, kernels: &[VariantKernel]) -> String {
    let modes: Vec<(&str, &str)> = kernels
        .iter()
        .filter(|k| k.arch == cell.arch && k.flavour == cell.flavour)
        .filter_map(|k| Some((k.variant.as_str(), k.kernel.thp.as_deref()?)))
        .collect();
    let mut distinct: Vec<&str> = modes.iter().map(|(_, m)| *m).collect();
    distinct.sort();
    distinct.dedup();
    match distinct.as_slice() {
        [] => "the kernel's default (not recorded)".into(),
        [one] => format!("{one} (the kernel's default)"),
        _ => modes
            .iter()
            .map(|(v, m)| format!("{m} ({v})"))
            .collect::<Vec<_>>()
            .join(", "),
    }
}

/// A cell's guest as a reader sets one up: its scenario's own guest and
/// job lines (the registry's `report_guest`, as a run's report has them),
/// then the THP mode its kernel boots with.
pub fn guest_shape(cell: &Cell, kernels: &[VariantKernel]) -> String {
    let shape = crate::scenario::registry::GuestShape {
        arch: cell.arch,
        vcpus: cell.vcpus,
        memory_mb: cell.memory_mb,
        swap_mb: cell.swap_mb,
    };
    let lines = (crate::scenario::registry::of(cell.job.scenario).report_guest)(&shape, &cell.job);
    let mut parts: Vec<String> = lines
        .lines()
        .map(|l| {
            l.trim_start_matches("guest:")
                .trim_start_matches("job:")
                .trim()
                .to_string()
        })
        .filter(|l| !l.is_empty())
        .collect();
    // A scenario whose guest sets THP says so in its guest line (`, THP
    // never`); otherwise the mode is the one the kernel boots with.
    let set_by_guest = format!(", {} ", crate::scenario::report::THP_SET);
    if !parts.iter().any(|p| p.contains(&set_by_guest)) {
        parts.push(format!("THP {}", thp_of(cell, kernels)));
    }
    untrusted::line(&parts.join("; "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::series::{Cover, Patch};
    use std::path::PathBuf;

    fn series(cover: Option<&str>, first: Option<&str>) -> Series {
        let patch = |id: &str| Patch {
            index: 1,
            title: "t".into(),
            subject: "[PATCH] t".into(),
            message_id: id.into(),
            from: "a@example.org".into(),
            author: String::new(),
            from_version: 1,
            to: vec![],
            cc: vec![],
            references: vec![],
            raw: vec![],
        };
        Series {
            version: 1,
            total: 1,
            rfc: false,
            cover: cover.map(|id| Cover {
                subject: "[PATCH 0/1] c".into(),
                message_id: id.into(),
                from: "a@example.org".into(),
                to: vec![],
                cc: vec![],
                references: vec![],
                claims: vec![],
            }),
            patches: first.map(patch).into_iter().collect(),
            base_commit: None,
            prerequisite_patch_ids: vec![],
            prerequisites: vec![],
            missing_prerequisites: vec![],
            versions_seen: vec![1],
            hash: "h".into(),
            chosen: String::new(),
            assembly: String::new(),
            left_out: vec![],
            base: None,
        }
    }

    /// A series' source, the series as read, its patchwork origin, the
    /// options wanted and the words of the note wanted (none: empty).
    type Case<'a> = (
        SeriesSpec,
        Option<&'a Series>,
        Option<&'a patchwork::Origin>,
        &'static str,
        &'static str,
    );

    #[test]
    fn a_series_is_named_as_upstream_serves_it() {
        let mbox = SeriesSpec::Mbox(PathBuf::from("/home/me/work/v2.mbox"));
        let origin = patchwork::Origin {
            url: "https://patchwork.kernel.org".into(),
            series: 912345,
            web_url: None,
            project: None,
            patches: vec![],
        };
        let with_cover = series(Some("cover@example.org"), Some("p1@example.org"));
        let no_cover = series(None, Some("p1@example.org"));
        let no_ids = series(None, Some(""));
        // (source, series as read, patchwork origin, options, note's words)
        let cases: Vec<Case> = vec![
            (
                SeriesSpec::Lore {
                    message_id: "20250101.1-1@example.org".into(),
                    base_url: fetch::LORE_URL.into(),
                },
                None,
                None,
                "--lore 20250101.1-1@example.org",
                "",
            ),
            (
                SeriesSpec::Lore {
                    message_id: "x@y".into(),
                    base_url: "https://inbox.example.org/".into(),
                },
                None,
                None,
                "--lore x@y --lore-url https://inbox.example.org/",
                "",
            ),
            (
                SeriesSpec::Patchwork {
                    url: "https://patchwork.kernel.org".into(),
                    series: 912345,
                },
                None,
                None,
                "--patchwork https://patchwork.kernel.org --pw-series 912345",
                "",
            ),
            (
                SeriesSpec::GitHub {
                    api: fetch::GITHUB_API.into(),
                    repo: "o/r".into(),
                    number: 7,
                    token: None,
                },
                None,
                None,
                "--github-pr o/r#7",
                "",
            ),
            (
                mbox.clone(),
                Some(&with_cover),
                Some(&origin),
                "--patchwork https://patchwork.kernel.org --pw-series 912345",
                "",
            ),
            (
                mbox.clone(),
                Some(&with_cover),
                None,
                "--lore cover@example.org",
                "local file v2.mbox: --lore fetches it by its Message-ID",
            ),
            (
                mbox.clone(),
                Some(&no_cover),
                None,
                "--lore p1@example.org",
                "local file v2.mbox",
            ),
            (
                mbox.clone(),
                Some(&no_ids),
                None,
                "--series v2.mbox",
                "cannot be fetched elsewhere",
            ),
            (
                SeriesSpec::PatchDir(PathBuf::from("/srv/patches/")),
                Some(&no_ids),
                None,
                "--series patches",
                "cannot be fetched elsewhere",
            ),
            (
                mbox.clone(),
                None,
                None,
                "--series v2.mbox",
                "do not record its Message-ID",
            ),
        ];
        for (spec, s, o, want, note) in cases {
            let (args, got_note) = series_args(&spec, s, o);
            let line = args
                .iter()
                .map(|(o, v)| format!("{o} {v}"))
                .collect::<Vec<_>>()
                .join(" ");
            assert_eq!(line, want, "{spec:?}");
            assert!(
                !line.contains("/home/") && !line.contains("/srv/"),
                "{line}"
            );
            match got_note {
                Some(n) => assert!(!note.is_empty() && n.contains(note), "{spec:?}: {n}"),
                None => assert!(note.is_empty(), "{spec:?}: no note"),
            }
        }
    }

    #[test]
    fn a_matrix_is_named_by_its_path_in_mmci() {
        for (source, arg, note) in [
            ("matrix/default.yaml (embedded)", None, false),
            (
                "/work/ci/checkout/matrix/smoke.yaml",
                Some("matrix/smoke.yaml"),
                false,
            ),
            ("matrix/noio.yaml", Some("matrix/noio.yaml"), false),
            ("/home/me/my.yaml", Some("my.yaml"), true),
            ("/home/me/matrix/mine.yaml", Some("mine.yaml"), true),
        ] {
            let (a, n) = matrix_arg(source);
            assert_eq!(a.as_deref(), arg, "{source}");
            assert_eq!(n.is_some(), note, "{source}");
        }
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../matrix");
        let mut files: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".yaml"))
            .collect();
        files.sort();
        assert_eq!(
            files, BUNDLED_MATRICES,
            "BUNDLED_MATRICES lists matrix/*.yaml"
        );
    }

    #[test]
    fn the_command_names_tree_series_and_no_host_path() {
        let mut plan = crate::matrix::default_plan(&Default::default()).unwrap();
        let s = series(Some("cover@example.org"), Some("p1@example.org"));
        plan.variants = vec![
            Variant::base(),
            Variant {
                name: "patched".into(),
                series: Some(SeriesSpec::Mbox(PathBuf::from("/home/me/v2.mbox"))),
                from_command_line: true,
                ..Variant::base()
            },
        ];
        plan.source = "/ci/checkout/matrix/mglru-isolation.yaml".into();
        let kernel = |variant: &str, series: Option<Series>| VariantKernel {
            variant: variant.into(),
            arch: crate::arch::Arch::X86_64,
            flavour: Default::default(),
            description: String::new(),
            kernel: crate::results::KernelInfo {
                image: "/cache/bzImage".into(),
                release: "6.12.95".into(),
                tree: Some("linux-abcdef12".into()),
                tree_commit: None,
                build_key: None,
                series_hash: None,
                head_commit: None,
                build_sandboxed: None,
                build_warnings: vec![],
                series,
                patchwork: None,
                flavour: Default::default(),
                upstream: Some(Upstream {
                    url: Some("https://git.kernel.org/pub/scm/linux/kernel/git/akpm/mm.git".into()),
                    commit: "2a7be210a22a8655e73e347054808314e73be671".into(),
                    describe: "v6.13-rc1-123-g2a7be210a22a".into(),
                }),
                compiler: None,
                thp: None,
                config: None,
            },
            new_warnings: vec![],
            config: None,
        };
        let kernels = vec![kernel("base", None), kernel("patched", Some(s))];
        let shards = crate::matrix::plan::shard_assignment(&plan.cells, plan.cells.len() as u32);
        let cmd = reproduce_command(&plan, &kernels, &plan.cells[0], &shards);
        assert!(
            cmd.starts_with("mmci run --matrix matrix/mglru-isolation.yaml"),
            "{cmd}"
        );
        assert!(
            cmd.contains(
                "--tree https://git.kernel.org/pub/scm/linux/kernel/git/akpm/mm.git --ref 2a7be210a22a8655e73e347054808314e73be671"
            ),
            "{cmd}"
        );
        assert!(cmd.contains("--lore cover@example.org"), "{cmd}");
        assert!(!cmd.contains("/home/") && !cmd.contains("/ci/"), "{cmd}");
    }

    /// What `sh` makes of `word`: the one argument printf gets.
    fn sh_reads(shell: &str, word: &str) -> String {
        let out = std::process::Command::new(shell)
            .arg("-c")
            .arg(format!("printf '%s' {word}"))
            .output()
            .unwrap();
        assert!(out.status.success(), "{shell} on {word}: {out:?}");
        String::from_utf8(out.stdout).unwrap()
    }

    #[test]
    fn shell_words_read_back_as_given() {
        let canary = tempfile::tempdir().unwrap();
        let pwned = canary.path().join("pwned");
        let touch = format!("x'$(touch${{IFS}}{})'@evil", pwned.display());
        for (given, want) in [
            ("plain@example.org", "plain@example.org"),
            ("a b", "'a b'"),
            ("", "''"),
            (touch.as_str(), ""),
            ("x'$(id)'`id`\"@evil", ""),
            ("$(touch /tmp/x)", "'$(touch /tmp/x)'"),
            ("`id`", "'`id`'"),
            ("semi;colon&&amp|pipe", "'semi;colon&&amp|pipe'"),
            ("glob*?[x]~", "'glob*?[x]~'"),
            ("bang!hist", "'bang!hist'"),
            ("new\nline", "'new line'"),
            ("esc\u{1b}[2Jx", "escx"),
            ("tab\there", "'tab here'"),
            ("ünï", "'ünï'"),
        ] {
            let q = shell_word(given);
            if !want.is_empty() {
                assert_eq!(q, want, "{given:?}");
            }
            let clean = untrusted::line(given);
            for shell in ["/bin/sh", "/bin/bash"] {
                if std::path::Path::new(shell).exists() {
                    assert_eq!(sh_reads(shell, &q), clean, "{shell}: {given:?} as {q}");
                }
            }
        }
        assert!(!pwned.exists(), "the quoted message-id ran a command");
    }
}
