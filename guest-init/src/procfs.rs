//! Parsers for the text files the guest samples: /proc/vmstat, cgroup v2
//! memory.stat / memory.events, /proc/pressure/memory, /proc/meminfo,
//! /proc/zoneinfo.

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

/// One zone of /proc/zoneinfo: free pages against the min watermark.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ZoneFree {
    pub zone: String,
    pub free: u64,
    pub min: u64,
    pub managed: u64,
}

/// The zones of /proc/zoneinfo ("Node 0, zone   DMA32" blocks with their
/// "pages free", "min" and "managed" lines; the per-node "nr_*" stats that
/// some blocks carry are skipped).
pub fn parse_zoneinfo(text: &str) -> Vec<ZoneFree> {
    let mut zones: Vec<ZoneFree> = Vec::new();
    for line in text.lines() {
        if line.starts_with("Node ") {
            let zone = line.split_whitespace().last().unwrap_or("?").to_string();
            zones.push(ZoneFree {
                zone,
                free: 0,
                min: 0,
                managed: 0,
            });
            continue;
        }
        let Some(z) = zones.last_mut() else { continue };
        let mut words = line.split_whitespace();
        match (words.next(), words.next(), words.next()) {
            (Some("pages"), Some("free"), Some(v)) => z.free = v.parse().unwrap_or(0),
            (Some("min"), Some(v), None) => z.min = v.parse().unwrap_or(0),
            (Some("managed"), Some(v), None) => z.managed = v.parse().unwrap_or(0),
            _ => {}
        }
    }
    zones
}

/// The lowest `free - min` over zones that have pages, in pages (negative
/// when a zone is under its min watermark); None when no zone has pages.
pub fn lowest_watermark_margin(zones: &[ZoneFree]) -> Option<i64> {
    zones
        .iter()
        .filter(|z| z.managed > 0)
        .map(|z| z.free as i64 - z.min as i64)
        .min()
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

    #[test]
    fn zoneinfo() {
        // Trimmed from a 6.12 guest's /proc/zoneinfo.
        let text = "Node 0, zone      DMA
  per-node stats
      nr_inactive_anon 3
      nr_min_unmapped_pages 0
  pages free     3840
        boost    0
        min      33
        low      41
        high     49
        spanned  4095
        present  3998
        managed  3840
Node 0, zone    DMA32
  pages free     1200
        boost    0
        min      1304
        low      1630
        high     1956
        managed  118000
Node 0, zone   Normal
  pages free     0
        min      0
        managed  0
";
        let zones = parse_zoneinfo(text);
        assert_eq!(zones.len(), 3);
        assert_eq!(
            zones[1],
            ZoneFree {
                zone: "DMA32".into(),
                free: 1200,
                min: 1304,
                managed: 118000
            }
        );
        assert_eq!(zones[0].min, 33, "nr_min_unmapped_pages is not min");
        assert_eq!(lowest_watermark_margin(&zones), Some(-104));
        assert_eq!(lowest_watermark_margin(&zones[2..]), None);
    }
}
