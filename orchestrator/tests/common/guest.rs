//! The set-up of tests that boot real guests: the bundled x86_64 kernel
//! (built once, cached in the work dir) and the accelerator chosen for it,
//! prepared once per test binary; a guest's configuration from them, and
//! the records a run left.

use std::path::Path;
use std::time::Duration;

use mmci::arch::Arch;
use mmci::guest::bin as guest_bin;
use mmci::kernel::{self, KernelSource};
use mmci::results::KernelInfo;
use mmci::run::accel::{self, AccelChoice, AccelRequest};
use mmci::run::guest::RunConfig;
use mmci_record::{GuestJob, Record};
use tokio::sync::OnceCell;

static KERNEL: OnceCell<(KernelInfo, AccelChoice)> = OnceCell::const_new();

/// The embedded x86_64 guest-init.
pub fn guest_init() -> &'static [u8] {
    guest_bin::guest_init(Arch::X86_64).expect("guest-init for x86_64 is embedded")
}

/// The bundled kernel for x86_64 and the accelerator it runs under here.
pub async fn kernel_and_accel() -> &'static (KernelInfo, AccelChoice) {
    KERNEL
        .get_or_init(|| async {
            let work = crate::common::work_dir();
            let info = kernel::prepare(&KernelSource::bundled(), Arch::X86_64, &work)
                .await
                .expect("the bundled kernel builds (run ./mmci-setup first)");
            let choice = accel::choose(
                AccelRequest::Auto,
                Arch::X86_64,
                &info,
                guest_init(),
                &work.scratch(),
            )
            .await;
            (info, choice)
        })
        .await
}

/// A guest of the bundled kernel running `job`: 2 vCPUs, 512 MiB, 128 MiB
/// of swap disk when the job swaps, one retry, no image.
pub async fn config(id: &str, job: GuestJob, timeout: Duration) -> RunConfig {
    let (kernel, accel) = kernel_and_accel().await;
    RunConfig {
        id: id.into(),
        arch: Arch::X86_64,
        accel: accel.accel,
        accel_note: accel.note.clone(),
        vcpus: 2,
        memory_mb: 512,
        swap_mb: if job.swap.enabled() { 128 } else { 0 },
        kernel: kernel.clone(),
        guest_init: guest_init().to_vec(),
        job,
        extra_cmdline: vec![],
        timeout,
        retries: 1,
        image: None,
    }
}

/// The records of a run dir's records.jsonl, each parsed without its
/// `at_ms` and as record format version 1.
pub fn records(dir: &Path) -> Vec<Record> {
    std::fs::read_to_string(dir.join("records.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .map(|mut v| {
            v.as_object_mut().unwrap().remove("at_ms");
            v.as_object_mut().unwrap().insert("v".into(), 1.into());
            mmci_record::parse_line(&v.to_string()).unwrap()
        })
        .collect()
}
