//! The reply `mmci post email` builds from a series' mail: its From, To,
//! Cc, Subject, Message-ID and References as mail-parser decodes them
//! (RFC 2047 words can carry any byte), through `mailbox()` and lettre's
//! message builder. Nothing may panic, and the message must keep one
//! header per line: no header a sender smuggled in.
#![no_main]
use libfuzzer_sys::fuzz_target;
use mmci::series;
use mmci::post::email::{self, EmailOptions};

/// The headers `build_reply` writes.
const HEADERS: &[&str] = &[
    "From",
    "To",
    "Cc",
    "Subject",
    "Date",
    "Message-ID",
    "In-Reply-To",
    "References",
    "Content-Type",
    "Content-Transfer-Encoding",
    "User-Agent",
    "Auto-Submitted",
    "MIME-Version",
];

fuzz_target!(|data: &[u8]| {
    let opts = EmailOptions {
        from: Some("mmci <ci@example.org>".into()),
        message_id: Some("fixed@example.org".into()),
        date: Some(0),
        ..Default::default()
    };
    for m in series::mails_from_mbox(data).iter().take(4) {
        let reply = email::reply_to_mail(
            &m.subject,
            &m.message_id,
            &m.references,
            &m.from,
            &m.to,
            &m.cc,
        );
        let Ok(o) = email::build_reply(&reply, "0123456789ab", "report\n", &opts) else {
            continue;
        };
        let text = String::from_utf8_lossy(&o.bytes);
        let head = text.split("\r\n\r\n").next().unwrap_or_default();
        for line in head.split("\r\n") {
            assert!(!line.contains(['\r', '\n']), "bare CR/LF in {line:?}");
            if line.starts_with([' ', '\t']) {
                continue; // a folded continuation
            }
            let name = line.split(':').next().unwrap_or_default();
            assert!(HEADERS.contains(&name), "header {name:?} in\n{head}");
        }
        assert!(o.envelope_to.iter().all(|a| !a.contains(['\r', '\n', ' '])));
    }
    // The same text as a --to/--cc value or a thread address.
    if let Ok(s) = std::str::from_utf8(data) {
        for given in s.lines().take(4) {
            if let Ok(m) = email::mailbox("--to", given) {
                let _ = m.to_string();
            }
        }
    }
});
