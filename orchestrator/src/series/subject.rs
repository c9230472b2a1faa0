//! Patch subjects: the bracketed tag (`[RFC PATCH mm-unstable v2 3/5]`,
//! `[PATCH 0/6 v3]`, `[PATCHSET v2]`), reply prefixes in the forms mail
//! clients write them, and fixlet titles. Pure string functions.

/// What a subject says about its mail.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SubjectTag {
    /// `vN` anywhere in the tag (`v13b` is 13); None when the tag has none
    /// (the cover's or the posting's version then applies).
    pub version: Option<u32>,
    /// `n/M`: None for a tag without a counter (`[PATCH]`, `[PATCHSET v2]`).
    pub counter: Option<(u32, u32)>,
    pub rfc: bool,
    pub resend: bool,
    /// The subject without the tag: what becomes the commit subject.
    pub title: String,
}

impl SubjectTag {
    pub fn index(&self) -> u32 {
        self.counter.map_or(1, |c| c.0)
    }
    pub fn total(&self) -> u32 {
        self.counter.map_or(1, |c| c.1)
    }
    /// A delta to squash into a patch, not a replacement for it:
    /// `[PATCH v3 2/3] title (fix)`, `[PATCH] fix: title`, `fixup! title`.
    pub fn is_fixlet(&self) -> bool {
        is_fixlet_title(&self.title)
    }
}

/// The version field of parse_subject when a caller only wants one number.
pub fn version_or_1(tag: &SubjectTag) -> u32 {
    tag.version.unwrap_or(1)
}

/// Reply prefixes: English, German (AW), Nordic (SV, VS), Dutch (Antw),
/// French (TR, forwarded), Chinese (回复, 答复, 转发) and forwards.
const REPLY_PREFIXES: &[&str] = &[
    "re", "aw", "sv", "vs", "antw", "odp", "fwd", "fw", "tr", "wg", "回复", "答复", "回覆", "转发",
    "轉寄",
];

/// Strips one reply prefix (`Re:`, `RE[2]:`, `AW:`, `Fwd:`, `回复：`) and
/// returns the rest, or None when the subject does not start with one.
fn strip_reply_prefix(s: &str) -> Option<&str> {
    let s = s.trim_start();
    let colon = s.find([':', '：'])?;
    let (word, rest) = s.split_at(colon);
    let rest = rest
        .strip_prefix(':')
        .or_else(|| rest.strip_prefix('：'))
        .unwrap_or(rest);
    // "Re[2]" and "Re 2" counters some clients add.
    let word = word.trim();
    let word = word
        .split_once('[')
        .map_or(word, |(w, n)| if n.ends_with(']') { w } else { word })
        .trim();
    let lower = word.to_lowercase();
    REPLY_PREFIXES.contains(&lower.as_str()).then_some(rest)
}

/// A reply (or forward): never a patch, even when it carries a diff. Also
/// catches a reply behind a non-patch bracket (`[External] Re: ...`).
pub fn is_reply(subject: &str) -> bool {
    let mut rest = subject.trim();
    loop {
        if strip_reply_prefix(rest).is_some() {
            return true;
        }
        match rest.strip_prefix('[').and_then(|r| r.split_once(']')) {
            Some((inside, tail)) if !inside_is_patch_tag(inside) => rest = tail.trim_start(),
            _ => return false,
        }
    }
}

/// The words of a tag: `PATCH-v3` (and `RFC-v2`) is two, `PATCH` and `v3`.
fn tag_words(inside: &str) -> impl Iterator<Item = &str> {
    inside.split_whitespace().flat_map(|t| {
        let head = t.split_once('-').map(|(h, _)| h.to_ascii_uppercase());
        match (head.as_deref(), t.split_once('-')) {
            (Some("PATCH" | "RFC"), Some((h, rest))) if !rest.is_empty() => vec![h, rest],
            _ => vec![t],
        }
    })
}

fn inside_is_patch_tag(inside: &str) -> bool {
    tag_words(inside).any(|t| {
        let u = t.to_ascii_uppercase();
        u == "PATCH" || u == "PATCHSET" || u == "PATCHES" || u == "RFC" || u == "RFT"
    })
}

fn parse_version(token: &str) -> Option<u32> {
    let digits = token.strip_prefix(['v', 'V'])?;
    let end = digits
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(digits.len());
    if end == 0 || end > 6 {
        return None;
    }
    // `v13b`, `v2-rc` are versions; `vmscan` is not (no digit right after v).
    let suffix = &digits[end..];
    if suffix.len() > 2 && !suffix.starts_with('-') {
        return None;
    }
    digits[..end].parse().ok()
}

