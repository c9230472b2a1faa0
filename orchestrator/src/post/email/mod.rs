//! Email: the plain-text report as a reply on the patch thread, in the
//! style of the 0-day bot: `Re: <cover subject>`, In-Reply-To the cover
//! letter (or the first patch), the References chain, a fresh Message-ID,
//! `Auto-Submitted: auto-generated` (RFC 3834: no vacation replies).
//!
//! Who gets it follows the verdict ([`audience`]), as the bots
//! maintainers accept do it: only a FAIL goes to the thread (To the
//! author, Cc the mailing lists the series went to, capped: see
//! [`recipients`]); a PASS,
//! INCONCLUSIVE or NO VERDICT stays in the report and the patchwork check,
//! and goes to the author alone when the operator opts in.
//!
//! The message is built once, as bytes: a dry run prints exactly those
//! bytes and the SMTP envelope, `--write` stores them as .eml or mbox for
//! `git send-email` or a mail client, and `--send` hands the same bytes to
//! an SMTP server (STARTTLS by default, lettre).

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use lettre::message::header::ContentType;
use lettre::message::{Body, Mailbox, Mailboxes};
use lettre::{Address, Message};

use crate::analysis::Status;
use crate::series::Series;

pub mod recipients;
mod smtp;
pub use recipients::{LeftOut, LIST_DOMAINS, MAX_RECIPIENTS};
pub use smtp::{Smtp, SmtpOptions, SmtpTls};

#[derive(Debug, thiserror::Error)]
pub enum EmailError {
    #[error("--from: missing (who the report comes from, e.g. --from 'mmci <mmci@example.org>'; or $MMCI_EMAIL_FROM)")]
    NoFrom,
    #[error("{option} `{given}`: not an email address")]
    BadAddress { option: String, given: String },
    #[error("the series has no cover letter and no patch with a Message-ID: nothing to reply to")]
    NoThread,
    #[error("no recipients: the thread has none and neither --to nor --cc was given")]
    NoRecipients,
    #[error("building the message")]
    Build(#[source] lettre::error::Error),
    #[error("--send needs --smtp HOST[:PORT]")]
    NoSmtp,
    #[error("--smtp {0}: expected HOST or HOST:PORT")]
    BadSmtp(String),
    #[error("--smtp-ca {path}: cannot read a PEM certificate")]
    Ca {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("--smtp-ca {path}: {message}")]
    BadCa { path: PathBuf, message: String },
    #[error("--smtp-user needs a password: set ${0} or --smtp-password-file")]
    NoPassword(String),
    #[error("--smtp-password-file {path}: cannot read")]
    PasswordFile {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("--write {path}: cannot write")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("SMTP {server}: {message}")]
    Smtp { server: String, message: String },
    #[error("--message-id {given}: the body's `| Closes:` names <{body}>: render the report with the same --message-id (or leave it out here)")]
    MessageIdMismatch { given: String, body: String },
}

impl EmailError {
    /// The SMTP server refused or could not be reached (exit 9).
    pub fn is_remote(&self) -> bool {
        matches!(self, EmailError::Smtp { .. })
    }
}

/// Who the reply goes to besides --to and --cc.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Audience {
    /// To the author, Cc the thread's mailing lists: a FAIL.
    #[default]
    Thread,
    /// To the author alone (`--to-author`): a verdict that is not a FAIL.
    Author,
    /// Nobody of the thread: only --to and --cc.
    Given,
}

/// Who the report of a verdict goes to. Only a FAIL (a regression, a new
/// splat, a contradicted claim, a failed expectation, a build or boot
/// failure) is mailed to the thread; any other verdict goes to the author
/// alone with `to_author`, else to nobody of the thread. `only_given`
/// (--only-given-recipients) leaves the thread out whatever the verdict.
pub fn audience(status: Status, to_author: bool, only_given: bool) -> Audience {
    match (only_given, status) {
        (true, _) => Audience::Given,
        (false, Status::Fail) => Audience::Thread,
        (false, _) if to_author => Audience::Author,
        (false, _) => Audience::Given,
    }
}

