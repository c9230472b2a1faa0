//! The lore side against a real public-inbox (Debian's `public-inbox`, the
//! software lore.kernel.org runs): an inbox made in a temp dir, threads of
//! the lore-threads corpus and the bundled series imported with
//! public-inbox-mda, an `all` extindex (lore's /all/), and
//! public-inbox-httpd on 127.0.0.1 in its own process group, killed when the
//! test ends. `--lore` fetches t.mbox.gz from it and `mmci watch --atom`
//! reads its Atom feed, exactly as from lore.

mod common;

use std::io::Read;
use std::path::Path;
use std::time::Duration;

use mmci::host::process::GroupChild;
use mmci::series::{self, fetch::Fetcher, SeriesSpec};
use tokio::process::Command;

mod lore_corpus {
    use std::path::PathBuf;
    pub fn dir() -> PathBuf {
        std::env::var_os("MMCI_LORE_FIXTURES")
            .map(PathBuf::from)
            .unwrap_or_else(|| {
                PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/lore-threads")
            })
    }
}

const NUMA: &str = "partial-reroll-v2-cover-with-v4-4of4-then-v5-4of4_numa-cling.t.mbox.gz";
const NUMA_ROOT: &str = "60b59306-5e36-e587-9145-e90657daec41@linux.alibaba.com";
const KMEM: &str = "clean-v3-0of3-base-commit_memcg-kmem-cache.t.mbox.gz";
const KMEM_ROOT: &str = "20250425031935.76411-1-link@vivo.com";

/// A running public-inbox; the httpd's process group dies with it.
struct PublicInbox {
    _dir: tempfile::TempDir,
    httpd: GroupChild,
    base: String,
}

fn gunzip(path: &Path) -> Vec<u8> {
    let gz = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(&gz[..])
        .read_to_end(&mut out)
        .unwrap();
    out
}

async fn run(cmd: &mut Command, what: &str) {
    cmd.stdin(std::process::Stdio::null());
    let mut child = GroupChild::spawn(cmd)
        .unwrap_or_else(|e| panic!("{what}: {e} (./mmci-setup --test installs public-inbox)"));
    let done = child
        .wait_timeout(Duration::from_secs(120), Duration::from_secs(2))
        .await
        .unwrap();
    assert!(done.status.success() && !done.timed_out, "{what}: {done:?}");
}

