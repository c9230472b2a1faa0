//! One mail of a thread as series assembly sees it, parsed from RFC 5322
//! bytes with mail-parser: decoded subject (RFC 2047, unfolded), threading
//! headers, sender and in-body `From:`, and the text body decoded from
//! base64 / quoted-printable / 8bit in its charset (latin-1, gb2312, gbk, ...).

use mail_parser::mailbox::mbox::MessageIterator;
use mail_parser::MessageParser;

/// One mail of a thread, as far as series assembly cares.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Mail {
    /// Unfolded, whitespace runs collapsed, trimmed.
    pub subject: String,
    pub message_id: String,
    /// The sender: `Name <addr>` or bare.
    pub from: String,
    /// `From:` at the top of the body (git format-patch / b4 put the real
    /// author there when the sender differs), `Name <addr>`.
    pub body_from: Option<String>,
    pub date: String,
    /// Addresses of To and Cc, `Name <addr>` or bare: a reply on the thread goes to them.
    pub to: Vec<String>,
    pub cc: Vec<String>,
    pub in_reply_to: Option<String>,
    /// The References chain (message-ids without <>), oldest first.
    pub references: Vec<String>,
    pub body: String,
    /// The whole message, headers included, as `git am` wants it.
    pub raw: Vec<u8>,
}

impl Mail {
    /// A diff in the body: `diff --git`, or a unified diff's `--- a/` and
    /// `+++ b/` header pair.
    pub fn has_diff(&self) -> bool {
        let b = &self.body;
        if b.starts_with("diff --git ") || b.contains("\ndiff --git ") {
            return true;
        }
        let mut minus = false;
        for line in b.lines() {
            if line.starts_with("--- ") && !line.starts_with("--- \n") && line.len() > 4 {
                minus = true;
            } else if minus && line.starts_with("+++ ") {
                return true;
            } else {
                minus = false;
            }
        }
        false
    }

    /// Lowercased keys that identify the author: the sender's and the
    /// in-body From's addresses (a B4 Relay sender and the real author, or
    /// one author writing from two addresses), and their display names of
    /// two words or more (`Russell King (Oracle)` sends a cover from
    /// linux@ and its patches from rmk+kernel@).
    pub fn author_addresses(&self) -> Vec<String> {
        let mut v = vec![address_of(&self.from)];
        if let Some(b) = &self.body_from {
            v.push(address_of(b));
        }
        v.extend(
            std::iter::once(&self.from)
                .chain(&self.body_from)
                .filter_map(|f| name_of(f)),
        );
        v.retain(|a| !a.is_empty());
        v.dedup();
        v
    }

    /// The author as git am will record it.
    pub fn author(&self) -> &str {
        self.body_from.as_deref().unwrap_or(&self.from)
    }
}

/// `Name <Addr@x>` -> `addr@x`; a bare address lowercased.
pub fn address_of(s: &str) -> String {
    let a = match (s.rfind('<'), s.rfind('>')) {
        (Some(i), Some(j)) if i < j => &s[i + 1..j],
        _ => s,
    };
    a.trim().to_lowercase()
}

/// `"Name Surname" <addr@x>` -> `name:name surname`: a display name of two
/// words or more (one word is too common to tell authors apart); None
/// without one.
fn name_of(s: &str) -> Option<String> {
    let name = s[..s.rfind('<')?].trim().trim_matches('"').trim();
    let name = name.strip_suffix(" via B4 Relay").unwrap_or(name);
    let words: Vec<&str> = name.split_whitespace().collect();
    (words.len() >= 2 && !name.contains('@'))
        .then(|| format!("name:{}", words.join(" ").to_lowercase()))
}

/// The `From:` line at the top of a body (after blank lines), if any.
fn in_body_from(body: &str) -> Option<String> {
    let first = body.lines().find(|l| !l.trim().is_empty())?;
    let v = first.strip_prefix("From:")?.trim();
    (!v.is_empty() && v.contains('@')).then(|| v.to_string())
}

