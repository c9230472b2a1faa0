//! `mmci completions SHELL` (clap_complete) and `mmci man` (clap_mangen):
//! both generated from the same clap definition as `--help`, so they
//! cannot drift from it. ./mmci-setup installs them.

use std::path::{Path, PathBuf};

use clap::CommandFactory;

use crate::error::{exit, AppError};

/// Writes the completion script for `shell` to standard output.
pub fn completions(shell: clap_complete::Shell) -> Result<i32, AppError> {
    let mut cmd = super::Cli::command();
    clap_complete::generate(shell, &mut cmd, "mmci", &mut std::io::stdout());
    Ok(exit::OK)
}

/// `mmci man`: the page of mmci(1) on standard output, or with `dir` one
/// page per command (mmci.1, mmci-run.1, mmci-post-email.1, ...) there.
pub fn man(dir: Option<&Path>) -> Result<i32, AppError> {
    let cmd = super::Cli::command();
    let io = |what: &Path, e: std::io::Error| {
        AppError::BadOption(format!("mmci man --dir {}: {e}", what.display()))
    };
    match dir {
        None => clap_mangen::Man::new(cmd)
            .render(&mut std::io::stdout())
            .map_err(|e| io(Path::new("-"), e))?,
        Some(d) => {
            std::fs::create_dir_all(d).map_err(|e| io(d, e))?;
            clap_mangen::generate_to(cmd, d).map_err(|e| io(d, e))?;
            let n = std::fs::read_dir(d).map_err(|e| io(d, e))?.count();
            eprintln!("mmci: {n} man pages in {}", d.display());
        }
    }
    Ok(exit::OK)
}

/// The page files `mmci man --dir` writes for `cmd`: one per command
/// that is not hidden.
pub fn page_names(cmd: &clap::Command) -> Vec<PathBuf> {
    fn walk(cmd: &clap::Command, prefix: &str, out: &mut Vec<PathBuf>) {
        let name = if prefix.is_empty() {
            cmd.get_name().to_string()
        } else {
            format!("{prefix}-{}", cmd.get_name())
        };
        out.push(PathBuf::from(format!("{name}.1")));
        for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
            walk(sub, &name, out);
        }
    }
    let mut out = Vec::new();
    walk(cmd, "", &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn man_pages_cover_every_visible_command() {
        let t = tempfile::tempdir().unwrap();
        man(Some(t.path())).unwrap();
        let cmd = crate::cli::Cli::command();
        for page in page_names(&cmd) {
            let text = std::fs::read_to_string(t.path().join(&page))
                .unwrap_or_else(|e| panic!("{}: {e}", page.display()));
            assert!(text.contains(".TH"), "{} is a man page", page.display());
        }
        assert!(t.path().join("mmci-run.1").is_file());
    }
}
