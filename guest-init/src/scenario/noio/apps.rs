//! Scenario B's application memcgs (`apps`): the seed's machine had ~78
//! memcgs, most of them applications holding clean page cache, some anon,
//! beside the one whose huge anon list a GFP_NOIO call walked. They are
//! what a reclaim walk visits before the hog (created after them, so last
//! in the walk's order), and their inactive file is what turns
//! cache_trim_mode on at priorities 12..1 (SCAN_FILE), so that priority 0
//! stands apart as in the seed's table.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use mmci_record::{app_span_mb, GuestJob, APP_CACHE_DISK_SERIAL};

use crate::app::{AppArgs, READY};
use crate::blockdev::find_disk;
use crate::step::{Stage, StepError};
use crate::{cgroup, procfs};

/// How long one application may take to read its cache (TCG is slow).
const READY_TIMEOUT: Duration = Duration::from_secs(120);

/// The running applications; killed by [`Apps::stop`].
pub struct Apps {
    children: Vec<Child>,
}

impl Apps {
    pub fn stop(self) {
        for mut c in self.children {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Every other application also holds anon (the seed: "some with anon").
fn anon_mb(job: &GuestJob, i: u32) -> u64 {
    if i % 2 == 1 {
        job.app_anon_mb
    } else {
        0
    }
}

/// The memory the applications hold in all, in MiB (the hog is sized
/// around it).
pub fn total_mb(job: &GuestJob) -> u64 {
    (0..job.apps)
        .map(|i| job.app_cache_mb + anon_mb(job, i))
        .sum()
}

/// Starts one application and waits until its memory is in place; the
/// bytes it read.
fn start_one(args: &AppArgs) -> Result<(Child, u64), String> {
    let mut child = Command::new("/proc/self/exe")
        .args(args.to_args())
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|e| format!("spawn: {e}"))?;
    let stdout = child.stdout.take().expect("piped stdout");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = BufReader::new(stdout).read_line(&mut line);
        let _ = tx.send(line);
    });
    match rx.recv_timeout(READY_TIMEOUT) {
        Ok(line) if line.starts_with(READY) => {
            let read = line[READY.len()..].trim().parse().unwrap_or(0);
            Ok((child, read))
        }
        Ok(line) => {
            let _ = child.kill();
            let status = child.wait().map(|s| s.to_string()).unwrap_or_default();
            Err(format!("{} said {:?} ({status})", args.cgroup, line.trim()))
        }
        Err(e) => {
            let _ = child.kill();
            let _ = child.wait();
            Err(format!(
                "{} not ready after {READY_TIMEOUT:?} ({e})",
                args.cgroup
            ))
        }
    }
}

/// Creates the applications' memcgs and starts one application in each.
pub fn start(job: &GuestJob) -> Result<(Apps, String), StepError> {
    let (name, _, _, bytes) = find_disk(APP_CACHE_DISK_SERIAL).stage("apps")?;
    let device = format!("/dev/{name}");
    let span = app_span_mb(job);
    let need = u64::from(job.apps).saturating_mul(span);
    if bytes >> 20 < need {
        return Err(StepError {
            stage: "apps",
            message: format!("{device} has {} MiB, {need} MiB needed", bytes >> 20),
        });
    }
    let mut apps = Apps { children: vec![] };
    let mut read = 0;
    for i in 0..job.apps {
        let dir = cgroup::create(&format!("mmci-app-{i:02}"), 0).stage("apps")?;
        let args = AppArgs {
            cgroup: dir.to_string_lossy().into_owned(),
            device: device.clone(),
            offset_mb: u64::from(i).saturating_mul(span),
            cache_mb: job.app_cache_mb,
            anon_mb: anon_mb(job, i),
            span_mb: span,
            stream_kb_s: job.app_stream_kb_s,
        };
        match start_one(&args) {
            Ok((child, n)) => {
                apps.children.push(child);
                read += n;
            }
            Err(message) => {
                apps.stop();
                return Err(StepError {
                    stage: "apps",
                    message,
                });
            }
        }
    }
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    let mib = |k| procfs::meminfo_kb(&meminfo, k).unwrap_or(0) >> 10;
    let with_anon = (0..job.apps).filter(|&i| anon_mb(job, i) > 0).count();
    let then = match job.app_stream_kb_s {
        0 => "read once".to_string(),
        r => format!("then reading on at up to {r} KiB/s each through {span} MiB"),
    };
    let detail = format!(
        "{} memcgs mmci-app-00..{:02}, {} MiB of page cache each from {device} ({} MiB read), {then}, {with_anon} of them with {} MiB anon; node Cached {} MiB, Inactive(file) {} MiB, Active(file) {} MiB",
        job.apps,
        job.apps.saturating_sub(1),
        job.app_cache_mb,
        read >> 20,
        job.app_anon_mb,
        mib("Cached"),
        mib("Inactive(file)"),
        mib("Active(file)"),
    );
    Ok((apps, detail))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_other_app_holds_anon() {
        let job = GuestJob {
            apps: 5,
            app_cache_mb: 2,
            app_anon_mb: 3,
            ..GuestJob::default()
        };
        let anon: Vec<u64> = (0..5).map(|i| anon_mb(&job, i)).collect();
        assert_eq!(anon, [0, 3, 0, 3, 0]);
        assert_eq!(total_mb(&job), 5 * 2 + 2 * 3);
        assert_eq!(total_mb(&GuestJob::default()), 0);
    }
}