/// Strips `<>` and surrounding junk from one message-id header value.
/// Whitespace inside (a folded header's CR, LF and indent) is dropped; an
/// id with anything else outside printable ASCII (control characters,
/// `<`, `>`, non-ASCII) is no id: ids go into a dispatch payload, a mail
/// header and a command line, where a newline would split them.
fn clean_id(s: &str) -> Option<String> {
    let s = s.trim();
    let s = match (s.find('<'), s.rfind('>')) {
        (Some(i), Some(j)) if i < j => &s[i + 1..j],
        _ => s,
    };
    let id: String = s.chars().filter(|c| !c.is_ascii_whitespace()).collect();
    let printable = |c: char| c.is_ascii_graphic() && c != '<' && c != '>';
    (!id.is_empty() && id.chars().all(printable)).then_some(id)
}

fn header_ids(v: &mail_parser::HeaderValue) -> Vec<String> {
    match v {
        mail_parser::HeaderValue::Text(t) => clean_id(t).into_iter().collect(),
        mail_parser::HeaderValue::TextList(l) => l.iter().filter_map(|t| clean_id(t)).collect(),
        _ => vec![],
    }
}

/// Parses one RFC 5322 message. None when mail-parser finds no message.
pub fn parse_mail(raw: &[u8]) -> Option<Mail> {
    let msg = MessageParser::default().parse(raw)?;
    let from = msg
        .from()
        .and_then(|a| a.first())
        .map(addr_text)
        .unwrap_or_default();
    let addresses = |a: Option<&mail_parser::Address>| -> Vec<String> {
        a.map(|a| a.iter().map(addr_text).filter(|s| !s.is_empty()).collect())
            .unwrap_or_default()
    };
    let mut body = String::new();
    for i in 0.. {
        match msg.body_text(i) {
            Some(t) => {
                if !body.is_empty() {
                    body.push('\n');
                }
                body.push_str(&t);
            }
            None => break,
        }
        if i > 64 {
            break;
        }
    }
    // Decoded bodies keep the sender's CRLFs; lines are compared without them.
    if body.contains('\r') {
        body = body.replace("\r\n", "\n");
    }
    let subject = msg
        .subject()
        .unwrap_or_default()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    Some(Mail {
        subject,
        message_id: msg.message_id().and_then(clean_id).unwrap_or_default(),
        from,
        body_from: in_body_from(&body),
        date: msg.date().map(|d| d.to_rfc3339()).unwrap_or_default(),
        to: addresses(msg.to()),
        cc: addresses(msg.cc()),
        in_reply_to: header_ids(msg.in_reply_to()).into_iter().next(),
        references: header_ids(msg.references()),
        body,
        raw: raw.to_vec(),
    })
}

/// `Name <addr>`, or the bare address.
fn addr_text(a: &mail_parser::Addr) -> String {
    match (a.name(), a.address()) {
        (Some(n), Some(e)) => format!("{n} <{e}>"),
        (None, Some(e)) => e.to_string(),
        (Some(n), None) => n.to_string(),
        (None, None) => String::new(),
    }
}

/// The mails of an mbox (mboxrd `>From ` quoting undone).
pub fn mails_from_mbox(bytes: &[u8]) -> Vec<Mail> {
    mails_from_mbox_at_most(bytes, usize::MAX)
}

