//! The scratch disks a job needs besides swap: scenario B's dm-verity data
//! and hash disks, found in the guest by their serials.

use mmci_record::{
    app_span_mb, verity_hash_disk_mb, GuestJob, APP_CACHE_DISK_SERIAL, VERITY_DATA_DISK_SERIAL,
    VERITY_HASH_DISK_SERIAL,
};

/// (serial, size in MiB) of each disk, in the order they are attached: the
/// verity data and hash disks, and with `apps` the application memcgs'
/// page-cache disk (one range each: its cache, or the span it streams
/// through; sparse, so a large span costs the host nothing).
pub fn verity_disks(job: &GuestJob) -> Vec<(String, u64)> {
    let mut disks = vec![
        (VERITY_DATA_DISK_SERIAL.to_string(), job.verity_mb),
        (
            VERITY_HASH_DISK_SERIAL.to_string(),
            verity_hash_disk_mb(job.verity_mb),
        ),
    ];
    if job.apps > 0 {
        disks.push((
            APP_CACHE_DISK_SERIAL.to_string(),
            u64::from(job.apps).saturating_mul(app_span_mb(job)),
        ));
    }
    disks
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::registry;
    use mmci_record::Scenario;

    #[test]
    fn verity_disks_only_for_scenario_b() {
        let a = GuestJob::default();
        assert!((registry::of(a.scenario).disks)(&a).is_empty());
        let b = GuestJob {
            scenario: Scenario::NoioVerity,
            verity_mb: 64,
            ..GuestJob::default()
        };
        assert_eq!(
            (registry::of(b.scenario).disks)(&b),
            vec![
                ("mmci-vdata".to_string(), 64),
                ("mmci-vhash".to_string(), 3)
            ]
        );
        let apps = GuestJob {
            apps: 40,
            app_cache_mb: 2,
            ..b.clone()
        };
        assert_eq!(
            (registry::of(apps.scenario).disks)(&apps).last(),
            Some(&("mmci-appcache".to_string(), 80))
        );
        // Streaming applications each read through 16 times their cache.
        let streaming = GuestJob {
            app_stream_kb_s: 256,
            ..apps
        };
        assert_eq!(
            (registry::of(streaming.scenario).disks)(&streaming).last(),
            Some(&("mmci-appcache".to_string(), 40 * 2 * 16))
        );
    }
}
