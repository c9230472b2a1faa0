//! The kernel and series options shared by `run`, `kernel build` and
//! `bench boot` ([`KernelArgs`], into a [`KernelSource`] and its
//! [`SeriesSpec`]), and the commands on kernels and series alone:
//! `kernel build` and `series show`.

use std::path::PathBuf;

use clap::Subcommand;

use super::help;
use super::series_args::SeriesArgs;
use crate::arch::Arch;
use crate::error::{exit, AppError};
use crate::host::paths::WorkDir;
use crate::kernel::{self, Flavour, KernelSource};
use crate::series::{fetch, SeriesSpec};

#[derive(clap::Args, Clone)]
pub struct KernelArgs {
    /// Patch series to apply with `git am -3` before building: an mbox file
    /// (cover letter and revisions allowed) or a directory of format-patch files.
    #[arg(long, conflicts_with_all = ["lore", "github_pr", "pw_series"], help_heading = help::SERIES)]
    pub series: Option<PathBuf>,
    /// The series from elsewhere (`--lore`, `--github-pr`, `--pw-series`)
    /// and `--revision`.
    #[command(flatten)]
    pub series_from: SeriesArgs,
    /// Boot this kernel image instead of building the bundled tree.
    #[arg(long, help_heading = help::KERNEL)]
    pub kernel: Option<PathBuf>,
    /// Kernel tree tarball to import and build (the offline default).
    #[arg(long, default_value = crate::kernel::tree::BUNDLED_TARBALL, help_heading = help::KERNEL)]
    pub tarball: PathBuf,
    /// Build a tree from a git URL instead (`mm-stable` = akpm's mm.git), mirrored in the work dir.
    #[arg(long, value_name = "URL|mm-stable", help_heading = help::KERNEL)]
    pub tree: Option<String>,
    /// Branch, tag or commit of --tree [default: mm-stable for mm-stable, else the remote HEAD].
    #[arg(long = "ref", value_name = "REF", requires = "tree", help_heading = help::KERNEL)]
    pub git_ref: Option<String>,
    /// Config fragments to merge over tinyconfig, replacing kernels/mm.config + kernels/<arch>.config.
    #[arg(long = "config-fragment", help_heading = help::KERNEL)]
    pub config_fragments: Vec<PathBuf>,
    /// make -j [default: number of CPUs]
    #[arg(long, help_heading = help::KERNEL)]
    pub jobs: Option<usize>,
    /// Further bases to try, in order, when the series has no base-commit:
    /// in the tree and does not apply on --ref (repeatable): a ref of the
    /// tree, or another tree as URL#REF (e.g. a mainline mirror).
    #[arg(long = "base-cascade", value_name = "REF|URL#REF", help_heading = help::SERIES)]
    pub base_cascade: Vec<String>,
    /// An mbox that may hold the patches the series' prerequisite-patch-id:
    /// trailers name, when its thread does not (repeatable); found ones are
    /// applied before the series.
    #[arg(long = "prerequisites", value_name = "MBOX", help_heading = help::SERIES)]
    pub prerequisites: Vec<PathBuf>,
    /// Build series and fetched trees even where the build sandbox cannot
    /// run (no bwrap, no user namespaces): their Makefiles then run with
    /// this user's full access to the machine and the network.
    #[arg(long, help_heading = help::KERNEL)]
    pub unsandboxed_builds: bool,
    /// Guest architecture [default: x86_64; for `run`, the matrix's].
    #[arg(long, help_heading = help::MACHINE)]
    pub arch: Option<Arch>,
}

/// `MMCI_CCACHE=1`: compile through ccache (off by default, see
/// `kernel::build`).
pub(crate) fn ccache_wanted(env: &dyn Fn(&str) -> Option<String>) -> bool {
    env("MMCI_CCACHE").is_some_and(|v| v == "1")
}

impl KernelArgs {
    /// The series named by `--series`, `--lore`, `--github-pr` or
    /// `--pw-series`, checked; `None` without one.
    pub fn series(&self) -> Result<Option<SeriesSpec>, AppError> {
        self.series_with(&super::env_var)
    }

