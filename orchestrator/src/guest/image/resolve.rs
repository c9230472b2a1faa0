//! Which package versions an image recipe resolves to today, without a
//! chroot: the host's apt-get against a private state dir in the work dir
//! (its own sources list of Debian's archive, an empty dpkg status), asked
//! to simulate installing the suite's Essential set plus the recipe's
//! packages. The resolved list is part of the image's cache key, and the
//! build installs exactly it.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::recipe::Recipe;
use super::{run_captured, ImageError};

/// Debian's archive: the only source images are built from.
pub const DEBIAN_MIRROR: &str = "http://deb.debian.org/debian";
pub const DEBIAN_SECURITY: &str = "http://deb.debian.org/debian-security";
const KEYRING: &str = "/usr/share/keyrings/debian-archive-keyring.gpg";

/// How long apt may take to refresh the index and resolve.
const APT_TIMEOUT: Duration = Duration::from_secs(600);

/// One package at one version.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Package {
    pub name: String,
    pub version: String,
}

/// The sources.list lines of `suite`: the suite, its updates, its security
/// updates, main only.
pub fn sources(suite: &str) -> Vec<String> {
    vec![
        format!("deb [signed-by={KEYRING}] {DEBIAN_MIRROR} {suite} main"),
        format!("deb [signed-by={KEYRING}] {DEBIAN_MIRROR} {suite}-updates main"),
        format!("deb [signed-by={KEYRING}] {DEBIAN_SECURITY} {suite}-security main"),
    ]
}

/// The host architecture in Debian's words.
pub fn debian_arch() -> &'static str {
    match std::env::consts::ARCH {
        "aarch64" => "arm64",
        _ => "amd64",
    }
}

/// apt's private state for one suite.
struct AptState {
    root: PathBuf,
}

impl AptState {
    fn prepare(root: PathBuf, suite: &str) -> Result<AptState, ImageError> {
        let io = |p: &Path| {
            let p = p.to_path_buf();
            move |e| ImageError::Io(p, e)
        };
        for d in ["state/lists/partial", "cache/archives/partial", "etc"] {
            let d = root.join(d);
            std::fs::create_dir_all(&d).map_err(io(&d))?;
        }
        let status = root.join("status");
        std::fs::write(&status, "").map_err(io(&status))?;
        let list = root.join("etc/sources.list");
        std::fs::write(&list, sources(suite).join("\n") + "\n").map_err(io(&list))?;
        let empty = root.join("etc/empty");
        std::fs::create_dir_all(&empty).map_err(io(&empty))?;
        Ok(AptState { root })
    }

    fn options(&self) -> Vec<String> {
        let r = self.root.display();
        let arch = debian_arch();
        [
            format!("Dir::State={r}/state"),
            format!("Dir::State::status={r}/status"),
            format!("Dir::Etc::SourceList={r}/etc/sources.list"),
            format!("Dir::Etc::SourceParts={r}/etc/empty"),
            format!("Dir::Etc::Preferences={r}/etc/empty/none"),
            format!("Dir::Etc::PreferencesParts={r}/etc/empty"),
            format!("Dir::Cache={r}/cache"),
            format!("APT::Architecture={arch}"),
            format!("APT::Architectures={arch}"),
            "Debug::NoLocking=1".into(),
            "APT::Install-Recommends=false".into(),
            "APT::Get::List-Cleanup=false".into(),
        ]
        .into_iter()
        .flat_map(|o| ["-o".to_string(), o])
        .collect()
    }
}

/// Parses `apt-get install -s` output: `Inst NAME (VERSION ...)` lines.
pub fn parse_simulation(text: &str) -> Vec<Package> {
    let mut out: Vec<Package> = text
        .lines()
        .filter_map(|l| l.strip_prefix("Inst "))
        .filter_map(|rest| {
            let (name, rest) = rest.split_once(' ')?;
            let version = rest.strip_prefix('(')?.split_whitespace().next()?;
            Some(Package {
                name: name.to_string(),
                version: version.to_string(),
            })
        })
        .collect();
    out.sort();
    out.dedup();
    out
}

