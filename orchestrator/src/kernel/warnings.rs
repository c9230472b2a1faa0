//! Compiler warnings of kernel builds, and the new ones a series adds
//! (0-day's "new warnings").
//!
//! Builds are incremental: base and patched share an object dir, so a
//! patched build's log only holds the warnings of the files it recompiled.
//! The object dir therefore keeps a ledger: per source file, the warnings
//! of its latest compile. After each build, files the log shows compiled
//! (`CC mm/vmscan.o`) are replaced by what this log says of them; the
//! build's warnings are the whole ledger. Comparing two builds' ledgers is
//! then sound whatever order variants were built in.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Per source file (tree-relative), its warnings, each as
/// "file: warning: text" without line and column, so that code moving
/// around does not make an old warning look new.
pub type Ledger = BTreeMap<String, BTreeSet<String>>;

pub const LEDGER_FILE: &str = "mmci-warnings.json";

/// Tree-relative path: the checkout's prefix (absolute, or `../` from the
/// object dir) removed.
fn relative(path: &str, checkout: &Path) -> String {
    let prefix = format!("{}/", checkout.display());
    path.strip_prefix(&prefix)
        .or_else(|| path.strip_prefix("../"))
        .unwrap_or(path)
        .to_string()
}

/// gcc quotes identifiers with typographic quotes in UTF-8 locales; keep
/// reports ASCII and comparable across locales.
fn ascii_quotes(s: &str) -> String {
    s.replace(['\u{2018}', '\u{2019}'], "'")
}

/// The warnings in a build log, by file.
pub fn parse(log: &str, checkout: &Path) -> Ledger {
    let mut out = Ledger::new();
    for l in log.lines() {
        let Some((place, text)) = l.split_once(": warning: ") else {
            continue;
        };
        let Some(file) = place.split(':').next() else {
            continue;
        };
        let file = relative(file, checkout);
        let w = format!("{file}: warning: {}", ascii_quotes(text.trim()));
        out.entry(file).or_default().insert(w);
    }
    out
}

/// Source files (tree-relative) that a build log shows compiled or
/// assembled: `  CC      mm/vmscan.o` -> `mm/vmscan.c`.
pub fn compiled_sources(log: &str) -> BTreeSet<String> {
    log.lines()
        .filter_map(|l| {
            let mut words = l.split_whitespace();
            let tool = words.next()?;
            let obj = words.next()?;
            let ext = match tool {
                "CC" => ".c",
                "AS" => ".S",
                _ => return None,
            };
            Some(format!("{}{ext}", obj.strip_suffix(".o")?))
        })
        .collect()
}

/// Folds one build's log into the object dir's ledger.
pub fn update(ledger: &mut Ledger, log: &str, checkout: &Path) {
    for src in compiled_sources(log) {
        ledger.remove(&src);
    }
    for (file, ws) in parse(log, checkout) {
        // A header's warnings come back with every unit that includes it;
        // a recompiled unit's replace what it said before (removed above).
        ledger.entry(file).or_default().extend(ws);
    }
}

/// All warnings of a ledger, sorted.
pub fn all(ledger: &Ledger) -> Vec<String> {
    ledger.values().flatten().cloned().collect()
}

pub fn read_ledger(objs: &Path) -> Ledger {
    std::fs::read(objs.join(LEDGER_FILE))
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default()
}

pub fn write_ledger(objs: &Path, ledger: &Ledger) -> std::io::Result<()> {
    crate::host::fs::write_atomic(
        &objs.join(LEDGER_FILE),
        &serde_json::to_vec_pretty(ledger).expect("serializable"),
    )
}

/// Warnings of `patched` that `base` does not have.
pub fn new_warnings(base: &[String], patched: &[String]) -> Vec<String> {
    let base: BTreeSet<String> = base.iter().map(|w| ascii_quotes(w)).collect();
    patched
        .iter()
        .map(|w| ascii_quotes(w))
        .filter(|w| !base.contains(w))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const CHECKOUT: &str = "/w/checkouts/linux-x86_64";

    #[test]
    fn parse_strips_locations_prefixes_and_fancy_quotes() {
        let log = "  CC      mm/vmscan.o\n\
/w/checkouts/linux-x86_64/mm/vmscan.c:7972:12: warning: \u{2018}mmci_unused_helper\u{2019} defined but not used [-Wunused-function]\n\
../include/linux/mm.h:10:5: warning: unused variable 'x' [-Wunused-variable]\n";
        let l = parse(log, Path::new(CHECKOUT));
        assert_eq!(
            all(&l),
            [
                "include/linux/mm.h: warning: unused variable 'x' [-Wunused-variable]",
                "mm/vmscan.c: warning: 'mmci_unused_helper' defined but not used [-Wunused-function]",
            ]
        );
        assert_eq!(
            compiled_sources("  CC      mm/vmscan.o\n  AS      arch/x86/entry/entry_64.o\n  LD      vmlinux.o\n  CC [M]  x.o\n"),
            BTreeSet::from(["mm/vmscan.c".to_string(), "arch/x86/entry/entry_64.S".to_string()])
        );
    }

    /// Base with an old warning in mm/a.c; the patched build recompiles
    /// only mm/vmscan.c (new warning); a later base rebuild recompiles
    /// mm/vmscan.c again without it. Each ledger holds exactly its tree's
    /// warnings, though no log held them all.
    #[test]
    fn ledger_follows_incremental_builds() {
        let ck = Path::new(CHECKOUT);
        let mut ledger = Ledger::new();
        update(
            &mut ledger,
            "  CC      mm/a.o\nmm/a.c:1:1: warning: old one [-Wx]\n  CC      mm/vmscan.o\n",
            ck,
        );
        let base = all(&ledger);
        update(
            &mut ledger,
            "  CC      mm/vmscan.o\nmm/vmscan.c:9:1: warning: new one [-Wy]\n",
            ck,
        );
        let patched = all(&ledger);
        assert_eq!(
            new_warnings(&base, &patched),
            ["mm/vmscan.c: warning: new one [-Wy]"]
        );
        update(&mut ledger, "  CC      mm/vmscan.o\n", ck);
        assert_eq!(all(&ledger), base);
    }

    #[test]
    fn new_warnings_ignore_quote_style() {
        let base = vec!["f.c: warning: \u{2018}x\u{2019} unused".to_string()];
        let patched = vec![
            "f.c: warning: 'x' unused".to_string(),
            "f.c: warning: 'y' unused".to_string(),
        ];
        assert_eq!(new_warnings(&base, &patched), ["f.c: warning: 'y' unused"]);
    }
}
