//! Where one direct-reclaim call's time went, as the seed thread's table
//! shows it: per reclaim round, priorities 12..1 apart from priority 0
//! (with cache_trim_mode on, 12..1 scan file only and are cheap; priority 0
//! forces SCAN_EQUAL and is where a GFP_NOIO call walks the anon list), and
//! the call's time at priority 0, the figure the RFC is about.

use mmci_record::ReclaimCall;
use serde::{Deserialize, Serialize};

/// One part of a reclaim round: its priorities above 0, or priority 0.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RoundAnatomy {
    pub round: u32,
    /// The first (highest) and last (lowest) priority of the part.
    pub priority_from: u32,
    pub priority_to: u32,
    /// memcg lruvec passes (shrink_slab kprobe hits); None without the probe.
    pub memcg_visits: Option<u32>,
    pub anon_scanned: u64,
    pub file_scanned: u64,
    pub reclaimed: u64,
    /// From the end of the part before (the call's begin for the first) to
    /// its last event (the call's end for the last part): the parts' times
    /// add up to the call's latency, so the gap between two parts' events
    /// is counted once, in the part it leads into.
    pub ms: f64,
}

impl RoundAnatomy {
    pub fn is_priority_0(&self) -> bool {
        self.priority_from == 0
    }
}

/// The call's steps grouped by round, each round split into its priorities
/// above 0 and its priority 0.
pub fn rounds(call: &ReclaimCall) -> Vec<RoundAnatomy> {
    let mut out: Vec<(RoundAnatomy, u64)> = vec![];
    for s in &call.steps {
        let same_part = out
            .last()
            .is_some_and(|(r, _)| r.round == s.round && r.is_priority_0() == (s.priority == 0));
        if !same_part {
            out.push((
                RoundAnatomy {
                    round: s.round,
                    priority_from: s.priority,
                    priority_to: s.priority,
                    memcg_visits: call.memcgs_visited.map(|_| 0),
                    ..RoundAnatomy::default()
                },
                s.last_us,
            ));
        }
        let (r, last) = out.last_mut().expect("pushed");
        r.priority_from = r.priority_from.max(s.priority);
        r.priority_to = r.priority_to.min(s.priority);
        if let Some(v) = &mut r.memcg_visits {
            *v += s.memcg_visits;
        }
        r.anon_scanned += s.anon_scanned;
        r.file_scanned += s.file_scanned;
        r.reclaimed += s.reclaimed;
        *last = (*last).max(s.last_us);
    }
    let first_event = call.steps.iter().map(|s| s.first_us).min().unwrap_or(0);
    // A call without a begin timestamp (records written before it was
    // kept) starts at its first event.
    let mut from = if call.begin_us > 0 && call.begin_us <= first_event {
        call.begin_us
    } else {
        first_event
    };
    let call_end = call.begin_us + call.latency_us;
    let parts = out.len();
    out.into_iter()
        .enumerate()
        .map(|(i, (mut r, mut last))| {
            if i + 1 == parts && call.begin_us > 0 && call_end >= last {
                last = call_end;
            }
            r.ms = last.saturating_sub(from) as f64 / 1000.0;
            from = from.max(last);
            r
        })
        .collect()
}

/// The calls' times at priority 0 ([`priority_0_us`]): median, 90th
/// percentile (nearest rank), longest and their sum, in µs.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Prio0Time {
    pub p50_us: u64,
    pub p90_us: u64,
    pub max_us: u64,
    pub total_us: u64,
}

