//! A matrix's results dir: `manifest.json` (what ran where, on which
//! kernels) and `runs/<slot id>/` (one guest run each, written atomically
//! by `run`). Rerunning the same command resumes: runs already there are
//! kept. `merge` joins the results dirs of the shards of one plan.
//!
//! A results dir may come from elsewhere (a CI shard's artifact, a hostile
//! guest's host): its files are read capped and never through a symbolic
//! link, `merge` copies regular files only, and a run.json that cannot be
//! read is named on stderr, not silently taken for a run without result.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::matrix::{Plan, Shard, Slot};
use crate::results::outcome::Outcome;
use crate::results::{self, KernelInfo, RunResult};

pub use crate::host::facts::Host;
pub use crate::results::kernels::{target_text, VariantFailure, VariantKernel};

/// Version of manifest.json's layout.
pub const MANIFEST_FORMAT: u32 = 1;

/// The git commit this mmci was built from (build.rs), if it was.
pub const MMCI_COMMIT: Option<&str> = option_env!("MMCI_GIT_COMMIT");

pub const MANIFEST: &str = "manifest.json";
pub const RUNS: &str = "runs";

/// manifest.json.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    pub format: u32,
    pub mmci_version: String,
    /// The git commit mmci was built from ([`MMCI_COMMIT`]; absent when it
    /// was not built from a git checkout, and in older manifests).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mmci_commit: Option<String>,
    /// [`Plan::fingerprint`]: shards and resumed runs of one plan share it.
    pub plan_id: String,
    pub plan: Plan,
    /// The shards whose runs are in this dir (all of them: `None`).
    pub shards: Option<Vec<Shard>>,
    pub host: Host,
    /// Accelerator per arch, with the reason (e.g. the KVM probe's failure).
    pub accel: BTreeMap<String, String>,
    pub kernels: Vec<VariantKernel>,
    pub failed_kernels: Vec<VariantFailure>,
    pub created_unix: u64,
}

#[derive(Debug, thiserror::Error)]
pub enum ResultsDirError {
    /// Writing: `mmci run` and `mmci merge` write their `--results`;
    /// `option` names the one to change.
    #[error("results dir {path} is not writable: choose another with {option}")]
    Write {
        path: PathBuf,
        option: &'static str,
        #[source]
        source: std::io::Error,
    },
    /// Reading a results dir someone gave (analyse, report, merge, resume).
    #[error("cannot read {path}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// serde's words are in the message, not a source: printed once.
    #[error("{path} is not an mmci manifest ({error}): choose another --results")]
    BadManifest {
        path: PathBuf,
        error: serde_json::Error,
    },
    #[error("results dir {path} holds {what}: rerun with the same matrix and options to resume, or choose another --results")]
    Mismatch { path: PathBuf, what: String },
}

/// A write error of `mmci run`'s results dir ([`merge`] renames the option).
fn write_err(path: &Path) -> impl FnOnce(std::io::Error) -> ResultsDirError + '_ {
    move |source| ResultsDirError::Write {
        path: path.to_path_buf(),
        option: "--results",
        source,
    }
}

/// The error of `mmci merge`: its results dir is `--results` too, read
/// from shards whose own dirs are not to be changed.
fn as_merge(e: ResultsDirError) -> ResultsDirError {
    match e {
        ResultsDirError::Write { path, source, .. } => ResultsDirError::Write {
            path,
            option: "--results",
            source,
        },
        other => other,
    }
}

fn read_err(path: &Path) -> impl FnOnce(std::io::Error) -> ResultsDirError + '_ {
    move |source| ResultsDirError::Read {
        path: path.to_path_buf(),
        source,
    }
}

pub fn run_dir(root: &Path, slot: &Slot) -> PathBuf {
    root.join(RUNS).join(slot.id())
}

/// Largest manifest.json read (a plan of MAX_CELLS cells with its scripts
/// is a few MiB).
pub const MAX_MANIFEST_BYTES: u64 = 64 << 20;

