//! The `mmci run` child a watcher starts on a series it stored: its
//! command line, and an environment without the watcher's credentials.

use std::path::Path;

use crate::series::SeriesSpec;

/// The `mmci run` command line for a series stored at `mbox`.
pub fn run_command(mmci: &Path, mbox: &Path, results: &Path, args: &[String]) -> Vec<String> {
    run_command_for(mmci, &SeriesSpec::Mbox(mbox.to_path_buf()), results, args)
}

/// The `mmci run` command line for the series `spec` names: its options
/// ([`SeriesSpec::options`]), `--results`, then `args`.
pub fn run_command_for(
    mmci: &Path,
    spec: &SeriesSpec,
    results: &Path,
    args: &[String],
) -> Vec<String> {
    let mut cmd = vec![mmci.display().to_string(), "run".into()];
    for (option, value) in spec.options() {
        cmd.push(option.into());
        cmd.push(value);
    }
    cmd.push("--results".into());
    cmd.push(results.display().to_string());
    cmd.extend(args.iter().cloned());
    cmd
}

/// The variables of `env` a watcher's `mmci run` child must not get: the
/// watcher's credentials (GitHub, patchwork, SMTP, the Actions runner's)
/// and anything named like one ([`crate::host::secrets::is_secret_var`]). The run builds a stranger's series; it
/// reads the series from the mbox the watcher stored and posts nothing.
pub fn secret_vars<'a>(env: impl IntoIterator<Item = &'a str>) -> Vec<&'a str> {
    env.into_iter()
        .filter(|k| crate::host::secrets::is_secret_var(k))
        .collect()
}

/// Removes [`secret_vars`] (of this process's environment and of what
/// `cmd` sets) from `cmd`'s environment.
pub fn without_secrets(cmd: &mut tokio::process::Command) {
    let set = cmd.as_std().get_envs().map(|(k, _)| k.to_os_string());
    let names: Vec<String> = std::env::vars_os()
        .map(|(k, _)| k)
        .chain(set.collect::<Vec<_>>())
        .filter_map(|k| k.into_string().ok())
        .collect();
    for k in secret_vars(names.iter().map(String::as_str)) {
        cmd.env_remove(k);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_run_child_sees_none_of_the_secrets() {
        let mut cmd = tokio::process::Command::new("env");
        cmd.env("GITHUB_TOKEN", "ghp_watcher")
            .env("MMCI_SMTP_PASSWORD", "hunter2")
            .env("MMCI_LOG", "info");
        without_secrets(&mut cmd);
        let out = cmd.output().await.unwrap();
        let env = String::from_utf8_lossy(&out.stdout);
        assert!(
            !env.contains("ghp_watcher") && !env.contains("hunter2"),
            "{env}"
        );
        assert!(env.contains("MMCI_LOG=info"), "{env}");
    }

    #[test]
    fn a_watcher_keeps_its_secrets_from_its_runs() {
        let env = [
            "GITHUB_TOKEN",
            "MMCI_PATCHWORK_TOKEN",
            "MMCI_SMTP_PASSWORD",
            "MY_RELAY_PASSWORD",
            "ACTIONS_RUNTIME_TOKEN",
            "ACTIONS_ID_TOKEN_REQUEST_TOKEN",
            "AWS_SECRET_ACCESS_KEY",
            "GOOGLE_APPLICATION_CREDENTIALS",
            "SSH_AUTH_SOCK",
            "gh_token",
            "PATH",
            "HOME",
            "MMCI_WORK_DIR",
            "MMCI_LOG",
            "MMCI_CCACHE",
            "http_proxy",
            "LANG",
        ];
        assert_eq!(
            secret_vars(env),
            [
                "GITHUB_TOKEN",
                "MMCI_PATCHWORK_TOKEN",
                "MMCI_SMTP_PASSWORD",
                "MY_RELAY_PASSWORD",
                "ACTIONS_RUNTIME_TOKEN",
                "ACTIONS_ID_TOKEN_REQUEST_TOKEN",
                "AWS_SECRET_ACCESS_KEY",
                "GOOGLE_APPLICATION_CREDENTIALS",
                "SSH_AUTH_SOCK",
                "gh_token",
            ]
        );
    }
}
