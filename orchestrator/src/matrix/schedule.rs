//! Packing guests onto the host: how many vCPUs and MiB of guest RAM may run
//! at once, and which queued run may start now. Pure functions, shared by
//! the executor and by `mmci matrix show`'s estimate.

use serde::{Deserialize, Serialize};

use crate::guest::vm::Accel;

/// What guests may use of the host at one time.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Capacity {
    pub vcpus: u32,
    pub memory_mb: u64,
}

/// Host RAM kept for mmci, the page cache of the disk images and builds.
pub const HOST_RESERVE_MB: u64 = 1024;

/// The default capacity: host cores x `oversubscribe` vCPUs, host RAM minus
/// a reserve. Under TCG every vCPU is a busy host thread, so the default
/// oversubscription there is none (1.0): timings of guests that fight for
/// cores would measure the host, not the kernel.
pub fn capacity(host_cpus: usize, host_memory_mb: u64, oversubscribe: f64) -> Capacity {
    Capacity {
        vcpus: ((host_cpus as f64 * oversubscribe).floor() as u32).max(1),
        memory_mb: host_memory_mb.saturating_sub(HOST_RESERVE_MB).max(256),
    }
}

/// Default oversubscription per accelerator: none under TCG; KVM vCPUs
/// mostly sleep in this workload's swap waits, but timings still matter, so
/// none there either unless asked.
pub fn default_oversubscription(_accel: Accel) -> f64 {
    1.0
}

/// Resources of one queued run.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Need {
    pub vcpus: u32,
    pub memory_mb: u64,
}

/// What is in use now.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Usage {
    pub vcpus: u32,
    pub memory_mb: u64,
    pub running: usize,
}

impl Usage {
    pub fn add(&mut self, n: Need) {
        self.vcpus += n.vcpus;
        self.memory_mb += n.memory_mb;
        self.running += 1;
    }

    pub fn remove(&mut self, n: Need) {
        self.vcpus -= n.vcpus;
        self.memory_mb -= n.memory_mb;
        self.running -= 1;
    }
}

/// May a run needing `need` start now? Runs start in queue order (that
/// keeps base and candidates interleaved), each as soon as it fits; a run
/// bigger than the whole capacity starts alone rather than never.
pub fn may_start(cap: Capacity, used: Usage, need: Need) -> bool {
    used.running == 0
        || (used.vcpus + need.vcpus <= cap.vcpus
            && used.memory_mb + need.memory_mb <= cap.memory_mb)
}

/// Result of [`simulate`]: wall time and peak guest RAM of a queue.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Simulation {
    pub wall_seconds: f64,
    pub guest_seconds: f64,
    pub peak_memory_mb: u64,
    pub peak_vcpus: u32,
}

/// Plays the queue through [`may_start`] with estimated durations.
pub fn simulate(cap: Capacity, queue: &[(Need, f64)]) -> Simulation {
    let mut now = 0.0f64;
    let mut used = Usage::default();
    let mut running: Vec<(f64, Need)> = vec![];
    let mut peak_memory_mb = 0;
    let mut peak_vcpus = 0;
    for &(need, secs) in queue {
        while !may_start(cap, used, need) {
            // Advance to the earliest finish.
            let (i, _) = running
                .iter()
                .enumerate()
                .min_by(|a, b| a.1 .0.total_cmp(&b.1 .0))
                .expect("something runs when a run may not start");
            let (end, n) = running.swap_remove(i);
            now = now.max(end);
            used.remove(n);
        }
        used.add(need);
        peak_memory_mb = peak_memory_mb.max(used.memory_mb);
        peak_vcpus = peak_vcpus.max(used.vcpus);
        running.push((now + secs, need));
    }
    let end = running.iter().map(|r| r.0).fold(now, f64::max);
    Simulation {
        wall_seconds: end,
        guest_seconds: queue.iter().map(|q| q.1).sum(),
        peak_memory_mb,
        peak_vcpus,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CAP: Capacity = Capacity {
        vcpus: 2,
        memory_mb: 4096,
    };

    fn need(vcpus: u32, memory_mb: u64) -> Need {
        Need { vcpus, memory_mb }
    }

    #[test]
    fn packs_by_vcpus_and_memory() {
        let mut used = Usage::default();
        assert!(may_start(CAP, used, need(1, 1024)));
        used.add(need(1, 1024));
        assert!(may_start(CAP, used, need(1, 1024)));
        assert!(!may_start(CAP, used, need(2, 512)), "3 vCPUs > 2");
        assert!(!may_start(CAP, used, need(1, 3500)), "memory");
        used.remove(need(1, 1024));
        // Too big for the host: runs alone.
        assert!(may_start(CAP, used, need(10, 8192)));
        used.add(need(10, 8192));
        assert!(!may_start(CAP, used, need(1, 128)));
    }

    #[test]
    fn eight_single_vcpu_guests_on_two_cores() {
        let q = vec![(need(1, 512), 10.0); 8];
        let s = simulate(CAP, &q);
        assert_eq!(s.wall_seconds, 40.0);
        assert_eq!(s.guest_seconds, 80.0);
        assert_eq!(s.peak_vcpus, 2);
        assert_eq!(s.peak_memory_mb, 1024);
    }

    #[test]
    fn queue_order_is_kept_when_the_head_does_not_fit() {
        // A 2-vCPU run waits for both cores; the 1-vCPU run behind it does
        // not overtake it (that would break A/B interleaving).
        let q = [
            (need(1, 256), 10.0),
            (need(2, 256), 10.0),
            (need(1, 256), 10.0),
        ];
        let s = simulate(CAP, &q);
        assert_eq!(s.wall_seconds, 30.0);
    }

    #[test]
    fn default_capacity() {
        assert_eq!(
            capacity(2, 23 * 1024, 1.0),
            Capacity {
                vcpus: 2,
                memory_mb: 22 * 1024
            }
        );
        assert_eq!(capacity(2, 23 * 1024, 1.5).vcpus, 3);
    }
}
