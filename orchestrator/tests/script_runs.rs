//! Scenario script in real guests: the bundled kernel, the tools and
//! kbuild images (images/, each built once with mmdebstrap and cached in
//! the work dir), real QEMU and guest-init. A script that prints metrics
//! and fails, one that is OOM-killed, one that outlives its timeout, and
//! the batch workload's compile reporting its own figures.

use std::path::{Path, PathBuf};

use mmci::guest::image::{self as images, BuildOptions};
use mmci::results::RunResult;
use mmci::run::guest::{self as run, AttachedImage, RunConfig};
use mmci::run::outcome::Outcome;
use mmci_record::{GuestJob, Record, Scenario, ScriptJob, SwapBackend};
use tokio::sync::{Mutex, OnceCell};

mod common;
use common::guest::{self, records};

static TOOLS: OnceCell<AttachedImage> = OnceCell::const_new();
static KBUILD: OnceCell<AttachedImage> = OnceCell::const_new();
static ONE_GUEST_AT_A_TIME: Mutex<()> = Mutex::const_new(());

fn recipe(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../images")
        .join(name)
}

/// Image `name` of images/, built once and cached in the work dir.
async fn image(cell: &'static OnceCell<AttachedImage>, name: &str) -> AttachedImage {
    cell.get_or_init(|| async {
        let work = common::work_dir();
        let built = images::ensure(&recipe(name), &work, &BuildOptions::default())
            .await
            .unwrap_or_else(|e| {
                panic!("image {name} builds (as root, with mmdebstrap and erofs-utils from ./mmci-setup): {e}")
            });
        AttachedImage {
            path: built.path,
            manifest: built.manifest,
        }
    })
    .await
    .clone()
}

fn script_job(
    name: &str,
    text: &str,
    timeout_s: u64,
    memcg_mb: u64,
    swap: SwapBackend,
) -> GuestJob {
    GuestJob {
        scenario: Scenario::Script,
        duration_s: 10,
        memcg_max_mb: memcg_mb,
        swap,
        swap_delay_ms: 0,
        threads: 7,
        script: Some(ScriptJob {
            name: name.into(),
            image: "tools".into(),
            text: Some(text.into()),
            env: [("GREETING".to_string(), "hello".to_string())].into(),
            timeout_s,
            ..ScriptJob::default()
        }),
        ..GuestJob::default()
    }
}

/// Runs `job` in a guest with the tools image attached, and checks that
/// the guest completed, whatever its script did.
async fn run(id: &str, job: GuestJob, dir: &Path) -> RunResult {
    let tools = image(&TOOLS, "tools").await;
    run_in(id, job, tools, dir).await
}

/// Runs `job` in a guest with `image` attached; the guest must complete.
async fn run_in(id: &str, job: GuestJob, image: AttachedImage, dir: &Path) -> RunResult {
    let timeout = run::default_timeout(&job);
    let cfg = RunConfig {
        image: Some(image),
        ..guest::config(id, job, timeout).await
    };
    let _one = ONE_GUEST_AT_A_TIME.lock().await;
    let r = run::run_guest(&cfg, &dir.join(id), &dir.join("scratch"))
        .await
        .unwrap();
    assert_eq!(
        r.classification.outcome,
        Outcome::Completed,
        "{:?}",
        r.classification
    );
    r
}

fn done_ok(recs: &[Record]) -> bool {
    matches!(recs.last(), Some(Record::Done { ok: true, .. }))
}

#[tokio::test]
async fn script_prints_metrics_and_exits_non_zero() {
    let tmp = tempfile::tempdir().unwrap();
    let text = r#"
echo "$GREETING from $MMCI_SCRIPT: threads=$MMCI_THREADS memcg=$MMCI_MEMCG_MAX_MB"
ps -e -o comm= | grep -c . | sed 's/^/processes: /'
test -w /usr/bin && echo "overlay root is writable"
echo "MMCI-METRIC: answer=42 ratio=0.25"
echo "MMCI-METRIC: broken"
echo "to stderr" >&2
exit 3
"#;
    let r = run(
        "metrics",
        script_job("metrics", text, 60, 64, SwapBackend::Off),
        tmp.path(),
    )
    .await;
    let s = r.metrics.script().expect("script results");
    assert_eq!(
        (s.code, s.signal, s.timed_out),
        (Some(3), None, false),
        "{s:?}"
    );
    assert_eq!(s.metrics["answer"], 42.0);
    assert_eq!(s.metrics["ratio"], 0.25);
    assert_eq!(s.bad_metric_lines.len(), 1, "{s:?}");
    assert!(s.bad_metric_lines[0].contains("not name=value"), "{s:?}");
    let out = std::fs::read_to_string(tmp.path().join("metrics/script-output.log")).unwrap();
    assert!(
        out.contains("hello from metrics: threads=7 memcg=64"),
        "{out}"
    );
    assert!(out.contains("overlay root is writable"), "{out}");
    assert!(out.contains("! to stderr"), "{out}");
    assert!(out.contains("processes: "), "{out}");
    // The kernel-side counters were taken around it, as for scenario A.
    let m = r.metrics.mglru().expect("scenario A counters");
    assert_eq!(m.oom_kills, 0);
    // The image and its package versions are in the run's manifest.
    let image = r.image.as_ref().expect("image manifest");
    assert_eq!(image.name, "tools");
    assert!(image.packages.iter().any(|p| p.name == "stress-ng"));
    let recs = records(&tmp.path().join("metrics"));
    assert!(recs
        .iter()
        .any(|r| matches!(r, Record::Setup { step, detail, .. }
        if step == "image" && detail.contains("erofs") && detail.contains("read-only"))));
    assert!(done_ok(&recs));
}

