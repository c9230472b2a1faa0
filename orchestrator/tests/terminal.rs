//! Terminal and configuration conventions, through the real binary:
//! `NO_COLOR` under a pseudo-terminal (`script`), completion scripts that
//! bash and zsh accept, `mmci config show` naming each layer, and the
//! embedded default matrix from a copied binary in another directory.
//! None of these boots a guest. Missing tools (`script`, `zsh`) fail the
//! test with what to install, never a silent skip.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_mmci");

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// `tool` on PATH, or a failure saying how to get it.
fn need(tool: &str, package: &str) {
    let found = Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        found,
        "{tool} is not installed: run ./mmci-setup --test (it installs the Debian package {package})"
    );
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// `mmci -v watch` over the bundled mbox with a path no patch touches:
/// one debug log line per series, on stderr, under a pseudo-terminal;
/// what the terminal showed.
fn logged_on_a_terminal(env: &str, extra: &str) -> String {
    need("script", "bsdutils");
    let t = tempfile::tempdir().unwrap();
    let mbox = repo_root().join("kernels/series/mglru-isolation.mbox");
    let cmd = format!(
        "{env} {BIN} -v {extra} watch --mbox {} --run --path zzz/ --state {} >/dev/null",
        mbox.display(),
        t.path().join("state.json").display()
    );
    let o = Command::new("script")
        .args(["-q", "-e", "-c", &cmd, "/dev/null"])
        .env("MMCI_WORK_DIR", t.path())
        .env_remove("NO_COLOR")
        .output()
        .unwrap();
    assert!(o.status.success(), "{cmd}: {}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(
        out.contains("does not touch the watched paths"),
        "the log line is on the terminal: {out:?}"
    );
    out
}

#[test]
fn no_color_under_a_terminal_prints_no_escape_sequences() {
    let coloured = logged_on_a_terminal("", "");
    assert!(
        coloured.contains('\u{1b}'),
        "a terminal without NO_COLOR is coloured (the check can see escapes): {coloured:?}"
    );
    for (env, extra) in [("NO_COLOR=1", ""), ("", "--color never")] {
        let plain = logged_on_a_terminal(env, extra);
        assert!(!plain.contains('\u{1b}'), "{env} {extra}: {plain:?}");
    }
    // A short time on a terminal: HH:MM:SS, not RFC 3339.
    // (The first log line: mmci's own notes, such as the warning that
    // watch is a dry run without --send, are not log lines.)
    let plain = logged_on_a_terminal("NO_COLOR=1", "");
    let first = plain.lines().find(|l| !l.starts_with("mmci: ")).unwrap();
    let time = first.split(' ').next().unwrap();
    assert_eq!(time.len(), 8, "{first}");
    assert!(
        time.chars().all(|c| c.is_ascii_digit() || c == ':'),
        "{first}"
    );
    // --color always wins over NO_COLOR.
    assert!(logged_on_a_terminal("NO_COLOR=1", "--color always").contains('\u{1b}'));
}

/// `mmci completions SHELL` written to a file.
fn completions(shell: &str, dir: &Path) -> PathBuf {
    let o = common::bin_blocking()
        .args(["completions", shell])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let f = dir.join(format!("mmci.{shell}"));
    std::fs::write(&f, &o.stdout).unwrap();
    f
}

#[test]
fn bash_completions_source_and_register_mmci() {
    let t = tempfile::tempdir().unwrap();
    let f = completions("bash", t.path());
    let o = Command::new("bash")
        .args(["-c", &format!("source {}; complete -p mmci", f.display())])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("mmci"),
        "{}",
        text(&o)
    );
    // The script knows the subcommands and their options.
    let script = std::fs::read_to_string(&f).unwrap();
    for word in ["series", "--matrix", "b4-check", "completions", "--color"] {
        assert!(script.contains(word), "bash completions lack {word}");
    }
}

#[test]
fn zsh_completions_source_and_register_mmci() {
    need("zsh", "zsh");
    let t = tempfile::tempdir().unwrap();
    let f = completions("zsh", t.path());
    let script = format!(
        "autoload -U compinit; compinit -u -d {}; source {}; print -r -- $_comps[mmci]",
        t.path().join("zcompdump").display(),
        f.display()
    );
    let o = Command::new("zsh")
        .args(["-f", "-c", &script])
        .env("HOME", t.path())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(
        String::from_utf8_lossy(&o.stdout).trim(),
        "_mmci",
        "{}",
        text(&o)
    );
}

#[test]
fn man_pages_are_written_for_every_command() {
    let t = tempfile::tempdir().unwrap();
    let o = common::bin_blocking()
        .args(["man", "--dir", t.path().to_str().unwrap()])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    for page in [
        "mmci.1",
        "mmci-run.1",
        "mmci-post-email.1",
        "mmci-config-show.1",
    ] {
        let p = std::fs::read_to_string(t.path().join(page)).unwrap_or_default();
        assert!(p.starts_with(".ie") || p.contains(".TH"), "{page}: {p:.80}");
    }
}

