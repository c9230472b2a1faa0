//! file:line in call traces: a kernel built with debug info keeps, in its
//! build dir, its vmlinux and the base tree's own `scripts/decode_stacktrace.sh`
//! (with `decodecode`, which it calls); a splat's excerpt is piped through
//! that script, which turns each `func+0x1c/0x80` frame into
//! `func (mm/vmscan.c:1234)` with addr2line, exactly as a maintainer running
//! `scripts/decode_stacktrace.sh vmlinux` on the console would see it.
//!
//! The scripts come from the tree's commit, never from a series' checkout: a
//! series may rewrite them. addr2line and nm read a vmlinux a series' build
//! produced, and the excerpt is a hostile kernel's console, so the script
//! runs in the build sandbox ([`crate::kernel::sandbox`]: the build dir
//! read-only, nothing else of the host, no network, no secrets in its
//! environment); where the sandbox cannot run, traces stay undecoded.

use std::path::{Path, PathBuf};

use tokio::process::Command;

use crate::arch::Arch;
use crate::host::process::{self, CommandError, Limits};

/// Where a build dir keeps the decoding scripts.
pub const SCRIPTS_DIR: &str = "scripts";
/// The scripts copied from the tree: the decoder and the `Code:` line
/// disassembler it calls from its own directory.
pub const SCRIPTS: [&str; 2] = ["decode_stacktrace.sh", "decodecode"];
/// The vmlinux an arm64 build keeps next to its `Image` (x86_64 boots its
/// vmlinux, so the image is the one).
pub const VMLINUX: &str = "vmlinux";

/// One decode of one excerpt may take this long: the script runs `nm` over
/// vmlinux once per distinct function, ~0.2 s each on a debug vmlinux.
const DECODE_LIMITS: Limits = Limits::total(std::time::Duration::from_secs(300));

/// Does this `.config` text build debug info (any DWARF version)?
pub fn has_debug_info(config: &str) -> bool {
    config.lines().any(|l| l.trim() == "CONFIG_DEBUG_INFO=y")
}

/// Decodes call traces with one build's vmlinux.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decoder {
    pub script: PathBuf,
    pub vmlinux: PathBuf,
    pub arch: Arch,
}

impl Decoder {
    /// The decoder of the build whose image is `image` (its build dir holds
    /// `config`, the vmlinux and the scripts), if it was built with debug
    /// info; `None` for a given image or a build without.
    pub fn for_image(image: &Path, arch: Arch) -> Option<Decoder> {
        let dir = image.parent()?;
        let config = std::fs::read_to_string(dir.join("config")).ok()?;
        if !has_debug_info(&config) {
            return None;
        }
        let vmlinux = if image.file_name().is_some_and(|n| n == VMLINUX) {
            image.to_path_buf()
        } else {
            dir.join(VMLINUX)
        };
        let script = dir.join(SCRIPTS_DIR).join(SCRIPTS[0]);
        (vmlinux.is_file() && script.is_file()).then_some(Decoder {
            script,
            vmlinux,
            arch,
        })
    }

    /// The script's sandbox: the script's and the vmlinux's dirs, both
    /// read-only; the allow-listed environment (no debuginfod lookups: no
    /// DEBUGINFOD_URLS, and no network anyway) with the cross tools' prefix.
    pub fn sandbox_spec(&self) -> crate::kernel::sandbox::Spec {
        let mut read_only: Vec<PathBuf> = [&self.script, &self.vmlinux]
            .iter()
            .filter_map(|p| p.parent().map(Path::to_path_buf))
            .collect();
        read_only.dedup();
        let mut env = crate::kernel::sandbox::host_env(false);
        if let Some(prefix) = self.arch.cross_compile() {
            env.push(("CROSS_COMPILE".into(), prefix.into()));
        }
        crate::kernel::sandbox::Spec {
            read_only,
            writable: vec![],
            env,
        }
    }

