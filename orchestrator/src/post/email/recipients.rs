//! Who a reply goes to. The operator's --to and --cc always; of the
//! thread, only the series' author and the mailing lists among the To and
//! Cc of the mail replied to, and no more than [`MAX_RECIPIENTS`] in all.
//! The series' sender chose those headers: without the limits one mail
//! with 5,000 Cc and a patch that fails to build (a FAIL is trivial to
//! provoke) made mmci mail 5,002 strangers under the CI's sender address
//! (security review M3). What is left out is counted, with why, for the
//! dry run and the summary of a message sent or stored.

use lettre::message::Mailbox;

use super::{mailbox, Audience, EmailError, EmailOptions, ReplyTo};

/// Recipients of one reply at most, the operator's --to and --cc
/// excepted (they are always kept, and count towards it). A FAIL on a
/// series goes to its author and the lists it was posted to: two or three
/// lists (linux-mm, linux-kernel and a subsystem's) and rarely ten;
/// twenty-five leaves room for those and the operator's own.
pub const MAX_RECIPIENTS: usize = 25;

/// Hosts whose addresses are mailing lists where memory-management series
/// are posted and discussed: vger (linux-kernel and most subsystems),
/// kvack (linux-mm), lists.linux.dev (the newer kernel.org lists),
/// infradead (arm, riscv, nvme...), ozlabs (powerpc), freedesktop (dri,
/// the GPU drivers' mm users), linaro (dma-buf) and the Linux
/// Foundation's old list host (virtualization). An address elsewhere is a
/// person or a list mmci does not know: `--list-domain` names another
/// host, `--cc` an address.
pub const LIST_DOMAINS: &[&str] = &[
    "vger.kernel.org",
    "kvack.org",
    "lists.linux.dev",
    "lists.infradead.org",
    "lists.ozlabs.org",
    "lists.freedesktop.org",
    "lists.linaro.org",
    "lists.linux-foundation.org",
];

/// Addresses named among the left-out ones, the rest counted.
const EXAMPLES: usize = 3;

/// Whether `m` is a mailing list's address: its domain is one of
/// [`LIST_DOMAINS`] or of `extra` (`--list-domain`), case aside.
pub fn is_list(m: &Mailbox, extra: &[String]) -> bool {
    let domain = m.email.domain().to_ascii_lowercase();
    LIST_DOMAINS
        .iter()
        .copied()
        .chain(extra.iter().map(String::as_str))
        .any(|d| d.eq_ignore_ascii_case(&domain))
}

/// Whether `d` can be a `--list-domain`: `lists.example.org`, labels of letters, digits and `-`, at least two,
/// none empty.
pub fn is_host_name(d: &str) -> bool {
    let labels: Vec<&str> = d.split('.').collect();
    labels.len() >= 2
        && labels.iter().all(|l| {
            !l.is_empty()
                && l.len() <= 63
                && l.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
        })
}

/// The addresses of the thread a reply leaves out, by why.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LeftOut {
    /// Addresses of the thread's To and Cc that are not a list's.
    pub not_lists: Vec<String>,
    /// The author or lists past [`MAX_RECIPIENTS`].
    pub over_cap: Vec<String>,
    /// Addresses of the thread that are not email addresses.
    pub unparsable: usize,
}

impl LeftOut {
    pub fn is_empty(&self) -> bool {
        self.not_lists.is_empty() && self.over_cap.is_empty() && self.unparsable == 0
    }

    /// One `# left out: ...` line per reason, counted, with the first
    /// addresses named and what to do; nothing when nothing was left out.
    pub fn text(&self) -> String {
        let named = |all: &[String]| {
            let mut s = all[..all.len().min(EXAMPLES)].join(", ");
            if all.len() > EXAMPLES {
                s.push_str(&format!(" and {} more", all.len() - EXAMPLES));
            }
            s
        };
        let mut out = String::new();
        if !self.not_lists.is_empty() {
            out.push_str(&format!(
                "# left out: {} address(es) of the thread that are not a mailing list's \
                 (lists are at {}; --list-domain adds a list host, --cc an address): {}\n",
                self.not_lists.len(),
                LIST_DOMAINS.join(", "),
                named(&self.not_lists)
            ));
        }
        if !self.over_cap.is_empty() {
            out.push_str(&format!(
                "# left out: {} address(es) of the thread over MAX_RECIPIENTS ({MAX_RECIPIENTS} \
                 recipients in all; --cc names one that must have it): {}\n",
                self.over_cap.len(),
                named(&self.over_cap)
            ));
        }
        if self.unparsable > 0 {
            out.push_str(&format!(
                "# left out: {} entry(ies) of the thread's To/Cc that are not email addresses\n",
                self.unparsable
            ));
        }
        out
    }
}