/// The call's time at priority 0, in µs (every round's priority-0 part).
pub fn priority_0_us(call: &ReclaimCall) -> u64 {
    rounds(call)
        .iter()
        .filter(|r| r.is_priority_0())
        .map(|r| (r.ms * 1000.0).round() as u64)
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[allow(clippy::too_many_arguments)]
    fn step(
        round: u32,
        priority: u32,
        anon: u64,
        file: u64,
        reclaimed: u64,
        visits: u32,
        first_us: u64,
        last_us: u64,
    ) -> mmci_record::ReclaimStep {
        mmci_record::ReclaimStep {
            round,
            priority,
            anon_scanned: anon,
            file_scanned: file,
            reclaimed,
            memcg_visits: visits,
            first_us,
            last_us,
            ..mmci_record::ReclaimStep::default()
        }
    }

    /// The seed's call: round 1 on file only at 12..1, then 93,000 anon
    /// at priority 0 for nothing, round 2 reclaiming 68 file folios.
    fn seed_like() -> ReclaimCall {
        ReclaimCall {
            begin_us: 900,
            latency_us: 172_600,
            memcgs_visited: Some(2),
            steps: vec![
                step(1, 12, 0, 32, 0, 1, 1000, 1100),
                step(1, 1, 0, 64, 0, 2, 1200, 1300),
                step(1, 0, 93000, 0, 0, 2, 1400, 169_400),
                step(2, 12, 0, 0, 0, 30, 170_000, 170_500),
                step(2, 7, 0, 68, 68, 48, 171_000, 172_400),
            ],
            ..ReclaimCall::default()
        }
    }

    /// round, priorities, memcg visits, anon, file, reclaimed, ms.
    type Row = (u32, u32, u32, Option<u32>, u64, u64, u64, f64);

    fn table(call: &ReclaimCall) -> Vec<Row> {
        rounds(call)
            .into_iter()
            .map(|r| {
                (
                    r.round,
                    r.priority_from,
                    r.priority_to,
                    r.memcg_visits,
                    r.anon_scanned,
                    r.file_scanned,
                    r.reclaimed,
                    r.ms,
                )
            })
            .collect()
    }

    #[test]
    fn rounds_split_at_priority_0_and_add_up_to_the_call() {
        let call = seed_like();
        assert_eq!(
            table(&call),
            [
                (1, 12, 1, Some(3), 0, 96, 0, 0.4),
                (1, 0, 0, Some(2), 93000, 0, 0, 168.1),
                (2, 12, 7, Some(78), 0, 68, 68, 4.1),
            ]
        );
        let sum: f64 = rounds(&call).iter().map(|r| r.ms).sum();
        assert!((sum - 172.6).abs() < 1e-9, "{sum}");
        assert_eq!(priority_0_us(&call), 168_100);
    }

    #[test]
    fn calls_without_a_begin_or_a_probe() {
        let no_begin = ReclaimCall {
            begin_us: 0,
            memcgs_visited: None,
            ..seed_like()
        };
        let got = table(&no_begin);
        // From the first event; the last part ends at its last event.
        assert_eq!(got[0].7, 0.3);
        assert_eq!(got[2].7, 3.0);
        assert!(got.iter().all(|r| r.3.is_none()));
        assert!(rounds(&ReclaimCall::default()).is_empty());
        assert_eq!(priority_0_us(&ReclaimCall::default()), 0);
        // A call that never reached priority 0 spent no time there.
        let above = ReclaimCall {
            steps: vec![step(1, 12, 0, 40, 40, 1, 1000, 1500)],
            begin_us: 800,
            latency_us: 900,
            ..ReclaimCall::default()
        };
        assert_eq!(table(&above), [(1, 12, 12, None, 0, 40, 40, 0.9)]);
        assert_eq!(priority_0_us(&above), 0);
    }

    #[test]
    fn priority_0_in_two_rounds_adds_up() {
        let call = ReclaimCall {
            begin_us: 0,
            steps: vec![
                step(1, 0, 10, 0, 0, 0, 100, 600),
                step(2, 3, 0, 5, 0, 0, 700, 800),
                step(2, 0, 20, 0, 0, 0, 900, 2100),
            ],
            ..ReclaimCall::default()
        };
        // 0.5 ms in round 1 (from its first event), 1.3 ms in round 2.
        assert_eq!(priority_0_us(&call), 1800);
    }
}