/// Packages apt could not find: `E: Unable to locate package NAME` and
/// `E: Package 'NAME' has no installation candidate`.
pub fn missing_packages(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| {
            l.strip_prefix("E: Unable to locate package ")
                .map(str::trim)
                .map(str::to_string)
                .or_else(|| {
                    let rest = l.strip_prefix("E: Package '")?;
                    let (name, tail) = rest.split_once('\'')?;
                    tail.contains("no installation candidate")
                        .then(|| name.to_string())
                })
        })
        .collect()
}

/// Refreshes the suite's index (`refresh`; else only when there is none)
/// and resolves the recipe's package set.
pub async fn resolve(
    recipe: &Recipe,
    apt_dir: &Path,
    log: &Path,
    refresh: bool,
) -> Result<Vec<Package>, ImageError> {
    let state = AptState::prepare(apt_dir.join(&recipe.suite), &recipe.suite)?;
    let have_lists = std::fs::read_dir(state.root.join("state/lists"))
        .map(|d| {
            d.flatten()
                .any(|e| e.file_name().to_string_lossy().ends_with("_Packages"))
        })
        .unwrap_or(false);
    if refresh || !have_lists {
        let mut cmd = tokio::process::Command::new("apt-get");
        cmd.args(state.options()).args(["-q", "update"]);
        let (ok, text) = run_captured(&mut cmd, log, "apt-get update", APT_TIMEOUT).await?;
        if !ok {
            return Err(ImageError::Apt {
                what: "apt-get update (the Debian archive)".into(),
                detail: last_lines(&text, 5),
                log: log.to_path_buf(),
            });
        }
    }
    let mut cmd = tokio::process::Command::new("apt-get");
    cmd.args(state.options())
        .args(["-q", "-s", "install", "?essential"])
        .args(recipe.packages.iter().map(|(p, _)| p.as_str()));
    let (ok, text) = run_captured(&mut cmd, log, "apt-get install -s", APT_TIMEOUT).await?;
    let missing = missing_packages(&text);
    if let Some(name) = missing.first() {
        return Err(ImageError::MissingPackage {
            recipe: recipe.path(),
            line: recipe.package_line(name),
            package: name.clone(),
            suite: recipe.suite.clone(),
        });
    }
    if !ok {
        return Err(ImageError::Apt {
            what: format!("resolving the packages of {}", recipe.path().display()),
            detail: last_lines(&text, 8),
            log: log.to_path_buf(),
        });
    }
    let packages = parse_simulation(&text);
    if packages.is_empty() {
        return Err(ImageError::Apt {
            what: "apt-get install -s resolved no package".into(),
            detail: last_lines(&text, 5),
            log: log.to_path_buf(),
        });
    }
    Ok(packages)
}

fn last_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn simulation_lines_become_packages() {
        let text = "NOTE: This is only a simulation!\n\
            Inst gcc-12-base (12.2.0-14+deb12u1 Debian:12.15/oldstable [amd64])\n\
            Inst libc6 (2.36-9+deb12u14 Debian:12.15/oldstable [amd64]) []\n\
            Conf libc6 (2.36-9+deb12u14 Debian:12.15/oldstable [amd64])\n\
            Inst perl-base (5.36.0-7+deb12u4 Debian-Security:12/oldstable-security [amd64])\n";
        assert_eq!(
            parse_simulation(text),
            [
                ("gcc-12-base", "12.2.0-14+deb12u1"),
                ("libc6", "2.36-9+deb12u14"),
                ("perl-base", "5.36.0-7+deb12u4")
            ]
            .map(|(n, v)| Package {
                name: n.into(),
                version: v.into()
            })
        );
    }

    #[test]
    fn missing_package_messages() {
        let text = "Reading package lists...\nE: Unable to locate package no-such-pkg\n\
                    E: Package 'python' has no installation candidate\n";
        assert_eq!(missing_packages(text), ["no-such-pkg", "python"]);
        assert!(missing_packages("E: Broken packages\n").is_empty());
    }

    #[test]
    fn sources_are_debians_archive_only() {
        let s = sources("bookworm");
        assert_eq!(s.len(), 3);
        assert!(s.iter().all(|l| l.contains("://deb.debian.org/")));
        assert!(s[2].contains("bookworm-security"));
    }
}
