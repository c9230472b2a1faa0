//! Finding results dirs: those under a root (itself, its children and
//! grandchildren) and the newest whose series holds a message
//! (`mmci b4-check`).

use std::path::{Path, PathBuf};

use super::dir::{read_manifest, ResultsDirError};

/// A message-id without its angle brackets and blanks.
pub fn bare_id(id: &str) -> String {
    id.trim().trim_matches(|c| c == '<' || c == '>').to_string()
}

/// The results dirs at `root`, its children and grandchildren (a run's
/// dir, `mmci-results/<time>`, `mmci-results/watch/<series>`).
pub fn results_dirs(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut level = vec![root.to_path_buf()];
    for _ in 0..3 {
        let mut next = Vec::new();
        for d in level {
            if d.join(crate::results::dir::MANIFEST).is_file() {
                out.push(d);
                continue;
            }
            if let Ok(rd) = std::fs::read_dir(&d) {
                let mut subs: Vec<PathBuf> = rd
                    .flatten()
                    .map(|e| e.path())
                    .filter(|p| p.is_dir())
                    .collect();
                subs.sort();
                next.extend(subs);
            }
        }
        level = next;
    }
    out
}

/// The newest results dir under `root` whose series (cover letter or a
/// patch) holds `message_id`; `None` when no run has it.
pub fn latest_for(root: &Path, message_id: &str) -> Result<Option<PathBuf>, ResultsDirError> {
    let want = bare_id(message_id);
    let mut best: Option<(u64, PathBuf)> = None;
    for dir in results_dirs(root) {
        let Some(m) = read_manifest(&dir)? else {
            continue;
        };
        let holds = m
            .kernels
            .iter()
            .filter_map(|k| k.kernel.series.as_ref())
            .any(|s| {
                s.cover
                    .iter()
                    .map(|c| &c.message_id)
                    .chain(s.patches.iter().map(|p| &p.message_id))
                    .any(|id| bare_id(id) == want)
            });
        if holds && best.as_ref().is_none_or(|(t, _)| m.created_unix >= *t) {
            best = Some((m.created_unix, dir));
        }
    }
    Ok(best.map(|(_, d)| d))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_match_with_or_without_brackets() {
        for (given, want) in [("<a@b>", "a@b"), (" a@b ", "a@b"), ("a@b", "a@b")] {
            assert_eq!(bare_id(given), want);
        }
    }

    #[test]
    fn results_dirs_are_found_two_levels_down() {
        let t = tempfile::tempdir().unwrap();
        for d in ["a", "w/s1", "w/s2/x/too-deep"] {
            let p = t.path().join(d);
            std::fs::create_dir_all(&p).unwrap();
            std::fs::write(p.join(crate::results::dir::MANIFEST), "{}").unwrap();
        }
        let got: Vec<_> = results_dirs(t.path())
            .iter()
            .map(|p| p.strip_prefix(t.path()).unwrap().display().to_string())
            .collect();
        assert_eq!(got, ["a", "w/s1"]);
    }
}