impl PublicInbox {
    async fn start(mboxes: &[Vec<u8>]) -> PublicInbox {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().to_path_buf();
        let config = d.join("config");
        let env = |c: &mut Command| {
            c.env("PI_CONFIG", &config)
                .env("HOME", &d)
                .env("ORIGINAL_RECIPIENT", "cgroups@vger.kernel.org");
        };
        let mut c = Command::new("public-inbox-init");
        c.args(["-V2", "-L", "basic", "cgroups"])
            .arg(d.join("inbox"))
            .args(["http://127.0.0.1/cgroups", "cgroups@vger.kernel.org"]);
        env(&mut c);
        run(&mut c, "public-inbox-init").await;
        for (k, v) in [
            ("publicinboxmda.spamcheck", "none".to_string()),
            ("extindex.all.topdir", d.join("all").display().to_string()),
        ] {
            run(
                Command::new("git")
                    .arg("config")
                    .arg("-f")
                    .arg(&config)
                    .args([k, &v]),
                "git config",
            )
            .await;
        }
        // One public-inbox-mda per mail, in the mbox's order.
        for mbox in mboxes {
            for m in mail_parser::mailbox::mbox::MessageIterator::new(&mbox[..]).flatten() {
                let mut c = Command::new("public-inbox-mda");
                c.arg("--no-precheck")
                    .stdin(std::process::Stdio::piped())
                    .stdout(std::process::Stdio::null());
                env(&mut c);
                c.process_group(0).kill_on_drop(true);
                let mut child = c.spawn().expect("public-inbox-mda");
                {
                    use tokio::io::AsyncWriteExt;
                    let mut stdin = child.stdin.take().unwrap();
                    stdin.write_all(m.contents()).await.unwrap();
                }
                let st = tokio::time::timeout(Duration::from_secs(60), child.wait())
                    .await
                    .expect("public-inbox-mda finishes")
                    .unwrap();
                assert!(st.success(), "public-inbox-mda: {st}");
            }
        }
        let mut c = Command::new("public-inbox-extindex");
        c.arg("--all").arg(d.join("all"));
        env(&mut c);
        run(&mut c, "public-inbox-extindex").await;
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let base = format!("http://127.0.0.1:{port}");
        let mut c = Command::new("public-inbox-httpd");
        c.arg("-l")
            .arg(&base)
            .stdin(std::process::Stdio::null())
            .stdout(std::fs::File::create(d.join("httpd.out")).unwrap())
            .stderr(std::fs::File::create(d.join("httpd.err")).unwrap());
        env(&mut c);
        let httpd = GroupChild::spawn(&mut c).expect("public-inbox-httpd");
        let pi = PublicInbox {
            _dir: dir,
            httpd,
            base,
        };
        let url = format!("{}/cgroups/", pi.base);
        for _ in 0..200 {
            if reqwest::get(&url)
                .await
                .is_ok_and(|r| r.status().is_success())
            {
                return pi;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!(
            "public-inbox-httpd (pid {}) did not answer on {url}: {}",
            pi.httpd.pid(),
            std::fs::read_to_string(d.join("httpd.err")).unwrap_or_default()
        );
    }
}

fn bundled_mbox() -> Vec<u8> {
    std::fs::read(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../kernels/series/mglru-isolation-v1.mbox"),
    )
    .unwrap()
}

fn corpus(file: &str) -> Vec<u8> {
    gunzip(&lore_corpus::dir().join(file))
}

fn quick() -> Fetcher {
    Fetcher {
        attempts: 2,
        backoff: Duration::from_millis(100),
        timeout: Duration::from_secs(30),
    }
}

#[tokio::test]
async fn lore_threads_and_atom_feed_from_a_real_public_inbox() {
    let pi = PublicInbox::start(&[corpus(NUMA), corpus(KMEM), bundled_mbox()]).await;
    let store = tempfile::tempdir().unwrap();

    // --lore: the thread as public-inbox serves it, assembled.
    let s = series::load(
        &SeriesSpec::Lore {
            message_id: NUMA_ROOT.into(),
            base_url: pi.base.clone(),
        },
        &quick(),
        store.path(),
    )
    .await
    .unwrap();
    assert_eq!(s.assembly, "v5 = v2 1/4 + v2 2/4 + v2 3/4 + v5 4/4");
    let kmem = series::load(
        &SeriesSpec::Lore {
            message_id: KMEM_ROOT.into(),
            base_url: pi.base.clone(),
        },
        &quick(),
        store.path(),
    )
    .await
    .unwrap();
    assert_eq!((kmem.version, kmem.total), (3, 3));
    assert_eq!(
        kmem.base_commit.as_deref().map(|c| &c[..12]),
        Some("2c9c612abeb3")
    );

    // `mmci series show --lore` through the binary.
    let work = tempfile::tempdir().unwrap();
    let out = common::bin()
        .args(["--work-dir"])
        .arg(work.path())
        .args([
            "series",
            "show",
            "--lore",
            NUMA_ROOT,
            "--lore-url",
            &pi.base,
        ])
        .output()
        .await
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    insta::assert_snapshot!("series_show_numa_partial_reroll", text);
    let out = common::bin()
        .args(["--work-dir"])
        .arg(work.path())
        .args([
            "series",
            "show",
            "--json",
            "--revision",
            "2",
            "--lore",
            NUMA_ROOT,
        ])
        .args(["--lore-url", &pi.base])
        .output()
        .await
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(j["revision"], 2);
    assert_eq!(j["assembly"], "v2 = v1 1/4 + v1 2/4 + v1 3/4 + v2 4/4");
    assert_eq!(j["chosen"], "--revision 2");

    // mmci watch --atom: the feed lists the inbox's newest mails; each
    // patch mail's thread is fetched and assembled.
    let found = mmci::watch::poll(
        &mmci::watch::Source::Atom {
            url: format!("{}/cgroups/new.atom", pi.base),
            lore_url: pi.base.clone(),
        },
        &quick(),
        &mut mmci::watch::State::default(),
    )
    .await
    .unwrap();
    let mut got: Vec<(u32, u32)> = found
        .iter()
        .map(|f| (f.series.version, f.series.total))
        .collect();
    got.sort();
    assert!(got.contains(&(3, 3)) && got.contains(&(1, 2)), "{got:?}");
    drop(pi);
}
