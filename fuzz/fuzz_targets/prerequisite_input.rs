//! The `git patch-id` input the prerequisite lookup builds from mail
//! bodies, and the reading of git's answer: whatever the bodies hold
//! (`From <hex>`, `commit <sha> upstream.`, bare ids), the only lines git
//! takes for the start of a patch are the ones written for the mails with
//! a diff, one each, in order; and any answer maps only to those mails.
#![no_main]
use libfuzzer_sys::fuzz_target;
use mmci::series::{prerequisite, Mail};

/// git's test for the start of a patch, transcribed from
/// builtin/patch-id.c (`get_one_patchid`): skip `diff-tree `, `commit `
/// or `From `, then `get_oid_hex` (40 hex digits, either case).
fn git_starts_patch(line: &[u8]) -> bool {
    let p = if let Some(r) = line.strip_prefix(b"diff-tree ") {
        r
    } else if let Some(r) = line.strip_prefix(b"commit ") {
        r
    } else if let Some(r) = line.strip_prefix(b"From ") {
        r
    } else {
        line
    };
    p.len() >= 40 && p[..40].iter().all(u8::is_ascii_hexdigit)
}

fuzz_target!(|data: &[u8]| {
    // Up to 8 bodies, split at 0xff bytes (never in UTF-8 text).
    let mails: Vec<Mail> = data
        .split(|&b| b == 0xff)
        .take(8)
        .map(|b| Mail {
            body: String::from_utf8_lossy(b).into_owned(),
            ..Mail::default()
        })
        .collect();
    let refs: Vec<&Mail> = mails.iter().collect();
    let input = prerequisite::patch_id_input(&refs);
    let with_diff: Vec<usize> = (0..mails.len()).filter(|&i| mails[i].has_diff()).collect();
    let starts: Vec<&str> = input
        .text
        .split('\n')
        .filter(|l| git_starts_patch(l.as_bytes()))
        .collect();
    assert_eq!(starts.len(), with_diff.len(), "{:?}", input.text);
    for (line, &i) in starts.iter().zip(&with_diff) {
        let commit = line
            .strip_prefix("From ")
            .and_then(|r| r.split(' ').next())
            .unwrap_or_else(|| panic!("not ours: {line:?}"));
        assert_eq!(input.commits.get(commit), Some(&i), "{line:?}");
    }
    assert_eq!(input.commits.len(), with_diff.len());
    // git's answer: the input itself, and one line per commit.
    let mut answer = String::from_utf8_lossy(data).into_owned();
    for c in input.commits.keys() {
        answer.push_str(&format!("\nf00d {c}\n"));
    }
    let ids = prerequisite::parse_patch_ids(&answer, &input.commits);
    assert!(ids.keys().all(|i| with_diff.contains(i)));
    assert_eq!(ids.len(), with_diff.len());
});
