//! The guest's time series (one `sample` record per report interval:
//! nr_isolated, free memory, the cgroup's usage, the touch counter), read
//! from each run's records.jsonl and kept column by column for plots.
//! PSI is only snapshotted before and after the workload, so it has no
//! series here. A records file that is not a regular file of sane size is
//! refused before a byte is read, and named in every report.

use std::collections::BTreeMap;
use std::path::Path;

use mmci_record::Record;

use super::model::{RunSeries, UnreadableFile};
use crate::guest::vm::{TimedRecord, MAX_RECORD_BYTES};
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
        push_sample(&mut s, r);
    }
    s
}

/// Adds `r` to the columns when it is a sample.
fn push_sample(s: &mut RunSeries, r: &Record) {
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

/// Largest records.jsonl read. The host writes there only the records it
/// took from the guest within [`MAX_RECORD_BYTES`] (128 MiB), each once,
/// with its arrival time added; a real run writes a few MiB (a sample per
/// second, script output capped in the guest). Twice the guest's cap is
/// room for the added times; a bigger file is not one mmci wrote.
pub const MAX_RECORDS_FILE_BYTES: u64 = 2 * MAX_RECORD_BYTES;

/// The name of a run's records file.
pub const RECORDS_FILE: &str = "records.jsonl";

/// The sample columns of a run dir's records.jsonl, read a line at a time
/// (only the samples are kept); `Ok(None)` when the run has no such file.
/// The file must be a regular file (not a symbolic link, which could point
/// at /dev/zero or a host secret; not a FIFO, which would block) of at most
/// [`MAX_RECORDS_FILE_BYTES`]. Lines that do not parse are skipped (the
/// run's own bad_lines already report them).
pub fn read_series(run_dir: &Path, slot: &Slot) -> std::io::Result<Option<RunSeries>> {
    use std::io::BufRead;
    let reader = match crate::host::fs::open_capped(
        &run_dir.join(RECORDS_FILE),
        MAX_RECORDS_FILE_BYTES,
        "MAX_RECORDS_FILE_BYTES",
        crate::host::fs::Accept::RegularNoSymlink,
    ) {
        Ok(r) => r,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let mut reader = std::io::BufReader::new(reader);
    let mut series = from_records(slot, []);
    let mut line = Vec::new();
    loop {
        line.clear();
        if reader.read_until(b'\n', &mut line)? == 0 {
            break;
        }
        if let Ok(t) = serde_json::from_slice::<TimedRecord>(&line) {
            push_sample(&mut series, &t.record);
        }
    }
    Ok(Some(series))
}

/// A records file that was refused or could not be read, for the report.
#[derive(Debug)]
pub struct Refused {
    pub path: std::path::PathBuf,
    pub error: std::io::Error,
}

/// The series of every run of the plan that has one, in plan order, and
/// the records files refused (named on stderr too): their runs keep their
/// result, only their plots go.
pub fn read_all(
    dir: &Path,
    plan: &Plan,
    runs: &BTreeMap<String, RunResult>,
) -> (Vec<RunSeries>, Vec<Refused>) {
    let cells: Vec<_> = plan.cells.iter().collect();
    let mut out = vec![];
    let mut refused = vec![];
    for s in plan.slots(&cells) {
        if !runs.contains_key(&s.id()) {
            continue;
        }
        let run_dir = results_dir::run_dir(dir, &s);
        match read_series(&run_dir, &s) {
            Ok(Some(series)) if !series.t_ms.is_empty() => out.push(series),
            Ok(_) => {}
            Err(error) => {
                let path = run_dir.join(RECORDS_FILE);
                tracing::warn!(
                    "{}: {error}; the run's time series is left out",
                    path.display()
                );
                refused.push(Refused { path, error });
            }
        }
    }
    (out, refused)
}

/// The run.json files `runs_checked` could not read and the records
/// files [`read_all`] refused, by their path in `dir`, for the report.
pub fn unreadable(
    dir: &Path,
    bad_runs: &[results_dir::Unreadable],
    refused: &[Refused],
) -> Vec<UnreadableFile> {
    let in_dir = |p: &Path| p.strip_prefix(dir).unwrap_or(p).display().to_string();
    bad_runs
        .iter()
        .map(|b| UnreadableFile {
            path: in_dir(&b.path),
            error: b.error.clone(),
            lost: "the run's result (it counts as a run without a result)".into(),
        })
        .chain(refused.iter().map(|r| UnreadableFile {
            path: in_dir(&r.path),
            error: r.error.to_string(),
            lost: "the run's time series (its result stands)".into(),
        }))
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
