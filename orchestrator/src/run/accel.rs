//! Choosing the accelerator. /dev/kvm existing proves nothing (nested KVM can
//! be present and broken: "KVM internal error ... emulation failure"), so
//! KVM is probed by booting the real kernel with a probe job; anything short
//! of a clean run falls back to TCG, and the reason travels with every result.

use std::path::Path;
use std::sync::PoisonError;
use std::time::Duration;

use mmci_record::{GuestJob, Scenario};

use crate::arch::Arch;
use crate::guest::vm::Accel;
use crate::results::KernelInfo;
use crate::run::guest::{self, RunConfig};
use crate::run::outcome::Outcome;

/// How long the KVM probe guest may take to say hello and power off.
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(10);

/// What the user asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum AccelRequest {
    /// KVM if a probe guest really runs under it, else TCG.
    Auto,
    Kvm,
    Tcg,
    /// TCG with instruction counting: guest time follows executed
    /// instructions, not the host's clock (see docs/accel.md).
    TcgIcount,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AccelChoice {
    pub accel: Accel,
    pub note: String,
}

/// Can this process open /dev/kvm read-write?
pub fn kvm_device_usable() -> Result<(), String> {
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/kvm")
        .map(|_| ())
        .map_err(|e| format!("/dev/kvm: {e}"))
}

/// Decides without booting anything when it can.
pub fn static_choice(req: AccelRequest, arch: Arch) -> Option<AccelChoice> {
    let tcg = |note: String| {
        Some(AccelChoice {
            accel: Accel::Tcg,
            note,
        })
    };
    match req {
        AccelRequest::Tcg => tcg("TCG requested".into()),
        AccelRequest::TcgIcount => Some(AccelChoice {
            accel: Accel::TcgIcount,
            note: format!(
                "TCG with icount requested (shift {}: guest time is instructions x {} ns)",
                crate::guest::vm::ICOUNT_SHIFT,
                1u32 << crate::guest::vm::ICOUNT_SHIFT
            ),
        }),
        AccelRequest::Kvm => Some(AccelChoice {
            accel: Accel::Kvm,
            note: "KVM requested (not probed)".into(),
        }),
        AccelRequest::Auto if !arch.kvm_possible() => {
            tcg(format!("KVM cannot run {arch} guests on this host"))
        }
        AccelRequest::Auto => match kvm_device_usable() {
            Err(e) => tcg(format!("no usable KVM ({e})")),
            Ok(()) => None,
        },
    }
}

/// Picks the accelerator, probing KVM with a real boot when it might work.
pub async fn choose(
    req: AccelRequest,
    arch: Arch,
    kernel: &KernelInfo,
    guest_init: &[u8],
    scratch: &Path,
) -> AccelChoice {
    match static_choice(req, arch) {
        Some(choice) => choice,
        None => {
            probe(arch, kernel, guest_init, scratch, "kvm-probe")
                .await
                .choice
        }
    }
}

/// A probe's choice, and whether it holds whatever else the host was doing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Probed {
    pub choice: AccelChoice,
    /// See [`conclusive`].
    pub conclusive: bool,
}

/// How a probe ended, as far as [`conclusive`] asks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProbeEnd {
    /// The guest reached PID 1 and powered off under KVM.
    Completed,
    /// QEMU ran until the timeout and the kernel printed nothing.
    SilentTimeout,
    /// Anything else: the kernel printed but did not finish, QEMU said the
    /// accelerator failed or exited early, or QEMU could not be started.
    Other,
}

/// Would the same probe on an idle host have ended the same way? A KVM
/// guest that ran did; so did one whose kernel printed nothing at all in
/// [`PROBE_TIMEOUT`]: the probe's QEMU gets at least a third of the CPUs
/// beside a `make -j` of the host's CPUs, a few CPU-seconds in 10 s, where
/// a working KVM prints its first line in well under one (a broken nested
/// KVM, as on the development host, never does). Every other failure may be
/// the builds' doing (a slow boot, a spawn that failed for want of memory),
/// or is cheap to see again (an accelerator error fails at once), so it is
/// probed again once the builds are done.
pub fn conclusive(end: ProbeEnd) -> bool {
    matches!(end, ProbeEnd::Completed | ProbeEnd::SilentTimeout)
}

