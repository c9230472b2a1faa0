//! The host mmci runs on: its cores, RAM and name (`facts`), child processes that cannot outlive it
//! (`process`), where its caches live (`paths`), files written atomically
//! (`fs`), the tools on PATH (`tools`), the process's secrets and their
//! redaction (`secrets`), and errors as one line.

pub mod facts;
pub mod fs;
pub mod paths;
pub mod process;
pub mod secrets;
pub mod tools;

/// An error and its causes on one line: `a: b: c`, and what to do when the
/// cause is a full filesystem (the same whichever file it was).
pub fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut text = e.to_string();
    let mut full = is_full(e);
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        full |= is_full(s);
        source = s.source();
    }
    if full {
        text.push_str(FULL_HINT);
    }
    text
}

/// Appended to an error caused by ENOSPC or EDQUOT.
pub const FULL_HINT: &str = " (the filesystem is full: free space on it, then run the same command again; `mmci run` keeps every finished run and resumes with the rest)";

fn is_full(e: &(dyn std::error::Error + 'static)) -> bool {
    e.downcast_ref::<std::io::Error>()
        .and_then(std::io::Error::raw_os_error)
        .is_some_and(|n| n == libc::ENOSPC || n == libc::EDQUOT)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("run r1")]
    struct Outer(#[source] std::io::Error);

    #[test]
    fn chains_and_the_full_filesystem_hint() {
        let os = |n| std::io::Error::from_raw_os_error(n);
        let cases = [
            (libc::ENOSPC, true),
            (libc::EDQUOT, true),
            (libc::EROFS, false),
            (libc::EACCES, false),
        ];
        for (errno, hinted) in cases {
            let text = error_chain(&Outer(os(errno)));
            assert!(
                text.starts_with(&format!("run r1: {}", os(errno))),
                "{text}"
            );
            assert_eq!(text.ends_with(FULL_HINT), hinted, "{text}");
        }
    }
}
