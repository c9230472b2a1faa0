//! One line on the record port: the format version plus one [`Record`];
//! the host refuses lines of another format version.

use serde::{Deserialize, Serialize};

use crate::{Record, FORMAT_VERSION};

/// One line on the wire.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Envelope {
    /// [`FORMAT_VERSION`] of the writer.
    pub v: u32,
    #[serde(flatten)]
    pub record: Record,
}

impl Envelope {
    pub fn new(record: Record) -> Self {
        Envelope {
            v: FORMAT_VERSION,
            record,
        }
    }

    /// The JSON line for this record, newline included.
    pub fn to_line(&self) -> String {
        let mut line = serde_json::to_string(self).expect("records always serialize");
        line.push('\n');
        line
    }
}

/// A line that is not a record of our format.
#[derive(Debug, thiserror::Error)]
pub enum LineError {
    #[error("record format version {found}, this mmci reads version {FORMAT_VERSION}")]
    Version { found: u32 },
    #[error("not a record: {0}")]
    Json(#[from] serde_json::Error),
}

/// Parses one JSON line into a record, checking its format version.
pub fn parse_line(line: &str) -> Result<Record, LineError> {
    #[derive(Deserialize)]
    struct VersionOnly {
        v: u32,
    }
    let version: VersionOnly = serde_json::from_str(line)?;
    if version.v != FORMAT_VERSION {
        return Err(LineError::Version { found: version.v });
    }
    let envelope: Envelope = serde_json::from_str(line)?;
    Ok(envelope.record)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ReclaimCall;

    #[test]
    fn record_round_trip_and_version_check() {
        let rec = Record::Done {
            ok: true,
            uptime_ms: 1234,
        };
        let line = Envelope::new(rec.clone()).to_line();
        assert_eq!(
            line,
            "{\"v\":1,\"type\":\"done\",\"ok\":true,\"uptime_ms\":1234}\n"
        );
        assert_eq!(parse_line(line.trim_end()).unwrap(), rec);
        let future = line.replace("\"v\":1", "\"v\":2");
        assert!(matches!(
            parse_line(&future),
            Err(LineError::Version { found: 2 })
        ));
        assert!(parse_line("Linux version 6.12").is_err());
    }

    #[test]
    fn reclaim_call_is_a_flat_record() {
        let rec = Record::ReclaimCall(ReclaimCall {
            pid: 45,
            comm: "kworker/u9:1".into(),
            gfp_flags: "GFP_NOIO|__GFP_NOWARN".into(),
            min_priority: Some(0),
            ..ReclaimCall::default()
        });
        let line = Envelope::new(rec.clone()).to_line();
        assert!(
            line.starts_with("{\"v\":1,\"type\":\"reclaim_call\",\"pid\":45,"),
            "{line}"
        );
        assert_eq!(parse_line(line.trim_end()).unwrap(), rec);
    }
}
