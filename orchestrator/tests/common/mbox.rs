//! One-patch series written by tests against the bundled tree's own files:
//! the mail as `git format-patch` writes it (diffstat, `-- ` signature),
//! from the parts that differ between tests. The body is what the series
//! hash (and so the kernel cache key) is made of: the same parts give the
//! same kernel.

/// The parts of a one-patch mail.
pub struct OnePatch<'a> {
    /// "Name <address>": From: and Signed-off-by:.
    pub author: &'a str,
    /// The Date: header.
    pub date: &'a str,
    /// The subject after `[PATCH] `.
    pub title: &'a str,
    /// Without the angle brackets.
    pub message_id: &'a str,
    /// The commit message before the sign-off.
    pub message: &'a str,
    /// The one file the patch changes.
    pub file: &'a str,
    /// The hunk: its `@@` line, then context and changed lines, each
    /// ending in a newline.
    pub hunk: &'a str,
}

impl OnePatch<'_> {
    /// The mbox text, From_ line first.
    pub fn mbox(&self) -> String {
        let count = |c: char| {
            self.hunk
                .lines()
                .skip(1)
                .filter(|l| l.starts_with(c))
                .count()
        };
        let (ins, del) = (count('+'), count('-'));
        let plural = |n: usize, one: &str| {
            if n == 1 {
                one.to_string()
            } else {
                format!("{one}s")
            }
        };
        let mut summary = format!("1 file changed, {ins} {}(+)", plural(ins, "insertion"));
        if del > 0 {
            summary.push_str(&format!(", {del} {}(-)", plural(del, "deletion")));
        }
        let bar = format!("{}{}", "+".repeat(ins), "-".repeat(del));
        format!(
            "From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001\n\
From: {author}\n\
Date: {date}\n\
Subject: [PATCH] {title}\n\
Message-ID: <{id}>\n\
\n\
{message}\n\
\n\
Signed-off-by: {author}\n\
---\n\
 {file} | {n} {bar}\n\
 {summary}\n\
\n\
diff --git a/{file} b/{file}\n\
--- a/{file}\n\
+++ b/{file}\n\
{hunk}\
-- \n\
2.39.5\n\n",
            author = self.author,
            date = self.date,
            title = self.title,
            id = self.message_id,
            message = self.message,
            file = self.file,
            n = ins + del,
            hunk = self.hunk,
        )
    }
}