pub fn read_manifest(root: &Path) -> Result<Option<Manifest>, ResultsDirError> {
    let path = root.join(MANIFEST);
    match crate::host::fs::read_capped(
        &path,
        MAX_MANIFEST_BYTES,
        "MAX_MANIFEST_BYTES",
        crate::host::fs::Accept::RegularNoSymlink,
    ) {
        Ok(bytes) => serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|error| ResultsDirError::BadManifest { path, error }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(read_err(&path)(e)),
    }
}

pub fn write_manifest(root: &Path, m: &Manifest) -> Result<(), ResultsDirError> {
    let path = root.join(MANIFEST);
    let text = serde_json::to_vec_pretty(m).expect("serializable");
    crate::host::fs::write_atomic(&path, &text).map_err(write_err(&path))
}

/// Checks that `existing` is a manifest of the same plan and shard, so that
/// resuming cannot mix runs of different experiments.
pub fn check_resumable(
    root: &Path,
    existing: &Manifest,
    fresh: &Manifest,
) -> Result<(), ResultsDirError> {
    let mismatch = |what: String| ResultsDirError::Mismatch {
        path: root.to_path_buf(),
        what,
    };
    if existing.plan_id != fresh.plan_id {
        return Err(mismatch(format!(
            "another plan ({} from {}, this one is {} from {})",
            existing.plan_id, existing.plan.source, fresh.plan_id, fresh.plan.source
        )));
    }
    if existing.shards != fresh.shards {
        return Err(mismatch(format!(
            "shard(s) {}, not {}",
            shards_text(&existing.shards),
            shards_text(&fresh.shards)
        )));
    }
    Ok(())
}

/// Checks that the kernels built now are the ones the dir's runs booted (a
/// tree ref like mm-stable may have moved since).
pub fn check_same_kernels(
    root: &Path,
    existing: &[VariantKernel],
    now: &[VariantKernel],
) -> Result<(), ResultsDirError> {
    for old in existing {
        if let Some(new) = now
            .iter()
            .find(|n| n.is(&old.variant, old.arch, old.flavour))
        {
            let id = |k: &KernelInfo| {
                (
                    k.head_commit.clone(),
                    k.series_hash.clone(),
                    k.build_key.clone(),
                )
            };
            if id(&old.kernel) != id(&new.kernel) {
                return Err(ResultsDirError::Mismatch {
                    path: root.to_path_buf(),
                    what: format!(
                        "runs of kernel `{}` ({}) built from {}, but it now builds from {}",
                        old.variant,
                        old.target(),
                        old.kernel.head_commit.as_deref().unwrap_or("?"),
                        new.kernel.head_commit.as_deref().unwrap_or("?")
                    ),
                });
            }
        }
    }
    Ok(())
}

pub fn shards_text(s: &Option<Vec<Shard>>) -> String {
    match s {
        None => "all".into(),
        Some(v) => v
            .iter()
            .map(|s| s.to_string())
            .collect::<Vec<_>>()
            .join(","),
    }
}

/// The run of `slot` if it is already in the dir and counts as a result:
/// everything but an infra failure (those are retried on resume). A
/// run.json there that cannot be read is named, and the run done again.
pub fn finished_run(root: &Path, slot: &Slot) -> Option<RunResult> {
    let dir = run_dir(root, slot);
    let r = match results::read_run(&dir) {
        Ok(r) => r,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
        Err(e) => {
            tracing::warn!("{}: {e}; running it again", dir.join("run.json").display());
            return None;
        }
    };
    (r.classification.outcome != Outcome::InfraFailure).then_some(r)
}

/// A run in a results dir whose result could not be taken.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unreadable {
    /// The run.json (or the run dir, when that is a symbolic link).
    pub path: PathBuf,
    pub error: String,
}

