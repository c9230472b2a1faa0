//! `mmci doctor`: what this machine has, what it lacks, and which
//! accelerator works.

use std::path::Path;

use crate::arch::Arch;
use crate::guest::bin as guest_bin;
use crate::host::tools::on_path;
use crate::kernel::tree::BUNDLED_TARBALL;
use crate::run::accel;

/// One line of the doctor's report.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Check {
    pub what: String,
    pub ok: bool,
    /// Needed for the default run (else optional).
    pub required: bool,
    pub detail: String,
}

fn tool(name: &str, required: bool, purpose: &str) -> Check {
    match on_path(name) {
        Some(p) => Check {
            what: name.into(),
            ok: true,
            required,
            detail: p.display().to_string(),
        },
        None => Check {
            what: name.into(),
            ok: false,
            required,
            detail: format!("missing ({purpose}): run ./mmci-setup"),
        },
    }
}

/// Which accelerator works: the static choice, or with `probe` the bundled
/// kernel (built if needed) booted under KVM.
pub async fn accel_line(
    probe: bool,
    work: &crate::host::paths::WorkDir,
) -> Result<String, crate::kernel::KernelError> {
    if probe {
        let k = crate::kernel::KernelSource::bundled();
        let info = crate::kernel::prepare(&k, Arch::X86_64, work).await?;
        let guest = guest_bin::guest_init(Arch::X86_64).unwrap_or_default();
        let c = accel::choose(
            accel::AccelRequest::Auto,
            Arch::X86_64,
            &info,
            guest,
            &work.scratch(),
        )
        .await;
        return Ok(format!("{} ({})", c.accel, c.note));
    }
    Ok(
        match accel::static_choice(accel::AccelRequest::Auto, Arch::X86_64) {
            Some(c) => format!("{} ({})", c.accel, c.note),
            None => "kvm device present; `mmci doctor --probe` boots a guest to test it".into(),
        },
    )
}

/// Everything the doctor checks that needs no guest boot.
pub fn checks() -> Vec<Check> {
    let mut out = vec![
        tool("qemu-system-x86_64", true, "x86_64 guests"),
        tool("qemu-system-aarch64", false, "arm64 guests"),
        tool("make", true, "kernel builds"),
        tool("gcc", true, "kernel builds"),
        tool("flex", true, "kernel builds"),
        tool("bison", true, "kernel builds"),
        tool("bc", true, "kernel builds"),
        tool("git", true, "kernel trees"),
        tool("tar", true, "importing the bundled tree"),
        tool("aarch64-linux-gnu-gcc", false, "arm64 kernel builds"),
        tool("ccache", false, "faster rebuilds"),
    ];
    out.push(Check {
        what: "libelf/libssl headers".into(),
        ok: Path::new("/usr/include/gelf.h").exists()
            && Path::new("/usr/include/openssl/ssl.h").exists(),
        required: true,
        detail: "libelf-dev, libssl-dev (kernel build)".into(),
    });
    out.push(Check {
        what: "bundled kernel tree".into(),
        ok: Path::new(BUNDLED_TARBALL).is_file(),
        required: true,
        detail: BUNDLED_TARBALL.into(),
    });
    for arch in Arch::ALL {
        let present = guest_bin::guest_init(arch).is_some();
        out.push(Check {
            what: format!("guest-init ({arch})"),
            ok: present,
            required: arch == Arch::X86_64,
            detail: if present {
                format!(
                    "embedded, {} KiB",
                    guest_bin::guest_init(arch).map_or(0, |b| b.len() / 1024)
                )
            } else {
                format!(
                    "not embedded: `rustup target add {}` then rebuild mmci",
                    guest_bin::guest_triple(arch)
                )
            },
        });
    }
    out.push(Check {
        what: "/dev/kvm".into(),
        ok: accel::kvm_device_usable().is_ok(),
        required: false,
        detail: match accel::kvm_device_usable() {
            Ok(()) => "present (probed with a real boot by `mmci run`)".into(),
            Err(e) => format!("{e}: guests run under TCG"),
        },
    });
    out
}

/// The build sandbox, from [`crate::kernel::sandbox::probe`]: required,
/// since without it no series builds (unless `--unsandboxed-builds`).
pub fn sandbox_check(
    probe: &Result<crate::kernel::sandbox::Bwrap, crate::kernel::sandbox::Unavailable>,
) -> Check {
    Check {
        what: "build sandbox (bwrap)".into(),
        ok: probe.is_ok(),
        required: true,
        detail: match probe {
            Ok(b) => format!(
                "runs {}: own user namespace (uid 65534), no capabilities, no network{}",
                crate::kernel::sandbox::user::run_as(),
                if b.disable_userns {
                    ", no nested user namespaces"
                } else {
                    ""
                }
            ),
            Err(e) => format!(
                "{}; fix: {} (without it series and fetched trees do not build unless --unsandboxed-builds)",
                e.why, e.fix
            ),
        },
    }
}