fn parse_counter(token: &str) -> Option<(u32, u32)> {
    let (n, m) = token.split_once('/')?;
    if n.is_empty() || m.is_empty() || n.len() > 5 || m.len() > 5 {
        return None;
    }
    let n: u32 = n.parse().ok()?;
    let m: u32 = m.parse().ok()?;
    (m > 0 && n <= m).then_some((n, m))
}

/// Parses a patch subject (already unfolded). None for replies and for mails
/// that are not patches (no PATCH, PATCHSET or RFC in a leading tag).
pub fn parse_subject(subject: &str) -> Option<SubjectTag> {
    parse_brackets(subject, true)
}

/// What the leading brackets of a subject say, whether or not one of them
/// names a patch (`[bpf-next v2 0/5] title`, or no bracket at all: every
/// field empty but the title). None for replies. For a mail the thread
/// already knows to be a cover that lacks the `[PATCH` word.
pub fn parse_untagged(subject: &str) -> Option<SubjectTag> {
    parse_brackets(subject, false)
}

fn parse_brackets(subject: &str, require_patch: bool) -> Option<SubjectTag> {
    if is_reply(subject) {
        return None;
    }
    let mut rest = subject.trim();
    let mut tokens: Vec<&str> = Vec::new();
    let mut is_patch = false;
    while let Some(after) = rest.strip_prefix('[') {
        let Some((inside, tail)) = after.split_once(']') else {
            break;
        };
        is_patch |= inside_is_patch_tag(inside);
        tokens.extend(tag_words(inside));
        rest = tail.trim_start();
    }
    if require_patch && !is_patch {
        return None;
    }
    let mut tag = SubjectTag {
        version: None,
        counter: None,
        rfc: false,
        resend: false,
        title: rest.split_whitespace().collect::<Vec<_>>().join(" "),
    };
    for token in tokens {
        let upper = token.to_ascii_uppercase();
        match upper.as_str() {
            "RFC" | "RFT" => tag.rfc = true,
            "RESEND" => tag.resend = true,
            _ => {}
        }
        if let Some(v) = parse_version(token) {
            tag.version = Some(v);
        } else if let Some(c) = parse_counter(token) {
            tag.counter = Some(c);
        } else if token.contains('/') {
            // `v2/resend`: a version and a label in one token (a tree
            // name such as `cgroup/for-5.20` has neither).
            for part in token.split('/') {
                if let Some(v) = parse_version(part) {
                    tag.version = Some(v);
                }
                tag.resend |= part.eq_ignore_ascii_case("resend");
            }
        }
    }
    Some(tag)
}

/// `... (fix)`, `... (fixup)`, `fix: ...`, `fixup! ...`, `squash! ...`.
pub fn is_fixlet_title(title: &str) -> bool {
    let t = title.trim().to_ascii_lowercase();
    t.ends_with("(fix)")
        || t.ends_with("(fixup)")
        || t.starts_with("fix: ")
        || t.starts_with("fixup: ")
        || t.starts_with("fixup!")
        || t.starts_with("squash!")
}