/// Boots `kernel` under KVM with the probe job in `scratch`/`dir`.
async fn probe(
    arch: Arch,
    kernel: &KernelInfo,
    guest_init: &[u8],
    scratch: &Path,
    dir: &str,
) -> Probed {
    let probe_dir = scratch.join(dir);
    // Removed however the probe ends, an aborted one included.
    let _remove = crate::host::fs::RemoveDirOnDrop(probe_dir.clone());
    let cfg = RunConfig {
        id: "kvm-probe".into(),
        arch,
        accel: Accel::Kvm,
        accel_note: "probe".into(),
        vcpus: 1,
        memory_mb: 256,
        swap_mb: 0,
        kernel: kernel.clone(),
        guest_init: guest_init.to_vec(),
        job: GuestJob {
            scenario: Scenario::Probe,
            ..GuestJob::default()
        },
        extra_cmdline: vec![],
        // A working KVM reaches PID 1 in about a second; a broken nested one
        // may hang silently rather than fail, so do not wait long.
        timeout: PROBE_TIMEOUT,
        retries: 0,
        image: None,
    };
    let result = guest::run_guest(&cfg, &probe_dir, scratch).await;
    let silent = std::fs::read(probe_dir.join("console.log"))
        .map(|c| c.iter().all(u8::is_ascii_whitespace))
        .unwrap_or(true);
    let (choice, end) = match result {
        Ok(r) if r.classification.outcome == Outcome::Completed => (
            AccelChoice {
                accel: Accel::Kvm,
                note: format!(
                    "KVM probe booted to PID 1 in {:.0} ms",
                    r.timing.first_record_ms.unwrap_or(0.0)
                ),
            },
            ProbeEnd::Completed,
        ),
        Ok(r) => (
            AccelChoice {
                accel: Accel::Tcg,
                note: format!(
                    "KVM probe failed ({}: {}); using TCG",
                    r.classification.outcome.name(),
                    r.classification.reason
                ),
            },
            if r.timed_out && silent {
                ProbeEnd::SilentTimeout
            } else {
                ProbeEnd::Other
            },
        ),
        Err(e) => (
            AccelChoice {
                accel: Accel::Tcg,
                note: format!("KVM probe could not run ({e}); using TCG"),
            },
            ProbeEnd::Other,
        ),
    };
    Probed {
        choice,
        conclusive: conclusive(end),
    }
}

/// KVM probes started as soon as an arch's first kernel is built, so that a
/// broken nested KVM's [`PROBE_TIMEOUT`] passes while the other kernels
/// build instead of after them. A failure the builds could explain (see
/// [`Probed::conclusive`]) is probed again once they are done.
pub struct EarlyProbes {
    req: AccelRequest,
    scratch: std::path::PathBuf,
    started: std::sync::Mutex<std::collections::BTreeMap<Arch, tokio::task::JoinHandle<Probed>>>,
}

impl EarlyProbes {
    pub fn new(req: AccelRequest, scratch: std::path::PathBuf) -> EarlyProbes {
        EarlyProbes {
            req,
            scratch,
            started: Default::default(),
        }
    }

    /// Starts `arch`'s probe with `kernel` unless one is running or none is
    /// needed (an explicit request, a foreign arch, no /dev/kvm).
    pub fn start(&self, arch: Arch, kernel: &KernelInfo) {
        if static_choice(self.req, arch).is_some() {
            return;
        }
        let Some(guest_init) = crate::guest::bin::guest_init(arch) else {
            return;
        };
        let mut started = self.started.lock().unwrap_or_else(PoisonError::into_inner);
        if started.contains_key(&arch) {
            return;
        }
        let (kernel, scratch) = (kernel.clone(), self.scratch.clone());
        let dir = format!("kvm-probe-early-{arch}");
        started.insert(
            arch,
            tokio::spawn(async move { probe(arch, &kernel, guest_init, &scratch, &dir).await }),
        );
    }

    /// `arch`'s choice: the early probe's when it holds, else a probe now.
    pub async fn choice(&self, arch: Arch, kernel: &KernelInfo, guest_init: &[u8]) -> AccelChoice {
        if let Some(choice) = static_choice(self.req, arch) {
            return choice;
        }
        let early = self
            .started
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&arch);
        if let Some(handle) = early {
            match handle.await {
                Ok(p) if p.conclusive => {
                    return AccelChoice {
                        note: format!("{} (probed beside the kernel builds)", p.choice.note),
                        ..p.choice
                    }
                }
                Ok(p) => tracing::info!(
                    %arch,
                    first = %p.choice.note,
                    "KVM probe run beside a kernel build failed in a way a busy host can explain: probing again"
                ),
                Err(e) => tracing::warn!(%arch, "early KVM probe task: {e}; probing again"),
            }
        }
        probe(arch, kernel, guest_init, &self.scratch, "kvm-probe")
            .await
            .choice
    }
}

impl Drop for EarlyProbes {
    /// A run that stops before it asks for a choice (a failed build, an
    /// error) takes its probes' QEMUs with it.
    fn drop(&mut self) {
        let started = self
            .started
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner);
        for handle in started.values() {
            handle.abort();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_run_or_a_silent_kernel_is_conclusive_beside_builds() {
        let cases = [
            (ProbeEnd::Completed, true),
            (ProbeEnd::SilentTimeout, true),
            (ProbeEnd::Other, false),
        ];
        for (end, want) in cases {
            assert_eq!(conclusive(end), want, "{end:?}");
        }
    }

    #[test]
    fn explicit_requests_and_foreign_arches_need_no_probe() {
        assert_eq!(
            static_choice(AccelRequest::Tcg, Arch::X86_64)
                .unwrap()
                .accel,
            Accel::Tcg
        );
        assert_eq!(
            static_choice(AccelRequest::Kvm, Arch::X86_64)
                .unwrap()
                .accel,
            Accel::Kvm
        );
        assert_eq!(
            static_choice(AccelRequest::TcgIcount, Arch::Arm64)
                .unwrap()
                .accel,
            Accel::TcgIcount
        );
        if cfg!(target_arch = "x86_64") {
            let c = static_choice(AccelRequest::Auto, Arch::Arm64).unwrap();
            assert_eq!(c.accel, Accel::Tcg);
            assert!(c.note.contains("arm64"));
        }
    }
}
