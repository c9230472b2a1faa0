//! A `mmci run` as the library takes it: the matrix, what the command line
//! changes in it, the command line's kernel and how to run the plan; and
//! the one translation of that request into the executor's
//! [`MatrixOptions`] (plan, each variant's kernel source with the series
//! read once and its base pinned, guest capacity).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use crate::host::paths::WorkDir;
use crate::kernel::KernelSource;
use crate::matrix::schedule::Capacity;
use crate::matrix::{MatrixError, Overrides, Plan, Shard};
use crate::run::accel::AccelRequest;
use crate::run::executor::MatrixOptions;
use crate::series::SeriesSpec;

/// What `mmci run` was asked to do.
#[derive(Clone, Debug)]
pub struct RunRequest {
    /// The matrix file; `None`: the embedded matrix/default.yaml.
    pub matrix: Option<PathBuf>,
    /// `--set`s, the command line's kernel variants, `--repeats`.
    pub overrides: Overrides,
    /// The command line's kernel (tarball or tree, fragments, jobs) and its
    /// series, which the variants `from_command_line` get.
    pub base: KernelSource,
    pub endpoints: Endpoints,
    pub results: PathBuf,
    pub shard: Option<Shard>,
    pub accel: AccelRequest,
    /// Per-run timeout instead of the scenario's default.
    pub timeout: Option<Duration>,
    /// Extra attempts after an infra failure.
    pub retries: u32,
    /// Kernel builds at a time.
    pub parallel_builds: usize,
    /// Guest vCPUs at once [default: host cores x `oversubscribe`].
    pub guest_vcpus: Option<u32>,
    /// Guest RAM (MiB) at once [default: host RAM - 1 GiB].
    pub guest_memory_mb: Option<u64>,
    pub oversubscribe: f64,
    /// The seed of the run order (`--seed`); `None`: a fresh one for a new
    /// results dir, the recorded one on resume.
    pub seed: Option<u64>,
}

impl RunRequest {
    /// The embedded matrix on the bundled kernel, with the command line's
    /// defaults (`--accel auto`, `--retries 1`, one build at a time).
    pub fn new(results: PathBuf) -> RunRequest {
        RunRequest {
            matrix: None,
            overrides: Overrides::default(),
            base: KernelSource::bundled(),
            endpoints: Endpoints::default(),
            results,
            shard: None,
            accel: AccelRequest::Auto,
            timeout: None,
            retries: 1,
            parallel_builds: 1,
            guest_vcpus: None,
            guest_memory_mb: None,
            oversubscribe: 1.0,
            seed: None,
        }
    }
}

/// The executor's options for `req`: the plan loaded and validated, each
/// variant's kernel source, every series read once and its base chosen
/// before any build (see [`crate::kernel::pin_bases`]), the capacity.
pub async fn matrix_options(req: RunRequest, work: WorkDir) -> Result<MatrixOptions, MatrixError> {
    let mut plan = match &req.matrix {
        Some(path) => crate::matrix::load(path, &req.overrides)?,
        None => crate::matrix::default_plan(&req.overrides)?,
    };
    // The seed asked for; the executor draws one for a new results dir
    // without it, and keeps a resumed dir's.
    plan.order_seed = req.seed;
    let capacity = match (req.guest_vcpus, req.guest_memory_mb) {
        (None, None) => None,
        (vcpus, memory_mb) => {
            let host = crate::results::dir::Host::this();
            Some(capacity(
                vcpus,
                memory_mb,
                crate::matrix::schedule::capacity(host.cpus, host.memory_mb, req.oversubscribe),
            ))
        }
    };
    let mut sources = variant_sources(&plan, &req.base, &req.endpoints, req.base.series.as_ref());
    // The comparison's base kernel is the commit the series is applied on.
    crate::kernel::pin_bases(&mut sources, &work).await;
    Ok(MatrixOptions {
        sources,
        work,
        results: req.results,
        plan,
        shard: req.shard,
        accel: req.accel,
        timeout: req.timeout,
        retries: req.retries,
        parallel_builds: req.parallel_builds,
        capacity,
        oversubscribe: req.oversubscribe,
    })
}

/// `--guest-vcpus` and `--guest-memory-mb`, each defaulting to the host's.
fn capacity(vcpus: Option<u32>, memory_mb: Option<u64>, host: Capacity) -> Capacity {
    Capacity {
        vcpus: vcpus.unwrap_or(host.vcpus),
        memory_mb: memory_mb.unwrap_or(host.memory_mb),
    }
}