/// Whether the reply goes to nobody: a verdict that is not mailed to the
/// thread, and no --to, --cc or --to-author.
pub fn addressed_to_nobody(opts: &EmailOptions) -> bool {
    opts.audience == Audience::Given && opts.to.is_empty() && opts.cc.is_empty()
}

/// What `mmci post email` says instead of a message when the verdict is
/// not mailed: why, where it is instead, and which options change it.
pub fn not_mailed(status: Status) -> String {
    format!(
        "# not sent: the verdict is {}, and only a FAIL is mailed to the thread.\n\
         # The verdict is in the report and the patchwork check (mmci post patchwork).\n\
         # --to-author sends it to the series' author alone; --to/--cc to whom you name.\n",
        status.name()
    )
}

/// The Message-ID to send under: --message-id, else the one the body's
/// own `| Closes:` names (`mmci report` chose it), so that the link in
/// the body is the message's own. The two must agree.
pub fn message_id_of(given: Option<&str>, body: &str) -> Result<Option<String>, EmailError> {
    let strip = |m: &str| m.trim().trim_matches(|c| c == '<' || c == '>').to_string();
    let named = crate::report::email::closes_id(body);
    match (given.map(strip), named) {
        (Some(g), Some(b)) if g != b => Err(EmailError::MessageIdMismatch { given: g, body: b }),
        (Some(g), _) => Ok(Some(g)),
        (None, b) => Ok(b),
    }
}

/// `Auto-Submitted: auto-generated` (RFC 3834): the message comes from a
/// program, so auto-responders (vacation replies) keep quiet.
#[derive(Clone)]
struct AutoSubmitted;

impl lettre::message::header::Header for AutoSubmitted {
    fn name() -> lettre::message::header::HeaderName {
        lettre::message::header::HeaderName::new_from_ascii_str("Auto-Submitted")
    }

    fn parse(_: &str) -> Result<Self, Box<dyn std::error::Error + Send + Sync>> {
        Ok(AutoSubmitted)
    }

    fn display(&self) -> lettre::message::header::HeaderValue {
        lettre::message::header::HeaderValue::new(Self::name(), "auto-generated".into())
    }
}

/// The sender and any recipients beyond the thread's, from the command
/// line or the environment.
#[derive(Clone, Debug, Default)]
pub struct EmailOptions {
    pub from: Option<String>,
    pub to: Vec<String>,
    pub cc: Vec<String>,
    /// Hosts of mailing lists beyond [`LIST_DOMAINS`] (`--list-domain`).
    pub list_domains: Vec<String>,
    /// Which of the thread's author and lists get it (see [`audience`]).
    pub audience: Audience,
    /// Message-ID to use instead of a fresh one (reproducible output).
    pub message_id: Option<String>,
    /// Date (Unix seconds) instead of now.
    pub date: Option<u64>,
}

/// The threading of the reply.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReplyTo {
    pub subject: String,
    /// Message-id of the mail replied to, without <>.
    pub in_reply_to: String,
    /// Its References and then its own id, oldest first.
    pub references: Vec<String>,
    /// The author of the series.
    pub author: String,
    /// The lists and people the series went to.
    pub to: Vec<String>,
    pub cc: Vec<String>,
}

/// Replies to the cover letter, or to the first patch without one.
pub fn reply_to(series: &Series) -> Result<ReplyTo, EmailError> {
    let (subject, id, refs, author, to, cc) = match &series.cover {
        Some(c) if !c.message_id.is_empty() => (
            &c.subject,
            &c.message_id,
            &c.references,
            &c.from,
            &c.to,
            &c.cc,
        ),
        _ => {
            let p = series
                .patches
                .first()
                .filter(|p| !p.message_id.is_empty())
                .ok_or(EmailError::NoThread)?;
            (
                &p.subject,
                &p.message_id,
                &p.references,
                &p.from,
                &p.to,
                &p.cc,
            )
        }
    };
    Ok(reply_to_mail(subject, id, refs, author, to, cc))
}

