//! Old spellings of options, kept for one release: each is a hidden
//! option beside its new spelling, folded into it here, before the
//! command runs, with one warning naming the new spelling. The one
//! vocabulary they give way to is in docs/commands.md ("One vocabulary").
//!
//! [`fold`] is pure: the parsed command in, the command as the new
//! spellings say it and the warnings out; the caller prints them.

use std::path::PathBuf;

use super::{Command, GitHubAccess, OldGitHubOptions};

/// The warning for an old spelling.
fn renamed(old: &str, new: &str) -> String {
    format!("{old} is deprecated and goes in the next release: use {new}")
}

impl OldGitHubOptions {
    fn fold_into(&mut self, new: &mut GitHubAccess, warnings: &mut Vec<String>) {
        if let Some(api) = self.api.take() {
            warnings.push(renamed("--api", "--github-api"));
            new.github_api = Some(api);
        }
        if let Some(var) = self.token_env.take() {
            warnings.push(renamed("--token-env", "--github-token-env"));
            new.github_token_env = var;
        }
        if let Some(file) = self.token_file.take() {
            warnings.push(renamed("--token-file", "--github-token-file"));
            new.github_token_file = Some(file);
        }
    }
}

/// The `--dry-run` of a command that now acts only with `--send`
/// (`post github`, `watch`): the old flag is a no-op with a warning, and
/// leaving out both says what changed (the same words sent before).
fn fold_dry_run(command: &str, dry_run: &mut bool, send: bool, warnings: &mut Vec<String>) {
    if std::mem::take(dry_run) {
        warnings.push(format!(
            "--dry-run is deprecated and goes in the next release: {command} is a dry run unless --send"
        ));
    } else if !send {
        warnings.push(format!(
            "{command}: a dry run, nothing is sent: add --send to act (before this release {command} acted without it)"
        ));
    }
}

/// A results dir given as a positional argument (`analyse DIR`,
/// `report DIR`): now `--results DIR`, as every command names it.
fn fold_results_dir(
    command: &str,
    positional: &mut Option<PathBuf>,
    results: &mut Option<PathBuf>,
    warnings: &mut Vec<String>,
) {
    if let Some(dir) = positional.take() {
        warnings.push(format!(
            "`{command} DIR` is deprecated and goes in the next release: use `{command} --results DIR`"
        ));
        *results = Some(dir);
    }
}