    /// [`KernelArgs::series`] in the environment `env` ($GITHUB_TOKEN).
    fn series_with(
        &self,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Option<SeriesSpec>, AppError> {
        self.series_from.spec(self.series.as_deref(), env)
    }

    /// The kernel these options name, with its series.
    pub fn source(&self) -> Result<KernelSource, AppError> {
        let mut s = KernelSource::bundled();
        s.image = self.kernel.clone();
        s.tarball = self.tarball.clone();
        s.tree = match &self.tree {
            Some(t) => Some(
                crate::kernel::tree::TreeSpec::parse(t, self.git_ref.as_deref()).map_err(|e| {
                    let option = if e.is_ref() { "--ref" } else { "--tree" };
                    AppError::BadOption(format!("{option}: {e}"))
                })?,
            ),
            None => None,
        };
        s.fragments = self.config_fragments.clone();
        s.series = self.series()?;
        s.series_revision = self.series_from.revision;
        s.series_patches = self.series_from.patches.clone();
        s.ccache = ccache_wanted(&super::env_var);
        for e in &self.base_cascade {
            crate::kernel::tree::CascadeEntry::parse(e)
                .map_err(|err| AppError::BadOption(format!("--base-cascade: {err}")))?;
        }
        s.base_cascade = self.base_cascade.clone();
        s.unsandboxed_builds = self.unsandboxed_builds;
        s.prerequisites = self.prerequisites.clone();
        if let Some(j) = self.jobs {
            s.jobs = j;
        }
        Ok(s)
    }
}

#[derive(Subcommand)]
pub enum KernelCommand {
    /// Build the kernel (or find it in the cache) and print its image path.
    #[command(mut_arg("kernel", |a| a.help(
        "Print this kernel image's path instead of building (checks that it exists)"
    )))]
    Build {
        #[command(flatten)]
        kernel: KernelArgs,
        /// Kernel flavour: its fragments are merged after the kernel's own
        /// (`debug`: kernels/debug.config and kernels/debug-info.config;
        /// `kasan`: kernels/kasan.config), as a matrix's `config:` does.
        #[arg(long, value_name = "default|debug|kasan", default_value = "default")]
        flavour: Flavour,
    },
}

#[derive(Subcommand)]
pub enum SeriesCommand {
    /// The revision that would be applied, how it was chosen, its base, each
    /// patch (subject, author, message-id, revision it comes from) and every
    /// mail left out with the reason.
    #[command(after_help = help::SERIES_SHOW_EXAMPLES)]
    Show(SeriesShowArgs),
}

#[derive(clap::Args)]
pub struct SeriesShowArgs {
    /// An mbox file or a directory of format-patch files.
    #[arg(conflicts_with_all = ["lore", "github_pr", "pw_series"], required_unless_present_any = ["lore", "github_pr", "pw_series"])]
    pub source: Option<PathBuf>,
    /// The series from elsewhere (`--lore`, `--github-pr`, `--pw-series`)
    /// and `--revision`.
    #[command(flatten)]
    pub series_from: SeriesArgs,
    /// Choose the base in this tree (a git URL or `mm-stable`, mirrored in
    /// the work dir), as `run --tree` builds on it: base-commit when it has
    /// it, else --ref, then each --base-cascade entry. Without it, with
    /// --base-cascade: the bundled tree, as `run`.
    #[arg(long, value_name = "URL|mm-stable")]
    pub tree: Option<String>,
    /// The ref of --tree to try first [default: its HEAD].
    #[arg(long = "ref", value_name = "REF", requires = "tree")]
    pub git_ref: Option<String>,
    /// A further base to try, in order (repeatable): a ref of the tree, or
    /// another tree as URL#REF, fetched only when needed.
    #[arg(long = "base-cascade", value_name = "REF|URL#REF")]
    pub base_cascade: Vec<String>,
    /// An mbox that may hold the series' prerequisites (repeatable).
    #[arg(long = "prerequisites", value_name = "MBOX")]
    pub prerequisites: Vec<PathBuf>,
    /// Print JSON for tools instead of text (on standard output).
    #[arg(long, help_heading = help::OUTPUT)]
    pub json: bool,
}

/// `mmci series show`: assemble and print, without a tree or a build.
async fn series_show(a: &SeriesShowArgs, work: &WorkDir) -> Result<i32, AppError> {
    if let Some(p) = a.source.as_ref().filter(|p| !p.exists()) {
        return Err(AppError::BadOption(format!(
            "series show {}: no such file or directory (give an mbox or a format-patch directory)",
            p.display()
        )));
    }
    let k = KernelArgs {
        arch: None,
        kernel: None,
        tarball: PathBuf::from(crate::kernel::tree::BUNDLED_TARBALL),
        tree: a.tree.clone(),
        git_ref: a.git_ref.clone(),
        config_fragments: vec![],
        jobs: None,
        series: a.source.clone(),
        series_from: a.series_from.clone(),
        base_cascade: a.base_cascade.clone(),
        prerequisites: a.prerequisites.clone(),
        unsandboxed_builds: false,
    };
    let Some(source) = k.series()? else {
        return Err(AppError::BadOption(
            "series show: give an mbox, a format-patch directory, --lore, --github-pr or --patchwork URL --pw-series ID".into(),
        ));
    };
    // --tree, --ref and --base-cascade are checked before the series is
    // read: a bad one is a usage error, whatever the series. A base is
    // chosen with either, as `run` chooses it (the bundled tree without
    // --tree).
    let tree_source = if a.tree.is_some() || !a.base_cascade.is_empty() {
        Some(k.source()?)
    } else {
        None
    };
    let mut series = crate::series::load_with(
        &source,
        &crate::series::LoadOptions {
            revision: a.series_from.revision,
            prerequisites: a.prerequisites.clone(),
            patches: a.series_from.patches.clone(),
        },
        &fetch::Fetcher::default(),
        &work.root().join("series"),
    )
    .await
    .map_err(|e| AppError::Kernel(crate::kernel::KernelError::Series(e)))?;
    if let Some(source) = &tree_source {
        series.base = Some(kernel::base_for(source, &series, work).await?);
    }
    let name = source.name();
    if a.json {
        println!("{}", crate::series::show::json(&name, &series));
    } else {
        print!("{}", crate::series::show::text(&name, &series));
    }
    Ok(exit::OK)
}

