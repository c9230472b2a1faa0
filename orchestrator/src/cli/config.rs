//! The optional config files: the defaults a user sets once (work dir,
//! SMTP server, From, patchwork instance and project, GitHub repository),
//! read from `./mmci.toml` (the current directory or a parent, up to the
//! repository's root) and `~/.config/mmci/config.toml`. Each key stands in
//! for one environment variable, so the precedence is the same for every
//! command: a flag, then the variable, then the repository's file, then
//! the user's file, then the built-in default. `mmci config show` prints
//! every key's value and where it came from.

use std::path::{Path, PathBuf};

use crate::error::AppError;

/// One setting: its key in the files, the variable it stands in for, the
/// flags that set it and what it is without any of them.
#[derive(Debug)]
pub struct Key {
    pub name: &'static str,
    pub env: &'static str,
    pub flags: &'static str,
    pub default: &'static str,
}

/// Every key a config file may hold.
pub const KEYS: &[Key] = &[
    Key {
        name: "work_dir",
        env: "MMCI_WORK_DIR",
        flags: "--work-dir",
        default: "~/.cache/mmci",
    },
    Key {
        name: "smtp",
        env: "MMCI_SMTP",
        flags: "post email --smtp",
        default: "(none: --send needs one)",
    },
    Key {
        name: "email_from",
        env: "MMCI_EMAIL_FROM",
        flags: "post email --from, report --from",
        default: "mmci <mmci@kernel-ci.invalid> (report); none (post email)",
    },
    Key {
        name: "patchwork_url",
        env: "MMCI_PATCHWORK_URL",
        flags: "post patchwork --patchwork",
        default: "the instance the series was read from",
    },
    Key {
        name: "patchwork_project",
        env: "MMCI_PATCHWORK_PROJECT",
        flags: "post patchwork --project",
        default: "(none)",
    },
    Key {
        name: "github_repo",
        env: "GITHUB_REPOSITORY",
        flags: "post github --repo",
        default: "(none)",
    },
    Key {
        name: "results",
        env: "MMCI_RESULTS",
        flags: "b4-check --results",
        default: "./mmci-results",
    },
];

/// The repository's file name, looked for in the current directory and
/// its parents.
pub const REPO_FILE: &str = "mmci.toml";

/// One config file as read: where it is and its values by key.
#[derive(Clone, Debug, PartialEq)]
pub struct File {
    pub path: PathBuf,
    pub values: Vec<(String, String)>,
}

/// Parses one config file's text: a TOML table of string values whose
/// keys are [`KEYS`]; anything else is an error naming the file, the line
/// and what to do.
pub fn parse(path: &Path, text: &str) -> Result<File, String> {
    let table: toml::Table = text
        .parse()
        .map_err(|e: toml::de::Error| format!("{}: {}", path.display(), e.to_string().trim()))?;
    let mut values = Vec::new();
    for (k, v) in &table {
        let line = line_of(text, k);
        if !KEYS.iter().any(|key| key.name == k) {
            let known: Vec<&str> = KEYS.iter().map(|k| k.name).collect();
            return Err(format!(
                "{}:{line}: unknown key `{k}` (known: {})",
                path.display(),
                known.join(", ")
            ));
        }
        let Some(s) = v.as_str() else {
            return Err(format!(
                "{}:{line}: `{k}` must be a string (in quotes), not {}",
                path.display(),
                v.type_str()
            ));
        };
        values.push((k.clone(), expand_home(s)));
    }
    Ok(File {
        path: path.to_path_buf(),
        values,
    })
}

/// The 1-based line where `key` is set in `text` (1 if not found as is).
fn line_of(text: &str, key: &str) -> usize {
    text.lines()
        .position(|l| {
            l.trim_start()
                .strip_prefix(key)
                .is_some_and(|r| r.trim_start().starts_with('='))
        })
        .map_or(1, |i| i + 1)
}

/// `~/x` as `$HOME/x`.
fn expand_home(s: &str) -> String {
    match (s.strip_prefix("~/"), dirs::home_dir()) {
        (Some(rest), Some(home)) => home.join(rest).display().to_string(),
        _ => s.to_string(),
    }
}