    /// `excerpt` with file:line after every frame the script resolves. The
    /// script reads lines with `read`, which drops their indentation; each
    /// line keeps its own. `Code:` lines are left as they are (the script
    /// would disassemble them into a dozen lines each, beyond the excerpt's
    /// bound). Any other change in the line count is an error.
    pub async fn decode(&self, excerpt: &str, scratch: &Path) -> Result<String, DecodeError> {
        let lines: Vec<&str> = excerpt.lines().collect();
        let fed: Vec<usize> = (0..lines.len())
            .filter(|&i| !lines[i].contains("Code:"))
            .collect();
        std::fs::create_dir_all(scratch).map_err(|e| DecodeError::Io(scratch.into(), e))?;
        let mut text = String::new();
        for &i in &fed {
            text.push_str(lines[i]);
            text.push('\n');
        }
        // A file of its own: runs that end together decode at once.
        let io = |e| DecodeError::Io(scratch.into(), e);
        let mut input = tempfile::Builder::new()
            .prefix("decode-")
            .tempfile_in(scratch)
            .map_err(io)?;
        std::io::Write::write_all(&mut input, text.as_bytes()).map_err(io)?;
        let stdin = input.reopen().map_err(io)?;
        let bwrap = crate::kernel::sandbox::probe()
            .await
            .map_err(DecodeError::NoSandbox)?;
        let mut cmd = crate::kernel::sandbox::command(Some(bwrap), &self.sandbox_spec(), "bash");
        cmd.arg(&self.script).arg(&self.vmlinux).arg("auto");
        if let Some(dir) = self.vmlinux.parent() {
            cmd.current_dir(dir);
        }
        let out = process::output_ok_from(
            &mut cmd,
            std::process::Stdio::from(stdin),
            "decode_stacktrace.sh",
            DECODE_LIMITS,
        )
        .await
        .map_err(DecodeError::Script)?;
        let decoded: Vec<String> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| l.trim().to_string())
            .collect();
        if decoded.len() != fed.len() {
            return Err(DecodeError::Lines {
                fed: fed.len(),
                got: decoded.len(),
            });
        }
        let mut out_lines: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
        for (&i, d) in fed.iter().zip(decoded) {
            let indent = &lines[i][..lines[i].len() - lines[i].trim_start().len()];
            out_lines[i] = format!("{indent}{d}");
        }
        Ok(out_lines.join("\n"))
    }
}

#[derive(Debug, thiserror::Error)]
pub enum DecodeError {
    #[error("not decoded without the build sandbox: {0}")]
    NoSandbox(crate::kernel::sandbox::Unavailable),
    #[error("{0}")]
    Io(PathBuf, #[source] std::io::Error),
    #[error(transparent)]
    Script(CommandError),
    #[error("decode_stacktrace.sh printed {got} line(s) for {fed}")]
    Lines { fed: usize, got: usize },
}

/// Copies the decoding scripts of `commit` in the tree's repository `repo`
/// into `dir/scripts/` (read with `git show`, not from a checkout a series
/// may have changed).
pub async fn keep_scripts(repo: &Path, commit: &str, dir: &Path) -> Result<(), DecodeError> {
    let to = dir.join(SCRIPTS_DIR);
    std::fs::create_dir_all(&to).map_err(|e| DecodeError::Io(to.clone(), e))?;
    for name in SCRIPTS {
        let out = process::output_ok(
            Command::new("git")
                .arg("-C")
                .arg(repo)
                .args(["show", &format!("{commit}:scripts/{name}")]),
            &format!("git show scripts/{name}"),
            Limits::QUICK,
        )
        .await
        .map_err(DecodeError::Script)?;
        let path = to.join(name);
        std::fs::write(&path, &out.stdout).map_err(|e| DecodeError::Io(path.clone(), e))?;
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))
            .map_err(|e| DecodeError::Io(path.clone(), e))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_info_is_read_from_the_config() {
        for (config, want) in [
            ("CONFIG_DEBUG_INFO=y\nCONFIG_DEBUG_INFO_DWARF5=y\n", true),
            (
                "# CONFIG_DEBUG_INFO is not set\nCONFIG_DEBUG_INFO_NONE=y\n",
                false,
            ),
            ("CONFIG_DEBUG_INFO_REDUCED=y\n", false),
            ("", false),
        ] {
            assert_eq!(has_debug_info(config), want, "{config:?}");
        }
    }

