//! Builds guest-init, the guest's static PID 1, for every guest architecture
//! whose Rust target is installed, and embeds the binaries into mmci, so that
//! the host tool and the guest always speak the same record format version.
//! Also gives the crate the git commit it is built from (`MMCI_GIT_COMMIT`,
//! unset outside a git checkout), which manifests and reports name so that
//! a run can be reproduced with the same mmci.
//!
//! The nested cargo uses its own target directory (a build script must not
//! wait on the lock of the outer build's) under the workspace's `target/`, so
//! it is cached across builds of the orchestrator.

use std::env;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

const GUEST_TARGETS: [(&str, &str); 2] = [
    ("x86_64", "x86_64-unknown-linux-musl"),
    ("aarch64", "aarch64-unknown-linux-musl"),
];

fn main() {
    let manifest_dir = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap());
    let workspace = manifest_dir.parent().unwrap().to_path_buf();
    for dir in [
        "guest-init/src",
        "guest-init/Cargo.toml",
        "record/src",
        "record/Cargo.toml",
        "Cargo.lock",
    ] {
        println!("cargo:rerun-if-changed={}", workspace.join(dir).display());
    }
    println!("cargo:rerun-if-env-changed=MMCI_SKIP_GUEST_TARGETS");
    git_commit(&workspace);
    let skip = env::var("MMCI_SKIP_GUEST_TARGETS").unwrap_or_default();

    let target_dir = workspace.join("target").join("guest-init");
    let installed = installed_targets();
    let usable: Vec<(&str, &str)> = GUEST_TARGETS
        .into_iter()
        .filter(|(arch, triple)| {
            let skipped = skip.split(',').any(|s| s.trim() == *arch);
            let installed = installed
                .as_ref()
                .is_none_or(|list| list.iter().any(|t| t == triple));
            if skipped {
                println!(
                    "cargo:warning=guest-init not built for {arch}: MMCI_SKIP_GUEST_TARGETS names it"
                );
            } else if !installed {
                println!(
                    "cargo:warning=guest-init not built for {arch}: rust target {triple} is not installed \
                     (run ./mmci-setup or `rustup target add {triple}`)"
                );
            }
            installed && !skipped
        })
        .collect();
    let triples: Vec<&str> = usable.iter().map(|(_, triple)| *triple).collect();
    if !triples.is_empty() {
        build_guest_init(&workspace, &target_dir, &triples);
    }
    let mut generated = String::new();
    for (arch, triple) in GUEST_TARGETS {
        let konst = format!("GUEST_INIT_{}", arch.to_uppercase());
        if triples.contains(&triple) {
            let path = target_dir.join(triple).join("guest").join("guest-init");
            writeln!(
                generated,
                "pub const {konst}: Option<&[u8]> = Some(include_bytes!({:?}));",
                path.display().to_string()
            )
            .unwrap();
        } else {
            writeln!(generated, "pub const {konst}: Option<&[u8]> = None;").unwrap();
        }
    }
    let out = PathBuf::from(env::var("OUT_DIR").unwrap()).join("guest_bins.rs");
    std::fs::write(out, generated).unwrap();
}

/// `cargo:rustc-env=MMCI_GIT_COMMIT=<HEAD>` when `workspace` is a git
/// checkout, rerun when HEAD moves (a commit, a checkout: both write the
/// checkout's HEAD log).
fn git_commit(workspace: &Path) {
    let git = |args: &[&str]| {
        Command::new("git")
            .arg("-C")
            .arg(workspace)
            .args(args)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    let Some(git_dir) = git(&["rev-parse", "--absolute-git-dir"]) else {
        return;
    };
    for f in ["HEAD", "logs/HEAD"] {
        let path = Path::new(&git_dir).join(f);
        if path.exists() {
            println!("cargo:rerun-if-changed={}", path.display());
        }
    }
    if let Some(commit) = git(&["rev-parse", "HEAD"]).filter(|c| c.len() == 40) {
        println!("cargo:rustc-env=MMCI_GIT_COMMIT={commit}");
    }
}

/// Targets rustup says are installed, or None without rustup (then we try all).
fn installed_targets() -> Option<Vec<String>> {
    let out = Command::new("rustup")
        .args(["target", "list", "--installed"])
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    Some(
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| l.trim().to_string())
            .collect(),
    )
}

/// Builds guest-init for every triple in one cargo invocation, so that
/// cargo compiles the targets side by side and their shared host crates
/// (proc macros) once: one invocation per triple ran them one after the
/// other, on the critical path of a cold `cargo install`.
fn build_guest_init(workspace: &Path, target_dir: &Path, triples: &[&str]) {
    let cargo = env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.current_dir(workspace).args([
        "build",
        "--locked",
        "-p",
        "guest-init",
        "--profile",
        "guest",
    ]);
    for triple in triples {
        cmd.args(["--target", triple]);
    }
    cmd.arg("--target-dir").arg(target_dir);
    // The outer build's settings are not the guest's: a clippy or coverage
    // wrapper, host RUSTFLAGS or a forced target would break a static binary.
    for var in [
        "RUSTC_WRAPPER",
        "RUSTC_WORKSPACE_WRAPPER",
        "RUSTFLAGS",
        "CARGO_ENCODED_RUSTFLAGS",
        "CARGO_BUILD_TARGET",
        "CARGO_TARGET_DIR",
        "CARGO_BUILD_RUSTFLAGS",
        "CARGO_PRIMARY_PACKAGE",
    ] {
        cmd.env_remove(var);
    }
    // rust-lld links static aarch64 binaries without a cross gcc (the
    // variable applies to that target only).
    cmd.env("CARGO_TARGET_AARCH64_UNKNOWN_LINUX_MUSL_LINKER", "rust-lld");
    match cmd.status() {
        Ok(s) if s.success() => {}
        Ok(s) => panic!(
            "building guest-init for {} failed ({s}); see the output above",
            triples.join(", ")
        ),
        Err(e) => panic!("cannot run cargo to build guest-init: {e}"),
    }
}
