//! Scenario script's part of the job: the command or script to run in the
//! image, and the `MMCI-METRIC:` lines such a script prints.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::METRIC_PREFIX;

/// Scenario script: a command from the image, or a script copied in.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ScriptJob {
    /// The matrix's name for it (its `scripts:` key).
    pub name: String,
    /// The image it runs in (a recipe name); the disk is found by
    /// [`crate::IMAGE_DISK_SERIAL`].
    pub image: String,
    /// argv, resolved in the image's root. Empty: `/bin/sh /mmci/script`.
    pub command: Vec<String>,
    /// A script copied into the guest (the matrix's `file:`), at
    /// [`SCRIPT_PATH`] in the image's root, executable.
    pub text: Option<String>,
    /// Extra environment on top of the job's parameters (`MMCI_THREADS`...).
    pub env: BTreeMap<String, String>,
    /// Seconds before the script's cgroup is killed; 0: `duration_s` x 4 + 60.
    pub timeout_s: u64,
}

/// Where a copied-in script is in the image's root.
pub const SCRIPT_PATH: &str = "/mmci/script";

impl ScriptJob {
    /// The argv the guest runs.
    pub fn argv(&self) -> Vec<String> {
        if self.command.is_empty() {
            vec!["/bin/sh".into(), SCRIPT_PATH.into()]
        } else {
            self.command.clone()
        }
    }

    /// The timeout in seconds for a job of `duration_s`.
    pub fn timeout_for(&self, duration_s: u64) -> u64 {
        if self.timeout_s > 0 {
            self.timeout_s
        } else {
            duration_s * 4 + 60
        }
    }
}

/// One `MMCI-METRIC:` line: Some(Ok(pairs)), Some(Err(why)) when it has the
/// prefix but not the form, None for any other line.
pub fn parse_metric_line(line: &str) -> Option<Result<Vec<(String, f64)>, String>> {
    let rest = line.trim_end().strip_prefix(METRIC_PREFIX)?;
    let mut out = Vec::new();
    for word in rest.split_whitespace() {
        let Some((name, value)) = word.split_once('=') else {
            return Some(Err(format!("`{word}` is not name=value")));
        };
        let name_ok = !name.is_empty()
            && name.len() <= 64
            && name
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
        if !name_ok {
            return Some(Err(format!(
                "metric name `{name}`: use lower case letters, digits and _"
            )));
        }
        match value.parse::<f64>() {
            Ok(v) if v.is_finite() => out.push((name.to_string(), v)),
            _ => return Some(Err(format!("{name}: `{value}` is not a number"))),
        }
    }
    if out.is_empty() {
        return Some(Err("no name=value after the prefix".into()));
    }
    Some(Ok(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metric_lines() {
        // (line, expected)
        let ok = |pairs: &[(&str, f64)]| {
            Some(Ok(pairs
                .iter()
                .map(|(n, v)| (n.to_string(), *v))
                .collect::<Vec<_>>()))
        };
        type Parsed = Option<Result<Vec<(String, f64)>, String>>;
        let cases: [(&str, Parsed); 5] = [
            (
                "MMCI-METRIC: ops_per_s=1234.5",
                ok(&[("ops_per_s", 1234.5)]),
            ),
            (
                "MMCI-METRIC: a=1 b_2=-3e2  ",
                ok(&[("a", 1.0), ("b_2", -300.0)]),
            ),
            ("ops_per_s=1", None),
            ("  MMCI-METRIC: a=1", None),
            (
                "MMCI-METRIC:",
                Some(Err("no name=value after the prefix".into())),
            ),
        ];
        for (line, want) in cases {
            assert_eq!(parse_metric_line(line), want, "{line}");
        }
        for bad in [
            "MMCI-METRIC: a",
            "MMCI-METRIC: A=1",
            "MMCI-METRIC: a=fast",
            "MMCI-METRIC: a=inf",
        ] {
            assert!(matches!(parse_metric_line(bad), Some(Err(_))), "{bad}");
        }
    }

    #[test]
    fn script_argv_and_timeout() {
        let s = ScriptJob::default();
        assert_eq!(s.argv(), ["/bin/sh", SCRIPT_PATH]);
        assert_eq!(s.timeout_for(20), 140);
        let s = ScriptJob {
            command: vec!["redis-bench".into()],
            timeout_s: 30,
            ..ScriptJob::default()
        };
        assert_eq!(s.argv(), ["redis-bench"]);
        assert_eq!(s.timeout_for(20), 30);
    }
}