/// Where series named by message-id or pull request are fetched from.
#[derive(Clone, Debug)]
pub struct Endpoints {
    pub lore_url: String,
    pub github_api: String,
    /// Never logged or written to results. The command line reads it
    /// ($GITHUB_TOKEN); none by default.
    pub github_token: Option<String>,
}

impl Default for Endpoints {
    fn default() -> Endpoints {
        Endpoints {
            lore_url: crate::series::fetch::LORE_URL.to_string(),
            github_api: crate::series::fetch::GITHUB_API.to_string(),
            github_token: None,
        }
    }
}

/// Each variant's kernel source: the command line's base (tarball or
/// tree, fragments, jobs) with the variant's tree, series or image on top.
pub fn variant_sources(
    plan: &Plan,
    base: &KernelSource,
    endpoints: &Endpoints,
    cli_series: Option<&SeriesSpec>,
) -> BTreeMap<String, KernelSource> {
    plan.variants
        .iter()
        .map(|v| {
            let mut s = base.clone();
            s.series = None;
            if let Some(i) = &v.image {
                s.image = Some(i.clone());
            }
            if let Some(t) = &v.tree {
                use crate::kernel::tree::TreeSpec;
                // The plan refused a bad `tree:`/`ref:` when it was loaded;
                // one that gets here anyway is refused again by the fetch
                // (TreeSpec::check), as this kernel's error.
                s.tree = Some(
                    TreeSpec::parse(t, v.git_ref.as_deref()).unwrap_or_else(|_| TreeSpec {
                        url: t.clone(),
                        git_ref: v.git_ref.clone().unwrap_or_default(),
                    }),
                );
            }
            s.series = v.series.as_ref().map(|spec| {
                spec.with_endpoints(
                    &endpoints.lore_url,
                    &endpoints.github_api,
                    endpoints.github_token.as_deref(),
                )
            });
            // `--revision` belongs to the command line's series; a matrix
            // kernel's series has its own `revision:`.
            s.series_revision = v.revision;
            s.series_patches = v.patches.clone();
            if v.from_command_line {
                s.series = cli_series.cloned();
                s.series_revision = base.series_revision;
                s.series_patches = base.series_patches.clone();
            }
            (v.name.clone(), s)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matrix::plan::Variant;

    fn plan_with(variants: Vec<Variant>) -> Plan {
        let mut plan = crate::matrix::plan::from_text(
            "axes:\n  threads: [1]\n",
            "m.yaml",
            std::path::Path::new("."),
            &Default::default(),
        )
        .unwrap();
        plan.variants = variants;
        plan
    }

    #[test]
    fn capacity_takes_each_given_limit_and_the_host_for_the_other() {
        let host = Capacity {
            vcpus: 4,
            memory_mb: 7000,
        };
        let cases = [
            (Some(2), None, (2, 7000)),
            (None, Some(512), (4, 512)),
            (Some(8), Some(1024), (8, 1024)),
        ];
        for (vcpus, memory_mb, (v, m)) in cases {
            let c = capacity(vcpus, memory_mb, host);
            assert_eq!((c.vcpus, c.memory_mb), (v, m), "{vcpus:?} {memory_mb:?}");
        }
    }

    #[test]
    fn each_variant_keeps_its_own_revision() {
        let series = |name: &str, revision| Variant {
            name: name.into(),
            series: Some(SeriesSpec::Mbox("t.mbox".into())),
            revision,
            ..Variant::base()
        };
        let cli = Variant {
            name: "patched".into(),
            from_command_line: true,
            ..Variant::base()
        };
        let plan = plan_with(vec![
            Variant::base(),
            series("v1", Some(1)),
            series("v2", None),
            cli,
        ]);
        // `--revision 3` on the command line: only for its own series.
        let base = KernelSource {
            series_revision: Some(3),
            ..KernelSource::bundled()
        };
        let cli_series = SeriesSpec::from_path(std::path::Path::new("cli.mbox"));
        let sources = variant_sources(&plan, &base, &Endpoints::default(), Some(&cli_series));
        let revisions: Vec<(&str, Option<u32>)> = ["base", "v1", "v2", "patched"]
            .iter()
            .map(|n| (*n, sources[*n].series_revision))
            .collect();
        assert_eq!(
            revisions,
            [
                ("base", None),
                ("v1", Some(1)),
                ("v2", None),
                ("patched", Some(3))
            ]
        );
        assert!(sources["base"].series.is_none());
        assert!(sources["v1"].series.is_some());
    }
}