#[tokio::test]
async fn oom_killed_script_leaves_pid1_reporting() {
    let tmp = tempfile::tempdir().unwrap();
    // sort must hold /dev/zero's one endless line in memory: in a 16 MiB
    // cgroup without swap it is the biggest task and the OOM killer's. (A
    // shell's command substitution grew too slowly under TCG: 120 s without
    // reaching 16 MiB.) exec: the script's own process is the one killed.
    let text = "echo start\nexec sort /dev/zero\necho never reached\n";
    let r = run(
        "oom",
        script_job("oom", text, 120, 16, SwapBackend::Off),
        tmp.path(),
    )
    .await;
    let s = r.metrics.script().expect("script results");
    assert!(s.oom_killed, "{s:?}");
    assert_eq!(s.signal, Some(9), "{s:?}");
    assert!(!s.timed_out);
    assert!(r.metrics.mglru().unwrap().oom_kills >= 1);
    let out = std::fs::read_to_string(tmp.path().join("oom/script-output.log")).unwrap();
    assert!(
        out.contains("start") && !out.contains("never reached"),
        "{out}"
    );
    // PID 1 went on: the counters after the kill and the last record arrived.
    let recs = records(&tmp.path().join("oom"));
    assert!(recs.iter().any(|r| matches!(
        r,
        Record::Snapshot {
            phase: mmci_record::Phase::After,
            ..
        }
    )));
    assert!(done_ok(&recs));
}

#[tokio::test]
async fn script_outliving_its_timeout_is_killed() {
    let tmp = tempfile::tempdir().unwrap();
    // A background child too: the whole cgroup goes, not just the shell.
    let text = "echo start\nsleep 600 &\nsleep 600\n";
    let r = run(
        "timeout",
        script_job("timeout", text, 5, 64, SwapBackend::Off),
        tmp.path(),
    )
    .await;
    let s = r.metrics.script().expect("script results");
    assert!(s.timed_out, "{s:?}");
    assert_eq!(s.signal, Some(9), "{s:?}");
    assert!(
        (5000..30000).contains(&s.elapsed_ms),
        "killed at 5 s, not {} ms",
        s.elapsed_ms
    );
    assert!(done_ok(&records(&tmp.path().join("timeout"))));
}

#[tokio::test]
async fn batch_compile_reports_its_figures() {
    let tmp = tempfile::tempdir().unwrap();
    // images/kbuild's compile (matrix/real-workloads.yaml's batch job) on
    // one small object of the prepared kernel tree: make, gcc and the
    // tree's generated headers all work chrooted in the image, and the
    // script's own figures arrive as metrics.
    let job = GuestJob {
        scenario: Scenario::Script,
        duration_s: 60,
        memcg_max_mb: 96,
        swap: SwapBackend::DmDelay,
        swap_delay_ms: 2,
        script: Some(ScriptJob {
            name: "kbuild".into(),
            image: "kbuild".into(),
            command: vec!["/usr/local/bin/kbuild-load".into()],
            env: [
                ("KBUILD_TARGETS".to_string(), "lib/ctype.o".to_string()),
                ("KBUILD_JOBS".to_string(), "2".to_string()),
            ]
            .into(),
            timeout_s: 240,
            ..ScriptJob::default()
        }),
        ..GuestJob::default()
    };
    let kbuild = image(&KBUILD, "kbuild").await;
    let r = run_in("kbuild", job, kbuild, tmp.path()).await;
    let s = r.metrics.script().expect("script results");
    let out = std::fs::read_to_string(tmp.path().join("kbuild/script-output.log")).unwrap();
    assert_eq!((s.code, s.timed_out), (Some(0), false), "{s:?}\n{out}");
    assert!(out.contains("CC      lib/ctype.o"), "{out}");
    assert_eq!(s.metrics["files"], 1.0, "{s:?}");
    assert!(s.metrics["compile_s"] > 0.0, "{s:?}");
    assert!(s.metrics["files_per_min"] > 0.0, "{s:?}");
    assert!(s.bad_metric_lines.is_empty(), "{s:?}");
    let image = r.image.as_ref().expect("image manifest");
    assert!(image.packages.iter().any(|p| p.name == "linux-source-6.1"));
}