    /// decode_stacktrace.sh (here a stand-in that tries what a hostile one
    /// could) runs in the build sandbox: it reads its input and its build
    /// dir, but neither a token file next to it nor writes anywhere.
    #[tokio::test]
    async fn the_decoder_runs_in_the_sandbox() {
        // Not /tmp: the sandbox has a /tmp of its own, so a write there
        // would succeed without reaching the host and prove nothing.
        let tmp = tempfile::tempdir_in("/var/tmp").unwrap();
        let dir = tmp.path().join("build");
        std::fs::create_dir_all(dir.join(SCRIPTS_DIR)).unwrap();
        std::fs::write(dir.join("config"), "CONFIG_DEBUG_INFO=y\n").unwrap();
        std::fs::write(dir.join(VMLINUX), "ELF").unwrap();
        let token = tmp.path().join("token");
        std::fs::write(&token, "ghp_decoder\n").unwrap();
        let script = format!(
            "while IFS= read -r l; do\n\
             if cat {token} || touch {dir}/planted {token}.new || ! cat {dir}/vmlinux >/dev/null; then echo LEAK; else echo \"$l (sandboxed)\"; fi\n\
             done\n",
            token = token.display(),
            dir = dir.display()
        );
        std::fs::write(dir.join(SCRIPTS_DIR).join(SCRIPTS[0]), script).unwrap();
        let decoder = Decoder::for_image(&dir.join(VMLINUX), Arch::X86_64).unwrap();
        let out = decoder
            .decode(
                " shrink_folio_list+0x1c/0x80\nCode: 0f 0b\n kswapd+0x10/0x20",
                &tmp.path().join("scratch"),
            )
            .await
            .unwrap();
        assert_eq!(
            out,
            " shrink_folio_list+0x1c/0x80 (sandboxed)\nCode: 0f 0b\n kswapd+0x10/0x20 (sandboxed)"
        );
        assert!(!dir.join("planted").exists());
        assert!(!tmp.path().join("token.new").exists());
    }

    #[test]
    fn no_decoder_without_debug_info_or_files() {
        let dir = tempfile::tempdir().unwrap();
        let image = dir.path().join("vmlinux");
        std::fs::write(&image, b"ELF").unwrap();
        std::fs::write(dir.path().join("config"), "CONFIG_DEBUG_INFO_NONE=y\n").unwrap();
        assert_eq!(Decoder::for_image(&image, Arch::X86_64), None);
        std::fs::write(dir.path().join("config"), "CONFIG_DEBUG_INFO=y\n").unwrap();
        // Debug info, but no scripts kept (a build from before).
        assert_eq!(Decoder::for_image(&image, Arch::X86_64), None);
        std::fs::create_dir(dir.path().join(SCRIPTS_DIR)).unwrap();
        std::fs::write(dir.path().join("scripts/decode_stacktrace.sh"), "").unwrap();
        let d = Decoder::for_image(&image, Arch::X86_64).unwrap();
        assert_eq!(d.vmlinux, image);
        // arm64 boots Image; its vmlinux is kept beside it.
        let arm = dir.path().join("Image");
        std::fs::write(&arm, b"MZ").unwrap();
        assert_eq!(
            Decoder::for_image(&arm, Arch::Arm64).unwrap().vmlinux,
            dir.path().join("vmlinux")
        );
    }
}