/// Every run in the dir, by slot id, and the runs whose run.json is there
/// but cannot be read (truncated, not JSON, out of range, a symbolic link,
/// too large). A run dir without run.json (a run interrupted before its
/// end) is neither.
pub fn runs_checked(root: &Path) -> (BTreeMap<String, RunResult>, Vec<Unreadable>) {
    let mut out = BTreeMap::new();
    let mut bad = vec![];
    if let Ok(entries) = std::fs::read_dir(root.join(RUNS)) {
        for e in entries.flatten() {
            let path = e.path();
            match e.file_type() {
                Ok(t) if t.is_dir() => {}
                Ok(t) if t.is_symlink() => {
                    bad.push(Unreadable {
                        path,
                        error: "a symbolic link, not a run dir; skipped".into(),
                    });
                    continue;
                }
                _ => continue,
            }
            match results::read_run(&path) {
                Ok(r) => {
                    out.insert(e.file_name().to_string_lossy().into_owned(), r);
                }
                Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
                Err(err) => bad.push(Unreadable {
                    path: path.join("run.json"),
                    error: err.to_string(),
                }),
            }
        }
    }
    bad.sort_by(|a, b| a.path.cmp(&b.path));
    (out, bad)
}

/// Every run in the dir, by slot id; each run.json that cannot be read is
/// named on stderr with the reason, and counted.
pub fn all_runs(root: &Path) -> BTreeMap<String, RunResult> {
    let (runs, bad) = runs_checked(root);
    warn_unreadable(root, &bad);
    runs
}

/// Names on stderr each run of `root` whose run.json could not be read,
/// with the reason, and counts them.
pub fn warn_unreadable(root: &Path, bad: &[Unreadable]) {
    for b in bad {
        tracing::warn!("{}: {}", b.path.display(), b.error);
    }
    if !bad.is_empty() {
        tracing::warn!(
            "{} run(s) in {} could not be read; they count as runs without a result",
            bad.len(),
            root.display()
        );
    }
}

/// Joins the results dirs of shards (or partial reruns) of one plan into
/// `into`: same plan and same kernels required; a run present in two dirs
/// must be the same run.
pub fn merge(dirs: &[PathBuf], into: &Path) -> Result<Manifest, ResultsDirError> {
    let mut merged: Option<Manifest> = None;
    let mut sources: BTreeMap<String, PathBuf> = BTreeMap::new();
    for dir in dirs {
        let m = read_manifest(dir)?.ok_or_else(|| ResultsDirError::Mismatch {
            path: dir.clone(),
            what: "no manifest.json (not an mmci results dir)".into(),
        })?;
        match &mut merged {
            None => merged = Some(m.clone()),
            Some(acc) => {
                if acc.plan_id != m.plan_id {
                    return Err(ResultsDirError::Mismatch {
                        path: dir.clone(),
                        what: format!(
                            "plan {} but {} holds plan {}: only shards of one plan merge",
                            m.plan_id,
                            dirs[0].display(),
                            acc.plan_id
                        ),
                    });
                }
                check_same_kernels(dir, &acc.kernels, &m.kernels)?;
                for k in &m.kernels {
                    if !acc
                        .kernels
                        .iter()
                        .any(|a| a.is(&k.variant, k.arch, k.flavour))
                    {
                        acc.kernels.push(k.clone());
                    }
                }
                acc.failed_kernels.extend(m.failed_kernels.iter().cloned());
                for (arch, note) in &m.accel {
                    acc.accel
                        .entry(arch.clone())
                        .or_insert_with(|| note.clone());
                }
                acc.shards = match (&acc.shards, &m.shards) {
                    (Some(a), Some(b)) => {
                        let mut all = a.clone();
                        all.extend(b.iter().copied().filter(|s| !a.contains(s)));
                        all.sort_by_key(|s| s.index);
                        // Every shard of the plan present: the whole plan.
                        let whole = all.first().is_some_and(|s| all.len() == s.count as usize);
                        if whole {
                            None
                        } else {
                            Some(all)
                        }
                    }
                    _ => None,
                };
            }
        }
        for (id, _) in all_runs(dir) {
            if let Some(prev) = sources.get(&id) {
                let read = |d: &Path| {
                    crate::host::fs::read_capped(
                        &d.join(RUNS).join(&id).join("run.json"),
                        results::MAX_RUN_JSON_BYTES,
                        "MAX_RUN_JSON_BYTES",
                        crate::host::fs::Accept::RegularNoSymlink,
                    )
                    .ok()
                };
                let (a, b) = (read(prev), read(dir));
                if a != b {
                    return Err(ResultsDirError::Mismatch {
                        path: dir.clone(),
                        what: format!(
                            "run {id}, which {} also holds with other results",
                            prev.display()
                        ),
                    });
                }
                continue;
            }
            sources.insert(id, dir.clone());
        }
    }
    let merged = merged.ok_or_else(|| ResultsDirError::Mismatch {
        path: into.to_path_buf(),
        what: "nothing to merge: give at least one results dir".into(),
    })?;
    let runs = into.join(RUNS);
    std::fs::create_dir_all(&runs).map_err(|e| as_merge(write_err(&runs)(e)))?;
    for (id, from) in &sources {
        copy_dir(&from.join(RUNS).join(id), &runs.join(id)).map_err(as_merge)?;
    }
    // The kernels' .config copies: the same kernels in every dir (checked).
    for dir in dirs {
        let kernels = dir.join(super::kernels::KERNELS);
        if kernels.is_dir() && !kernels.is_symlink() {
            copy_dir(&kernels, &into.join(super::kernels::KERNELS)).map_err(as_merge)?;
        }
    }
    write_manifest(into, &merged).map_err(as_merge)?;
    Ok(merged)
}

