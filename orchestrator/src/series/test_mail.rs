//! Mails for the series modules' table tests (test builds only): a patch
//! (a diff) or a cover or reply (text), threaded by References, as a list
//! archive would hold them.

use super::Mail;

/// A patch's body: a message and a diff of mm/.
pub const DIFF: &str = "msg\n---\ndiff --git a/mm/vmscan.c b/mm/vmscan.c\n";

/// A mail `id` of `from`, In-Reply-To the last of `refs` (References: all
/// of them): a cover letter (` 0/`) or a reply (`Re:`) is text, any other
/// subject a patch.
pub fn mail(subject: &str, id: &str, from: &str, refs: &[&str]) -> Mail {
    let body = if subject.starts_with("Re:") || subject.contains(" 0/") {
        "text"
    } else {
        DIFF
    };
    Mail {
        subject: subject.into(),
        message_id: id.into(),
        from: from.into(),
        body: body.into(),
        raw: format!("Subject: {subject}\n\n{body}").into_bytes(),
        in_reply_to: refs.last().map(|r| r.to_string()),
        references: refs.iter().map(|r| r.to_string()).collect(),
        ..Mail::default()
    }
}