/// Whether a running sandbox also keeps builds from making user
/// namespaces: bwrap's `--disable-userns` (0.8) and mmci's seccomp filter
/// (`--add-seccomp-fd`, 0.5). Not required (a build still runs), but an
/// older bwrap is flagged with what it leaves open. `None` where the
/// sandbox does not run (its own check says why).
pub fn userns_check(
    probe: &Result<crate::kernel::sandbox::Bwrap, crate::kernel::sandbox::Unavailable>,
) -> Option<Check> {
    let b = probe.as_ref().ok()?;
    let upgrade = "install bubblewrap 0.8 or newer (Debian 12 and later, Ubuntu 24.04)";
    let detail = match (b.disable_userns, b.seccomp) {
        (true, true) => "--disable-userns, and a seccomp filter denying CLONE_NEWUSER, keyctl, bpf, userfaultfd and io_uring".to_string(),
        (true, false) => "--disable-userns; no seccomp filter (bwrap lacks --add-seccomp-fd)".to_string(),
        (false, true) => format!(
            "bwrap too old for --disable-userns (older than 0.8): only mmci's seccomp filter keeps builds from making user namespaces; {upgrade}"
        ),
        (false, false) => format!(
            "bwrap too old for --disable-userns and --add-seccomp-fd (older than 0.5): a build can make user namespaces, the usual start of a kernel exploit; {upgrade}"
        ),
    };
    Some(Check {
        what: "sandbox: no user namespaces".into(),
        ok: b.disable_userns,
        required: false,
        detail,
    })
}

/// Every check: [`checks`] and the sandbox's.
pub async fn all_checks() -> Vec<Check> {
    let mut out = checks();
    let probe = crate::kernel::sandbox::probe().await;
    out.push(sandbox_check(&probe));
    out.extend(userns_check(&probe));
    out
}

/// The report as text; the bool says whether everything required is there.
pub fn render(checks: &[Check], accel_line: &str) -> (String, bool) {
    let mut out = String::new();
    let mut ok = true;
    for c in checks {
        let mark = match (c.ok, c.required) {
            (true, _) => "ok     ",
            (false, true) => "MISSING",
            (false, false) => "absent ",
        };
        ok &= c.ok || !c.required;
        out.push_str(&format!("{mark} {:<24} {}\n", c.what, c.detail));
    }
    out.push_str(&format!("accel   {accel_line}\n"));
    (out, ok)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_required_tool_fails_the_report() {
        let checks = vec![
            Check {
                what: "make".into(),
                ok: true,
                required: true,
                detail: "/usr/bin/make".into(),
            },
            Check {
                what: "ccache".into(),
                ok: false,
                required: false,
                detail: "missing".into(),
            },
        ];
        let (text, ok) = render(&checks, "tcg");
        assert!(ok);
        assert!(text.contains("absent  ccache"));
        let mut bad = checks.clone();
        bad[0].ok = false;
        let (text, ok) = render(&bad, "tcg");
        assert!(!ok);
        assert!(text.contains("MISSING make"));
    }

    #[test]
    fn a_sandbox_that_cannot_run_fails_the_report() {
        use crate::kernel::sandbox::{Bwrap, Unavailable};
        let bad = sandbox_check(&Err(Unavailable {
            why: "bwrap cannot create its sandbox here (bwrap: setting up uid map: Permission denied)".into(),
            fix: "AppArmor forbids unprivileged user namespaces".into(),
        }));
        let (text, ok) = render(&[bad], "tcg");
        assert!(!ok, "{text}");
        assert!(
            text.contains("MISSING build sandbox (bwrap)")
                && text.contains("uid map: Permission denied")
                && text.contains("fix: AppArmor"),
            "{text}"
        );
        let good = sandbox_check(&Ok(Bwrap {
            disable_userns: true,
            tmpfs_size: true,
            seccomp: true,
        }));
        let (text, ok) = render(&[good], "tcg");
        assert!(ok && text.contains("ok      build sandbox"), "{text}");
    }

    /// L1: a bwrap without `--disable-userns` (older than 0.8, e.g. 0.6 of
    /// Ubuntu 22.04) is flagged, with what still holds and the fix.
    #[test]
    fn a_bwrap_too_old_for_disable_userns_is_flagged() {
        use crate::kernel::sandbox::Bwrap;
        let b = |disable_userns, seccomp| Bwrap {
            disable_userns,
            tmpfs_size: disable_userns,
            seccomp,
        };
        let (text, ok) = render(&[userns_check(&Ok(b(false, true))).unwrap()], "tcg");
        assert!(ok, "not required: builds still run");
        assert!(
            text.contains("absent  sandbox: no user namespaces")
                && text.contains("bwrap too old for --disable-userns (older than 0.8)")
                && text.contains("only mmci's seccomp filter")
                && text.contains("install bubblewrap 0.8 or newer"),
            "{text}"
        );
        let (text, _) = render(&[userns_check(&Ok(b(false, false))).unwrap()], "tcg");
        assert!(text.contains("a build can make user namespaces"), "{text}");
        let (text, _) = render(&[userns_check(&Ok(b(true, true))).unwrap()], "tcg");
        assert!(
            text.starts_with(
                "ok      sandbox: no user namespaces --disable-userns, and a seccomp filter"
            ),
            "{text}"
        );
        assert!(userns_check(&Err(crate::kernel::sandbox::Unavailable {
            why: "x".into(),
            fix: "y".into()
        }))
        .is_none());
    }

    #[test]
    fn tool_lookup() {
        assert!(tool("sh", true, "x").ok);
        let c = tool("mmci-no-such-tool", true, "testing");
        assert!(!c.ok);
        assert!(c.detail.contains("mmci-setup"));
    }
}