/// The reply to one mail of the thread, from its headers as mail-parser
/// decoded them (the sender chose every byte): the subject loses its
/// control characters, message-ids their white space (a folded id would
/// break In-Reply-To and References).
pub fn reply_to_mail(
    subject: &str,
    message_id: &str,
    references: &[String],
    author: &str,
    to: &[String],
    cc: &[String],
) -> ReplyTo {
    let subject = crate::report::untrusted::line(subject);
    let subject = if subject.to_ascii_lowercase().starts_with("re:") {
        subject
    } else {
        format!("Re: {subject}")
    };
    let id_of = |s: &str| -> String {
        s.chars()
            .filter(|c| !c.is_whitespace() && !c.is_control())
            .collect()
    };
    let id = id_of(message_id);
    let mut refs: Vec<String> = references
        .iter()
        .map(|r| id_of(r))
        .filter(|r| !r.is_empty() && *r != id)
        .collect();
    refs.push(id.clone());
    ReplyTo {
        subject,
        in_reply_to: id,
        references: refs,
        author: author.to_string(),
        to: to.to_vec(),
        cc: cc.to_vec(),
    }
}

/// A message ready to go: its envelope and its exact bytes.
#[derive(Clone, Debug)]
pub struct Outgoing {
    pub message_id: String,
    pub envelope_from: String,
    pub envelope_to: Vec<String>,
    pub bytes: Vec<u8>,
    /// What of the thread's To and Cc was not addressed, and why.
    pub left_out: LeftOut,
    message: Message,
}

/// `Name <addr>` or a bare address, as a mailbox. Split by hand: display
/// names in the wild (`A. U. Thor`) are not always RFC 5322 phrases.
///
/// A series' From is the author's to choose, and mail-parser decodes an
/// RFC 2047 name with any bytes in it (`=?utf-8?q?Evil=0D=0ABcc:...?=`):
/// the name loses its control characters, and a name lettre still cannot
/// write as a header is dropped (the address alone is enough to reply).
pub fn mailbox(option: &str, given: &str) -> Result<Mailbox, EmailError> {
    let bad = || EmailError::BadAddress {
        option: option.to_string(),
        given: given.to_string(),
    };
    let given_t = given.trim();
    let (name, addr) = match given_t.rfind('<') {
        Some(i) if given_t.ends_with('>') => {
            let name = crate::report::untrusted::line(given_t[..i].trim().trim_matches('"'));
            (
                (!name.is_empty()).then_some(name),
                &given_t[i + 1..given_t.len() - 1],
            )
        }
        _ => (None, given_t),
    };
    let addr: Address = addr.trim().parse().map_err(|_| bad())?;
    let with_name = Mailbox::new(name, addr.clone());
    if writes(&with_name) {
        Ok(with_name)
    } else {
        Ok(Mailbox::new(None, addr))
    }
}

/// Whether lettre can write the mailbox: its Display fails on a name it
/// cannot quote, and `Message::formatted` turns that into a panic.
fn writes(m: &Mailbox) -> bool {
    use std::fmt::Write;
    write!(String::new(), "{m}").is_ok()
}

fn domain_of(m: &Mailbox) -> String {
    m.email.domain().to_string()
}

/// A fresh Message-ID: time, the series' hash and randomness, at the
/// sender's domain.
pub fn fresh_message_id(series_hash: &str, from: &Mailbox, unix: u64) -> String {
    let mut rnd = [0u8; 6];
    let _ = std::fs::File::open("/dev/urandom")
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut rnd));
    let hash: String = series_hash
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .take(12)
        .collect();
    format!(
        "mmci-{unix}-{hash}-{}@{}",
        hex::encode(rnd),
        domain_of(from)
    )
}

/// Builds the reply, to [`recipients::recipients`]: To the author (and
/// --to) unless the audience is --to and --cc only; Cc --cc and, for
/// [`Audience::Thread`], the mailing lists of the thread's To and Cc, at
/// most [`MAX_RECIPIENTS`] in all.
pub fn build(series: &Series, body: &str, opts: &EmailOptions) -> Result<Outgoing, EmailError> {
    build_reply(&reply_to(series)?, &series.hash, body, opts)
}

