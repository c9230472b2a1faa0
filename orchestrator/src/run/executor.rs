//! Runs a plan: kernel builds (their own concurrency limit), one
//! accelerator decision per arch, then the guests, packed onto the host by
//! [`schedule`] in interleaved A/B order, each result written to the
//! results dir as soon as it exists. Runs already in the dir are kept
//! (resume); a kernel that does not build or apply costs its own runs only.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use tokio::task::JoinSet;

use crate::arch::Arch;
use crate::guest::bin as guest_bin;
use crate::host::error_chain;
use crate::host::paths::WorkDir;
use crate::kernel::{self, Flavour, KernelError, KernelSource};
use crate::matrix::schedule::{self, Capacity, Need, Usage};
use crate::matrix::{Cell, Plan, Shard, Slot};
use crate::results::dir::{
    self as rd, Host, Manifest, ResultsDirError, VariantFailure, VariantKernel,
};
use crate::results::{KernelInfo, RunResult};
use crate::run::accel::{AccelChoice, AccelRequest, EarlyProbes};
use crate::run::guest::{self, RunConfig, RunError};
use crate::run::outcome::Outcome;
use crate::run::progress::Progress;

/// Everything `mmci run` needs to execute a plan.
pub struct MatrixOptions {
    pub work: WorkDir,
    pub results: PathBuf,
    pub plan: Plan,
    pub shard: Option<Shard>,
    /// Where each variant's kernel comes from, by variant name.
    pub sources: BTreeMap<String, KernelSource>,
    pub accel: AccelRequest,
    /// Per-run timeout instead of the scenario's default.
    pub timeout: Option<Duration>,
    /// Extra attempts after an infra failure.
    pub retries: u32,
    /// Kernel builds at a time.
    pub parallel_builds: usize,
    /// Guest capacity; `None`: host cores x `oversubscribe`, host RAM.
    pub capacity: Option<Capacity>,
    pub oversubscribe: f64,
}

