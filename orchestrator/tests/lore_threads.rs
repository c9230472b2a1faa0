//! The corpus of 30 real lore threads (orchestrator/tests/fixtures/lore-threads,
//! copied from the shared fixtures), and the threads adopted from the 2,293-thread
//! corpus compared with b4 (orchestrator/tests/fixtures/lore-threads-corpus, one per
//! class of disagreement; docs/series.md): every row of an EXPECTED.tsv must come out as
//! the table says: outcome, version, patch count, first subject, cover, the provenance
//! of each patch of a partial reroll, and, where the row names them, the patches'
//! message-ids in order.

use std::io::Read;
use std::path::PathBuf;

use mmci::series::{self, Selection, SeriesError};

/// `$MMCI_LORE_FIXTURES`, else `orchestrator/tests/fixtures/lore-threads`.
pub fn corpus_dir() -> PathBuf {
    std::env::var_os("MMCI_LORE_FIXTURES")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/lore-threads")
        })
}

/// The threads adopted from tools/thread-corpus's corpus.
fn b4_corpus_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/lore-threads-corpus")
}

struct Row {
    dir: PathBuf,
    file: String,
    root: String,
    outcome: String,
    version: u32,
    count: u32,
    subject: String,
    cover: bool,
    assembly: String,
    /// Column 10, when there: the patches' message-ids, space-separated.
    message_ids: Option<Vec<String>>,
}

fn rows() -> Vec<Row> {
    rows_in(corpus_dir())
}

fn rows_in(dir: PathBuf) -> Vec<Row> {
    let tsv = std::fs::read_to_string(dir.join("EXPECTED.tsv")).unwrap_or_else(|e| {
        panic!(
            "{}: {e} (the lore-threads corpus; set MMCI_LORE_FIXTURES)",
            dir.display()
        )
    });
    tsv.lines()
        .skip(1)
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let c: Vec<&str> = l.split('\t').collect();
            Row {
                dir: dir.clone(),
                file: c[0].into(),
                root: c[1].into(),
                outcome: c[2].into(),
                version: c[3].parse().unwrap(),
                count: c[4].parse().unwrap(),
                subject: c[5].into(),
                cover: c[6] == "yes",
                assembly: c[7].into(),
                message_ids: c
                    .get(9)
                    .map(|ids| ids.split_whitespace().map(String::from).collect()),
            }
        })
        .collect()
}

fn thread(file: &str) -> Vec<u8> {
    thread_in(&corpus_dir(), file)
}

fn thread_in(dir: &std::path::Path, file: &str) -> Vec<u8> {
    let gz = std::fs::read(dir.join(file)).unwrap();
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(&gz[..])
        .read_to_end(&mut out)
        .unwrap();
    out
}

/// `vM k/n` items of an assembly column, e.g. `v5 = v2 1/4 + v5 4/4`.
fn provenance(assembly: &str) -> Vec<(u32, u32)> {
    let Some((_, rhs)) = assembly.split_once(" = ") else {
        return vec![];
    };
    let rhs = rhs.split(" (").next().unwrap_or(rhs);
    rhs.split(" + ")
        .filter_map(|item| {
            let mut w = item.split_whitespace();
            let v = w.next()?.strip_prefix('v')?.parse().ok()?;
            let (k, _) = w.next()?.split_once('/')?;
            Some((v, k.parse().ok()?))
        })
        .collect()
}

/// The counters after `missing:` (`v2 5/9, 6/9` -> [5, 6]).
fn missing_counters(assembly: &str) -> Vec<u32> {
    let Some(rest) = assembly.strip_prefix("missing:") else {
        return vec![];
    };
    let rest = rest.split(" (").next().unwrap_or(rest);
    rest.split([',', ' '])
        .filter_map(|w| w.split_once('/').and_then(|(k, _)| k.parse().ok()))
        .collect()
}

