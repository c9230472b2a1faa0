//! `mmci post email` through the binary, against a real SMTP server
//! (Python's aiosmtpd, installed by ./mmci-setup --test) on 127.0.0.1:
//! STARTTLS with a CA made for the test, the reply's threading headers and
//! body as they arrive, a refused recipient, the dry run, and who gets
//! the reply for each verdict (only a FAIL goes to the thread).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

mod common;

const FROM: &str = "mmci bot <mmci@ci.example.org>";
const BODY: &str = "mmci report for mm/vmscan: account and throttle MGLRU isolation\n\n\
                    OOM kills                       0 -> 0\n\
                    mm_vmscan_throttled (ISOLATED)  0 -> 10504\n";

/// A Python 3 that has aiosmtpd: Debian's /usr/bin/python3 (where
/// python3-aiosmtpd goes), else the first python3 on PATH.
fn python() -> String {
    for p in ["/usr/bin/python3", "python3"] {
        let ok = Command::new(p)
            .args(["-c", "import aiosmtpd"])
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if ok {
            return p.to_string();
        }
    }
    panic!("no python3 with aiosmtpd: run ./mmci-setup --test (installs python3-aiosmtpd)");
}

/// aiosmtpd in a child process, stopped on drop.
struct SmtpServer {
    child: Child,
    out: PathBuf,
    port: u16,
}

impl SmtpServer {
    fn start(out: &Path, args: &[&str]) -> SmtpServer {
        std::fs::create_dir_all(out).unwrap();
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/smtp_server.py");
        let child = Command::new(python())
            .arg(script)
            .arg(out)
            .args(args)
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(20);
        let port = loop {
            if let Ok(p) = std::fs::read_to_string(out.join("port")) {
                break p.trim().parse().unwrap();
            }
            assert!(Instant::now() < deadline, "aiosmtpd did not start");
            std::thread::sleep(Duration::from_millis(50));
        };
        SmtpServer {
            child,
            out: out.to_path_buf(),
            port,
        }
    }

    fn messages(&self) -> Vec<Value> {
        let mut n = 1;
        let mut out = Vec::new();
        while let Ok(text) = std::fs::read_to_string(self.out.join(format!("{n}.json"))) {
            out.push(serde_json::from_str(&text).unwrap());
            n += 1;
        }
        out
    }
}

impl Drop for SmtpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn openssl(args: &[&str]) {
    let st = Command::new("openssl")
        .args(args)
        .stderr(Stdio::null())
        .stdout(Stdio::null())
        .status()
        .expect("openssl is installed by ./mmci-setup");
    assert!(st.success(), "openssl {args:?}");
}

/// A CA and a server certificate for 127.0.0.1 signed by it, made now.
fn certificates(dir: &Path) -> (PathBuf, PathBuf, PathBuf) {
    let p = |n: &str| dir.join(n).to_str().unwrap().to_string();
    openssl(&[
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-days",
        "1",
        "-subj",
        "/CN=mmci test CA",
        "-keyout",
        &p("ca.key"),
        "-out",
        &p("ca.pem"),
    ]);
    openssl(&[
        "req",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-subj",
        "/CN=127.0.0.1",
        "-keyout",
        &p("server.key"),
        "-out",
        &p("server.csr"),
    ]);
    std::fs::write(
        dir.join("ext.cnf"),
        "subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n",
    )
    .unwrap();
    openssl(&[
        "x509",
        "-req",
        "-in",
        &p("server.csr"),
        "-CA",
        &p("ca.pem"),
        "-CAkey",
        &p("ca.key"),
        "-CAcreateserial",
        "-days",
        "1",
        "-extfile",
        &p("ext.cnf"),
        "-out",
        &p("server.pem"),
    ]);
    (
        dir.join("ca.pem"),
        dir.join("server.pem"),
        dir.join("server.key"),
    )
}

/// A results dir whose patched kernel carries the bundled series.
fn results_dir(root: &Path) -> PathBuf {
    common::results::write_bundled(&root.join("results"), 0)
}

fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    for e in walk(dir) {
        out.insert(e.clone(), std::fs::read(&e).unwrap());
    }
    out
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            files.extend(walk(&p));
        } else {
            files.push(p);
        }
    }
    files
}

