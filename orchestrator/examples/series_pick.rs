//! What mmci picks from many threads in one process, for tools/thread-corpus/compare.py:
//! reads `FILE<TAB>MESSAGE-ID` lines on stdin (a thread mbox, gzip'd or not, and the mail
//! it was requested by, as in a lore URL) and writes one JSON object a line on stdout: the
//! series assembled as `mmci series show` does for a thread requested by that message-id,
//! or the refusal.
//!
//! cargo run -p orchestrator --example series_pick < pairs.tsv

use std::io::{BufRead, Write};

use mmci::series::{self, Selection, SeriesError};

fn pick(file: &str, root: &str) -> serde_json::Value {
    let bytes = match series::read_mbox_file(std::path::Path::new(file), file) {
        Ok(b) => b,
        Err(e) => return serde_json::json!({"outcome": "error", "error": e.to_string()}),
    };
    let mails = series::mails_from_mbox(&bytes);
    let sel = Selection {
        requested: Some(root.to_string()),
        revision: None,
    };
    match series::assemble_with(&mails, file, &sel) {
        Ok(s) => serde_json::json!({
            "outcome": "series",
            "version": s.version,
            "total": s.total,
            "cover": s.cover.as_ref().map(|c| c.message_id.clone()),
            "patches": s.patches.iter().map(|p| p.message_id.clone()).collect::<Vec<_>>(),
            "assembly": s.assembly,
            "chosen": s.chosen,
        }),
        Err(SeriesError::Incomplete {
            version,
            total,
            missing,
            ..
        }) => serde_json::json!({
            "outcome": "incomplete",
            "version": version,
            "total": total,
            "missing": missing,
        }),
        Err(SeriesError::NoPatches { .. }) => serde_json::json!({"outcome": "none"}),
        Err(e) => serde_json::json!({"outcome": "error", "error": e.to_string()}),
    }
}

fn main() {
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    for line in std::io::stdin().lock().lines() {
        let Ok(line) = line else { break };
        let Some((file, root)) = line.split_once('\t') else {
            continue;
        };
        let doc = pick(file, root.trim());
        // One line per input line, flushed, so the caller can read answers as it goes.
        if writeln!(out, "{doc}").and_then(|_| out.flush()).is_err() {
            break;
        }
    }
}