#[test]
fn config_show_names_the_layer_of_every_value() {
    let t = tempfile::tempdir().unwrap();
    let repo = t.path().join("repo");
    let sub = repo.join("sub");
    std::fs::create_dir_all(&sub).unwrap();
    std::fs::create_dir(repo.join(".git")).unwrap();
    std::fs::write(
        repo.join("mmci.toml"),
        "email_from = \"Repo <repo@example.org>\"\nsmtp = \"repo.example:25\"\n",
    )
    .unwrap();
    let xdg = t.path().join("xdg");
    std::fs::create_dir_all(xdg.join("mmci")).unwrap();
    std::fs::write(
        xdg.join("mmci/config.toml"),
        "github_repo = \"user/linux\"\nemail_from = \"User <user@example.org>\"\n",
    )
    .unwrap();
    let o = common::bin_blocking()
        .args(["--work-dir", "/flag/work", "config", "show"])
        .current_dir(&sub)
        .env("XDG_CONFIG_HOME", &xdg)
        .env("MMCI_SMTP", "env.example:587")
        .env_remove("MMCI_WORK_DIR")
        .env_remove("MMCI_EMAIL_FROM")
        .env_remove("GITHUB_REPOSITORY")
        .env_remove("MMCI_PATCHWORK_URL")
        .env_remove("MMCI_PATCHWORK_PROJECT")
        .env_remove("MMCI_RESULTS")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    let line = |key: &str| {
        out.lines()
            .find(|l| l.starts_with(&format!("{key} ")))
            .unwrap_or_else(|| panic!("no {key} in:\n{out}"))
            .to_string()
    };
    let repo_file = repo.join("mmci.toml");
    let user_file = xdg.join("mmci/config.toml");
    let cases = [
        (
            "work_dir",
            "\"/flag/work\"",
            "# flag --work-dir".to_string(),
        ),
        (
            "smtp",
            "\"env.example:587\"",
            "# environment $MMCI_SMTP".to_string(),
        ),
        (
            "email_from",
            "\"Repo <repo@example.org>\"",
            format!("# file {}", repo_file.display()),
        ),
        (
            "github_repo",
            "\"user/linux\"",
            format!("# file {}", user_file.display()),
        ),
        ("patchwork_project", "(none)", "# default".to_string()),
    ];
    for (key, value, origin) in cases {
        let l = line(key);
        assert!(l.contains(value) && l.ends_with(&origin), "{key}: {l}");
    }
    // A mistyped key is an error naming the file, the line and the keys.
    std::fs::write(repo.join("mmci.toml"), "\nsmpt = \"x\"\n").unwrap();
    let o = common::bin_blocking()
        .args(["config", "show"])
        .current_dir(&sub)
        .env("XDG_CONFIG_HOME", &xdg)
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(mmci::error::exit::USAGE),
        "{}",
        text(&o)
    );
    let want = format!(
        "{}:2: unknown key `smpt` (known: work_dir",
        repo_file.display()
    );
    assert!(text(&o).contains(&want), "{}", text(&o));
}

/// `cmd`'s output, spawned again while exec says the file is busy: a
/// binary just copied can be open for writing in a child another test
/// thread forked in between (it closes at that child's exec), and exec
/// refuses a file open for writing (ETXTBSY).
fn output_of_fresh_binary(cmd: &mut Command) -> std::process::Output {
    for _ in 0..100 {
        match cmd.output() {
            Err(e) if e.kind() == std::io::ErrorKind::ExecutableFileBusy => {
                std::thread::sleep(std::time::Duration::from_millis(20))
            }
            other => return other.unwrap(),
        }
    }
    panic!("the copied binary stayed busy for 2 s");
}

#[test]
fn the_default_matrix_works_from_a_copied_binary_elsewhere() {
    let t = tempfile::tempdir().unwrap();
    let bin = t.path().join("bin/mmci");
    std::fs::create_dir_all(bin.parent().unwrap()).unwrap();
    std::fs::copy(BIN, &bin).unwrap();
    let cwd = t.path().join("elsewhere");
    std::fs::create_dir(&cwd).unwrap();
    let cache = t.path().join("cache");
    let o = output_of_fresh_binary(
        Command::new(&bin)
            .args(["matrix", "show"])
            .current_dir(&cwd)
            .env("XDG_CACHE_HOME", &cache),
    );
    assert!(o.status.success(), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    let line = out
        .lines()
        .find(|l| l.starts_with("kernel patched: series "))
        .unwrap_or_else(|| panic!("no patched kernel in:\n{out}"));
    let series = PathBuf::from(line.trim_start_matches("kernel patched: series "));
    assert!(series.starts_with(&cache), "{line}: not the embedded copy");
    assert_eq!(
        std::fs::read(&series).unwrap(),
        std::fs::read(repo_root().join("kernels/series/mglru-isolation.mbox")).unwrap(),
        "the embedded series is the checkout's"
    );
    // And `series show` reads it from there.
    let o = Command::new(&bin)
        .args(["series", "show", series.to_str().unwrap()])
        .current_dir(&cwd)
        .env("MMCI_WORK_DIR", t.path().join("work"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("MGLRU isolation"), "{}", text(&o));
}
