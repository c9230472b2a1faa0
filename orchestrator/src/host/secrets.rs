//! The secrets this process holds (tokens and passwords from the
//! environment, from files and from variables named on the command line)
//! and their removal from every text that leaves it: reports, posts,
//! errors. Here, below every stage, so that reports and posts share it.

/// The environment variable holding the patchwork token (post/patchwork
/// reads it through cli/ under this name).
pub const PATCHWORK_TOKEN_ENV: &str = "MMCI_PATCHWORK_TOKEN";

/// The environment variables that carry credentials: mmci's own (their
/// default names) and those of a GitHub Actions runner.
pub const SECRET_ENV: &[&str] = &[
    "GITHUB_TOKEN",
    "GH_TOKEN",
    PATCHWORK_TOKEN_ENV,
    "MMCI_SMTP_PASSWORD",
    "ACTIONS_RUNTIME_TOKEN",
    "ACTIONS_ID_TOKEN_REQUEST_TOKEN",
];

/// Secrets read from files or from variables given by name
/// (`--smtp-password-env`) while this process runs.
static READ_SECRETS: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());

/// Adds a secret this process read to those [`redact_outgoing`] removes.
pub fn remember_secret(secret: &str) {
    let secret = secret.trim();
    if secret.is_empty() {
        return;
    }
    let mut all = READ_SECRETS.lock().unwrap_or_else(|e| e.into_inner());
    if !all.iter().any(|s| s == secret) {
        all.push(secret.to_string());
    }
}

/// Every secret this process holds: the values of [`SECRET_ENV`] (as
/// `env` gives them), those it read ([`remember_secret`]) and `extra`
/// (a resolved token). A PEM key counts line by line: that is how a
/// leaked copy would show up.
pub fn own_secrets(env: &dyn Fn(&str) -> Option<String>, extra: &[&str]) -> Vec<String> {
    let mut out: Vec<String> = vec![];
    let read = READ_SECRETS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clone();
    let all = SECRET_ENV
        .iter()
        .filter_map(|k| env(k))
        .chain(read)
        .chain(extra.iter().map(|s| s.to_string()));
    for s in all {
        if s.contains("-----BEGIN") {
            out.extend(
                s.lines()
                    .map(str::trim)
                    .filter(|l| l.len() >= 16 && !l.starts_with("-----"))
                    .map(str::to_string),
            );
        } else {
            out.push(s.trim().to_string());
        }
    }
    out.retain(|s| !s.is_empty());
    // Longest first: a secret that contains another is replaced whole.
    out.sort_by_key(|s| std::cmp::Reverse(s.len()));
    out.dedup();
    out
}

/// `text` as it may leave the process: every secret of [`own_secrets`]
/// replaced by `[redacted]`.
pub fn redact_outgoing(text: &str, env: &dyn Fn(&str) -> Option<String>, extra: &[&str]) -> String {
    let secrets = own_secrets(env, extra);
    let refs: Vec<&str> = secrets.iter().map(String::as_str).collect();
    redact(text, &refs)
}

/// The environment as it is, for [`redact_outgoing`].
pub fn process_env(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// Replaces every occurrence of a secret in `text`, so that a token echoed
/// back by a server or a library can never reach a log or an error.
pub fn redact(text: &str, secrets: &[&str]) -> String {
    let mut out = text.to_string();
    for s in secrets.iter().filter(|s| s.len() >= 4) {
        out = out.replace(*s, "[redacted]");
    }
    out
}

/// Words in an environment variable's name that make it a credential
/// whatever its full name ([`is_secret_var`]).
pub const SECRET_LIKE: &[&str] = &[
    "TOKEN",
    "PASSWORD",
    "SECRET",
    "CREDENTIAL",
    "PRIVATE_KEY",
    "API_KEY",
];

/// Variables that hold no secret themselves but hand one out on request:
/// the ssh agent's socket, git's password helper.
pub const CREDENTIAL_AGENT_ENV: &[&str] = &["SSH_AUTH_SOCK", "GIT_ASKPASS"];

/// Whether the environment variable `name` carries a credential: one of
/// [`SECRET_ENV`] or [`CREDENTIAL_AGENT_ENV`], or named like one
/// ([`SECRET_LIKE`], case-insensitive). The one definition a child's
/// environment is filtered by.
pub fn is_secret_var(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    SECRET_ENV.contains(&upper.as_str())
        || CREDENTIAL_AGENT_ENV.contains(&upper.as_str())
        || SECRET_LIKE.iter().any(|l| upper.contains(l))
}