/// Folds every old spelling in `command` into its new one; the warnings
/// to print, one per old spelling used.
pub fn fold(command: &mut Command) -> Vec<String> {
    let mut w = vec![];
    match command {
        Command::Post { command } => match command {
            super::post::PostCommand::Github(a) => {
                a.old_github.fold_into(&mut a.github, &mut w);
                fold_dry_run("post github", &mut a.dry_run, a.send, &mut w);
            }
            super::post::PostCommand::Patchwork(a) => {
                if let Some(file) = a.token_file.take() {
                    w.push(renamed("--token-file", "--patchwork-token-file"));
                    a.patchwork_token_file = Some(file);
                }
            }
            super::post::PostCommand::Email(a) => {
                if let Some(file) = a.write.take() {
                    w.push(renamed("--write", "--output"));
                    a.output = Some(file);
                }
            }
        },
        Command::Watch(a) => {
            a.old_github.fold_into(&mut a.github, &mut w);
            fold_dry_run("watch", &mut a.dry_run, a.send, &mut w);
        }
        Command::Merge(a) => {
            if let Some(into) = a.into.take() {
                w.push(renamed("--into", "--results"));
                a.results = Some(into);
            }
        }
        Command::Analyse(a) => {
            // `analyse --json DIR`: the new flag, then the old positional
            // dir (clap gives the dir to --json's optional value).
            if a.results.is_none() && a.dir.is_none() {
                if let Some(Some(p)) = &a.json {
                    if p.is_dir() {
                        a.dir = Some(p.clone());
                        a.json = Some(None);
                    }
                }
            }
            fold_results_dir("analyse", &mut a.dir, &mut a.results, &mut w);
            match a.json.take() {
                Some(Some(file)) => {
                    w.push(format!(
                        "--json FILE is deprecated and goes in the next release: --json prints the JSON (with --output FILE: into FILE); this run writes {} and prints the table, as before",
                        file.display()
                    ));
                    a.json_and_table = Some(file);
                }
                flag => a.json = flag,
            }
        }
        Command::Report(a) => fold_results_dir("report", &mut a.dir, &mut a.results, &mut w),
        _ => {}
    }
    w
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::Cli;
    use clap::Parser;

    /// A command line folded: the command and its warnings.
    fn folded(args: &[&str]) -> (Command, Vec<String>) {
        let mut cli = Cli::try_parse_from(["mmci"].iter().chain(args))
            .unwrap_or_else(|e| panic!("{args:?}: {e}"));
        let w = fold(&mut cli.command);
        (cli.command, w)
    }

    fn github(c: &Command) -> (&GitHubAccess, bool) {
        match c {
            Command::Post {
                command: super::super::post::PostCommand::Github(a),
            } => (&a.github, a.send),
            Command::Watch(a) => (&a.github, a.send),
            _ => unreachable!(),
        }
    }

    /// Old and new spellings of the GitHub options: what they are read as
    /// (api, token variable, token file, send) and the words of each warning.
    #[test]
    fn old_github_spellings_are_read_as_the_new_ones_with_a_warning() {
        type Case<'a> = (
            &'a [&'a str],
            (Option<&'a str>, &'a str, Option<&'a str>, bool),
            &'a [&'a str],
        );
        let start = ["post", "github", "--start", "--repo", "o/r", "--sha", "a"];
        let watch = ["watch", "--mbox", "m", "--dispatch", "o/r"];
        let cases: &[(&[&str], Case)] = &[
            (
                &start,
                (
                    &["--send"],
                    (None, "GITHUB_TOKEN", None, true),
                    &[],
                ),
            ),
            (
                &start,
                (
                    &[],
                    (None, "GITHUB_TOKEN", None, false),
                    &["post github: a dry run, nothing is sent: add --send"],
                ),
            ),
            (
                &start,
                (
                    &["--dry-run"],
                    (None, "GITHUB_TOKEN", None, false),
                    &["--dry-run is deprecated and goes in the next release: post github is a dry run unless --send"],
                ),
            ),
            (
                &start,
                (
                    &["--send", "--api", "http://h/api", "--token-env", "T", "--token-file", "f"],
                    (Some("http://h/api"), "T", Some("f"), true),
                    &[
                        "--api is deprecated and goes in the next release: use --github-api",
                        "--token-env is deprecated and goes in the next release: use --github-token-env",
                        "--token-file is deprecated and goes in the next release: use --github-token-file",
                    ],
                ),
            ),
            (
                &start,
                (
                    &["--send", "--github-api", "http://h/api", "--github-token-env", "T", "--github-token-file", "f"],
                    (Some("http://h/api"), "T", Some("f"), true),
                    &[],
                ),
            ),
            (
                &watch,
                (
                    &["--send", "--token-env", "T"],
                    (None, "T", None, true),
                    &["--token-env is deprecated and goes in the next release: use --github-token-env"],
                ),
            ),
            (
                &watch,
                (
                    &["--dry-run"],
                    (None, "GITHUB_TOKEN", None, false),
                    &["--dry-run is deprecated and goes in the next release: watch is a dry run unless --send"],
                ),
            ),
        ];
        for (head, (tail, want, warnings)) in cases {
            let args: Vec<&str> = head.iter().chain(tail.iter()).copied().collect();
            let (c, w) = folded(&args);
            let (g, send) = github(&c);
            let got = (
                g.github_api.as_deref(),
                g.github_token_env.as_str(),
                g.github_token_file.as_ref().and_then(|p| p.to_str()),
                send,
            );
            assert_eq!(got, *want, "{args:?}");
            assert_eq!(w.len(), warnings.len(), "{args:?}: {w:?}");
            for (got, want) in w.iter().zip(warnings.iter()) {
                assert!(got.starts_with(want), "{args:?}: {got:?} is not {want:?}");
            }
        }
        // Both spellings of one option at once: refused by clap.
        for both in [
            &["--api", "http://a", "--github-api", "http://b"][..],
            &["--token-file", "a", "--github-token-file", "b"][..],
            &["--token-env", "A", "--github-token-env", "B"][..],
        ] {
            let args: Vec<&str> = start.iter().chain(both).copied().collect();
            assert!(
                Cli::try_parse_from(["mmci"].iter().chain(&args)).is_err(),
                "{args:?}"
            );
        }
    }

    /// The results dir by one name: `--results` (old: a positional dir on
    /// analyse and report, --into on merge), and the other renamed options.
    #[test]
    fn results_dirs_and_outputs_take_one_name() {
        let t = tempfile::tempdir().unwrap();
        let dir = t.path().to_str().unwrap();
        let results_of = |c: &Command| match c {
            Command::Analyse(a) => a.results.clone(),
            Command::Report(a) => a.results.clone(),
            Command::Merge(a) => a.results.clone(),
            _ => unreachable!(),
        };
        type Case<'a> = (&'a [&'a str], &'a str, usize);
        let cases: &[Case] = &[
            (&["analyse", "--results", dir], dir, 0),
            (&["analyse", dir], dir, 1),
            (&["analyze", dir], dir, 1),
            (&["report", "--results", dir, "--format", "email"], dir, 0),
            (&["report", dir], dir, 1),
            (&["merge", "--results", "all", "s1", "s2"], "all", 0),
            (&["merge", "--into", "all", "s1", "s2"], "all", 1),
        ];
        for (args, want, warnings) in cases {
            let (c, w) = folded(args);
            assert_eq!(
                results_of(&c).as_deref(),
                Some(std::path::Path::new(want)),
                "{args:?}"
            );
            assert_eq!(w.len(), *warnings, "{args:?}: {w:?}");
        }

        // --json: the flag prints JSON; the old --json FILE writes FILE and
        // prints the table, as it did; `--json DIR` is the flag and a dir.
        let json_of = |c: &Command| match c {
            Command::Analyse(a) => (a.json.is_some(), a.json_and_table.clone()),
            _ => unreachable!(),
        };
        let (c, w) = folded(&["analyse", "--results", dir, "--json"]);
        assert_eq!((json_of(&c), w.len()), ((true, None), 0));
        let (c, w) = folded(&["analyse", "--json", "out.json", "--results", dir]);
        assert_eq!(json_of(&c), (false, Some(PathBuf::from("out.json"))));
        assert!(w[0].starts_with("--json FILE is deprecated"), "{w:?}");
        let (c, w) = folded(&["analyse", "--json", dir]);
        assert_eq!(json_of(&c), (true, None));
        assert_eq!(results_of(&c).as_deref(), Some(std::path::Path::new(dir)));
        assert_eq!(w.len(), 1, "the positional dir: {w:?}");

        let (c, w) = folded(&[
            "post",
            "email",
            "--body",
            "b",
            "--results",
            dir,
            "--write",
            "r.mbox",
        ]);
        match c {
            Command::Post {
                command: super::super::post::PostCommand::Email(a),
            } => assert_eq!(a.output, Some(PathBuf::from("r.mbox"))),
            _ => unreachable!(),
        }
        assert_eq!(w, [renamed("--write", "--output")]);
        let (c, w) = folded(&["post", "patchwork", "--results", dir, "--token-file", "tok"]);
        match c {
            Command::Post {
                command: super::super::post::PostCommand::Patchwork(a),
            } => assert_eq!(a.patchwork_token_file, Some(PathBuf::from("tok"))),
            _ => unreachable!(),
        }
        assert_eq!(w, [renamed("--token-file", "--patchwork-token-file")]);
    }
}
