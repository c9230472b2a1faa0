//! A real Patchwork for the tests: the upstream release vendored in
//! ../shared/vendor/patchwork-3.2.1 (unmodified), run from the venv that
//! `./mmci-setup --test` makes, with a sqlite database in a temp dir of its
//! own, `runserver` on a free loopback port in its own process group
//! (killed when the [`Patchwork`] is dropped, so when the test ends or
//! fails), mails loaded with `parsearchive` as an instance reads its list.
//!
//! The settings are patchwork's own development settings with two
//! deployment values set, in a module written to the temp dir (the vendor
//! tree is not touched): `TIME_ZONE = 'UTC'`, as patchwork.kernel.org
//! dates its events (patchwork runs with USE_TZ=False: every date is naive,
//! in that zone), and a small `REST_RESULTS_PER_PAGE`, so that lists come
//! in several pages with real `Link` headers.
//!
//! Two users are made: `mmci-bot`, a maintainer of the project (patchwork
//! lets maintainers add checks) and `someone`, who is not; each has an API
//! token, read from `manage.py shell`'s stdout (never argv or a file).

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use mmci::host::process::GroupChild;
use serde_json::Value;
use tokio::io::AsyncReadExt;
use tokio::process::Command;

/// Names the venv the tests run patchwork with (default below).
pub const VENV_ENV: &str = "MMCI_PATCHWORK_VENV";
/// Names the patchwork source tree (default: ../shared/vendor/patchwork-3.2.1
/// next to the repository).
pub const SRC_ENV: &str = "MMCI_PATCHWORK_SRC";

/// The project every test instance has.
pub const PROJECT: &str = "linux-mm";
pub const LIST_ID: &str = "linux-mm.kvack.org";

/// `$MMCI_PATCHWORK_VENV`, else `mmci-test/patchwork-venv` in the user's
/// cache dir: where `./mmci-setup --test` puts it.
pub fn venv() -> PathBuf {
    std::env::var_os(VENV_ENV)
        .map(PathBuf::from)
        .or_else(|| dirs::cache_dir().map(|d| d.join("mmci-test/patchwork-venv")))
        .expect("a cache dir (set HOME, or MMCI_PATCHWORK_VENV)")
}

/// Where the shared vendor tree is looked for, relative to a repository.
const VENDORED: &str = "../shared/vendor/patchwork-3.2.1";