/// The subject as public-inbox compares them (`subject_path`), for telling
/// same-subject mails from another thread apart.
pub fn normalized(subject: &str) -> String {
    let mut s = subject.split_whitespace().collect::<Vec<_>>().join(" ");
    while s.ends_with('.') {
        s.pop();
    }
    let s = match s.get(..4) {
        Some(p) if p.eq_ignore_ascii_case("re: ") => s[4..].to_string(),
        _ => s,
    };
    let mut out = String::new();
    let mut in_run = false;
    for c in s.chars() {
        if c.is_ascii_alphanumeric() || "_.~/-".contains(c) {
            out.push(c.to_ascii_lowercase());
            in_run = false;
        } else if !in_run {
            out.push('_');
            in_run = true;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags() {
        // subject, version, counter, rfc, resend, title
        type Row = (
            &'static str,
            Option<u32>,
            Option<(u32, u32)>,
            bool,
            bool,
            &'static str,
        );
        let rows: &[Row] = &[
            (
                "[PATCH v2 3/5] mm: x",
                Some(2),
                Some((3, 5)),
                false,
                false,
                "mm: x",
            ),
            ("[RFC PATCH] mm: one", None, None, true, false, "mm: one"),
            (
                "[PATCH mm-unstable v3 0/2] c",
                Some(3),
                Some((0, 2)),
                false,
                false,
                "c",
            ),
            (
                "[RFC] [PATCH v4 2/2] split",
                Some(4),
                Some((2, 2)),
                true,
                false,
                "split",
            ),
            (
                "[PATCH-v3 2/3] genirq: x",
                Some(3),
                Some((2, 3)),
                false,
                false,
                "genirq: x",
            ),
            (
                "[PATCH v2/resend 0/8] dce",
                Some(2),
                Some((0, 8)),
                false,
                true,
                "dce",
            ),
            (
                "[PATCH cgroup/for-5.20 1/3] t",
                None,
                Some((1, 3)),
                false,
                false,
                "t",
            ),
            (
                "[PATCH 0/6 v3] after",
                Some(3),
                Some((0, 6)),
                false,
                false,
                "after",
            ),
            (
                "[PATCH 00/19 V2] cap",
                Some(2),
                Some((0, 19)),
                false,
                false,
                "cap",
            ),
            (
                "[PATCH v13b 0/4] letter",
                Some(13),
                Some((0, 4)),
                false,
                false,
                "letter",
            ),
            (
                "[PATCH v2 0/2 RESEND] r",
                Some(2),
                Some((0, 2)),
                false,
                true,
                "r",
            ),
            (
                "[RFC PATCH 1/9 v2] t",
                Some(2),
                Some((1, 9)),
                true,
                false,
                "t",
            ),
            ("[PATCH RFC 0/2] b4", None, Some((0, 2)), true, false, "b4"),
            ("[PATCHSET v2] wb", Some(2), None, false, false, "wb"),
            (
                "[PATCH -next] memcg: m",
                None,
                None,
                false,
                false,
                "memcg: m",
            ),
            (
                "[PATCH 1/3 cgroup/for-5.20] c",
                None,
                Some((1, 3)),
                false,
                false,
                "c",
            ),
            ("[PATCH for 5.8] f", None, None, false, false, "f"),
            ("[PATCH memcg v4] m", Some(4), None, false, false, "m"),
            ("[v3 PATCH 1/3] x", Some(3), Some((1, 3)), false, false, "x"),
            (
                "[PATCH  v5 0/6]  two  spaces ",
                Some(5),
                Some((0, 6)),
                false,
                false,
                "two spaces",
            ),
            (
                "[PATCH vmscan 1/2] n",
                None,
                Some((1, 2)),
                false,
                false,
                "n",
            ),
            (
                "[PATCH 3/2] bad counter",
                None,
                None,
                false,
                false,
                "bad counter",
            ),
        ];
        for &(s, v, c, rfc, resend, title) in rows {
            let t = parse_subject(s).unwrap_or_else(|| panic!("{s}"));
            assert_eq!(
                (t.version, t.counter, t.rfc, t.resend, t.title.as_str()),
                (v, c, rfc, resend, title),
                "{s}"
            );
        }
    }

    #[test]
    fn not_patches() {
        for s in [
            "Re: [PATCH v2 1/2] mm: x",
            "RE: [PATCH] x",
            "AW: [PATCH] x",
            "Fwd: [PATCH] x",
            "FW: [PATCH] x",
            "回复: [PATCH] x",
            "回复：[PATCH] x",
            "Re[2]: [PATCH] x",
            "[External] Re: [PATCH 1/2] x",
            "mm: not a patch",
            "[GIT PULL] mm-stable",
            "",
            "[",
            "[PATCH",
        ] {
            assert_eq!(parse_subject(s), None, "{s}");
        }
        assert!(parse_subject("[RFC PATCH 0/3] Re: [PATCH v17 14/21] x").is_some());
    }

    #[test]
    fn untagged_brackets() {
        // subject, version, counter, title
        type Row = (
            &'static str,
            Option<(Option<u32>, Option<(u32, u32)>, &'static str)>,
        );
        let rows: &[Row] = &[
            (
                "[bpf-next v2 0/5] powerpc64/bpf: x",
                Some((Some(2), Some((0, 5)), "powerpc64/bpf: x")),
            ),
            (
                "provide generic page_to_phys v3",
                Some((None, None, "provide generic page_to_phys v3")),
            ),
            ("[PATCH v3 0/2] c", Some((Some(3), Some((0, 2)), "c"))),
            ("Re: [bpf-next v2 0/5] x", None),
            ("", Some((None, None, ""))),
        ];
        for &(s, want) in rows {
            let got = parse_untagged(s).map(|t| (t.version, t.counter, t.title));
            let want = want.map(|(v, c, t)| (v, c, t.to_string()));
            assert_eq!(got, want, "{s}");
        }
    }

    #[test]
    fn fixlets() {
        for (t, want) in [
            ("hugetlb: memcg: account (fix)", true),
            ("fix: mm: memcontrol: convert objcg", true),
            ("fixup! mm: x", true),
            ("mm: fix a thing", false),
            ("mm: fixes: y", false),
        ] {
            assert_eq!(is_fixlet_title(t), want, "{t}");
        }
    }

    #[test]
    fn public_inbox_normalisation() {
        assert_eq!(
            normalized("Re:  [PATCH] cgroup: remove cgroup_mount from comments..."),
            "_patch_cgroup_remove_cgroup_mount_from_comments"
        );
    }
}