/// [`build`] for a reply already worked out (the fuzz target's way in).
pub fn build_reply(
    reply: &ReplyTo,
    series_hash: &str,
    body: &str,
    opts: &EmailOptions,
) -> Result<Outgoing, EmailError> {
    let from_text = opts.from.as_deref().ok_or(EmailError::NoFrom)?;
    let from = mailbox("--from", from_text)?;
    let recipients::Recipients {
        mut to,
        mut cc,
        left_out,
    } = recipients::recipients(reply, opts, &from)?;
    if to.is_empty() && cc.is_empty() {
        return Err(EmailError::NoRecipients);
    }
    if to.is_empty() {
        to.push(cc.remove(0));
    }
    let unix = opts.date.unwrap_or_else(|| {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs())
    });
    let message_id = opts
        .message_id
        .as_deref()
        .map(|m| m.trim_matches(|c| c == '<' || c == '>').to_string())
        .unwrap_or_else(|| fresh_message_id(series_hash, &from, unix));
    let refs = reply
        .references
        .iter()
        .map(|r| format!("<{r}>"))
        .collect::<Vec<_>>()
        .join(" ");
    let mut b = Message::builder()
        .from(from.clone())
        .subject(reply.subject.clone())
        .date(UNIX_EPOCH + Duration::from_secs(unix))
        .message_id(Some(format!("<{message_id}>")))
        .in_reply_to(format!("<{}>", reply.in_reply_to))
        .references(refs)
        .header(ContentType::TEXT_PLAIN)
        .header(AutoSubmitted)
        .user_agent(format!("mmci {}", env!("CARGO_PKG_VERSION")));
    b = b.mailbox(lettre::message::header::To::from(Mailboxes::from_iter(to)));
    if !cc.is_empty() {
        b = b.mailbox(lettre::message::header::Cc::from(Mailboxes::from_iter(cc)));
    }
    let text = if body.ends_with('\n') {
        body.to_string()
    } else {
        format!("{body}\n")
    };
    // Plain 7/8-bit text, as the lists want it and git send-email sends
    // it: no quoted-printable or base64 unless a line is too long for SMTP
    // (998 octets, RFC 5322). lettre would quote a line over 75 columns,
    // such as the `| Closes:` URL or a console line kept whole.
    let encoding = if text.is_ascii() {
        lettre::message::header::ContentTransferEncoding::SevenBit
    } else {
        lettre::message::header::ContentTransferEncoding::EightBit
    };
    let plain = !text.contains(['\0', '\r']) && text.lines().all(|l| l.len() <= 998);
    let body = if plain {
        Body::dangerous_pre_encoded(text.replace('\n', "\r\n").into_bytes(), encoding)
    } else {
        Body::new_with_encoding(text.clone(), encoding).unwrap_or_else(|_| Body::new(text))
    };
    let message = b.body(body).map_err(EmailError::Build)?;
    let envelope = message.envelope();
    Ok(Outgoing {
        message_id,
        envelope_from: envelope.from().map(|a| a.to_string()).unwrap_or_default(),
        envelope_to: envelope.to().iter().map(|a| a.to_string()).collect(),
        bytes: message.formatted(),
        left_out,
        message,
    })
}

/// What a dry run prints: the envelope, what of the thread it leaves out,
/// then the message as it would be sent.
pub fn render_dry_run(o: &Outgoing) -> String {
    format!(
        "# dry run: nothing is sent (--send sends, --output FILE stores it)\n# MAIL FROM:<{}>\n{}{}# DATA:\n{}",
        o.envelope_from,
        o.envelope_to
            .iter()
            .map(|t| format!("# RCPT TO:<{t}>\n"))
            .collect::<String>(),
        o.left_out.text(),
        String::from_utf8_lossy(&o.bytes)
    )
}

