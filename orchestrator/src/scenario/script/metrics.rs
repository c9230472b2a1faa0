//! Scenario script's own results, from one run's records: how the script
//! ended, its `MMCI-METRIC:` values, and the end of its output for reports.
//! (The kernel-side counters around it are scenario A's, see
//! [`crate::scenario::mglru_metrics`].)

use std::collections::BTreeMap;

use mmci_record::{Record, Stream};
use serde::{Deserialize, Serialize};

/// Output lines kept in run.json for reports (the whole stream is in
/// records.jsonl and script-output.log).
pub const EXCERPT_LINES: usize = 20;

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ScriptMetrics {
    pub name: String,
    pub code: Option<i32>,
    pub signal: Option<i32>,
    pub oom_killed: bool,
    pub timed_out: bool,
    pub elapsed_ms: u64,
    /// Its `MMCI-METRIC:` values.
    pub metrics: BTreeMap<String, f64>,
    pub bad_metric_lines: Vec<String>,
    /// Lines the guest did not stream (over its cap).
    pub dropped_lines: u64,
    /// The last lines of its output, stderr lines marked `!`.
    pub output_tail: Vec<String>,
}

impl ScriptMetrics {
    /// The shell's convention: the code, or 128 + the signal.
    pub fn exit_code(&self) -> i32 {
        match (self.code, self.signal) {
            (Some(c), _) => c,
            (None, Some(s)) => 128 + s,
            (None, None) => -1,
        }
    }

    /// How it ended, in words.
    pub fn ending(&self) -> String {
        if self.timed_out {
            format!(
                "killed at its timeout after {:.1} s",
                self.elapsed_ms as f64 / 1000.0
            )
        } else if self.oom_killed {
            "OOM-killed".to_string()
        } else {
            match (self.code, self.signal) {
                (Some(c), _) => format!("exit {c}"),
                (None, Some(s)) => format!("signal {s}"),
                _ => "unknown".to_string(),
            }
        }
    }
}

/// One output line as the log and reports show it.
pub fn output_line(stream: Stream, line: &str) -> String {
    match stream {
        Stream::Stdout => line.to_string(),
        Stream::Stderr => format!("! {line}"),
    }
}

/// The script's whole streamed output, one line each (script-output.log).
pub fn output_log(records: &[Record]) -> String {
    let mut out = String::new();
    for r in records {
        if let Record::Output { stream, line } = r {
            out.push_str(&output_line(*stream, line));
            out.push('\n');
        }
    }
    out
}

/// The script's results, once its Script record arrived; None before.
pub fn script_metrics(records: &[Record], name: &str) -> Option<ScriptMetrics> {
    let mut tail: Vec<String> = Vec::new();
    let mut result = None;
    for r in records {
        match r {
            Record::Output { stream, line } => {
                if tail.len() == EXCERPT_LINES {
                    tail.remove(0);
                }
                tail.push(output_line(*stream, line));
            }
            Record::Script {
                exit,
                elapsed_ms,
                timed_out,
                metrics,
                bad_metric_lines,
                dropped_lines,
            } => {
                result = Some(ScriptMetrics {
                    name: name.to_string(),
                    code: exit.code,
                    signal: exit.signal,
                    oom_killed: exit.oom_killed,
                    timed_out: *timed_out,
                    elapsed_ms: *elapsed_ms,
                    metrics: metrics.clone(),
                    bad_metric_lines: bad_metric_lines.clone(),
                    dropped_lines: *dropped_lines,
                    output_tail: vec![],
                })
            }
            _ => {}
        }
    }
    result.map(|mut m| {
        m.output_tail = tail;
        m
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use mmci_record::WorkloadExit;

    fn out(line: &str) -> Record {
        Record::Output {
            stream: Stream::Stdout,
            line: line.into(),
        }
    }

    #[test]
    fn script_record_and_tail() {
        let mut records: Vec<Record> = (0..30).map(|i| out(&format!("line {i}"))).collect();
        records.push(Record::Output {
            stream: Stream::Stderr,
            line: "warning".into(),
        });
        assert!(script_metrics(&records, "x").is_none());
        records.push(Record::Script {
            exit: WorkloadExit {
                code: None,
                signal: Some(9),
                oom_killed: true,
                exit_after_kill_ms: None,
            },
            elapsed_ms: 1500,
            timed_out: false,
            metrics: [("ops".to_string(), 12.5)].into(),
            bad_metric_lines: vec![],
            dropped_lines: 0,
        });
        let m = script_metrics(&records, "x").unwrap();
        assert_eq!(m.exit_code(), 137);
        assert_eq!(m.ending(), "OOM-killed");
        assert_eq!(m.metrics["ops"], 12.5);
        assert_eq!(m.output_tail.len(), EXCERPT_LINES);
        assert_eq!(m.output_tail.last().unwrap(), "! warning");
        assert_eq!(m.output_tail[0], "line 11");
        assert!(output_log(&records).starts_with("line 0\nline 1\n"));
    }

    #[test]
    fn endings() {
        // (code, signal, timed_out, words, exit code)
        let cases = [
            (Some(0), None, false, "exit 0", 0),
            (Some(3), None, false, "exit 3", 3),
            (None, Some(15), false, "signal 15", 143),
            (
                None,
                Some(9),
                true,
                "killed at its timeout after 2.0 s",
                137,
            ),
        ];
        for (code, signal, timed_out, words, exit) in cases {
            let m = ScriptMetrics {
                code,
                signal,
                timed_out,
                elapsed_ms: 2000,
                ..ScriptMetrics::default()
            };
            assert_eq!(m.ending(), words);
            assert_eq!(m.exit_code(), exit);
        }
    }
}