#[derive(Debug, thiserror::Error)]
pub enum MatrixRunError {
    #[error(transparent)]
    ResultsDir(#[from] ResultsDirError),
    #[error(transparent)]
    Missing(#[from] crate::guest::Missing),
    #[error("image for script `{script}`: {source}")]
    Image {
        script: String,
        #[source]
        source: crate::guest::image::ImageError,
    },
    #[error("run {slot}")]
    Run {
        slot: String,
        #[source]
        source: RunError,
    },
}

/// A kernel that failed, with the error kept for the exit code.
pub struct KernelFailure {
    pub variant: String,
    pub arch: Arch,
    pub flavour: Flavour,
    pub error: KernelError,
}

/// A kernel the runs need: a variant built for an arch in a flavour.
type KernelNeed = (String, Arch, Flavour);

/// What happened.
pub struct MatrixOutcome {
    pub manifest: Manifest,
    /// Every slot of this shard with its run, in plan order (`None`: not
    /// run, because its kernel failed).
    pub runs: Vec<(Slot, Option<RunResult>)>,
    /// Runs found in the results dir from an earlier invocation.
    pub resumed: usize,
    pub kernel_failures: Vec<KernelFailure>,
    pub wall: Duration,
    /// From the first guest's start to the last one's end.
    pub guests_wall: Duration,
}

fn now_unix() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// The cells this invocation runs.
pub fn cells_of(plan: &Plan, shard: Option<Shard>) -> Vec<&Cell> {
    match shard {
        Some(s) => crate::matrix::plan::shard_cells(&plan.cells, s),
        None => plan.cells.iter().collect(),
    }
}

/// Checks that need no work: QEMU and guest-init for every arch, the
/// results dir writable and, if it exists, of the same plan.
pub fn preflight(opts: &MatrixOptions) -> Result<Manifest, MatrixRunError> {
    let cells = cells_of(&opts.plan, opts.shard);
    let mut arches: Vec<Arch> = cells.iter().map(|c| c.arch).collect();
    arches.sort();
    arches.dedup();
    for arch in &arches {
        crate::guest::check(*arch)?;
    }
    crate::host::fs::prepare_dir(&opts.results).map_err(|source| ResultsDirError::Write {
        path: opts.results.clone(),
        option: "--results",
        source,
    })?;
    // The run order's seed: the one asked for, else a fresh one; a resumed
    // dir keeps the one it recorded (checked below).
    let mut plan = opts.plan.clone();
    plan.order_seed = Some(
        opts.plan
            .order_seed
            .unwrap_or_else(crate::matrix::plan::fresh_seed),
    );
    let fresh = Manifest {
        format: rd::MANIFEST_FORMAT,
        mmci_version: env!("CARGO_PKG_VERSION").to_string(),
        mmci_commit: rd::MMCI_COMMIT.map(str::to_string),
        plan_id: opts.plan.fingerprint(),
        plan,
        shards: opts.shard.map(|s| vec![s]),
        host: Host::this(),
        accel: BTreeMap::new(),
        kernels: vec![],
        failed_kernels: vec![],
        created_unix: now_unix(),
    };
    match rd::read_manifest(&opts.results)? {
        Some(existing) => {
            rd::check_resumable(&opts.results, &existing, &fresh)?;
            check_seed(
                &opts.results,
                existing.plan.order_seed,
                opts.plan.order_seed,
            )?;
            Ok(existing)
        }
        None => {
            rd::write_manifest(&opts.results, &fresh)?;
            Ok(fresh)
        }
    }
}

/// A `--seed` given for a results dir that recorded another order is
/// refused: its runs so far followed the recorded one, and the rest must
/// too (rerun without --seed, or with the recorded seed).
fn check_seed(
    root: &std::path::Path,
    recorded: Option<u64>,
    asked: Option<u64>,
) -> Result<(), ResultsDirError> {
    match asked {
        Some(s) if recorded != Some(s) => Err(ResultsDirError::Mismatch {
            path: root.to_path_buf(),
            what: format!(
                "runs ordered {}, not by --seed {s}",
                recorded.map_or("as the plan lists them (no seed)".to_string(), |r| format!(
                    "by seed {r}"
                ))
            ),
        }),
        _ => Ok(()),
    }
}

/// Builds (or finds cached) every kernel the pending runs need.
async fn build_kernels(
    opts: &MatrixOptions,
    needed: &[KernelNeed],
    progress: &Progress,
    probes: &EarlyProbes,
) -> (Vec<VariantKernel>, Vec<KernelFailure>) {
    let jobs = needed.iter().map(|(variant, arch, flavour)| {
        let source = opts.sources.get(variant).cloned().map(|mut s| {
            s.flavour = *flavour;
            s
        });
        let work = opts.work.clone();
        async move {
            let what = format!("{variant} ({})", rd::target_text(*arch, *flavour));
            progress.build_started(&what);
            let t0 = Instant::now();
            let r = match source {
                Some(s) => kernel::prepare(&s, *arch, &work).await,
                None => Err(KernelError::MissingImage(PathBuf::from(format!(
                    "<no source for kernel `{variant}`>"
                )))),
            };
            // The arch's first kernel in `needed` (the baseline when it has
            // one) is the one the accelerator is chosen with below; a
            // candidate's kernel that hangs at boot must not decide it.
            let first_of_arch =
                needed.iter().find(|n| n.1 == *arch) == Some(&(variant.clone(), *arch, *flavour));
            if let (Ok(k), true) = (&r, first_of_arch) {
                probes.start(*arch, k);
            }
            let line = match &r {
                Ok(k) => format!(
                    "kernel {what}: {} in {:.1} s{}",
                    k.release,
                    t0.elapsed().as_secs_f64(),
                    k.series_hash
                        .as_deref()
                        .map(|h| format!(", series {}", &h[..h.len().min(12)]))
                        .unwrap_or_default()
                ),
                Err(e) => format!("kernel {what}: FAILED: {}", error_chain(e)),
            };
            progress.build_finished(&line);
            (variant.clone(), *arch, *flavour, r)
        }
    });
    let done: Vec<(String, Arch, Flavour, Result<KernelInfo, KernelError>)> =
        futures::stream::iter(jobs)
            .buffered(opts.parallel_builds.max(1))
            .collect()
            .await;
    progress.builds_done();
    let mut kernels: Vec<VariantKernel> = vec![];
    let mut failures = vec![];
    for (variant, arch, flavour, r) in done {
        match r {
            Ok(kernel) => kernels.push(VariantKernel {
                description: opts
                    .plan
                    .variants
                    .iter()
                    .find(|v| v.name == variant)
                    .map(|v| v.describe())
                    .unwrap_or_default(),
                variant,
                arch,
                flavour,
                kernel,
                new_warnings: vec![],
                config: None,
            }),
            Err(error) => failures.push(KernelFailure {
                variant,
                arch,
                flavour,
                error,
            }),
        }
    }
    // 0-day's "new warnings": what each candidate's build adds to the
    // baseline's (the first variant) on the same arch and flavour.
    let base_name = opts.plan.variants.first().map(|v| v.name.clone());
    let snapshot = kernels.clone();
    for k in &mut kernels {
        if Some(&k.variant) == base_name.as_ref() {
            continue;
        }
        if let Some(base) = snapshot.iter().find(|b| {
            Some(&b.variant) == base_name.as_ref() && b.arch == k.arch && b.flavour == k.flavour
        }) {
            k.new_warnings = crate::kernel::warnings::new_warnings(
                &base.kernel.build_warnings,
                &k.kernel.build_warnings,
            );
        }
    }
    (kernels, failures)
}

type GuestTaskResult = (Slot, Need, Result<RunResult, RunError>);

/// Takes a finished guest task's result into the books.
fn reap(
    r: Result<GuestTaskResult, tokio::task::JoinError>,
    used: &mut Usage,
    progress: &mut Progress,
    finished: &mut BTreeMap<Slot, RunResult>,
    failure: &mut Option<MatrixRunError>,
) {
    let (slot, need, result) = r.expect("guest tasks do not panic");
    used.remove(need);
    match result {
        Ok(run) => {
            progress.run_finished(&format!(
                "{}: {} ({}) in {:.0} s",
                slot.id(),
                run.classification.outcome.name(),
                run.classification.reason,
                run.timing.total_ms / 1000.0
            ));
            finished.insert(slot, run);
        }
        Err(source) => {
            progress.run_finished(&format!("{}: error: {}", slot.id(), error_chain(&source)));
            failure.get_or_insert(MatrixRunError::Run {
                slot: slot.id(),
                source,
            });
        }
    }
}

/// The runs of `plan`'s `cells` (with the runs the sequential budget
/// added, which the results dir's manifest records: `plan` is the
/// command line's, without them), those already finished in `root`, and
/// the rest in the recorded order: a resumed dir goes on where it
/// stopped, in the middle of an added block too.
pub fn slots_to_run(
    plan: &Plan,
    manifest: &Manifest,
    cells: &[&Cell],
    root: &std::path::Path,
) -> (Vec<Slot>, BTreeMap<Slot, RunResult>, Vec<Slot>) {
    let mut plan = plan.clone();
    plan.extra_repeats = manifest.plan.extra_repeats.clone();
    let slots = plan.slots(cells);
    let mut finished: BTreeMap<Slot, RunResult> = BTreeMap::new();
    for s in &slots {
        if let Some(r) = rd::finished_run(root, s) {
            finished.insert(s.clone(), r);
        }
    }
    let pending: Vec<Slot> = crate::matrix::plan::run_order(&slots, manifest.plan.order_seed)
        .into_iter()
        .filter(|s| !finished.contains_key(s))
        .collect();
    (slots, finished, pending)
}

/// Runs the plan (this shard of it) into `opts.results`.
pub async fn run_matrix(opts: &MatrixOptions) -> Result<MatrixOutcome, MatrixRunError> {
    let t0 = Instant::now();
    let mut manifest = preflight(opts)?;
    let cells = cells_of(&opts.plan, opts.shard);
    let (slots, mut finished, pending) = slots_to_run(&opts.plan, &manifest, &cells, &opts.results);
    let resumed = finished.len();
    if let Some(seed) = manifest.plan.order_seed {
        tracing::info!(
            seed,
            "run order: the kernels of each cell and repeat shuffled"
        );
    }
    if resumed > 0 {
        tracing::info!(
            kept = resumed,
            to_run = pending.len(),
            "resuming {}",
            opts.results.display()
        );
    }

    // Kernels: every (variant, arch, flavour) a pending run needs, baseline
    // first: one build per flavour, whatever the number of its cells.
    let mut needed: Vec<KernelNeed> = vec![];
    for v in &opts.plan.variants {
        for c in &cells {
            let key = (v.name.clone(), c.arch, c.flavour);
            if pending
                .iter()
                .any(|s| s.variant == v.name && s.cell == c.id)
                && !needed.contains(&key)
            {
                needed.push(key);
            }
        }
    }
    let mut progress = Progress::new(needed.len() as u64, pending.len() as u64);
    let probes = EarlyProbes::new(opts.accel, opts.work.scratch());
    let (mut kernels, kernel_failures) = build_kernels(opts, &needed, &progress, &probes).await;
    rd::check_same_kernels(&opts.results, &manifest.kernels, &kernels)?;
    // Each build's .config, kept with the results for the reports to link.
    for k in &mut kernels {
        k.keep_config(&opts.results);
    }
    for k in &kernels {
        match manifest
            .kernels
            .iter_mut()
            .find(|m| m.is(&k.variant, k.arch, k.flavour))
        {
            // The same build (checked above): a resumed dir gets the copy.
            Some(m) => m.config = m.config.take().or_else(|| k.config.clone()),
            None => manifest.kernels.push(k.clone()),
        }
    }
    for f in &kernel_failures {
        manifest
            .failed_kernels
            .retain(|m| !(m.variant == f.variant && m.arch == f.arch && m.flavour == f.flavour));
        manifest.failed_kernels.push(VariantFailure {
            variant: f.variant.clone(),
            arch: f.arch,
            flavour: f.flavour,
            error: error_chain(&f.error),
            step: f.error.failed_step(),
        });
    }
    // A kernel that builds now clears an old failure.
    manifest
        .failed_kernels
        .retain(|f| !kernels.iter().any(|k| k.is(&f.variant, f.arch, f.flavour)));

    // Images of the script cells with pending runs: built or found in the
    // work dir once per recipe (scripts may share one), before any guest
    // starts.
    let mut images: BTreeMap<String, guest::AttachedImage> = BTreeMap::new();
    let mut by_recipe: BTreeMap<std::path::PathBuf, guest::AttachedImage> = BTreeMap::new();
    for c in &cells {
        let Some(script) = &c.job.script else {
            continue;
        };
        if images.contains_key(&script.name) || !pending.iter().any(|s| s.cell == c.id) {
            continue;
        }
        let def = opts
            .plan
            .scripts
            .get(&script.name)
            .expect("scripts of the plan");
        if let Some(image) = by_recipe.get(&def.recipe) {
            images.insert(script.name.clone(), image.clone());
            continue;
        }
        let b = crate::guest::image::ensure(
            &def.recipe,
            &opts.work,
            &crate::guest::image::BuildOptions::default(),
        )
        .await
        .map_err(|source| MatrixRunError::Image {
            script: script.name.clone(),
            source,
        })?;
        tracing::info!(
            image = %b.manifest.summary(),
            cached = b.cached,
            seconds = format!("{:.1}", b.total_s),
            "image"
        );
        let image = guest::AttachedImage {
            path: b.path,
            manifest: b.manifest,
        };
        by_recipe.insert(def.recipe.clone(), image.clone());
        images.insert(script.name.clone(), image);
    }

    // One accelerator decision per arch, probed with the first kernel built
    // while the others build.
    let scratch = opts.work.scratch();
    let mut accels: BTreeMap<Arch, AccelChoice> = BTreeMap::new();
    for k in &kernels {
        if accels.contains_key(&k.arch) {
            continue;
        }
        let guest = guest_bin::guest_init(k.arch).expect("checked in preflight");
        let choice = probes.choice(k.arch, &k.kernel, guest).await;
        tracing::info!(arch = %k.arch, accel = %choice.accel, note = %choice.note, "accelerator");
        manifest.accel.insert(
            k.arch.to_string(),
            format!("{} ({})", choice.accel, choice.note),
        );
        if let Some(v) = crate::host::facts::qemu_version(k.arch.qemu_binary()).await {
            manifest.host.qemu.insert(k.arch.to_string(), v);
        }
        accels.insert(k.arch, choice);
    }
    rd::write_manifest(&opts.results, &manifest)?;

    let cap = opts.capacity.unwrap_or_else(|| {
        let host = Host::this();
        schedule::capacity(host.cpus, host.memory_mb, opts.oversubscribe)
    });
    let runnable: Vec<&Slot> = pending
        .iter()
        .filter(|s| {
            let cell = opts.plan.cell(&s.cell).expect("slot of the plan");
            kernels
                .iter()
                .any(|k| k.is(&s.variant, cell.arch, cell.flavour))
        })
        .collect();
    tracing::info!(
        runs = runnable.len(),
        guest_vcpus = cap.vcpus,
        guest_memory_mb = cap.memory_mb,
        "starting guests"
    );

    let kernels = Arc::new(kernels);
    let guests_started = Instant::now();
    let mut used = Usage::default();
    let mut tasks: JoinSet<GuestTaskResult> = JoinSet::new();
    let mut failure: Option<MatrixRunError> = None;
    for slot in runnable {
        let cell = opts
            .plan
            .cell(&slot.cell)
            .expect("slot of the plan")
            .clone();
        let need = Need {
            vcpus: cell.vcpus,
            memory_mb: cell.memory_mb,
        };
        while !schedule::may_start(cap, used, need) {
            let r = tasks.join_next().await.expect("a guest is running");
            reap(r, &mut used, &mut progress, &mut finished, &mut failure);
        }
        if failure.is_some() {
            break;
        }
        used.add(need);
        progress.run_started(&slot.id());
        let kernel = kernels
            .iter()
            .find(|k| k.is(&slot.variant, cell.arch, cell.flavour))
            .expect("runnable slots have kernels")
            .kernel
            .clone();
        let accel = accels[&cell.arch].clone();
        let cfg = RunConfig {
            id: slot.id(),
            arch: cell.arch,
            accel: accel.accel,
            accel_note: accel.note,
            vcpus: cell.vcpus,
            memory_mb: cell.memory_mb,
            swap_mb: cell.swap_mb,
            kernel,
            guest_init: guest_bin::guest_init(cell.arch).expect("checked").to_vec(),
            timeout: opts
                .timeout
                .unwrap_or_else(|| guest::default_timeout(&cell.job)),
            job: cell.job.clone(),
            extra_cmdline: opts
                .plan
                .variants
                .iter()
                .find(|v| v.name == slot.variant)
                .map(|v| v.cmdline.clone())
                .unwrap_or_default(),
            retries: opts.retries,
            image: cell
                .job
                .script
                .as_ref()
                .and_then(|s| images.get(&s.name).cloned()),
        };
        let dir = rd::run_dir(&opts.results, slot);
        let scratch = scratch.clone();
        let slot = slot.clone();
        tasks.spawn(async move {
            let r = guest::run_guest(&cfg, &dir, &scratch).await;
            (slot, need, r)
        });
    }
    while let Some(r) = tasks.join_next().await {
        reap(r, &mut used, &mut progress, &mut finished, &mut failure);
    }
    progress.finish();
    let guests_wall = guests_started.elapsed();
    if let Some(e) = failure {
        return Err(e);
    }
    let runs = slots
        .iter()
        .map(|s| (s.clone(), finished.get(s).cloned()))
        .collect();
    Ok(MatrixOutcome {
        manifest,
        runs,
        resumed,
        kernel_failures,
        wall: t0.elapsed(),
        guests_wall,
    })
}

/// Was every run of the outcome completed?
pub fn all_completed(o: &MatrixOutcome) -> bool {
    o.runs.iter().all(|(_, r)| {
        r.as_ref()
            .is_some_and(|r| r.classification.outcome == Outcome::Completed)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seed_other_than_the_recorded_one_is_refused() {
        let root = std::path::Path::new("/r");
        // (recorded, asked, refused with)
        let cases: &[(Option<u64>, Option<u64>, Option<&str>)] = &[
            (Some(7), None, None),
            (Some(7), Some(7), None),
            (None, None, None),
            (
                Some(7),
                Some(8),
                Some("runs ordered by seed 7, not by --seed 8"),
            ),
            (
                None,
                Some(8),
                Some("runs ordered as the plan lists them (no seed), not by --seed 8"),
            ),
        ];
        for (recorded, asked, want) in cases {
            let got = check_seed(root, *recorded, *asked)
                .err()
                .map(|e| e.to_string());
            match want {
                None => assert_eq!(got, None, "{recorded:?} {asked:?}"),
                Some(w) => {
                    let got = got.unwrap_or_default();
                    assert!(got.contains(w) && got.contains("/r"), "{got}");
                }
            }
        }
    }
}