/// Writes the message as an .eml file, or appends it to an mbox (a path
/// ending in .mbox) for `git send-email` or a mail client.
pub fn write(o: &Outgoing, path: &Path) -> Result<(), EmailError> {
    use std::io::Write;
    let err = |source| EmailError::Write {
        path: path.to_path_buf(),
        source,
    };
    let text = String::from_utf8_lossy(&o.bytes).replace("\r\n", "\n");
    if path.extension().is_some_and(|e| e == "mbox") {
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(err)?;
        let mut out = format!("From mmci@localhost {}\n", mbox_date(o));
        for line in text.lines() {
            // mboxrd: quote From lines (and already quoted ones).
            if line.trim_start_matches('>').starts_with("From ") {
                out.push('>');
            }
            out.push_str(line);
            out.push('\n');
        }
        out.push('\n');
        f.write_all(out.as_bytes()).map_err(err)
    } else {
        crate::host::fs::write_atomic(path, text.as_bytes()).map_err(err)
    }
}

fn mbox_date(_o: &Outgoing) -> &'static str {
    // The separator line's date is not read by git am or mail clients;
    // git format-patch writes this fixed one too.
    "Mon Sep 17 00:00:00 2001"
}

/// Civil UTC date and time of a Unix time (Howard Hinnant's algorithm).
pub fn civil(secs: u64) -> (i64, i64, i64, u64, u64, u64) {
    let days = (secs / 86400) as i64;
    let rem = secs % 86400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d, rem / 3600, rem % 3600 / 60, rem % 60)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bundled() -> Series {
        let path =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../kernels/series/mglru-isolation-v1.mbox");
        let mails = crate::series::mails_from_mbox(&std::fs::read(path).unwrap());
        crate::series::assemble(&mails, "bundled").unwrap()
    }

    #[test]
    fn reply_threads_on_the_cover_letter() {
        let s = bundled();
        let r = reply_to(&s).unwrap();
        assert_eq!(
            r.subject,
            "Re: [PATCH v1 0/2] mm/vmscan: account and throttle MGLRU isolation"
        );
        assert_eq!(r.in_reply_to, "cover.1796033954.git.mmci-dev@example.org");
        assert_eq!(r.references, vec![r.in_reply_to.clone()]);
        let mut no_cover = s.clone();
        no_cover.cover = None;
        no_cover.patches[0].references = vec!["older@x".into()];
        let r = reply_to(&no_cover).unwrap();
        assert_eq!(r.in_reply_to, s.patches[0].message_id);
        assert_eq!(r.references, ["older@x".to_string(), r.in_reply_to.clone()]);
        assert!(r.subject.starts_with("Re: [PATCH v1 1/2] "));
    }

    #[test]
    fn recipients_and_headers() {
        let s = bundled();
        let opts = EmailOptions {
            from: Some("mmci bot <bot@ci.example.org>".into()),
            cc: vec!["linux-mm@kvack.org".into(), "extra@example.org".into()],
            message_id: Some("fixed@ci.example.org".into()),
            date: Some(1_796_040_000),
            ..Default::default()
        };
        let o = build(&s, "report body\nline 2", &opts).unwrap();
        let text = String::from_utf8(o.bytes.clone()).unwrap();
        let msg = mail_parser::MessageParser::default()
            .parse(text.as_bytes())
            .unwrap();
        assert_eq!(
            msg.subject(),
            Some("Re: [PATCH v1 0/2] mm/vmscan: account and throttle MGLRU isolation")
        );
        assert_eq!(msg.message_id(), Some("fixed@ci.example.org"));
        assert_eq!(
            msg.in_reply_to().as_text(),
            Some("cover.1796033954.git.mmci-dev@example.org")
        );
        let to: Vec<_> = msg
            .to()
            .unwrap()
            .iter()
            .filter_map(|a| a.address())
            .collect();
        assert_eq!(to, ["mmci-dev@example.org"]);
        let cc: Vec<_> = msg
            .cc()
            .unwrap()
            .iter()
            .filter_map(|a| a.address())
            .collect();
        // Each address once, in the order given then the thread's lists
        // (a person of the thread is left out, and said).
        assert_eq!(
            cc,
            [
                "linux-mm@kvack.org",
                "extra@example.org",
                "linux-kernel@vger.kernel.org"
            ]
        );
        assert_eq!(o.left_out.not_lists, ["akpm@linux-foundation.org"]);
        // CRLF on the wire, as SMTP wants.
        assert_eq!(msg.body_text(0).unwrap(), "report body\r\nline 2\r\n");
        assert!(text.contains("Content-Transfer-Encoding: 7bit"));
        assert_eq!(o.envelope_from, "bot@ci.example.org");
        assert_eq!(o.envelope_to.len(), 4);
        assert!(
            text.contains("\r\nAuto-Submitted: auto-generated\r\n"),
            "{text}"
        );
        let dry = render_dry_run(&o);
        assert!(dry.starts_with("# dry run: nothing is sent"));
        assert!(dry.ends_with(&text));
    }

    #[test]
    fn only_a_fail_goes_to_the_thread() {
        use Status::*;
        for (status, to_author, only_given, want) in [
            (Fail, false, false, Audience::Thread),
            (Fail, true, false, Audience::Thread),
            (Fail, false, true, Audience::Given),
            (Pass, false, false, Audience::Given),
            (Pass, true, false, Audience::Author),
            (Inconclusive, true, false, Audience::Author),
            (NoVerdict, false, false, Audience::Given),
            (NoVerdict, true, true, Audience::Given),
        ] {
            assert_eq!(
                audience(status, to_author, only_given),
                want,
                "{status:?} to_author={to_author} only_given={only_given}"
            );
        }
        let s = bundled();
        let mut opts = EmailOptions {
            from: Some("bot@ci.example.org".into()),
            audience: Audience::Author,
            ..Default::default()
        };
        let o = build(&s, "body", &opts).unwrap();
        assert_eq!(o.envelope_to, ["mmci-dev@example.org"]);
        let text = String::from_utf8(o.bytes).unwrap();
        assert!(!text.contains("\r\nCc:"), "{text}");
        assert!(!addressed_to_nobody(&opts));
        opts.audience = Audience::Given;
        assert!(addressed_to_nobody(&opts));
        assert!(not_mailed(Pass).starts_with("# not sent: the verdict is PASS"));
        opts.cc = vec!["me@example.org".into()];
        assert!(!addressed_to_nobody(&opts));
        let o = build(&s, "body", &opts).unwrap();
        assert_eq!(o.envelope_to, ["me@example.org"]);
    }

    #[test]
    fn long_lines_stay_plain_text() {
        let s = bundled();
        let opts = EmailOptions {
            from: Some("a@b.org".into()),
            ..Default::default()
        };
        let long = format!(
            "| Closes: https://lore.kernel.org/r/{}@x.org",
            "m".repeat(60)
        );
        let o = build(&s, &format!("a=b\n{long}\n"), &opts).unwrap();
        let text = String::from_utf8(o.bytes).unwrap();
        assert!(
            text.contains("Content-Transfer-Encoding: 7bit\r\n"),
            "{text}"
        );
        assert!(
            text.ends_with(&format!("\r\n\r\na=b\r\n{long}\r\n")),
            "{text}"
        );
        let o = build(&s, &format!("{}\n", "x".repeat(1200)), &opts).unwrap();
        let text = String::from_utf8(o.bytes).unwrap();
        assert!(
            text.contains("Content-Transfer-Encoding: quoted-printable"),
            "{text}"
        );
    }

    #[test]
    fn the_message_id_is_the_one_the_body_closes() {
        let body =
            "x\n| Reported-by: mmci <m@x.org>\n| Closes: https://lore.kernel.org/r/a1@x.org\n";
        assert_eq!(
            message_id_of(None, body).unwrap().as_deref(),
            Some("a1@x.org")
        );
        assert_eq!(
            message_id_of(Some("<a1@x.org>"), body).unwrap().as_deref(),
            Some("a1@x.org")
        );
        assert!(matches!(
            message_id_of(Some("b2@x.org"), body),
            Err(EmailError::MessageIdMismatch { .. })
        ));
        // A Closes: line that is not right under Reported-by: is not ours.
        let quoted = "| Closes: https://lore.kernel.org/r/evil@x.org\n";
        assert_eq!(message_id_of(None, quoted).unwrap(), None);
        assert_eq!(
            message_id_of(Some("c@x"), quoted).unwrap().as_deref(),
            Some("c@x")
        );
    }

    #[test]
    fn hostile_display_names_lose_their_controls_or_go() {
        for (given, want) in [
            (
                "Evil\r\nBcc: x@evil.org <a@b.org>",
                "\"Evil  Bcc: x@evil.org\" <a@b.org>",
            ),
            (
                "\"Evil\nBcc: v@evil.org\" <a@b.org>",
                "\"Evil Bcc: v@evil.org\" <a@b.org>",
            ),
            ("Nul\0Name <a@b.org>", "NulName <a@b.org>"),
            ("Esc\u{1b}[2J <a@b.org>", "Esc <a@b.org>"),
            ("\r\n <a@b.org>", "a@b.org"),
            ("A. U. Thor <a@b.org>", "\"A. U. Thor\" <a@b.org>"),
            ("a@b.org", "a@b.org"),
        ] {
            let m = mailbox("x", given).unwrap();
            assert_eq!(m.to_string(), want, "{given:?}");
            // The header lettre writes, which panicked on a CR/LF name.
            let to = lettre::message::header::To::from(Mailboxes::from(m));
            let _ = lettre::message::header::Header::display(&to);
        }
        assert!(mailbox("x", "Evil <not an address>").is_err());
    }

    #[test]
    fn folded_message_ids_are_joined() {
        let r = reply_to_mail(
            "[PATCH] x\r\nBcc: v@evil.org",
            "a@b\n Bcc: victim@evil.org",
            &["old@x\n ".into(), "a@b\n Bcc: victim@evil.org".into()],
            "A <a@b.org>",
            &[],
            &[],
        );
        assert_eq!(r.subject, "Re: [PATCH] x  Bcc: v@evil.org");
        assert_eq!(r.in_reply_to, "a@bBcc:victim@evil.org");
        assert_eq!(r.references, ["old@x", "a@bBcc:victim@evil.org"]);
    }

    #[test]
    fn bad_input_is_named() {
        let s = bundled();
        assert!(matches!(
            build(&s, "x", &EmailOptions::default()),
            Err(EmailError::NoFrom)
        ));
        let e = build(
            &s,
            "x",
            &EmailOptions {
                from: Some("not an address".into()),
                ..Default::default()
            },
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "--from `not an address`: not an email address"
        );
        let e = build(
            &s,
            "x",
            &EmailOptions {
                from: Some("a@b.org".into()),
                audience: Audience::Given,
                ..Default::default()
            },
        )
        .unwrap_err();
        assert!(matches!(e, EmailError::NoRecipients));
        let o = SmtpOptions {
            server: "mail:xx".into(),
            tls: SmtpTls::Starttls,
            ca: None,
            user: None,
            password_env: String::new(),
            password_file: None,
            timeout: Duration::from_secs(1),
        };
        assert!(matches!(Smtp::new(&o), Err(EmailError::BadSmtp(_))));
    }

    #[test]
    fn mbox_output_quotes_from_lines() {
        let s = bundled();
        let o = build(
            &s,
            "From the start\n>From quoted\nbody",
            &EmailOptions {
                from: Some("a@b.org".into()),
                ..Default::default()
            },
        )
        .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("out.mbox");
        write(&o, &p).unwrap();
        write(&o, &p).unwrap();
        let text = std::fs::read_to_string(&p).unwrap();
        assert_eq!(text.matches("\nFrom mmci@localhost ").count() + 1, 2);
        assert!(text.contains("\n>From the start\n>>From quoted\n"));
        let mails = crate::series::mails_from_mbox(text.as_bytes());
        assert_eq!(mails.len(), 2);
        assert_eq!(mails[0].message_id, o.message_id);
    }
}
