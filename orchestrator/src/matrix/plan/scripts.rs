//! `scripts:` entries: names checked, script files read, and [`confine`],
//! which keeps every path a matrix names next to the matrix.

use super::*;

/// A metric or script name: lower case letters, digits and `_`.
pub(super) fn plain_name(n: &str) -> bool {
    !n.is_empty()
        && n.len() <= 64
        && n.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}

/// Checks one `scripts:` entry and reads its file.
pub(super) fn resolve_script(
    name: &str,
    e: &ScriptEntry,
    base_dir: &Path,
) -> Result<ScriptDef, String> {
    if !plain_name(name) {
        return Err(format!(
            "script name `{name}`: use lower case letters, digits and _"
        ));
    }
    let recipe = confine(base_dir, "image", Path::new(&e.image))
        .map_err(|err| format!("script `{name}`: {err}"))?;
    if !recipe
        .join(crate::guest::image::recipe::RECIPE_FILE)
        .is_file()
    {
        return Err(format!(
            "script `{name}`: image {} has no {} (paths are relative to the matrix file)",
            recipe.display(),
            crate::guest::image::recipe::RECIPE_FILE
        ));
    }
    let image = recipe
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let text = match &e.file {
        Some(f) => {
            let full = confine(base_dir, "file", Path::new(f))
                .map_err(|err| format!("script `{name}`: {err}"))?;
            Some(
                crate::host::fs::read_capped_to_string(
                    &full,
                    MAX_FILE_BYTES,
                    "MAX_FILE_BYTES",
                    crate::host::fs::Accept::Regular,
                )
                .map_err(|err| format!("script `{name}`: file {}: {err}", full.display()))?,
            )
        }
        None => None,
    };
    if e.command.is_empty() && text.is_none() {
        return Err(format!(
            "script `{name}`: give `command:` (argv in the image) or `file:` (a script to copy in)"
        ));
    }
    for m in e.metrics.keys() {
        if !plain_name(m) {
            return Err(format!(
                "script `{name}`: metric `{m}`: use lower case letters, digits and _ (as printed after {})",
                mmci_record::METRIC_PREFIX
            ));
        }
        if crate::scenario::catalog::metric(m).is_some() {
            return Err(format!(
                "script `{name}`: metric `{m}` is one of mmci's own; give the script's figure another name"
            ));
        }
    }
    if e.timeout_s == Some(0) {
        return Err(format!("script `{name}`: timeout_s must be at least 1"));
    }
    Ok(ScriptDef {
        recipe,
        image: image.clone(),
        metrics: e.metrics.clone(),
        job: ScriptJob {
            name: name.to_string(),
            image,
            command: e.command.clone(),
            text,
            env: e.env.clone(),
            timeout_s: e.timeout_s.unwrap_or(0),
        },
    })
}