/// The first `max` mails of an mbox: a thread with more is refused anyway
/// (`MAX_THREAD_MAILS`), so the rest need not be parsed.
pub fn mails_from_mbox_at_most(bytes: &[u8], max: usize) -> Vec<Mail> {
    MessageIterator::new(bytes)
        .filter_map(|m| m.ok())
        .filter_map(|m| parse_mail(m.contents()))
        .take(max)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses() {
        for (given, want) in [
            ("A U Thor <A@Example.org>", "a@example.org"),
            ("a@example.org", "a@example.org"),
            ("\"x, y\" <x@y>", "x@y"),
            ("<", "<"),
            ("", ""),
        ] {
            assert_eq!(address_of(given), want, "{given}");
        }
    }

    #[test]
    fn message_ids_are_printable_ascii() {
        for (given, want) in [
            (
                "<20261130.1-1-a@example.org>",
                Some("20261130.1-1-a@example.org"),
            ),
            ("  <a@b>  (comment)", Some("a@b")),
            ("a@b", Some("a@b")),
            // A folded id loses its folding, not its text.
            (
                "<a@b\r\n Bcc: victim@evil.org>",
                Some("a@bBcc:victim@evil.org"),
            ),
            ("<a\tb@c>", Some("ab@c")),
            ("<x'$(id)'@evil>", Some("x'$(id)'@evil")),
            ("<a\u{0}b@c>", None),
            ("<a\u{1b}[31m@c>", None),
            ("<a\u{7f}@c>", None),
            ("<ü@x>", None),
            ("<a<b@c>", None),
            ("<>", None),
            ("   ", None),
        ] {
            assert_eq!(clean_id(given).as_deref(), want, "{given:?}");
        }
    }

    /// Folded and CR/LF-laden threading headers give ids without
    /// whitespace; an id with a control character gives none.
    #[test]
    fn threading_headers_cannot_carry_newlines() {
        let raw = "Message-ID: <a@b\r\n Bcc: victim@evil.org>\r\nIn-Reply-To: <p@x\r\n X-Evil: 1>\r\nReferences: <r@x>\r\n <q\u{1}@x>\r\n <p@x>\r\nFrom: A <a@x>\r\nSubject: [PATCH] t\r\n\r\nbody\r\n";
        let m = parse_mail(raw.as_bytes()).unwrap();
        for id in std::iter::once(&m.message_id)
            .chain(&m.in_reply_to)
            .chain(&m.references)
        {
            assert!(id.chars().all(|c| c.is_ascii_graphic()), "{id:?}");
        }
        assert_eq!(m.message_id, "a@bBcc:victim@evil.org");
    }

    #[test]
    fn in_body_from_lines() {
        for (body, want) in [
            ("From: A <a@x>\n\ntext", Some("A <a@x>")),
            ("\n\nFrom: a@x\n", Some("a@x")),
            ("text\nFrom: A <a@x>\n", None),
            ("From: nobody\n", None),
            ("", None),
        ] {
            assert_eq!(in_body_from(body).as_deref(), want, "{body:?}");
        }
    }

    #[test]
    fn encodings_and_threading_headers() {
        let raw = "Message-ID: <b@x>\r\nIn-Reply-To: <a@x>\r\nReferences: <r@x>\r\n <a@x>\r\nFrom: =?gb2312?B?1dTQoce/?= <z@jd.com>\r\nSubject: [PATCH v2\r\n 1/2] mm: folded\r\nContent-Type: text/plain; charset=iso-8859-1\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\nFrom: Michal Koutn=FD <m@suse.com>\r\n\r\nline=3D1\r\n---\r\ndiff --git a/x b/x\r\n";
        let m = parse_mail(raw.as_bytes()).unwrap();
        assert_eq!(m.subject, "[PATCH v2 1/2] mm: folded");
        assert_eq!(m.message_id, "b@x");
        assert_eq!(m.in_reply_to.as_deref(), Some("a@x"));
        assert_eq!(m.references, ["r@x", "a@x"]);
        assert_eq!(m.from, "赵小强 <z@jd.com>");
        assert_eq!(m.body_from.as_deref(), Some("Michal Koutný <m@suse.com>"));
        assert!(m.body.contains("line=1\n"));
        assert!(m.has_diff());
        // A one-word name (赵小强) is no key; two words are.
        assert_eq!(
            m.author_addresses(),
            ["z@jd.com", "m@suse.com", "name:michal koutný"]
        );
    }
}