/// Copies the regular files of a run dir. Anything else (a symbolic link,
/// which could point at /etc/shadow; a directory; a FIFO) is not part of a
/// run: skipped, and named on stderr.
fn copy_dir(from: &Path, to: &Path) -> Result<(), ResultsDirError> {
    std::fs::create_dir_all(to).map_err(write_err(to))?;
    for e in std::fs::read_dir(from).map_err(read_err(from))? {
        let e = e.map_err(read_err(from))?;
        let source = e.path();
        // DirEntry::file_type does not follow symbolic links.
        let kind = e.file_type().map_err(read_err(&source))?;
        if !kind.is_file() {
            tracing::warn!(
                "{}: {}, not a regular file; not merged",
                source.display(),
                if kind.is_symlink() {
                    "a symbolic link"
                } else if kind.is_dir() {
                    "a directory"
                } else {
                    "a special file"
                }
            );
            continue;
        }
        let target = to.join(e.file_name());
        copy_regular(&source, &target)?;
    }
    Ok(())
}

/// Copies `from`, opened without following a symbolic link (it was a
/// regular file when listed; it must still be one when opened).
fn copy_regular(from: &Path, to: &Path) -> Result<(), ResultsDirError> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut src = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(from)
        .map_err(read_err(from))?;
    let meta = src.metadata().map_err(read_err(from))?;
    if !meta.is_file() {
        return Err(read_err(from)(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "not a regular file; refused",
        )));
    }
    let mut dst = std::fs::File::create(to).map_err(write_err(to))?;
    std::io::copy(&mut src, &mut dst).map_err(write_err(to))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::Flavour;
    use crate::matrix::{Overrides, Variant};
    use std::path::Path;

    /// A real run.json recorded from a guest (the report fixtures).
    fn recorded_run() -> RunResult {
        let path =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mglru-completed/run.json");
        serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
    }

    fn plan(threads: &str) -> Plan {
        let mut p = crate::matrix::plan::from_text(
            &format!("axes:\n  threads: [{threads}]\nrepeats: 2\n"),
            "t.yaml",
            Path::new("."),
            &Overrides::default(),
        )
        .unwrap();
        p.variants.push(Variant {
            name: "patched".into(),
            series: Some(crate::series::SeriesSpec::Lore {
                message_id: "<x@y>".into(),
                base_url: crate::series::fetch::LORE_URL.into(),
            }),
            ..Variant::base()
        });
        p
    }

    fn manifest(p: &Plan, shards: Option<Vec<Shard>>) -> Manifest {
        Manifest {
            format: MANIFEST_FORMAT,
            mmci_version: "test".into(),
            mmci_commit: None,
            plan_id: p.fingerprint(),
            plan: p.clone(),
            shards,
            host: Host::this(),
            accel: BTreeMap::new(),
            kernels: vec![],
            failed_kernels: vec![],
            created_unix: 0,
        }
    }

    fn put_run(root: &Path, slot: &Slot, outcome: Outcome) {
        let mut r = recorded_run();
        r.id = slot.id();
        r.classification.outcome = outcome;
        std::fs::create_dir_all(run_dir(root, slot)).unwrap();
        results::write_run(&run_dir(root, slot), &r).unwrap();
    }

    #[test]
    fn resume_keeps_results_and_reruns_infra_failures() {
        let dir = tempfile::tempdir().unwrap();
        let p = plan("8");
        write_manifest(dir.path(), &manifest(&p, None)).unwrap();
        let cells: Vec<_> = p.cells.iter().collect();
        let slots = p.slots(&cells);
        put_run(dir.path(), &slots[0], Outcome::Completed);
        put_run(dir.path(), &slots[1], Outcome::BootFailure);
        put_run(dir.path(), &slots[2], Outcome::InfraFailure);
        let kept: Vec<bool> = slots
            .iter()
            .map(|s| finished_run(dir.path(), s).is_some())
            .collect();
        assert_eq!(kept, [true, true, false, false]);
        let m = read_manifest(dir.path()).unwrap().unwrap();
        check_resumable(dir.path(), &m, &manifest(&p, None)).unwrap();
        let e = check_resumable(dir.path(), &m, &manifest(&plan("9"), None)).unwrap_err();
        assert!(e.to_string().contains("holds another plan"), "{e}");
        let shard = Some(vec![Shard { index: 1, count: 2 }]);
        let e = check_resumable(dir.path(), &m, &manifest(&p, shard)).unwrap_err();
        assert!(e.to_string().contains("shard(s) all, not 1/2"), "{e}");
    }

    #[test]
    fn changed_kernels_refuse_resume() {
        let r = recorded_run();
        let kf = |head: &str, flavour: Flavour| VariantKernel {
            variant: "base".into(),
            arch: crate::arch::Arch::X86_64,
            flavour,
            description: "base tree".into(),
            kernel: KernelInfo {
                head_commit: Some(head.into()),
                ..r.kernel.clone()
            },
            new_warnings: vec![],
            config: None,
        };
        let k = |head: &str| kf(head, Flavour::Default);
        check_same_kernels(Path::new("/r"), &[k("aaa")], &[k("aaa")]).unwrap();
        let e = check_same_kernels(Path::new("/r"), &[k("aaa")], &[k("bbb")]).unwrap_err();
        assert!(
            e.to_string()
                .contains("built from aaa, but it now builds from bbb"),
            "{e}"
        );
        // The debug build of a variant is another kernel than its default
        // one: each is compared with its own.
        check_same_kernels(
            Path::new("/r"),
            &[k("aaa"), kf("ddd", Flavour::Debug)],
            &[kf("ddd", Flavour::Debug), k("aaa")],
        )
        .unwrap();
        let e = check_same_kernels(
            Path::new("/r"),
            &[kf("ddd", Flavour::Debug)],
            &[k("ddd"), kf("eee", Flavour::Debug)],
        )
        .unwrap_err();
        assert!(
            e.to_string().contains(
                "runs of kernel `base` (x86_64, debug) built from ddd, but it now builds from eee"
            ),
            "{e}"
        );
        // A default flavour is not written: manifests read as before.
        let json = serde_json::to_value(k("aaa")).unwrap();
        assert!(json.get("flavour").is_none(), "{json}");
        let json = serde_json::to_value(kf("aaa", Flavour::Debug)).unwrap();
        assert_eq!(json["flavour"], "debug");
    }

    #[test]
    fn merge_joins_shards_and_refuses_mismatches() {
        let p = plan("8, 16, 32");
        let tmp = tempfile::tempdir().unwrap();
        let mut dirs = vec![];
        let mut expected = std::collections::BTreeSet::new();
        for i in 1..=2 {
            let shard = Shard { index: i, count: 2 };
            let d = tmp.path().join(format!("shard{i}"));
            std::fs::create_dir_all(&d).unwrap();
            write_manifest(&d, &manifest(&p, Some(vec![shard]))).unwrap();
            let cells = crate::matrix::plan::shard_cells(&p.cells, shard);
            for s in p.slots(&cells) {
                put_run(&d, &s, Outcome::Completed);
                expected.insert(s.id());
            }
            dirs.push(d);
        }
        let into = tmp.path().join("all");
        let m = merge(&dirs, &into).unwrap();
        assert_eq!(m.shards, None, "both shards of 2: the whole plan");
        let runs = all_runs(&into);
        assert_eq!(
            runs.keys()
                .cloned()
                .collect::<std::collections::BTreeSet<_>>(),
            expected
        );
        assert_eq!(runs.len(), 3 * 2 * 2);

        // Another plan does not merge.
        let other = tmp.path().join("other");
        std::fs::create_dir_all(&other).unwrap();
        write_manifest(&other, &manifest(&plan("64"), None)).unwrap();
        let e = merge(&[dirs[0].clone(), other], &tmp.path().join("x")).unwrap_err();
        assert!(
            e.to_string().contains("only shards of one plan merge"),
            "{e}"
        );

        // The same run with other results does not either.
        let clash = tmp.path().join("clash");
        std::fs::create_dir_all(&clash).unwrap();
        write_manifest(
            &clash,
            &manifest(&p, Some(vec![Shard { index: 1, count: 2 }])),
        )
        .unwrap();
        let first = crate::matrix::plan::shard_cells(&p.cells, Shard { index: 1, count: 2 });
        put_run(&clash, &p.slots(&first)[0], Outcome::Hang);
        let e = merge(&[dirs[0].clone(), clash], &tmp.path().join("y")).unwrap_err();
        assert!(
            e.to_string().contains("also holds with other results"),
            "{e}"
        );

        // A dir without a manifest is named.
        let e = merge(&[tmp.path().join("nothing")], &tmp.path().join("z")).unwrap_err();
        assert!(e.to_string().contains("no manifest.json"), "{e}");
    }

    /// Writes a file standing in for a host secret outside the results dir.
    fn secret(dir: &Path) -> PathBuf {
        let path = dir.join("shadow");
        std::fs::write(&path, "root:SECRET-HASH:19000:0:99999:7:::\n").unwrap();
        path
    }

    /// Probes 33 and 34: a symlinked, a truncated, an out-of-range run.json
    /// and a symlinked run dir are each named with the reason; a run dir
    /// without run.json (interrupted) is not; good runs are read.
    #[test]
    fn unreadable_run_json_is_named() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("rd");
        let p = plan("8, 16, 32");
        std::fs::create_dir_all(&root).unwrap();
        write_manifest(&root, &manifest(&p, None)).unwrap();
        let cells: Vec<_> = p.cells.iter().collect();
        let slots = p.slots(&cells);
        for s in &slots[..6] {
            put_run(&root, s, Outcome::Completed);
        }
        let json = |s: &Slot| run_dir(&root, s).join("run.json");
        let secret = secret(tmp.path());
        std::fs::remove_file(json(&slots[0])).unwrap();
        std::os::unix::fs::symlink(&secret, json(&slots[0])).unwrap();
        let text = std::fs::read_to_string(json(&slots[1])).unwrap();
        std::fs::write(json(&slots[1]), &text[..text.len() / 2]).unwrap();
        let inf = text.replacen("\"memory_mb\": ", "\"memory_mb\": 1e400, \"x\": ", 1);
        assert_ne!(inf, text);
        std::fs::write(json(&slots[2]), inf).unwrap();
        std::fs::remove_file(json(&slots[3])).unwrap();
        std::os::unix::fs::symlink(tmp.path(), run_dir(&root, &slots[6])).unwrap();

        let (runs, bad) = runs_checked(&root);
        let mut good = vec![slots[4].id(), slots[5].id()];
        good.sort();
        assert_eq!(runs.keys().cloned().collect::<Vec<_>>(), good);
        let mut want = vec![
            (json(&slots[0]), "a symbolic link, not a regular file"),
            (json(&slots[1]), "EOF while parsing"),
            (json(&slots[2]), "number out of range"),
            (run_dir(&root, &slots[6]), "a symbolic link, not a run dir"),
        ];
        want.sort();
        assert_eq!(bad.len(), want.len(), "{bad:?}");
        for (b, (path, words)) in bad.iter().zip(&want) {
            assert_eq!(&b.path, path);
            assert!(b.error.contains(words), "{}: {}", b.path.display(), b.error);
            assert!(!b.error.contains("SECRET"), "{}", b.error);
        }
        // Resuming reruns them, as it does a missing one.
        for s in &slots[..4] {
            assert!(finished_run(&root, s).is_none(), "{}", s.id());
        }
        assert!(finished_run(&root, &slots[4]).is_some());
    }

    /// Probe 36: a shard whose run holds `console.log -> /etc/shadow` and a
    /// `rootdir -> /root` merges without either: regular files only.
    #[test]
    fn merge_copies_regular_files_only() {
        let p = plan("8");
        let tmp = tempfile::tempdir().unwrap();
        let secret = secret(tmp.path());
        let shard = tmp.path().join("m1");
        std::fs::create_dir_all(&shard).unwrap();
        write_manifest(&shard, &manifest(&p, None)).unwrap();
        let cells: Vec<_> = p.cells.iter().collect();
        let slots = p.slots(&cells);
        for s in &slots {
            put_run(&shard, s, Outcome::Completed);
        }
        let run = run_dir(&shard, &slots[0]);
        std::fs::write(run.join("records.jsonl"), "{}\n").unwrap();
        std::os::unix::fs::symlink(&secret, run.join("console.log")).unwrap();
        std::os::unix::fs::symlink(tmp.path(), run.join("rootdir")).unwrap();
        std::fs::create_dir(run.join("subdir")).unwrap();

        let into = tmp.path().join("merged");
        merge(std::slice::from_ref(&shard), &into).unwrap();
        let merged = run_dir(&into, &slots[0]);
        let mut names: Vec<String> = std::fs::read_dir(&merged)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(names, ["records.jsonl", "run.json"]);
        assert_eq!(all_runs(&into).len(), slots.len());
        // Nothing of the secret anywhere under the merged dir.
        fn walk(d: &Path, out: &mut Vec<PathBuf>) {
            for e in std::fs::read_dir(d).unwrap() {
                let e = e.unwrap();
                if e.file_type().unwrap().is_dir() {
                    walk(&e.path(), out);
                } else {
                    out.push(e.path());
                }
            }
        }
        let mut files = vec![];
        walk(&into, &mut files);
        for f in files {
            let text = std::fs::read_to_string(&f).unwrap();
            assert!(!text.contains("SECRET-HASH"), "{}", f.display());
        }
    }
}