/// `given`, the value of a matrix's `key` (`series`, `image`, `file`),
/// resolved against the matrix file's directory `base_dir`: the canonical
/// path (symbolic links resolved), which must lie in that directory or in
/// the git repository that holds it (the nearest directory above with a
/// `.git`). A matrix from elsewhere (a pull request, a CI input) must not
/// copy /etc/shadow into the plan, the manifest and the report.
pub fn confine(base_dir: &Path, key: &str, given: &Path) -> Result<PathBuf, String> {
    let base_dir = if base_dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        base_dir
    };
    let full = base_dir.join(given);
    let real = full.canonicalize().map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            format!(
                "{key} {} not found (paths are relative to the matrix file)",
                full.display()
            )
        } else {
            format!("{key} {}: {e}", full.display())
        }
    })?;
    let dir = base_dir.canonicalize().map_err(|e| {
        format!(
            "{key} {}: the matrix file's directory {}: {e}",
            given.display(),
            base_dir.display()
        )
    })?;
    let repo = dir.ancestors().find(|a| a.join(".git").exists());
    if real.starts_with(&dir) || repo.is_some_and(|r| real.starts_with(r)) {
        return Ok(real);
    }
    Err(format!(
        "{key} {}: {} is outside the matrix file's directory {}{}; a matrix may only name files next to it or in its repository: move the file there",
        given.display(),
        real.display(),
        dir.display(),
        repo.map(|r| format!(" and its repository {}", r.display()))
            .unwrap_or_default()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matrix::plan::tests::script_dir;

    const SCRIPTS: &str = "scripts:\n  repro:\n    image: ../images/tools\n    file: scripts/r.sh\n    metrics:\n      ops: {unit: ops, better: higher}\n";

    #[test]
    fn script_cells_get_the_script_and_its_metrics() {
        let tmp = script_dir();
        let text = format!("{SCRIPTS}axes:\n  script: [repro]\n  threads: [4]\nexpect:\n  ops: increase\n  pswpout: decrease\n");
        let p = from_text(
            &text,
            "m.yaml",
            &tmp.path().join("matrix"),
            &Overrides::default(),
        )
        .unwrap();
        let job = &p.cells[0].job;
        assert_eq!(job.scenario, crate::scenario::registry::RUNS_SCRIPTS);
        let s = job.script.as_ref().unwrap();
        assert_eq!((s.name.as_str(), s.image.as_str()), ("repro", "tools"));
        assert_eq!(s.text.as_deref(), Some("echo hi\n"));
        assert!(p.cells[0].id.contains("-script-"));
        assert_eq!(p.scripts["repro"].metrics["ops"].unit, "ops");
        // The cell measures scenario A's kernel-side counters, how the
        // script ended and what it declares; not the built-in workload's.
        let measured = crate::matrix::plan::expectations::of_cell(&p.cells[0], &p.scripts);
        let names: Vec<&str> = measured.iter().map(|m| m.name.as_ref()).collect();
        for n in ["pswpout", "throttle_isolated", "script_exit_code", "ops"] {
            assert!(names.contains(&n), "{n}: {names:?}");
        }
        for n in ["touches", "pswpout_per_ktouch", "noio_calls"] {
            assert!(!names.contains(&n), "{n}: {names:?}");
        }
    }

    #[test]
    fn script_errors_name_the_position_and_the_fix() {
        let tmp = script_dir();
        let base = tmp.path().join("matrix");
        // (matrix text, expected words)
        let cases = [
            (format!("{SCRIPTS}axes:\n  script: [other]\n"), "line 8 column 12: script `other` is not one of the matrix's scripts (repro)"),
            ("axes:\n  script: [repro]\n".to_string(), "script `repro`: this matrix has no `scripts:` section"),
            ("axes:\n  scenario: [script]\n".to_string(), "scenario script needs `script: NAME`"),
            (format!("{SCRIPTS}axes:\n  script: [repro]\nexpect:\n  opz: increase\n"), "unknown metric `opz`"),
            ("scripts:\n  r:\n    image: ../images/nope\n    command: [x]\naxes: {}\n".to_string(), "/images/nope not found (paths are relative to the matrix file)"),
            ("scripts:\n  r:\n    image: ../matrix\n    command: [x]\naxes: {}\n".to_string(), "has no image.yaml"),
            ("scripts:\n  r:\n    image: ../images/tools\naxes: {}\n".to_string(), "give `command:`"),
            ("scripts:\n  r:\n    image: ../images/tools\n    command: [x]\n    metrics:\n      pswpout: {unit: p, better: lower}\naxes: {}\n".to_string(), "one of mmci's own"),
            ("scripts:\n  r:\n    image: ../images/tools\n    comand: [x]\naxes: {}\n".to_string(), "unknown field `comand`"),
            (format!("{SCRIPTS}axes:\n  script: [repro]\nexpect:\n  touches: increase\n"), "touches is measured in mglru_isolation runs, and this matrix has no mglru_isolation cell"),
        ];
        for (text, words) in cases {
            let e = from_text(&text, "m.yaml", &base, &Overrides::default())
                .unwrap_err()
                .to_string();
            assert!(e.contains(words), "{text}\n=> {e}");
        }
    }

    /// Probes 25 and 26, and the ways around a prefix check: `series`,
    /// `image` and `file` resolve (symbolic links and `..` included) to
    /// the matrix file's directory or its repository, or are refused naming
    /// the key and the file; a matrix outside any repository has only its
    /// own directory.
    #[test]
    fn matrix_paths_stay_next_to_the_matrix() {
        let tmp = tempfile::tempdir().unwrap();
        let t = tmp.path().canonicalize().unwrap();
        let mkfile = |rel: &str, text: &str| {
            let p = t.join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(&p, text).unwrap();
            p
        };
        std::fs::create_dir_all(t.join("repo/.git")).unwrap();
        mkfile("repo/matrix/local.mbox", "");
        mkfile("repo/kernels/series/s.mbox", "");
        mkfile("repo/images/tools/image.yaml", "suite: bookworm\n");
        let secret = mkfile("outside/shadow", "root:SECRET-HASH:::\n");
        std::os::unix::fs::symlink(&secret, t.join("repo/matrix/innocent.mbox")).unwrap();
        std::os::unix::fs::symlink(t.join("outside"), t.join("repo/images/linked")).unwrap();
        mkfile("norepo/m/a.mbox", "");
        let repo_m = t.join("repo/matrix");
        let norepo_m = t.join("norepo/m");
        let outside = "is outside the matrix file's directory";
        // (matrix dir, key, value, Ok(resolved, relative to t) or Err(words))
        let cases: &[(&Path, &str, &str, Result<&str, &str>)] = &[
            (
                &repo_m,
                "series",
                "local.mbox",
                Ok("repo/matrix/local.mbox"),
            ),
            (
                &repo_m,
                "series",
                "./local.mbox",
                Ok("repo/matrix/local.mbox"),
            ),
            (
                &repo_m,
                "series",
                "../kernels/series/s.mbox",
                Ok("repo/kernels/series/s.mbox"),
            ),
            (&repo_m, "image", "../images/tools", Ok("repo/images/tools")),
            (&repo_m, "series", "/etc/shadow", Err(outside)),
            (&repo_m, "file", "/etc/passwd", Err(outside)),
            (&repo_m, "image", "/", Err(outside)),
            (&repo_m, "series", "../../outside/shadow", Err(outside)),
            (&repo_m, "series", "innocent.mbox", Err(outside)),
            (&repo_m, "image", "../images/linked", Err(outside)),
            (
                &repo_m,
                "series",
                "missing.mbox",
                Err("missing.mbox not found (paths are relative to the matrix file)"),
            ),
            (&norepo_m, "series", "a.mbox", Ok("norepo/m/a.mbox")),
            (
                &norepo_m,
                "series",
                "../../repo/kernels/series/s.mbox",
                Err(outside),
            ),
        ];
        for (dir, key, given, want) in cases {
            let got = confine(dir, key, Path::new(given));
            match (&got, want) {
                (Ok(p), Ok(rel)) => assert_eq!(p, &t.join(rel), "{key}: {given}"),
                (Err(e), Err(words)) => {
                    assert!(e.contains(words), "{key}: {given}: {e}");
                    assert!(e.starts_with(&format!("{key} ")), "{e}");
                }
                _ => panic!("{key}: {given}: got {got:?}, want {want:?}"),
            }
        }
        // The repository is named when there is one.
        let e = confine(&repo_m, "series", Path::new("/etc/shadow")).unwrap_err();
        assert!(
            e.contains(&format!("and its repository {}", t.join("repo").display())),
            "{e}"
        );
        assert!(!e.contains("SECRET"), "{e}");

        // Through the matrix: probe 25 (`series: /etc/shadow`) and probe 26
        // (`scripts: leak: {image: ..., file: /etc/shadow}`) are refused
        // with the file, line and key, and nothing of the file is read.
        let matrix = |text: &str| {
            from_text(text, "m.yaml", &repo_m, &Overrides::default()).map_err(|e| e.to_string())
        };
        let cases = [
            (
                "axes:\n  threads: [1]\nkernels:\n  - name: base\n  - name: p\n    series: /etc/shadow\n".to_string(),
                "m.yaml: line 5 column 5: kernel `p`: series /etc/shadow: /etc/shadow is outside the matrix file's directory",
            ),
            (
                format!("scripts:\n  leak:\n    image: ../images/tools\n    file: {}\naxes:\n  script: [leak]\n", secret.display()),
                "m.yaml: line 3 column 5: script `leak`: file ",
            ),
            (
                "scripts:\n  leak:\n    image: /etc\n    command: [x]\naxes: {}\n".to_string(),
                "script `leak`: image /etc: /etc is outside the matrix file's directory",
            ),
        ];
        for (text, words) in cases {
            let e = matrix(&text).unwrap_err();
            assert!(e.contains(words), "{text}\n=> {e}");
            assert!(!e.contains("SECRET"), "{e}");
        }
        let ok = matrix("scripts:\n  r:\n    image: ../images/tools\n    command: [x]\naxes:\n  script: [r]\nkernels:\n  - name: base\n  - name: p\n    series: ../kernels/series/s.mbox\n").unwrap();
        assert_eq!(
            ok.variants[1].series,
            Some(crate::series::SeriesSpec::from_path(
                &t.join("repo/kernels/series/s.mbox")
            ))
        );
    }
}