fn check(row: &Row) -> Result<(), String> {
    let mails = series::mails_from_mbox(&thread_in(&row.dir, &row.file));
    let sel = Selection {
        requested: Some(row.root.clone()),
        revision: None,
    };
    let got = series::assemble_with(&mails, &row.file, &sel);
    match (row.outcome.as_str(), got) {
        ("series", Ok(s)) => {
            let mut bad = Vec::new();
            if s.version != row.version {
                bad.push(format!("version {} (want {})", s.version, row.version));
            }
            if s.patches.len() as u32 != row.count {
                bad.push(format!("{} patches (want {})", s.patches.len(), row.count));
            }
            if s.patches.first().map(|p| p.title.as_str()) != Some(row.subject.as_str()) {
                bad.push(format!(
                    "first subject {:?} (want {:?})",
                    s.patches.first().map(|p| &p.title),
                    row.subject
                ));
            }
            if s.cover.is_some() != row.cover {
                bad.push(format!(
                    "cover {:?} (want {})",
                    s.cover.map(|c| c.subject),
                    row.cover
                ));
            }
            for (v, k) in provenance(&row.assembly) {
                let p = s.patches.iter().find(|p| p.index == k);
                if p.map(|p| p.from_version) != Some(v) {
                    bad.push(format!(
                        "patch {k} from v{:?} (want v{v})",
                        p.map(|p| p.from_version)
                    ));
                }
            }
            if let Some(id) = row
                .assembly
                .split_once('<')
                .and_then(|(_, r)| r.split_once('>'))
                .map(|(id, _)| id)
            {
                if !s.patches.iter().any(|p| p.message_id == id) {
                    bad.push(format!("<{id}> not applied"));
                }
            }
            // git am takes the author from the in-body From: (B4 Relay).
            if let Some(p) = s.patches.iter().find(|p| p.author.contains("via B4 Relay")) {
                bad.push(format!(
                    "patch {} author is the relay: {}",
                    p.index, p.author
                ));
            }
            if let Some(want) = &row.message_ids {
                let got: Vec<&str> = s.patches.iter().map(|p| p.message_id.as_str()).collect();
                if got != *want {
                    bad.push(format!("patches {got:?} (want {want:?})"));
                }
            }
            if s.patches.iter().any(|p| p.title.ends_with("(fix)")) {
                bad.push("a (fix) mail replaced a patch".into());
            }
            if bad.is_empty() {
                Ok(())
            } else {
                Err(format!("{} [{}]: {}", row.file, s.assembly, bad.join("; ")))
            }
        }
        (
            "refuse",
            Err(SeriesError::Incomplete {
                version,
                total,
                missing,
                ..
            }),
        ) => {
            let want = missing_counters(&row.assembly);
            if (version, total, &missing) == (row.version, row.count, &want) {
                Ok(())
            } else {
                Err(format!(
                    "{}: refused v{version} of {total} missing {missing:?} (want v{} of {} missing {want:?})",
                    row.file, row.version, row.count
                ))
            }
        }
        (want, got) => Err(format!(
            "{}: want {want}, got {}",
            row.file,
            match got {
                Ok(s) => format!("series v{} ({})", s.version, s.assembly),
                Err(e) => e.to_string(),
            }
        )),
    }
}

#[test]
fn every_row_of_expected_tsv() {
    let rows = rows();
    assert_eq!(rows.len(), 30, "the corpus has 30 threads");
    let failures: Vec<String> = rows.iter().filter_map(|r| check(r).err()).collect();
    assert!(
        failures.is_empty(),
        "{} of {} rows wrong:\n{}",
        failures.len(),
        rows.len(),
        failures.join("\n")
    );
}

/// One thread per class of b4/mmci disagreement, and the three kinds of
/// thread issue 29 names, each as a maintainer applies it.
#[test]
fn every_row_of_the_b4_corpus_expected_tsv() {
    let dir = b4_corpus_dir();
    let rows = rows_in(dir.clone());
    let files = std::fs::read_dir(&dir)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .is_ok_and(|e| e.file_name().to_string_lossy().ends_with(".t.mbox.gz"))
        })
        .count();
    assert_eq!(rows.len(), files, "a row for every file");
    assert!(rows.iter().all(|r| r.message_ids.is_some()));
    let failures: Vec<String> = rows.iter().filter_map(|r| check(r).err()).collect();
    assert!(
        failures.is_empty(),
        "{} of {} rows wrong:\n{}",
        failures.len(),
        rows.len(),
        failures.join("\n")
    );
}

#[test]
fn assembly_column_parsers() {
    assert_eq!(
        provenance("v5 = v2 1/4 + v2 2/4 + v2 3/4 + v5 4/4 (cover: v2 0/4)"),
        [(2, 1), (2, 2), (2, 3), (5, 4)]
    );
    assert_eq!(provenance("v1 = 1/3 + 2/3 + RESEND 3/3"), []);
    assert_eq!(missing_counters("missing: v2 5/9, 6/9, 7/9 (x)"), [5, 6, 7]);
    assert_eq!(missing_counters("missing: v2 2/9 (0/9, 1/9 present)"), [2]);
}

/// What a file's series is, besides prerequisites (looked up by `load`
/// only): revision, assembly, patches, cover, left-out mails.
fn shape(s: &series::Series) -> String {
    let ids: Vec<&str> = s.patches.iter().map(|p| p.message_id.as_str()).collect();
    format!(
        "v{} of {}: {} / {} / {:?} / {:?} / {:?}",
        s.version,
        s.total,
        s.chosen,
        s.assembly,
        ids,
        s.cover.as_ref().map(|c| &c.message_id),
        s.left_out
    )
}

/// Every file of the corpus is a gzip'd mbox, as lore serves it: given as a
/// file (`mmci series show FILE.t.mbox.gz`) it is read as the mbox inside
/// (before, each was "no patches in it").
#[tokio::test]
async fn gzipped_files_load_as_their_mbox() {
    let store = tempfile::tempdir().unwrap();
    let fetcher = series::fetch::Fetcher::default();
    for row in rows() {
        let path = corpus_dir().join(&row.file);
        let name = path.display().to_string();
        let got = series::load(&series::SeriesSpec::Mbox(path), &fetcher, store.path())
            .await
            .map(|s| shape(&s))
            .map_err(|e| e.to_string());
        let want = series::assemble(&series::mails_from_mbox(&thread(&row.file)), &name)
            .map(|s| shape(&s))
            .map_err(|e| e.to_string());
        assert_eq!(got, want, "{}", row.file);
    }
}