/// The To and Cc of a reply, and what of the thread was left out.
#[derive(Debug)]
pub struct Recipients {
    pub to: Vec<Mailbox>,
    pub cc: Vec<Mailbox>,
    pub left_out: LeftOut,
}

/// To: --to, then the author (unless the audience is --to and --cc only);
/// Cc: --cc, then the thread's lists for [`Audience::Thread`]. Each address
/// once, never the sender; the thread's only while fewer than
/// [`MAX_RECIPIENTS`] are addressed. A bad --to or --cc is an error; a bad
/// address of the thread is counted and skipped.
pub fn recipients(
    reply: &ReplyTo,
    opts: &EmailOptions,
    from: &Mailbox,
) -> Result<Recipients, EmailError> {
    let key = |m: &Mailbox| m.email.to_string().to_ascii_lowercase();
    let mut seen = vec![key(from)];
    let mut r = Recipients {
        to: vec![],
        cc: vec![],
        left_out: LeftOut::default(),
    };
    for t in &opts.to {
        let m = mailbox("--to", t)?;
        if !seen.contains(&key(&m)) {
            seen.push(key(&m));
            r.to.push(m);
        }
    }
    for c in &opts.cc {
        let m = mailbox("--cc", c)?;
        if !seen.contains(&key(&m)) {
            seen.push(key(&m));
            r.cc.push(m);
        }
    }
    // The thread's, author first: into To or Cc while there is room.
    let mut thread: Vec<(bool, &str)> = vec![];
    if opts.audience != Audience::Given {
        thread.push((true, &reply.author));
    }
    if opts.audience == Audience::Thread {
        thread.extend(
            reply
                .to
                .iter()
                .chain(&reply.cc)
                .map(|a| (false, a.as_str())),
        );
    }
    for (is_author, given) in thread {
        let Ok(m) = mailbox("the thread's To/Cc", given) else {
            r.left_out.unparsable += 1;
            continue;
        };
        if seen.contains(&key(&m)) {
            continue;
        }
        seen.push(key(&m));
        if !is_author && !is_list(&m, &opts.list_domains) {
            r.left_out.not_lists.push(m.email.to_string());
        } else if r.to.len() + r.cc.len() >= MAX_RECIPIENTS {
            r.left_out.over_cap.push(m.email.to_string());
        } else if is_author {
            r.to.push(m);
        } else {
            r.cc.push(m);
        }
    }
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reply(author: &str, to: &[&str], cc: &[&str]) -> ReplyTo {
        let own = |v: &[&str]| v.iter().map(|s| s.to_string()).collect();
        ReplyTo {
            subject: "Re: x".into(),
            in_reply_to: "a@b".into(),
            references: vec!["a@b".into()],
            author: author.into(),
            to: own(to),
            cc: own(cc),
        }
    }

    fn addrs(v: &[Mailbox]) -> Vec<String> {
        v.iter().map(|m| m.email.to_string()).collect()
    }

    /// Who gets a FAIL, case by case: the author and the lists; people,
    /// duplicates, the sender and bad entries left out; the cap, with the
    /// operator's own kept beyond it.
    #[test]
    fn the_author_the_lists_and_the_operators_own_within_the_cap() {
        let from = mailbox("--from", "bot@ci.example.org").unwrap();
        let many: Vec<String> = (0..40).map(|i| format!("l{i}@vger.kernel.org")).collect();
        let many: Vec<&str> = many.iter().map(String::as_str).collect();
        let cc_many: Vec<String> = (0..30).map(|i| format!("me{i}@example.org")).collect();
        // (audience, --cc, --list-domain, reply, to, cc, not lists, over cap, unparsable)
        type Case<'a> = (
            Audience,
            Vec<String>,
            Vec<String>,
            ReplyTo,
            Vec<&'a str>,
            Vec<&'a str>,
            usize,
            usize,
            usize,
        );
        let cases: Vec<Case> = vec![
            (
                Audience::Thread,
                vec![],
                vec![],
                reply(
                    "A <a@example.org>",
                    &["linux-mm@kvack.org"],
                    &[
                        "Andrew <akpm@linux-foundation.org>",
                        "LINUX-kernel@VGER.kernel.org",
                        "linux-mm@kvack.org",
                        "bot@ci.example.org",
                        "not an address",
                    ],
                ),
                vec!["a@example.org"],
                vec!["linux-mm@kvack.org", "LINUX-kernel@VGER.kernel.org"],
                1,
                0,
                1,
            ),
            // An operator's list host.
            (
                Audience::Thread,
                vec![],
                vec!["lists.example.org".into()],
                reply("a@example.org", &["dev@lists.example.org"], &[]),
                vec!["a@example.org"],
                vec!["dev@lists.example.org"],
                0,
                0,
                0,
            ),
            // 40 lists: the author and 24 of them.
            (
                Audience::Thread,
                vec![],
                vec![],
                reply("a@example.org", &[], &many),
                vec!["a@example.org"],
                many[..24].to_vec(),
                0,
                16,
                0,
            ),
            // The operator's 30 --cc stay; nothing of the thread fits.
            (
                Audience::Thread,
                cc_many.clone(),
                vec![],
                reply("a@example.org", &["linux-mm@kvack.org"], &[]),
                vec![],
                cc_many.iter().map(String::as_str).collect(),
                0,
                2,
                0,
            ),
            // Not a FAIL, --to-author: the author alone, lists not counted.
            (
                Audience::Author,
                vec![],
                vec![],
                reply("a@example.org", &["linux-mm@kvack.org"], &["p@x.org"]),
                vec!["a@example.org"],
                vec![],
                0,
                0,
                0,
            ),
            (
                Audience::Given,
                vec!["me@example.org".into()],
                vec![],
                reply("a@example.org", &["linux-mm@kvack.org"], &[]),
                vec![],
                vec!["me@example.org"],
                0,
                0,
                0,
            ),
        ];
        for (i, (audience, cc, list_domains, reply, to, want_cc, not_lists, over, bad)) in
            cases.into_iter().enumerate()
        {
            let opts = EmailOptions {
                cc,
                list_domains,
                audience,
                ..Default::default()
            };
            let r = recipients(&reply, &opts, &from).unwrap();
            assert_eq!(addrs(&r.to), to, "case {i}");
            assert_eq!(addrs(&r.cc), want_cc, "case {i}");
            assert_eq!(
                (
                    r.left_out.not_lists.len(),
                    r.left_out.over_cap.len(),
                    r.left_out.unparsable
                ),
                (not_lists, over, bad),
                "case {i}: {:?}",
                r.left_out
            );
        }
    }

    #[test]
    fn what_was_left_out_is_counted_with_examples() {
        assert_eq!(LeftOut::default().text(), "");
        let l = LeftOut {
            not_lists: (0..5).map(|i| format!("p{i}@x.org")).collect(),
            over_cap: vec!["l@vger.kernel.org".into()],
            unparsable: 2,
        };
        let t = l.text();
        assert!(t.starts_with(
            "# left out: 5 address(es) of the thread that are not a mailing list's (lists are at vger.kernel.org, "
        ), "{t}");
        assert!(
            t.contains("--cc an address): p0@x.org, p1@x.org, p2@x.org and 2 more\n"),
            "{t}"
        );
        assert!(t.contains("# left out: 1 address(es) of the thread over MAX_RECIPIENTS (25 recipients in all; --cc names one that must have it): l@vger.kernel.org\n"), "{t}");
        assert!(
            t.ends_with(
                "# left out: 2 entry(ies) of the thread's To/Cc that are not email addresses\n"
            ),
            "{t}"
        );
    }

    #[test]
    fn list_domains_are_host_names() {
        for (given, ok) in [
            ("lists.example.org", true),
            ("vger.kernel.org", true),
            ("my-lists.example.org", true),
            ("localhost", false),
            ("", false),
            (".org", false),
            ("lists..org", false),
            ("*.example.org", false),
            ("lists.example.org\u{1b}[2J", false),
            ("a@lists.example.org", false),
        ] {
            assert_eq!(is_host_name(given), ok, "{given:?}");
        }
    }
}
