//! The host mmci runs on: child processes that cannot outlive it
//! (`process`), where its caches live (`paths`), files written atomically
//! (`fs`), the tools on PATH (`tools`), and errors as one line.

pub mod fs;
pub mod paths;
pub mod process;
pub mod tools;

/// An error and its causes on one line: `a: b: c`.
pub fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}