/// The repository's `mmci.toml`: in `cwd` or the nearest parent that has
/// one, not above the first directory holding `.git`.
pub fn repo_file(cwd: &Path) -> Option<PathBuf> {
    for dir in cwd.ancestors() {
        let f = dir.join(REPO_FILE);
        if f.is_file() {
            return Some(f);
        }
        if dir.join(".git").exists() {
            return None;
        }
    }
    None
}

/// The user's file: `$XDG_CONFIG_HOME/mmci/config.toml`, else
/// `~/.config/mmci/config.toml`.
pub fn user_file() -> Option<PathBuf> {
    dirs::config_dir().map(|d| d.join("mmci").join("config.toml"))
}

/// Where a value came from.
#[derive(Clone, Debug, PartialEq)]
pub enum Origin {
    Flag(&'static str),
    Env(&'static str),
    File(PathBuf),
    Default,
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Origin::Flag(flag) => write!(f, "flag {flag}"),
            Origin::Env(v) => write!(f, "environment ${v}"),
            Origin::File(p) => write!(f, "file {}", p.display()),
            Origin::Default => write!(f, "default"),
        }
    }
}

/// The config files in force, the repository's first.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Config {
    pub files: Vec<File>,
}

impl Config {
    /// Reads the files that exist among `paths` (in precedence order).
    pub fn load(paths: &[PathBuf]) -> Result<Config, AppError> {
        let mut files = Vec::new();
        for p in paths {
            match std::fs::read_to_string(p) {
                Ok(text) => files.push(parse(p, &text).map_err(AppError::BadOption)?),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => {
                    return Err(AppError::BadOption(format!(
                        "{}: {e} (fix its permissions or remove it)",
                        p.display()
                    )))
                }
            }
        }
        Ok(Config { files })
    }

    /// The files' value for the key standing in for variable `env`, and the
    /// file it is in.
    pub fn for_env(&self, env: &str) -> Option<(&str, &Path)> {
        let key = KEYS.iter().find(|k| k.env == env)?;
        self.files.iter().find_map(|f| {
            f.values
                .iter()
                .find(|(k, _)| k == key.name)
                .map(|(_, v)| (v.as_str(), f.path.as_path()))
        })
    }

