//! The scratch disks a job needs besides swap: scenario B's dm-verity data
//! and hash disks, found in the guest by their serials.

use mmci_record::{
    verity_hash_disk_mb, GuestJob, Scenario, VERITY_DATA_DISK_SERIAL, VERITY_HASH_DISK_SERIAL,
};

/// (serial, size in MiB) of each extra disk, in the order they are attached.
pub fn scenario_disks(job: &GuestJob) -> Vec<(String, u64)> {
    match job.scenario {
        Scenario::NoioVerity => vec![
            (VERITY_DATA_DISK_SERIAL.to_string(), job.verity_mb),
            (
                VERITY_HASH_DISK_SERIAL.to_string(),
                verity_hash_disk_mb(job.verity_mb),
            ),
        ],
        // The script scenario's image disk is not scratch: run/guest.rs
        // attaches the built image read-only.
        Scenario::Probe | Scenario::MglruIsolation | Scenario::Script => vec![],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verity_disks_only_for_scenario_b() {
        let a = GuestJob::default();
        assert!(scenario_disks(&a).is_empty());
        let b = GuestJob {
            scenario: Scenario::NoioVerity,
            verity_mb: 64,
            ..GuestJob::default()
        };
        assert_eq!(
            scenario_disks(&b),
            vec![
                ("mmci-vdata".to_string(), 64),
                ("mmci-vhash".to_string(), 3)
            ]
        );
    }
}