/// `mmci series ...`.
pub async fn series(command: SeriesCommand, work: &WorkDir) -> Result<i32, AppError> {
    match command {
        SeriesCommand::Show(a) => series_show(&a, work).await,
    }
}

/// `mmci kernel ...`.
pub async fn kernel(command: KernelCommand, work: &WorkDir) -> Result<i32, AppError> {
    match command {
        KernelCommand::Build { kernel: k, flavour } => {
            let mut source = k.source()?;
            source.flavour = flavour;
            let info = kernel::prepare(&source, k.arch.unwrap_or_default(), work).await?;
            if let Some(b) = info.series.as_ref().and_then(|s| s.base.as_ref()) {
                eprintln!("mmci: series applied on {} {}: {}", b.name, b.commit, b.how);
            }
            println!("{}", info.image.display());
            Ok(exit::OK)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::tests::env_of;
    use crate::cli::{Cli, Command};
    use clap::Parser;

    /// `mmci kernel build ARGS`'s kernel options.
    fn kernel_args(args: &[&str]) -> KernelArgs {
        let argv = ["mmci", "kernel", "build"].iter().chain(args);
        match Cli::try_parse_from(argv).unwrap().command {
            Command::Kernel {
                command: KernelCommand::Build { kernel, .. },
            } => kernel,
            _ => unreachable!(),
        }
    }

    /// Options, and the source or the error they give.
    type Case<'a> = (&'a [&'a str], Result<Option<SeriesSpec>, &'a str>);

    #[test]
    fn series_options_become_a_checked_source() {
        let lore = |id: &str| SeriesSpec::Lore {
            message_id: id.into(),
            base_url: fetch::LORE_URL.into(),
        };
        let cases: &[Case] = &[
            (&[], Ok(None)),
            (
                &["--series", "/nonexistent/s.mbox"],
                Err("--series /nonexistent/s.mbox: no such file or directory"),
            ),
            (
                &["--lore", "<a.b@example.org>"],
                Ok(Some(lore("a.b@example.org"))),
            ),
            (
                &["--lore", "https://lore.kernel.org/all/a.b@example.org/"],
                Ok(Some(lore("a.b@example.org"))),
            ),
            (
                &["--lore", "a@x", "--lore-url", "ftp://x"],
                Err("--lore-url"),
            ),
            (
                &["--github-pr", "o/r#5"],
                Ok(Some(SeriesSpec::GitHub {
                    api: fetch::GITHUB_API.into(),
                    repo: "o/r".into(),
                    number: 5,
                    token: Some("t0ken".into()),
                })),
            ),
            (
                &["--github-pr", "o/r"],
                Err("--github-pr o/r: expected OWNER/REPO#NUMBER"),
            ),
            (
                &["--patchwork", "https://pw.example/", "--pw-series", "7"],
                Ok(Some(SeriesSpec::Patchwork {
                    url: "https://pw.example".into(),
                    series: 7,
                })),
            ),
            (
                &["--patchwork", "pw.example", "--pw-series", "7"],
                Err("--patchwork pw.example"),
            ),
        ];
        let env = env_of(&[("GITHUB_TOKEN", "t0ken")]);
        for (args, want) in cases {
            let got = kernel_args(args).series_with(&env);
            match (got, want) {
                (Ok(got), Ok(want)) => assert_eq!(&got, want, "{args:?}"),
                (Err(e), Err(want)) => {
                    assert_eq!(e.exit_code(), exit::USAGE, "{args:?}");
                    assert!(e.to_string().contains(want), "{args:?}: {e}");
                }
                (got, want) => panic!("{args:?}: {got:?} instead of {want:?}"),
            }
        }
    }

    #[test]
    fn kernel_options_become_the_source() {
        let k = kernel_args(&[
            "--tree",
            "mm-stable",
            "--config-fragment",
            "a.config",
            "--jobs",
            "3",
            "--revision",
            "2",
            "--patches",
            "1-2,4",
            "--base-cascade",
            "v6.12",
        ]);
        let s = k.source().unwrap();
        assert_eq!(
            s.tree,
            Some(crate::kernel::tree::TreeSpec::parse("mm-stable", None).unwrap())
        );
        assert_eq!(s.fragments, [PathBuf::from("a.config")]);
        assert_eq!(
            (s.jobs, s.series_revision, s.base_cascade.as_slice()),
            (3, Some(2), &["v6.12".to_string()][..])
        );
        assert_eq!(s.series_patches.unwrap().to_string(), "1-2,4");
        assert!(s.series.is_none() && s.image.is_none() && s.pinned_base.is_none());
        assert!(!s.unsandboxed_builds, "the sandbox is required by default");
        assert!(
            kernel_args(&["--unsandboxed-builds"])
                .source()
                .unwrap()
                .unsandboxed_builds
        );
    }
}