    /// `key`'s value and origin: `flag`, else the variable in `env`, else
    /// the files, else none (the command's default).
    pub fn resolve(
        &self,
        key: &Key,
        flag: Option<(&'static str, String)>,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> (Option<String>, Origin) {
        if let Some((name, v)) = flag {
            return (Some(v), Origin::Flag(name));
        }
        if let Some(v) = env(key.env).filter(|v| !v.trim().is_empty()) {
            return (Some(v), Origin::Env(key.env));
        }
        match self.for_env(key.env) {
            Some((v, p)) => (Some(v.to_string()), Origin::File(p.to_path_buf())),
            None => (None, Origin::Default),
        }
    }

    /// `mmci config show`: one line per key, `key = value  # origin`.
    pub fn show(
        &self,
        work_dir_flag: Option<&Path>,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> String {
        let mut out = String::new();
        for key in KEYS {
            let flag = match key.name {
                "work_dir" => work_dir_flag.map(|p| ("--work-dir", p.display().to_string())),
                _ => None,
            };
            let (value, origin) = self.resolve(key, flag, env);
            let value = value.map_or_else(|| key.default.to_string(), |v| format!("{v:?}"));
            out.push_str(&format!("{:<18} = {value}  # {origin}\n", key.name));
        }
        if self.files.is_empty() {
            out.push_str("# no config file (./mmci.toml, ~/.config/mmci/config.toml)\n");
        }
        out
    }
}

/// The files in force for this process: the repository's, the user's.
static LOADED: std::sync::OnceLock<Config> = std::sync::OnceLock::new();

/// Reads the config files once, before any command runs.
pub fn init() -> Result<&'static Config, AppError> {
    if let Some(c) = LOADED.get() {
        return Ok(c);
    }
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    let paths: Vec<PathBuf> = repo_file(&cwd).into_iter().chain(user_file()).collect();
    let config = Config::load(&paths)?;
    Ok(LOADED.get_or_init(|| config))
}

/// The value of a variable as the commands read it: the environment's,
/// else the config files' (once [`init`] has read them).
pub fn env_or_file(name: &str) -> Option<String> {
    std::env::var(name).ok().or_else(|| {
        LOADED
            .get()
            .and_then(|c| c.for_env(name).map(|(v, _)| v.to_string()))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::tests::env_of;

    /// A file's text and what it parses to (its values, or an error part).
    type Case<'a> = (&'a str, Result<&'a [(&'a str, &'a str)], &'a str>);

    #[test]
    fn files_hold_known_string_keys_only() {
        let cases: &[Case] = &[
            ("", Ok(&[])),
            (
                "smtp = \"mail.example:587\"\ngithub_repo = \"me/linux\"\n",
                Ok(&[("github_repo", "me/linux"), ("smtp", "mail.example:587")]),
            ),
            (
                "# a comment\nsmpt = \"x\"\n",
                Err("c.toml:2: unknown key `smpt`"),
            ),
            (
                "\nwork_dir = 3\n",
                Err("c.toml:2: `work_dir` must be a string"),
            ),
            ("smtp = \n", Err("c.toml: TOML parse error at line 1")),
        ];
        for (text, want) in cases {
            let got = parse(Path::new("c.toml"), text);
            match (got, want) {
                (Ok(f), Ok(want)) => {
                    let mut got: Vec<(&str, &str)> = f
                        .values
                        .iter()
                        .map(|(k, v)| (k.as_str(), v.as_str()))
                        .collect();
                    got.sort();
                    assert_eq!(&got, want, "{text:?}");
                }
                (Err(e), Err(want)) => assert!(e.contains(want), "{text:?}: {e}"),
                (got, want) => panic!("{text:?}: {got:?} instead of {want:?}"),
            }
        }
    }

    /// A key, its flag, the environment, and the value and origin.
    type ResolveCase<'a> = (
        &'a Key,
        Option<(&'static str, String)>,
        &'a dyn Fn(&str) -> Option<String>,
        Option<&'a str>,
        Origin,
    );

    #[test]
    fn a_flag_beats_the_environment_beats_the_files_in_order() {
        let file = |p: &str, kv: &[(&str, &str)]| File {
            path: PathBuf::from(p),
            values: kv
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        };
        let config = Config {
            files: vec![
                file("repo/mmci.toml", &[("smtp", "repo:25")]),
                file("user.toml", &[("smtp", "user:25"), ("github_repo", "u/r")]),
            ],
        };
        let smtp = KEYS.iter().find(|k| k.name == "smtp").unwrap();
        let repo = KEYS.iter().find(|k| k.name == "github_repo").unwrap();
        let from = KEYS.iter().find(|k| k.name == "email_from").unwrap();
        let env = env_of(&[("MMCI_SMTP", "env:25"), ("MMCI_EMAIL_FROM", " ")]);
        let none = env_of(&[]);
        let cases: Vec<ResolveCase> = vec![
            (
                smtp,
                Some(("--smtp", "flag:25".into())),
                &env,
                Some("flag:25"),
                Origin::Flag("--smtp"),
            ),
            (smtp, None, &env, Some("env:25"), Origin::Env("MMCI_SMTP")),
            (
                smtp,
                None,
                &none,
                Some("repo:25"),
                Origin::File("repo/mmci.toml".into()),
            ),
            (
                repo,
                None,
                &env,
                Some("u/r"),
                Origin::File("user.toml".into()),
            ),
            (from, None, &env, None, Origin::Default),
        ];
        for (key, flag, env, value, origin) in cases {
            let got = config.resolve(key, flag, env);
            assert_eq!((got.0.as_deref(), got.1), (value, origin), "{}", key.name);
        }
    }

    #[test]
    fn the_repository_file_is_found_up_to_the_git_root() {
        let t = tempfile::tempdir().unwrap();
        let repo = t.path().join("repo");
        let sub = repo.join("a/b");
        std::fs::create_dir_all(&sub).unwrap();
        std::fs::create_dir(repo.join(".git")).unwrap();
        assert_eq!(repo_file(&sub), None);
        std::fs::write(t.path().join(REPO_FILE), "").unwrap();
        assert_eq!(repo_file(&sub), None, "not above the repository");
        std::fs::write(repo.join(REPO_FILE), "").unwrap();
        assert_eq!(repo_file(&sub), Some(repo.join(REPO_FILE)));
    }
}