fn mmci(args: &[&str]) -> Output {
    common::bin_blocking()
        .args(["post", "email"])
        .args(args)
        .env_remove("MMCI_EMAIL_FROM")
        .env_remove("MMCI_SMTP")
        .env_remove("MMCI_SMTP_PASSWORD")
        .output()
        .unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The DATA part of a dry run's output.
fn dry_run_data(out: &str) -> String {
    out.split_once("# DATA:\n").unwrap().1.to_string()
}

#[test]
fn the_reply_arrives_over_starttls_threaded_on_the_cover_letter() {
    let tmp = tempfile::tempdir().unwrap();
    let (ca, cert, key) = certificates(tmp.path());
    let server = SmtpServer::start(
        &tmp.path().join("smtp"),
        &[
            "--cert",
            cert.to_str().unwrap(),
            "--key",
            key.to_str().unwrap(),
        ],
    );
    let results = results_dir(tmp.path());
    let before = snapshot(&results);
    let body = tmp.path().join("report.txt");
    std::fs::write(&body, BODY).unwrap();
    let smtp = format!("127.0.0.1:{}", server.port);
    let common = [
        "--results",
        results.to_str().unwrap(),
        "--body",
        body.to_str().unwrap(),
        "--from",
        FROM,
        "--cc",
        "mm-ci-archive@example.org",
        "--message-id",
        "mmci-test-1@ci.example.org",
        "--date",
        "1796040000",
        "--verdict",
        "fail",
    ];

    // The dry run first: it sends nothing.
    let dry = mmci(&common);
    assert!(dry.status.success(), "{}", stderr(&dry));
    let dry_out = String::from_utf8(dry.stdout).unwrap();
    assert!(server.messages().is_empty());

    let mut send = common.to_vec();
    send.extend(["--send", "--smtp", &smtp, "--smtp-ca", ca.to_str().unwrap()]);
    let o = mmci(&send);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.starts_with(&format!(
            "sent <mmci-test-1@ci.example.org> to 4 recipient(s) via {smtp}: 250 "
        )),
        "{out}"
    );

    let msgs = server.messages();
    assert_eq!(msgs.len(), 1);
    let m = &msgs[0];
    assert_eq!(m["tls"], true, "not sent over STARTTLS");
    assert_eq!(m["mail_from"], "mmci@ci.example.org");
    let mut rcpts: Vec<&str> = m["rcpt_tos"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    rcpts.sort_unstable();
    assert_eq!(
        rcpts,
        [
            "linux-kernel@vger.kernel.org",
            "linux-mm@kvack.org",
            "mm-ci-archive@example.org",
            "mmci-dev@example.org",
        ]
    );
    let data = m["data"].as_str().unwrap();
    // What arrived is byte for byte what the dry run printed.
    assert_eq!(data, dry_run_data(&dry_out));

    let msg = mail_parser::MessageParser::default()
        .parse(data.as_bytes())
        .unwrap();
    assert_eq!(
        msg.subject(),
        Some("Re: [PATCH v1 0/2] mm/vmscan: account and throttle MGLRU isolation")
    );
    assert_eq!(
        msg.in_reply_to().as_text(),
        Some("cover.1796033954.git.mmci-dev@example.org")
    );
    assert_eq!(
        msg.references().as_text(),
        Some("cover.1796033954.git.mmci-dev@example.org")
    );
    assert_eq!(msg.message_id(), Some("mmci-test-1@ci.example.org"));
    let from = msg.from().unwrap().first().unwrap();
    assert_eq!(from.address(), Some("mmci@ci.example.org"));
    assert_eq!(from.name(), Some("mmci bot"));
    let to: Vec<_> = msg
        .to()
        .unwrap()
        .iter()
        .filter_map(|a| a.address())
        .collect();
    assert_eq!(to, ["mmci-dev@example.org"]);
    let cc: Vec<_> = msg
        .cc()
        .unwrap()
        .iter()
        .filter_map(|a| a.address())
        .collect();
    assert_eq!(
        cc,
        [
            "mm-ci-archive@example.org",
            "linux-mm@kvack.org",
            "linux-kernel@vger.kernel.org"
        ]
    );
    assert_eq!(msg.date().unwrap().to_timestamp(), 1_796_040_000);
    assert_eq!(msg.body_text(0).unwrap().replace("\r\n", "\n"), BODY);
    assert_eq!(snapshot(&results), before, "the results dir was changed");

    // Without the test CA the server's certificate is refused: nothing
    // goes out in the clear, exit 9.
    let mut untrusted = common.to_vec();
    untrusted.extend(["--send", "--smtp", &smtp]);
    let o = mmci(&untrusted);
    assert_eq!(
        o.status.code(),
        Some(mmci::error::exit::POST),
        "{}",
        stderr(&o)
    );
    assert!(stderr(&o).starts_with(&format!("mmci: error: SMTP {smtp}: ")));
    assert_eq!(server.messages().len(), 1);
}

#[test]
fn a_refused_recipient_is_a_clear_error_with_exit_9() {
    let tmp = tempfile::tempdir().unwrap();
    let server = SmtpServer::start(
        &tmp.path().join("smtp"),
        &["--reject", "linux-mm@kvack.org"],
    );
    let results = results_dir(tmp.path());
    let before = snapshot(&results);
    let body = tmp.path().join("report.txt");
    std::fs::write(&body, BODY).unwrap();
    let smtp = format!("127.0.0.1:{}", server.port);
    let o = mmci(&[
        "--results",
        results.to_str().unwrap(),
        "--body",
        body.to_str().unwrap(),
        "--from",
        FROM,
        "--verdict",
        "fail",
        "--send",
        "--smtp",
        &smtp,
        "--smtp-tls",
        "none",
    ]);
    assert_eq!(
        o.status.code(),
        Some(mmci::error::exit::POST),
        "{}",
        stderr(&o)
    );
    let err = stderr(&o);
    assert!(
        err.contains(&format!("mmci: error: SMTP {smtp}: permanent error (550): 5.1.1 <linux-mm@kvack.org>: Recipient address rejected: User unknown")),
        "{err}"
    );
    assert!(
        err.contains("the server refused the message: nothing was delivered"),
        "{err}"
    );
    assert!(server.messages().is_empty());
    assert_eq!(snapshot(&results), before, "the results dir was changed");
}

#[test]
fn dry_run_by_default_and_eml_or_mbox_for_git_send_email() {
    let tmp = tempfile::tempdir().unwrap();
    let results = results_dir(tmp.path());
    let body = tmp.path().join("report.txt");
    std::fs::write(&body, BODY).unwrap();
    let o = mmci(&[
        "--results",
        results.to_str().unwrap(),
        "--body",
        body.to_str().unwrap(),
        "--from",
        FROM,
        "--message-id",
        "<dry@ci.example.org>",
        "--date",
        "1796040000",
        "--verdict",
        "fail",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = String::from_utf8(o.stdout).unwrap();
    let head: Vec<&str> = out.lines().take(8).collect();
    let left_out = format!(
        "# left out: 1 address(es) of the thread that are not a mailing list's (lists are at {}; \
         --list-domain adds a list host, --cc an address): akpm@linux-foundation.org",
        mmci::post::email::LIST_DOMAINS.join(", ")
    );
    assert_eq!(
        head,
        [
            "# dry run: nothing is sent (--send sends, --output FILE stores it)",
            "# MAIL FROM:<mmci@ci.example.org>",
            "# RCPT TO:<mmci-dev@example.org>",
            "# RCPT TO:<linux-mm@kvack.org>",
            "# RCPT TO:<linux-kernel@vger.kernel.org>",
            &left_out,
            "# DATA:",
            "From: \"mmci bot\" <mmci@ci.example.org>",
        ]
    );
    let data = dry_run_data(&out);
    assert!(data.contains(
        "\r\nSubject: Re: [PATCH v1 0/2] mm/vmscan: account and throttle MGLRU isolation\r\n"
    ));
    assert!(data.contains("\r\nIn-Reply-To: <cover.1796033954.git.mmci-dev@example.org>\r\n"));
    assert!(data.contains("\r\nMessage-ID: <dry@ci.example.org>\r\n"));
    assert!(data.contains("\r\nDate: Mon, 30 Nov 2026 12:00:00 +0000\r\n"));
    assert!(data.ends_with(&BODY.replace('\n', "\r\n")));

    // --output: an .eml, or an mbox that git am / mail clients read.
    let eml = tmp.path().join("reply.eml");
    let mbox = tmp.path().join("replies.mbox");
    for target in [&eml, &mbox] {
        let o = mmci(&[
            "--results",
            results.to_str().unwrap(),
            "--body",
            body.to_str().unwrap(),
            "--from",
            FROM,
            "--verdict",
            "fail",
            "--output",
            target.to_str().unwrap(),
        ]);
        assert!(o.status.success(), "{}", stderr(&o));
    }
    let m = mmci::series::parse_mail(&std::fs::read(&eml).unwrap()).unwrap();
    assert!(m.subject.starts_with("Re: [PATCH v1 0/2]"));
    assert!(m
        .references
        .contains(&"cover.1796033954.git.mmci-dev@example.org".to_string()));
    let mails = mmci::series::mails_from_mbox(&std::fs::read(&mbox).unwrap());
    assert_eq!(mails.len(), 1);
    assert_eq!(mails[0].to, ["mmci developers <mmci-dev@example.org>"]);

    // Each run gets its own fresh Message-ID at the sender's domain.
    assert_ne!(m.message_id, mails[0].message_id);
    assert!(m.message_id.starts_with("mmci-") && m.message_id.ends_with("@ci.example.org"));
}

#[test]
fn only_a_fail_goes_to_the_thread() {
    let tmp = tempfile::tempdir().unwrap();
    let results = results_dir(tmp.path());
    let body = tmp.path().join("report.txt");
    std::fs::write(&body, BODY).unwrap();
    let eml = tmp.path().join("reply.eml");
    let r = results.to_str().unwrap();
    let b = body.to_str().unwrap();
    let common = ["--results", r, "--body", b, "--from", FROM, "--date", "0"];
    let run = |extra: &[&str]| {
        let mut args = common.to_vec();
        args.extend(extra);
        let o = mmci(&args);
        assert!(o.status.success(), "{extra:?}: {}", stderr(&o));
        String::from_utf8(o.stdout).unwrap()
    };
    // The results dir's own verdict: no run, nothing judged. Not sent,
    // said so; with --output and --send too, nothing written or sent (no
    // SMTP server is even needed).
    for extra in [
        &[][..],
        &["--verdict", "pass"],
        &[
            "--verdict",
            "inconclusive",
            "--output",
            eml.to_str().unwrap(),
        ],
        &["--verdict", "pass", "--send", "--smtp", "127.0.0.1:1"],
    ] {
        let out = run(extra);
        assert!(
            out.starts_with("# not sent: the verdict is "),
            "{extra:?}: {out}"
        );
        assert!(out.contains("--to-author sends it to the series' author alone"));
    }
    assert!(!eml.exists());
    let out = run(&["--verdict", "pass", "--to-author"]);
    let rcpts: Vec<&str> = out
        .lines()
        .filter(|l| l.starts_with("# RCPT TO:"))
        .collect();
    assert_eq!(rcpts, ["# RCPT TO:<mmci-dev@example.org>"], "{out}");
    assert!(
        out.contains("\r\nAuto-Submitted: auto-generated\r\n"),
        "{out}"
    );
    // --to and --cc whatever the verdict; the thread only on a FAIL.
    let out = run(&["--verdict", "no-verdict", "--cc", "me@example.org"]);
    let rcpts: Vec<&str> = out
        .lines()
        .filter(|l| l.starts_with("# RCPT TO:"))
        .collect();
    assert_eq!(rcpts, ["# RCPT TO:<me@example.org>"], "{out}");
    let out = run(&["--verdict", "fail"]);
    assert_eq!(out.matches("# RCPT TO:").count(), 3, "{out}");
    // The body's own Closes: names the Message-ID it is sent under.
    let closing = tmp.path().join("closing.txt");
    std::fs::write(
        &closing,
        format!("{BODY}| Reported-by: {FROM}\n| Closes: https://lore.kernel.org/r/own-1@ci.example.org\n"),
    )
    .unwrap();
    let c = closing.to_str().unwrap();
    let o = mmci(&[
        "--results",
        r,
        "--body",
        c,
        "--from",
        FROM,
        "--verdict",
        "fail",
    ]);
    let out = String::from_utf8(o.stdout).unwrap();
    assert!(
        out.contains("\r\nMessage-ID: <own-1@ci.example.org>\r\n"),
        "{out}"
    );
    let o = mmci(&[
        "--results",
        r,
        "--body",
        c,
        "--from",
        FROM,
        "--verdict",
        "fail",
        "--message-id",
        "other@x",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o)
        .contains("--message-id other@x: the body's `| Closes:` names <own-1@ci.example.org>"));
    // --series has no verdict to analyse: --verdict is required.
    let mbox =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../kernels/series/mglru-isolation-v1.mbox");
    let o = mmci(&[
        "--series",
        mbox.to_str().unwrap(),
        "--body",
        b,
        "--from",
        FROM,
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("--verdict"), "{}", stderr(&o));
}

#[test]
fn bad_input_fails_before_anything_is_sent() {
    let tmp = tempfile::tempdir().unwrap();
    let results = results_dir(tmp.path());
    let body = tmp.path().join("report.txt");
    std::fs::write(&body, BODY).unwrap();
    let r = results.to_str().unwrap();
    let b = body.to_str().unwrap();
    let cases: &[(&[&str], &str)] = &[
        (
            &["--results", r, "--body", b],
            "mmci: error: --from: missing (who the report comes from, e.g. --from 'mmci <mmci@example.org>'; or $MMCI_EMAIL_FROM)",
        ),
        (
            &["--results", r, "--body", b, "--from", FROM, "--verdict", "fail", "--send"],
            "mmci: error: --send needs --smtp HOST[:PORT]",
        ),
        (
            &["--results", r, "--body", b, "--from", "nobody"],
            "mmci: error: --from `nobody`: not an email address",
        ),
        (
            &["--results", r, "--body", "/nonexistent.txt", "--from", FROM],
            "mmci: error: --body /nonexistent.txt: cannot read the rendered report: No such file or directory (os error 2)",
        ),
        (
            &["--results", r, "--body", b, "--from", FROM, "--verdict", "fail", "--send", "--smtp", "127.0.0.1:1", "--smtp-user", "ci"],
            "mmci: error: --smtp-user needs a password: set $MMCI_SMTP_PASSWORD or --smtp-password-file",
        ),
    ];
    for (args, want) in cases {
        let o = mmci(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert_eq!(stderr(&o).trim(), *want);
    }
}

#[test]
fn smtp_auth_over_starttls_and_the_password_is_never_printed() {
    const PASSWORD: &str = "s3cret-smtp-Passw0rd";
    let tmp = tempfile::tempdir().unwrap();
    let (ca, cert, key) = certificates(tmp.path());
    let server = SmtpServer::start(
        &tmp.path().join("smtp"),
        &[
            "--cert",
            cert.to_str().unwrap(),
            "--key",
            key.to_str().unwrap(),
            "--auth",
            &format!("ci:{PASSWORD}"),
        ],
    );
    let results = results_dir(tmp.path());
    let body = tmp.path().join("report.txt");
    std::fs::write(&body, BODY).unwrap();
    let smtp = format!("127.0.0.1:{}", server.port);
    let send = |password: &str| {
        common::bin_blocking()
            .args(["post", "email", "--results", results.to_str().unwrap()])
            .args(["--body", body.to_str().unwrap(), "--from", FROM, "--send"])
            .args(["--verdict", "fail"])
            .args(["--smtp", &smtp, "--smtp-ca", ca.to_str().unwrap()])
            .args(["--smtp-user", "ci", "--smtp-timeout", "20"])
            .env("MMCI_SMTP_PASSWORD", password)
            .env("MMCI_LOG", "trace")
            .output()
            .unwrap()
    };
    let o = send("wrong-password-123");
    assert_eq!(
        o.status.code(),
        Some(mmci::error::exit::POST),
        "{}",
        stderr(&o)
    );
    assert!(stderr(&o).contains("535"), "{}", stderr(&o));
    assert!(server.messages().is_empty());
    let o = send(PASSWORD);
    assert!(o.status.success(), "{}", stderr(&o));
    for text in [
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr),
    ] {
        assert!(!text.contains(PASSWORD), "the password was printed: {text}");
    }
    let msgs = server.messages();
    assert_eq!(msgs.len(), 1);
    assert_eq!(msgs[0]["login"], "ci");
    assert_eq!(msgs[0]["tls"], true);
}

/// The bundled series with every From, and the cover letter's Cc, made
/// RFC 2047 words whose names decode to a CR/LF and a Bcc header.
fn crlf_series(dir: &Path) -> PathBuf {
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../kernels/series/mglru-isolation-v1.mbox"),
    )
    .unwrap()
    .replace(
        "From: mmci developers <mmci-dev@example.org>",
        "From: =?utf-8?q?Evil=0D=0ABcc=3A_x=40evil=2Eorg?= <mmci-dev@example.org>",
    )
    .replace(
        "Cc: Andrew Morton <akpm@linux-foundation.org>",
        "Cc: =?utf-8?b?QW5kcmV3DQpCY2M6IHZAZXZpbC5vcmc=?= <akpm@linux-foundation.org>",
    );
    let path = dir.join("crlf.mbox");
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn a_crlf_in_a_display_name_is_neither_a_panic_nor_a_header() {
    // Probe 8 of the security review: lettre's To::display panicked.
    let tmp = tempfile::tempdir().unwrap();
    let series = crlf_series(tmp.path());
    let s = mmci::series::mails_from_mbox(&std::fs::read(&series).unwrap());
    assert!(s[0].from.contains("\r\nBcc: x@evil.org"), "{:?}", s[0].from);
    let body = tmp.path().join("report.txt");
    std::fs::write(&body, BODY).unwrap();
    let o = mmci(&[
        "--series",
        series.to_str().unwrap(),
        "--body",
        body.to_str().unwrap(),
        "--from",
        FROM,
        "--date",
        "0",
        "--verdict",
        "fail",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = String::from_utf8(o.stdout).unwrap();
    let data = dry_run_data(&out);
    let head = data.split("\r\n\r\n").next().unwrap();
    for line in head.split("\r\n") {
        assert!(!line.to_ascii_lowercase().starts_with("bcc"), "{head}");
        assert!(!line.contains('\r') && !line.contains('\n'), "{line:?}");
    }
    // The author keeps the reply, the name made one line; the Cc'd
    // person is left out as any person of the thread is.
    assert!(out.contains("# RCPT TO:<mmci-dev@example.org>\n"), "{out}");
    assert!(
        out.contains("not a mailing list's (lists are at ")
            && out.contains("akpm@linux-foundation.org\n"),
        "{out}"
    );
    assert!(!out.contains("RCPT TO:<x@evil.org>") && !out.contains("RCPT TO:<v@evil.org>"));
    let to = head.lines().find(|l| l.starts_with("To: ")).unwrap();
    assert!(to.contains("<mmci-dev@example.org>"), "{to}");
}

#[test]
fn the_processs_secrets_never_leave_in_the_body() {
    let tmp = tempfile::tempdir().unwrap();
    let results = results_dir(tmp.path());
    let body = tmp.path().join("report.txt");
    let smtp = "smtp-pass-only-for-this-test";
    let github = "ghs_only0for0this0test";
    std::fs::write(
        &body,
        format!("{BODY}console: {smtp}\nrelease: 6.12-{github}\n"),
    )
    .unwrap();
    let o = common::bin_blocking()
        .args(["post", "email", "--results"])
        .arg(&results)
        .arg("--body")
        .arg(&body)
        .args(["--from", FROM, "--date", "0", "--verdict", "fail"])
        .env("MMCI_SMTP_PASSWORD", smtp)
        .env("GITHUB_TOKEN", github)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let out = String::from_utf8(o.stdout).unwrap();
    assert!(!out.contains(smtp) && !out.contains(github), "{out}");
    assert!(
        out.contains("console: [redacted]\r\nrelease: 6.12-[redacted]\r\n"),
        "{out}"
    );
}

/// Review M3: the bundled series with its cover letter's Cc made 5,000
/// people and 40 lists at vger. A FAIL goes to the author, the --cc, the
/// To's list and the first 22 of the Cc's lists: 25 recipients, as the
/// SMTP server sees them (it was 5,002 `RCPT TO`); the dry run and the
/// send each say how many were left out and why.
#[test]
fn a_fail_on_a_mail_with_5000_cc_goes_to_25_recipients_at_most() {
    let tmp = tempfile::tempdir().unwrap();
    let people = (0..5000).map(|i| format!("Person {i} <p{i}@spam.example.com>"));
    let lists = (0..40).map(|i| format!("list{i}@vger.kernel.org"));
    let cc = people.chain(lists).collect::<Vec<_>>().join(",\n ");
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../kernels/series/mglru-isolation-v1.mbox"),
    )
    .unwrap();
    let original =
        "Cc: Andrew Morton <akpm@linux-foundation.org>,\n    linux-kernel@vger.kernel.org\n";
    assert!(text.contains(original));
    let series = tmp.path().join("cc5000.mbox");
    std::fs::write(&series, text.replacen(original, &format!("Cc: {cc}\n"), 1)).unwrap();
    let body = tmp.path().join("report.txt");
    std::fs::write(&body, BODY).unwrap();
    let args = [
        "--series",
        series.to_str().unwrap(),
        "--body",
        body.to_str().unwrap(),
        "--from",
        FROM,
        "--cc",
        "ops@ci.example.org",
        "--verdict",
        "fail",
        "--date",
        "0",
    ];
    let o = mmci(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = String::from_utf8(o.stdout).unwrap();
    let rcpts: Vec<&str> = out
        .lines()
        .filter_map(|l| l.strip_prefix("# RCPT TO:"))
        .collect();
    let mut want = vec![
        "<mmci-dev@example.org>".to_string(),
        "<ops@ci.example.org>".into(),
        "<linux-mm@kvack.org>".into(),
    ];
    want.extend((0..22).map(|i| format!("<list{i}@vger.kernel.org>")));
    assert_eq!(rcpts, want);
    assert_eq!(rcpts.len(), mmci::post::email::MAX_RECIPIENTS);
    let said = [
        "# left out: 5000 address(es) of the thread that are not a mailing list's",
        "): p0@spam.example.com, p1@spam.example.com, p2@spam.example.com and 4997 more\n",
        "# left out: 18 address(es) of the thread over MAX_RECIPIENTS (25 recipients in all; \
         --cc names one that must have it): list22@vger.kernel.org, list23@vger.kernel.org, \
         list24@vger.kernel.org and 15 more\n",
    ];
    for s in said {
        assert!(
            out.contains(s),
            "{s}: {}",
            &out[..out.find("# DATA:").unwrap()]
        );
    }
    let data = dry_run_data(&out);
    let head = data.split("\r\n\r\n").next().unwrap();
    assert!(!head.contains("spam.example.com"), "{head}");

    // Sent: the server sees the same 25.
    let server = SmtpServer::start(&tmp.path().join("smtp"), &[]);
    let smtp = format!("127.0.0.1:{}", server.port);
    let mut send = args.to_vec();
    send.extend(["--send", "--smtp", &smtp, "--smtp-tls", "none"]);
    let o = mmci(&send);
    assert!(o.status.success(), "{}", stderr(&o));
    let sent = String::from_utf8(o.stdout).unwrap();
    assert!(sent.contains("to 25 recipient(s) via"), "{sent}");
    for s in said {
        assert!(sent.contains(s), "{s}: {sent}");
    }
    let msgs = server.messages();
    assert_eq!(msgs.len(), 1);
    let got: Vec<String> = msgs[0]["rcpt_tos"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| format!("<{}>", v.as_str().unwrap()))
        .collect();
    assert_eq!(got, want);

    // A list host must be a host name, not a pattern.
    let mut wild = args.to_vec();
    wild.extend(["--list-domain", "*.com"]);
    let o = mmci(&wild);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("--list-domain *.com: not a host name"),
        "{}",
        stderr(&o)
    );
}
