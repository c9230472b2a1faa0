//! Scenario script's lines in a run's report: scenario A's counters around
//! it, then how it ended, its own metrics and the end of its output.

use crate::scenario::{ScenarioMetrics, ScriptMetrics};

/// Scenario script: how it ended, its own metrics, the end of its output.
pub fn script_section(
    s: &ScriptMetrics,
    image: Option<&crate::guest::image::ImageManifest>,
) -> String {
    let mut out = format!("\nscript {}: {}", s.name, s.ending());
    if let Some(i) = image {
        out.push_str(&format!(" in image {}", i.summary()));
    }
    out.push('\n');
    for (k, v) in &s.metrics {
        out.push_str(&format!("  {k} = {v}\n"));
    }
    for b in &s.bad_metric_lines {
        out.push_str(&format!("  unparsed metric line: {b}\n"));
    }
    if !s.output_tail.is_empty() {
        out.push_str("output (last lines; `!` = stderr):\n");
        for l in &s.output_tail {
            out.push_str("  | ");
            out.push_str(l);
            out.push('\n');
        }
    }
    if s.dropped_lines > 0 {
        out.push_str(&format!(
            "  ({} lines over the cap were not streamed)\n",
            s.dropped_lines
        ));
    }
    out
}

/// `registry::Def::report_sections` of scenario script.
pub fn sections(m: &ScenarioMetrics, image: Option<&crate::guest::image::ImageManifest>) -> String {
    let mut out = m
        .mglru()
        .map(|k| crate::scenario::mglru::report::table(k, false))
        .unwrap_or_default();
    if let Some(s) = m.script() {
        out.push_str(&script_section(s, image));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn script_section_says_how_it_ended_and_what_it_printed() {
        let s = ScriptMetrics {
            name: "repro".into(),
            code: Some(3),
            elapsed_ms: 1200,
            metrics: [("ops".to_string(), 12.5)].into(),
            bad_metric_lines: vec!["MMCI-METRIC: x: `x` is not name=value".into()],
            dropped_lines: 7,
            output_tail: vec!["hello".into(), "! oops".into()],
            ..ScriptMetrics::default()
        };
        let image = crate::guest::image::ImageManifest {
            format: 1,
            name: "tools".into(),
            recipe: "/r/images/tools".into(),
            key: "0123456789abcdef".into(),
            suite: "bookworm".into(),
            arch: "amd64".into(),
            packages: vec![],
            size_bytes: 3 << 20,
            sha256: "ab".repeat(32),
            built_unix: 0,
            build_s: 1.0,
        };
        assert_eq!(
            script_section(&s, Some(&image)),
            "\nscript repro: exit 3 in image tools (0 packages, 3.0 MiB, key 0123456789abcdef)\n\
             \x20 ops = 12.5\n\
             \x20 unparsed metric line: MMCI-METRIC: x: `x` is not name=value\n\
             output (last lines; `!` = stderr):\n\
             \x20 | hello\n\
             \x20 | ! oops\n\
             \x20 (7 lines over the cap were not streamed)\n"
        );
    }
}
