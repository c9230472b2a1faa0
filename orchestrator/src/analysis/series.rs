//! The guest's time series (one `sample` record per report interval:
//! nr_isolated, free memory, the cgroup's usage, the touch counter), read
//! from each run's records.jsonl and kept column by column for plots.
//! PSI is only snapshotted before and after the workload, so it has no
//! series here.

use std::collections::BTreeMap;
use std::path::Path;

use mmci_record::Record;

use super::model::RunSeries;
use crate::guest::vm::TimedRecord;
use crate::matrix::{Plan, Slot};
use crate::results::dir as results_dir;
use crate::results::RunResult;

/// The sample columns of `records`, labelled with `slot`.
pub fn from_records<'a>(slot: &Slot, records: impl IntoIterator<Item = &'a Record>) -> RunSeries {
    let mut s = RunSeries {
        run: slot.id(),
        cell: slot.cell.clone(),
        variant: slot.variant.clone(),
        repeat: slot.repeat,
        ..Default::default()
    };
    for r in records {
        if let Record::Sample {
            t_ms,
            nr_isolated_anon_max,
            nr_isolated_file_max,
            nr_isolated_total_max,
            touches,
            memcg_current_bytes,
            mem_free_kb,
        } = r
        {
            s.t_ms.push(*t_ms);
            s.nr_isolated.push(*nr_isolated_total_max);
            s.nr_isolated_anon.push(*nr_isolated_anon_max);
            s.nr_isolated_file.push(*nr_isolated_file_max);
            s.mem_free_kb.push(*mem_free_kb);
            s.memcg_current_bytes.push(*memcg_current_bytes);
            s.touches.push(*touches);
        }
    }
    s
}

/// The records of a run dir's records.jsonl; lines that do not parse are
/// skipped (the run's own bad_lines already report them).
pub fn read_records(run_dir: &Path) -> Option<Vec<Record>> {
    let text = std::fs::read_to_string(run_dir.join("records.jsonl")).ok()?;
    Some(
        text.lines()
            .filter_map(|l| serde_json::from_str::<TimedRecord>(l).ok())
            .map(|t| t.record)
            .collect(),
    )
}

/// The series of every run of the plan that has one, in plan order.
pub fn read_all(dir: &Path, plan: &Plan, runs: &BTreeMap<String, RunResult>) -> Vec<RunSeries> {
    let cells: Vec<_> = plan.cells.iter().collect();
    plan.slots(&cells)
        .into_iter()
        .filter(|s| runs.contains_key(&s.id()))
        .filter_map(|s| {
            let records = read_records(&results_dir::run_dir(dir, &s))?;
            let series = from_records(&s, &records);
            (!series.t_ms.is_empty()).then_some(series)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_become_columns() {
        let slot = Slot {
            cell: "c".into(),
            variant: "patched".into(),
            repeat: 2,
        };
        let sample = |t, anon, file, free| Record::Sample {
            t_ms: t,
            nr_isolated_anon_max: anon,
            nr_isolated_file_max: file,
            nr_isolated_total_max: anon + file,
            touches: t * 10,
            memcg_current_bytes: 16 << 20,
            mem_free_kb: free,
        };
        let records = [
            sample(1000, 3, 1, 900),
            Record::Done {
                ok: true,
                uptime_ms: 5,
            },
            sample(2000, 40, 0, 800),
        ];
        let s = from_records(&slot, &records);
        assert_eq!(s.run, "c-patched-r2");
        assert_eq!(s.t_ms, [1000, 2000]);
        assert_eq!(s.nr_isolated, [4, 40]);
        assert_eq!(s.nr_isolated_file, [1, 0]);
        assert_eq!(s.mem_free_kb, [900, 800]);
        assert_eq!(s.touches, [10000, 20000]);
    }
}
