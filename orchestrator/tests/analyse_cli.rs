//! `mmci analyse` through the binary: verdicts as exit codes, the JSON
//! file, bad options, results dirs with unreadable or symlinked files
//! (named, never followed, also by `merge`). The results dir is synthetic (the benchmark's runs:
//! a patched kernel that throttles, isolates and touches more, under KVM).

mod common;

use std::path::Path;
use std::process::Output;

use mmci::analysis::{synthetic::synthetic, Comparison, Status};
use mmci::error::exit;
use mmci::results::dir as results_dir;

/// A results dir of 2 cells x base/patched x 5 repeats.
fn results_dir(root: &Path) {
    let (m, runs, _) = synthetic(20);
    std::fs::create_dir_all(root).unwrap();
    results_dir::write_manifest(root, &m).unwrap();
    for (id, r) in runs {
        let dir = root.join(results_dir::RUNS).join(id);
        std::fs::create_dir_all(&dir).unwrap();
        mmci::results::write_run(&dir, &r).unwrap();
    }
}

fn analyse(args: &[&str]) -> Output {
    common::bin_blocking()
        .arg("analyse")
        .arg("--results")
        .args(args)
        .output()
        .unwrap()
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

#[test]
fn verdicts_are_exit_codes_and_json() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("results");
    results_dir(&dir);
    let d = dir.to_str().unwrap();
    let json = tmp.path().join("comparison.json");

    let verdict = "verdict: PASS: no regression found in 20 runs on 2 cells (guards: oom_kills, \
                   touches, pswpout_per_ktouch, pswpin_per_ktouch, pgmajfault_per_ktouch); 8 \
                   expectation(s) met";
    let o = analyse(&[d]);
    assert_eq!(o.status.code(), Some(exit::OK), "{}", text(&o));
    assert!(text(&o).contains(verdict), "{}", text(&o));
    // --json: the comparison on standard output, the same verdict and exit code.
    let o = analyse(&[d, "--json"]);
    assert_eq!(o.status.code(), Some(exit::OK), "{}", text(&o));
    let c: Comparison = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        (c.format, c.verdict.status),
        (mmci::analysis::COMPARISON_FORMAT, Status::Pass)
    );
    // --output: into a file instead.
    let o = analyse(&[d, "--json", "--output", json.to_str().unwrap()]);
    assert_eq!((o.status.code(), o.stdout.len()), (Some(exit::OK), 0));
    let c: Comparison = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(c.verdict.status, Status::Pass);
    // The old spellings (`analyse DIR --json FILE`) as before, warned about.
    std::fs::remove_file(&json).unwrap();
    let o = common::bin_blocking()
        .args(["analyse", d, "--json", json.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(exit::OK), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    for warned in [
        "mmci: warning: `analyse DIR` is deprecated and goes in the next release: use `analyse --results DIR`",
        "mmci: warning: --json FILE is deprecated",
    ] {
        assert!(err.contains(warned), "{err}");
    }
    assert!(String::from_utf8_lossy(&o.stdout).contains(verdict));
    let c: Comparison = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(c.verdict.status, Status::Pass);

    let o = analyse(&[d, "--expect", "throttle_isolated=zero"]);
    assert_eq!(o.status.code(), Some(exit::RUN_FAILED), "{}", text(&o));
    assert!(
        text(&o).contains("throttle_isolated zero: nonzero in 5 of 5 runs"),
        "{}",
        text(&o)
    );

    let o = analyse(&[d, "--min-runs", "6"]);
    assert_eq!(o.status.code(), Some(exit::INCONCLUSIVE), "{}", text(&o));
    assert!(
        text(&o).contains("5 base and 5 candidate run(s), need 6 a side"),
        "{}",
        text(&o)
    );
}

/// `--spread`: the table, the rows as JSON with `--json` (on standard
/// output or in `--output`), and the old `--json FILE` writes FILE and
/// prints the table, as its deprecation notice says; the comparison's
/// options are refused.
#[test]
fn spread_as_table_json_and_the_old_json_file() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("results");
    results_dir(&dir);
    let d = dir.to_str().unwrap();
    let rows = |bytes: &[u8]| -> Vec<serde_json::Value> { serde_json::from_slice(bytes).unwrap() };

    let o = analyse(&[d, "--spread"]);
    assert_eq!(o.status.code(), Some(exit::OK), "{}", text(&o));
    let table = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(table.contains("touches"), "{table}");
    let o = analyse(&[d, "--spread", "--json"]);
    assert_eq!(o.status.code(), Some(exit::OK), "{}", text(&o));
    let on_stdout = rows(&o.stdout);
    assert!(!on_stdout.is_empty());

    let file = tmp.path().join("spread.json");
    let o = common::bin_blocking()
        .args(["analyse", d, "--spread", "--json", file.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(exit::OK), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("--json FILE is deprecated"),
        "{}",
        text(&o)
    );
    assert_eq!(String::from_utf8_lossy(&o.stdout), table);
    assert_eq!(rows(&std::fs::read(&file).unwrap()), on_stdout);

    let o = analyse(&[d, "--spread", "--alpha", "0.05"]);
    assert_eq!(o.status.code(), Some(exit::USAGE), "{}", text(&o));
    assert!(text(&o).contains("--alpha"), "{}", text(&o));
}

#[test]
fn bad_options_and_dirs_are_usage_errors() {
    let tmp = tempfile::tempdir().unwrap();
    results_dir(tmp.path());
    let d = tmp.path().to_str().unwrap();
    for (args, msg) in [
        (
            vec![d, "--alpha", "2"],
            "--alpha 2: give a level between 0 and 1",
        ),
        (
            vec![d, "--expect", "touches=up"],
            "--expect touches=up: `up` is not one of",
        ),
        (
            vec![d, "--expect", "touchez=increase"],
            "expect: unknown metric `touchez`; known metrics: throttle_isolated",
        ),
        (
            vec!["/nonexistent"],
            "/nonexistent is not an mmci results dir",
        ),
    ] {
        let o = analyse(&args);
        assert_eq!(o.status.code(), Some(exit::USAGE), "{}", text(&o));
        assert!(text(&o).contains(msg), "{}", text(&o));
    }
}

#[test]
fn the_table_fits_columns_unless_wide() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("results");
    results_dir(&dir);
    let d = dir.to_str().unwrap();
    let run = |args: &[&str], columns: &str| {
        let o = common::bin_blocking()
            .arg("analyse")
            .arg("--results")
            .args(args)
            .env("COLUMNS", columns)
            .output()
            .unwrap();
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    let table = |out: &str| -> Vec<String> {
        out.lines()
            .filter(|l| l.starts_with('+') || l.starts_with('|'))
            .map(str::to_string)
            .collect()
    };
    let fitted = run(&[d], "100");
    assert!(!table(&fitted).is_empty(), "{fitted}");
    for l in table(&fitted) {
        assert!(l.chars().count() <= 100, "{l}");
    }
    assert!(fitted.contains("--wide for every column"), "{fitted}");
    let wide = run(&[d, "--wide"], "100");
    assert!(wide.contains("p MWU / Welch"), "{wide}");
    assert!(table(&wide).iter().any(|l| l.chars().count() > 100));
    assert!(!wide.contains("--wide for every column"));
}

/// Results dirs that cannot be read or written are named with the option
/// of the command at hand: `merge` writes its --results, and reading a dir
/// has nothing to choose.
#[test]
fn unreadable_and_unwritable_dirs_name_the_option_of_the_command() {
    let tmp = tempfile::tempdir().unwrap();
    let shard = tmp.path().join("shard");
    results_dir(&shard);
    // Root may write anywhere: a path below a regular file is unwritable.
    let file = tmp.path().join("file");
    std::fs::write(&file, b"").unwrap();
    let into = file.join("merged");
    let o = common::bin_blocking()
        .args([
            "merge",
            "--results",
            into.to_str().unwrap(),
            shard.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(exit::USAGE), "{}", text(&o));
    assert!(
        text(&o).contains(&format!(
            "results dir {} is not writable: choose another with --results",
            into.join(results_dir::RUNS).display()
        )),
        "{}",
        text(&o)
    );
    // A manifest that is a directory cannot be read: said without a hint
    // to choose another --results, which analyse does not have.
    let odd = tmp.path().join("odd");
    std::fs::create_dir_all(odd.join(results_dir::MANIFEST)).unwrap();
    let o = analyse(&[odd.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(exit::USAGE), "{}", text(&o));
    let t = text(&o);
    assert!(
        t.contains(&format!(
            "cannot read {}",
            odd.join(results_dir::MANIFEST).display()
        )),
        "{t}"
    );
    assert!(!t.contains("--results"), "{t}");
}

/// Probes 33 to 36: run.json files that are a symlink to a host secret,
/// truncated or out of range are each named with the reason (not silently
/// "without result"), and counted; a symlinked manifest is refused; merge
/// copies no symlink, so the secret reaches no output.
#[test]
fn hostile_results_files_are_named_and_never_followed() {
    let tmp = tempfile::tempdir().unwrap();
    let secret = tmp.path().join("shadow");
    std::fs::write(&secret, "root:SECRET-HASH:19000:0:99999:7:::\n").unwrap();
    let dir = tmp.path().join("rd");
    results_dir(&dir);
    let runs = dir.join(results_dir::RUNS);
    let mut ids: Vec<_> = std::fs::read_dir(&runs)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    ids.sort();
    let json = |i: usize| ids[i].join("run.json");
    std::fs::remove_file(json(0)).unwrap();
    std::os::unix::fs::symlink(&secret, json(0)).unwrap();
    let good = std::fs::read_to_string(json(1)).unwrap();
    std::fs::write(json(1), &good[..good.len() / 3]).unwrap();
    std::fs::write(
        json(2),
        good.replacen("\"memory_mb\": ", "\"memory_mb\": 1e400, \"x\": ", 1),
    )
    .unwrap();
    std::os::unix::fs::symlink(&secret, ids[3].join("console.log")).unwrap();

    let o = analyse(&[dir.to_str().unwrap()]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(exit::INCONCLUSIVE), "{t}");
    for (i, words) in [
        (0, "a symbolic link, not a regular file"),
        (1, "EOF while parsing"),
        (2, "number out of range"),
    ] {
        assert!(
            t.contains(&format!("{}: {words}", json(i).display())),
            "{words}: {t}"
        );
        // In the report itself too, with what the run lost.
        assert!(
            String::from_utf8_lossy(&o.stdout).contains(&format!(
                "runs/{}/run.json not read: {words}",
                ids[i].file_name().unwrap().to_string_lossy()
            )),
            "{words}: {t}"
        );
    }
    assert!(
        t.contains("left out: the run's result (it counts as a run without a result)"),
        "{t}"
    );
    assert!(
        t.contains(&format!(
            "3 run(s) in {} could not be read; they count as runs without a result",
            dir.display()
        )),
        "{t}"
    );
    assert!(!t.contains("SECRET"), "{t}");

    let merged = tmp.path().join("merged");
    let o = common::bin_blocking()
        .args([
            "merge",
            "--results",
            merged.to_str().unwrap(),
            dir.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    let t = text(&o);
    assert_eq!(o.status.code(), Some(exit::OK), "{t}");
    assert!(
        t.contains(&format!(
            "{}: a symbolic link, not a regular file; not merged",
            ids[3].join("console.log").display()
        )),
        "{t}"
    );
    let copied = merged
        .join(results_dir::RUNS)
        .join(ids[3].file_name().unwrap());
    assert!(copied.join("run.json").is_file());
    assert!(!copied.join("console.log").exists());
    assert!(!t.contains("SECRET"), "{t}");

    // A manifest that is a symlink is refused, not parsed.
    std::fs::remove_file(dir.join(results_dir::MANIFEST)).unwrap();
    std::os::unix::fs::symlink(&secret, dir.join(results_dir::MANIFEST)).unwrap();
    let o = analyse(&[dir.to_str().unwrap()]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(exit::USAGE), "{t}");
    assert!(
        t.contains("a symbolic link, not a regular file; refused"),
        "{t}"
    );
    assert!(!t.contains("SECRET"), "{t}");
}

/// Runs `mmci ARGS` with at most 1 GiB of address space (`ulimit -v`;
/// the old read of a records.jsonl linked to /dev/zero took 2.1 GB) and a
/// generous wall-clock limit (a FIFO hung the old `report`): its output
/// and exit code, or a panic naming the command that did not finish.
fn bounded(args: &[&str]) -> Output {
    use std::io::Read;
    use std::os::unix::process::CommandExt;
    const ADDRESS_SPACE: libc::rlim_t = 1 << 30;
    let mut cmd = common::bin_blocking();
    cmd.args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    // SAFETY: setrlimit only, between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            let lim = libc::rlimit {
                rlim_cur: ADDRESS_SPACE,
                rlim_max: ADDRESS_SPACE,
            };
            if libc::setrlimit(libc::RLIMIT_AS, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut child = cmd.spawn().unwrap();
    // Read on threads: a report larger than a pipe must not stall mmci.
    let drain = |mut r: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut v = vec![];
            r.read_to_end(&mut v).unwrap();
            v
        })
    };
    let stdout = drain(Box::new(child.stdout.take().unwrap()));
    let stderr = drain(Box::new(child.stderr.take().unwrap()));
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("mmci {args:?} did not finish in 60 s");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    Output {
        status,
        stdout: stdout.join().unwrap(),
        stderr: stderr.join().unwrap(),
    }
}

/// Review M5: a run's records.jsonl that is a link to /dev/zero, a FIFO
/// without a writer, or a (sparse) file over MAX_RECORDS_FILE_BYTES is
/// refused, named with the reason in `analyse` and in every report format,
/// and the commands finish in bounded time and memory with the verdict
/// the dir has without those plots (the runs' results stand).
#[test]
fn records_files_that_are_devices_fifos_or_huge_are_named_and_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("rd");
    common::results::copy_dir(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/smoke-matrix"),
        &dir,
    );
    let d = dir.to_str().unwrap();
    let clean = bounded(&["analyse", "--results", d]);
    let clean_verdict = text(&clean)
        .lines()
        .find(|l| l.starts_with("verdict: "))
        .map(str::to_string)
        .unwrap_or_else(|| panic!("{}", text(&clean)));

    let runs = common::results::runs_of(&dir, "base");
    let records = |i: usize| runs[i].join("records.jsonl");
    let named = |i: usize| {
        format!(
            "runs/{}/records.jsonl not read",
            runs[i].file_name().unwrap().to_string_lossy()
        )
    };
    std::fs::remove_file(records(0)).unwrap();
    std::os::unix::fs::symlink("/dev/zero", records(0)).unwrap();
    std::fs::remove_file(records(1)).unwrap();
    let fifo = std::ffi::CString::new(records(1).to_str().unwrap()).unwrap();
    // SAFETY: mkfifo on a path this test owns.
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
    std::fs::OpenOptions::new()
        .write(true)
        .open(records(2))
        .unwrap()
        .set_len(mmci::analysis::series::MAX_RECORDS_FILE_BYTES + 1)
        .unwrap();
    let refusals = [
        (0, ": a symbolic link, not a regular file; refused"),
        (1, ": a FIFO, not a regular file; refused; left out"),
        (
            2,
            ": larger than 268435456 bytes, the limit (MAX_RECORDS_FILE_BYTES); refused;",
        ),
    ];

    let o = bounded(&["analyse", "--results", d]);
    let t = text(&o);
    assert_eq!(o.status.code(), clean.status.code(), "{t}");
    assert!(t.contains(&clean_verdict), "{t}");
    for (i, why) in refusals {
        assert!(t.contains(&format!("{}{why}", named(i))), "{t}");
        // Said on stderr too, with the path given.
        assert!(
            String::from_utf8_lossy(&o.stderr).contains(&format!("{}: ", records(i).display())),
            "{t}"
        );
    }
    for format in ["markdown", "email", "html", "json"] {
        let o = bounded(&["report", "--results", d, "--format", format]);
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(o.status.success(), "{format}: {}", text(&o));
        for (i, why) in refusals {
            let line = format!("{}{why}", named(i));
            let shown = match format {
                // JSON: the path and the reason as fields.
                "json" => {
                    let c: Comparison = serde_json::from_str(&out).unwrap();
                    c.unreadable.iter().any(|u| u.line().contains(&line))
                }
                // Markdown escapes `_` in the run's name.
                "markdown" => out.replace('\\', "").contains(&line),
                // The email wraps at 72 columns.
                "email" => out
                    .split_whitespace()
                    .collect::<Vec<_>>()
                    .join(" ")
                    .contains(&line),
                // HTML escapes the slashes.
                "html" => out.replace("&#x2f;", "/").contains(&line),
                _ => out.contains(&line),
            };
            assert!(shown, "{format}: {line}: {out}");
        }
    }
}
