//! Parsers for the text files the guest samples: /proc/vmstat, cgroup v2
//! memory.stat / memory.events, /proc/pressure/memory, /proc/meminfo.

use std::collections::BTreeMap;

use mmci_record::{Psi, PsiLine};

/// "key value" lines (vmstat, memory.stat, memory.events). Lines that do not
/// parse are skipped: a newer kernel may add non-numeric fields.
pub fn parse_key_values(text: &str) -> BTreeMap<String, u64> {
    text.lines()
        .filter_map(|line| {
            let mut words = line.split_whitespace();
            let key = words.next()?;
            let value = words.next()?.parse().ok()?;
            Some((key.to_string(), value))
        })
        .collect()
}

/// Reads one counter out of /proc/vmstat text without building a map: the
/// sampler calls this every few milliseconds.
pub fn vmstat_value(text: &str, key: &str) -> Option<u64> {
    text.lines().find_map(|line| {
        let rest = line.strip_prefix(key)?;
        rest.strip_prefix(' ')?.trim().parse().ok()
    })
}

/// /proc/meminfo's "Key:   123 kB" lines, in kB.
pub fn meminfo_kb(text: &str, key: &str) -> Option<u64> {
    text.lines().find_map(|line| {
        let rest = line.strip_prefix(key)?.strip_prefix(':')?;
        rest.split_whitespace().next()?.parse().ok()
    })
}

fn parse_psi_line(line: &str) -> PsiLine {
    let mut out = PsiLine::default();
    for word in line.split_whitespace().skip(1) {
        let Some((k, v)) = word.split_once('=') else {
            continue;
        };
        match k {
            "avg10" => out.avg10 = v.parse().unwrap_or(0.0),
            "avg60" => out.avg60 = v.parse().unwrap_or(0.0),
            "avg300" => out.avg300 = v.parse().unwrap_or(0.0),
            "total" => out.total_us = v.parse().unwrap_or(0),
            _ => {}
        }
    }
    out
}

/// /proc/pressure/memory.
pub fn parse_psi(text: &str) -> Psi {
    let mut psi = Psi::default();
    for line in text.lines() {
        if line.starts_with("some ") {
            psi.some = parse_psi_line(line);
        } else if line.starts_with("full ") {
            psi.full = parse_psi_line(line);
        }
    }
    psi
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_values() {
        let m = parse_key_values("nr_free_pages 1234\nnr_isolated_anon 0\nbogus\nodd x\n");
        assert_eq!(m.len(), 2);
        assert_eq!(m["nr_free_pages"], 1234);
    }

    #[test]
    fn single_vmstat_value_does_not_match_prefixes() {
        let text = "nr_isolated_anon_x 9\nnr_isolated_anon 17\nnr_isolated_file 3\n";
        assert_eq!(vmstat_value(text, "nr_isolated_anon"), Some(17));
        assert_eq!(vmstat_value(text, "nr_isolated_file"), Some(3));
        assert_eq!(vmstat_value(text, "pgscan"), None);
    }

    #[test]
    fn meminfo() {
        let text = "MemTotal:         503440 kB\nMemFree:          460000 kB\n";
        assert_eq!(meminfo_kb(text, "MemTotal"), Some(503440));
        assert_eq!(meminfo_kb(text, "MemFree"), Some(460000));
    }

    #[test]
    fn psi() {
        let text = "some avg10=1.50 avg60=0.20 avg300=0.00 total=12345\n\
                    full avg10=0.75 avg60=0.10 avg300=0.00 total=6789\n";
        let p = parse_psi(text);
        assert_eq!(p.some.avg10, 1.5);
        assert_eq!(p.some.total_us, 12345);
        assert_eq!(p.full.total_us, 6789);
    }
}