/// `$MMCI_PATCHWORK_SRC`, else ../shared/vendor/patchwork-3.2.1 beside the
/// repository, else beside the repository this checkout was cloned from
/// (its `origin` when that is a local path): a clean clone made in a temp
/// dir, as CI makes one, has no ../shared of its own.
pub fn source() -> PathBuf {
    if let Some(src) = std::env::var_os(SRC_ENV) {
        return PathBuf::from(src);
    }
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let beside = repo.join(VENDORED);
    if beside.join("manage.py").is_file() {
        return beside;
    }
    std::process::Command::new("git")
        .arg("-C")
        .arg(&repo)
        .args(["config", "--get", "remote.origin.url"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .map(PathBuf::from)
        .filter(|origin| origin.is_absolute() && origin.is_dir())
        .map(|origin| origin.join(VENDORED))
        .filter(|src| src.join("manage.py").is_file())
        .unwrap_or(beside)
}

/// What is missing to run patchwork, said with what to do; None when both
/// the source and the venv are there. A test calls this and fails with it:
/// never a silent skip.
pub fn missing() -> Option<String> {
    let src = source();
    if !src.join("manage.py").is_file() {
        return Some(format!(
            "the patchwork source is not at {} (../shared/vendor/patchwork-3.2.1 beside the repository or its origin, \
             or set ${SRC_ENV}); ../shared/vendor/README.md says where it comes from",
            src.display()
        ));
    }
    let py = venv().join("bin/python");
    let ok = std::process::Command::new(&py)
        .args(["-c", "import django, rest_framework, django_filters"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        return Some(format!(
            "no patchwork venv at {} (or it lacks Django, djangorestframework or django-filter): \
             run ./mmci-setup --test (or set ${VENV_ENV})",
            venv().display()
        ));
    }
    None
}

/// A running instance; its server's process group dies with it.
pub struct Patchwork {
    dir: tempfile::TempDir,
    server: GroupChild,
    /// `http://127.0.0.1:PORT`.
    pub base: String,
    /// The maintainer's token (may add checks).
    pub token: String,
    /// A token whose user maintains nothing (403 on a check).
    pub weak_token: String,
}

const SETTINGS: &str = "\
from patchwork.settings.dev import *  # noqa
import os
TIME_ZONE = 'UTC'
REST_RESULTS_PER_PAGE = int(os.environ.get('MMCI_PW_PAGE', '30'))
";

const PROVISION: &str = "\
from patchwork.models import Project
from django.contrib.auth.models import User
from rest_framework.authtoken.models import Token
p = Project.objects.create(linkname='linux-mm', name='linux-mm', listid='linux-mm.kvack.org', listemail='linux-mm@kvack.org')
bot = User.objects.create_user('mmci-bot', 'bot@example.org', None)
bot.profile.maintainer_projects.add(p)
other = User.objects.create_user('someone', 'someone@example.org', None)
print(Token.objects.create(user=bot).key)
print(Token.objects.create(user=other).key)
";

impl Patchwork {
    /// The environment of every manage.py command.
    fn manage(dir: &Path, page: usize) -> Command {
        let mut c = Command::new(venv().join("bin/python"));
        c.arg("manage.py")
            .current_dir(source())
            .env("DJANGO_SETTINGS_MODULE", "mmci_pw_settings")
            .env("PYTHONPATH", dir)
            .env("DATABASE_TYPE", "sqlite3")
            .env("DATABASE_NAME", dir.join("db.sqlite3"))
            .env("MMCI_PW_PAGE", page.to_string())
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .stdin(Stdio::null());
        c
    }

    /// Runs manage.py ARGS to the end (2 minutes at most); its stdout.
    async fn run(dir: &Path, page: usize, args: &[&str]) -> String {
        let mut c = Self::manage(dir, page);
        c.args(args).stdout(Stdio::piped()).stderr(Stdio::piped());
        let what = format!("manage.py {}", args.join(" "));
        let mut child = GroupChild::spawn(&mut c).unwrap_or_else(|e| panic!("{what}: {e}"));
        let mut stdout = child.child_mut().stdout.take().unwrap();
        let mut stderr = child.child_mut().stderr.take().unwrap();
        let read = async {
            let (mut o, mut e) = (String::new(), String::new());
            let _ = tokio::join!(stdout.read_to_string(&mut o), stderr.read_to_string(&mut e));
            (o, e)
        };
        let (done, (out, err)) = tokio::join!(
            child.wait_timeout(Duration::from_secs(120), Duration::from_secs(2)),
            read
        );
        let done = done.unwrap();
        assert!(
            done.status.success() && !done.timed_out,
            "{what}: {done:?}\n{err}"
        );
        out
    }

    /// An instance with the project, its two users and `mboxes` loaded in
    /// order; lists in pages of `page`.
    pub async fn start(mboxes: &[Vec<u8>], page: usize) -> Patchwork {
        if let Some(m) = missing() {
            panic!("a real patchwork is needed: {m}");
        }
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().to_path_buf();
        std::fs::write(d.join("mmci_pw_settings.py"), SETTINGS).unwrap();
        Self::run(&d, page, &["migrate", "-v0"]).await;
        Self::run(&d, page, &["loaddata", "default_tags", "default_states"]).await;
        let tokens = Self::run(&d, page, &["shell", "-c", PROVISION]).await;
        let tokens: Vec<&str> = tokens.lines().map(str::trim).collect();
        assert_eq!(tokens.len(), 2, "two tokens from the provisioning");
        let (token, weak_token) = (tokens[0].to_string(), tokens[1].to_string());
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let base = format!("http://127.0.0.1:{port}");
        let mut c = Self::manage(&d, page);
        c.args(["runserver", &format!("127.0.0.1:{port}"), "--noreload"])
            .stdout(std::fs::File::create(d.join("server.out")).unwrap())
            .stderr(std::fs::File::create(d.join("server.err")).unwrap());
        let server = GroupChild::spawn(&mut c).expect("manage.py runserver");
        let pw = Patchwork {
            dir,
            server,
            base,
            token,
            weak_token,
        };
        for m in mboxes {
            pw.load(m).await;
        }
        let url = format!("{}/api/", pw.base);
        for _ in 0..300 {
            if reqwest::get(&url)
                .await
                .is_ok_and(|r| r.status().is_success())
            {
                return pw;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!(
            "patchwork's runserver (pid {}) did not answer on {url}: {}",
            pw.server.pid(),
            pw.log()
        );
    }

    /// The server's log (stderr: runserver's request lines and tracebacks).
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("server.err")).unwrap_or_default()
    }

    /// `parsearchive` of one mbox into the project, as its list delivers
    /// it; the server sees the new mails at once (same database).
    pub async fn load(&self, mbox: &[u8]) {
        let n = std::fs::read_dir(self.dir.path()).unwrap().count();
        let file = self.dir.path().join(format!("load-{n}.mbox"));
        std::fs::write(&file, mbox).unwrap();
        Self::run(
            self.dir.path(),
            30,
            &["parsearchive", "--list-id", LIST_ID, file.to_str().unwrap()],
        )
        .await;
    }

    /// Runs Python in the instance (`manage.py shell -c CODE`): its stdout.
    pub async fn shell(&self, code: &str) -> String {
        Self::run(self.dir.path(), 30, &["shell", "-c", code]).await
    }

    /// GET `path` (under /api/1.3/ unless it starts with `/`) as JSON.
    pub async fn get(&self, path: &str) -> Value {
        let url = if path.starts_with('/') {
            format!("{}{path}", self.base)
        } else {
            format!("{}/api/1.3/{path}", self.base)
        };
        let r = reqwest::get(&url).await.unwrap();
        assert!(r.status().is_success(), "GET {url}: {}", r.status());
        serde_json::from_slice(&r.bytes().await.unwrap()).unwrap()
    }

    /// Every item of a list, every page.
    pub async fn list(&self, path: &str) -> Vec<Value> {
        let sep = if path.contains('?') { '&' } else { '?' };
        let v = self.get(&format!("{path}{sep}per_page=250")).await;
        v.as_array().expect("a list").clone()
    }
}

/// The gunzipped text of a `*.t.mbox.gz` fixture.
pub fn gunzip(path: &Path) -> Vec<u8> {
    use std::io::Read;
    let gz = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(&gz[..])
        .read_to_end(&mut out)
        .unwrap();
    out
}

/// The project's series on the instance, oldest first: (id, name, version,
/// patch ids).
pub async fn series_list(pw: &Patchwork) -> Vec<(u64, String, u64, Vec<u64>)> {
    let mut all: Vec<(u64, String, u64, Vec<u64>)> = pw
        .list(&format!("series/?project={PROJECT}"))
        .await
        .iter()
        .map(|s| {
            (
                s["id"].as_u64().unwrap(),
                s["name"].as_str().unwrap_or("").to_string(),
                s["version"].as_u64().unwrap(),
                s["patches"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|p| p["id"].as_u64().unwrap())
                    .collect(),
            )
        })
        .collect();
    all.sort();
    all
}

/// The series named `name` at `version`.
pub async fn series_id(pw: &Patchwork, name: &str, version: u64) -> (u64, Vec<u64>) {
    let all = series_list(pw).await;
    let s = all
        .iter()
        .find(|s| s.1.contains(name) && s.2 == version)
        .unwrap_or_else(|| panic!("no series {name} v{version} in {all:?}"));
    (s.0, s.3.clone())
}

/// A results dir whose patched kernel carries patchwork series `id` as
/// `--patchwork --pw-series` leaves it (with its patch ids when `origin`),
/// copied from the recorded default matrix so that it has a verdict.
pub async fn results_dir(root: &Path, pw: &Patchwork, id: u64, origin: bool) -> PathBuf {
    let (o, mbox) = mmci::series::patchwork::fetch_series(&pw.base, id, Default::default())
        .await
        .unwrap();
    let series = mmci::series::assemble(&mmci::series::mails_from_mbox(&mbox), "t").unwrap();
    super::results::write_recorded(
        &root.join(format!("results-{id}-{origin}")),
        &series,
        origin.then_some(&o),
    )
}

/// Every check on each of `patches`, as the API lists them.
pub async fn checks(pw: &Patchwork, patches: &[u64]) -> Vec<Vec<Value>> {
    let mut all = vec![];
    for id in patches {
        all.push(pw.list(&format!("patches/{id}/checks/")).await);
    }
    all
}

/// The POST bodies of a dry run, by URL.
pub fn dry_posts(dry: &str) -> Vec<(String, Value)> {
    let mut posts = vec![];
    let mut lines = dry.lines().peekable();
    while let Some(l) = lines.next() {
        if let Some(url) = l.strip_prefix("POST ") {
            let mut body = String::new();
            while let Some(b) = lines.next_if(|b| !b.starts_with("POST ") && !b.starts_with("GET "))
            {
                body.push_str(b);
                body.push('\n');
            }
            posts.push((url.to_string(), serde_json::from_str(&body).unwrap()));
        }
    }
    posts
}
