//! Synthetic results dirs in memory (deterministic pseudo-random metrics
//! in the shape of real scenario A runs): the analysis benchmark's input and
//! test data for the analysis and the renderers at scale.

use std::collections::BTreeMap;
use std::path::Path;

use mmci_record::ThrottleStat;

use crate::analysis::model::RunSeries;
use crate::guest::vm::Accel;
use crate::matrix::file::{ExpectKind, Expectation};
use crate::matrix::{plan, Overrides, Variant};
use crate::results::dir::{Host, Manifest, MANIFEST_FORMAT};
use crate::results::outcome::{Classification, Outcome};
use crate::results::{KernelInfo, RunResult, Timing, RESULT_FORMAT};
use crate::scenario::{MglruMetrics, ScenarioMetrics, THROTTLE_ISOLATED};

/// xorshift64*: reproducible noise without a dependency.
struct Noise(u64);

impl Noise {
    fn next(&mut self) -> f64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) as f64 / (1u64 << 53) as f64
    }

    /// `v` give or take `spread` (relative).
    fn around(&mut self, v: f64, spread: f64) -> u64 {
        (v * (1.0 + spread * (2.0 * self.next() - 1.0))).max(0.0) as u64
    }
}

/// A synthetic results dir in memory: the manifest, `runs` runs, their series.
pub fn synthetic(runs: usize) -> (Manifest, BTreeMap<String, RunResult>, Vec<RunSeries>) {
    let repeats = 5u32;
    let cells = (runs / (2 * repeats as usize)).max(1);
    // A recorded dir of 5 runs a kernel with no budget: one look.
    let over = Overrides {
        repeats: Some(repeats),
        max_repeats: Some(0),
        variants: Some(vec![
            Variant::base(),
            Variant {
                name: "patched".into(),
                series: Some(crate::series::SeriesSpec::Lore {
                    message_id: "<synthetic@mmci>".into(),
                    base_url: crate::series::fetch::LORE_URL.into(),
                }),
                ..Variant::base()
            },
        ]),
        ..Default::default()
    };
    let mut p = plan::from_text(
        &crate::matrix::synthetic::synthetic_matrix(cells),
        "synthetic.yaml",
        Path::new("."),
        &over,
    )
    .expect("the synthetic matrix is valid");
    p.cells.truncate(cells);
    p.expect = [
        ("throttle_isolated", ExpectKind::Nonzero),
        ("nr_isolated_peak", ExpectKind::Increase),
        ("oom_kills", ExpectKind::NoRegression),
        ("touches", ExpectKind::NoRegression),
    ]
    .into_iter()
    .map(|(k, e)| (k.to_string(), Expectation::Kind(e)))
    .collect();
    synthetic_for(p)
}

/// Synthetic runs of every slot of `p`, in a results dir of `p` without
/// kernels (a test adds the ones it renders).
pub fn synthetic_for(
    p: crate::matrix::Plan,
) -> (Manifest, BTreeMap<String, RunResult>, Vec<RunSeries>) {
    let manifest = Manifest {
        format: MANIFEST_FORMAT,
        mmci_version: env!("CARGO_PKG_VERSION").into(),
        mmci_commit: None,
        plan_id: p.fingerprint(),
        plan: p.clone(),
        shards: None,
        host: Host {
            hostname: "synthetic".into(),
            cpus: 2,
            memory_mb: 8192,
            ..Default::default()
        },
        accel: BTreeMap::new(),
        kernels: vec![],
        failed_kernels: vec![],
        created_unix: 0,
    };
    let mut noise = Noise(0x9E37_79B9_7F4A_7C15);
    let mut results = BTreeMap::new();
    let mut series = Vec::new();
    let all: Vec<_> = p.cells.iter().collect();
    for slot in p.slots(&all) {
        let patched = slot.variant == "patched";
        let mut m = MglruMetrics {
            memcg_max_events: noise.around(600.0, 0.2),
            nr_isolated_peak: if patched { noise.around(230.0, 0.3) } else { 0 },
            touches: noise.around(if patched { 48_000.0 } else { 40_000.0 }, 0.1),
            workload_ms: noise.around(20_000.0, 0.02),
            pgscan: noise.around(80_000.0, 0.1),
            pgsteal: noise.around(28_000.0, 0.1),
            pswpin: noise.around(20_000.0, 0.15),
            pswpout: noise.around(30_000.0, 0.15),
            pgmajfault: noise.around(19_000.0, 0.15),
            workingset_refault_anon: noise.around(20_000.0, 0.15),
            psi_some_us: noise.around(17e6, 0.2),
            psi_full_us: noise.around(13e6, 0.2),
            ..Default::default()
        };
        m.reclaimed_per_isolated = Some(m.pgsteal as f64 / m.pgscan as f64);
        // Derived, not drawn: a draw would move every later value.
        (m.pgsteal_kswapd, m.pgsteal_direct) = (m.pgsteal / 100, m.pgsteal - m.pgsteal / 100);
        if patched {
            let count = noise.around(35_000.0, 0.2);
            m.throttle.insert(
                THROTTLE_ISOLATED.into(),
                ThrottleStat {
                    count,
                    usec_delayed_sum: count * 100,
                    usec_delayed_max: 100_000,
                    early_wakes: Some(count / 2),
                },
            );
            m.isolated_by_task =
                [("mmci-w0".to_string(), m.throttle[THROTTLE_ISOLATED].clone())].into();
        }
        let mut s = RunSeries {
            run: slot.id(),
            cell: slot.cell.clone(),
            variant: slot.variant.clone(),
            repeat: slot.repeat,
            ..Default::default()
        };
        for i in 1..=20u64 {
            s.t_ms.push(i * 1000);
            let iso = noise.around(m.nr_isolated_peak as f64 / 2.0, 0.9);
            s.nr_isolated.push(iso);
            s.nr_isolated_anon.push(iso);
            s.nr_isolated_file.push(0);
            s.mem_free_kb.push(noise.around(800_000.0, 0.05));
            s.memcg_current_bytes.push(noise.around(16e6, 0.05));
            s.touches.push(m.touches * i / 20);
        }
        series.push(s);
        results.insert(slot.id(), synthetic_run(&slot.id(), m));
    }
    (manifest, results, series)
}

fn synthetic_run(id: &str, metrics: MglruMetrics) -> RunResult {
    RunResult {
        format: RESULT_FORMAT,
        mmci_version: env!("CARGO_PKG_VERSION").into(),
        id: id.into(),
        started_unix: 0,
        classification: Classification {
            outcome: Outcome::Completed,
            reason: "completed".into(),
            crash_report: None,
        },
        accel: Accel::Kvm,
        accel_note: "synthetic".into(),
        arch: crate::arch::Arch::X86_64,
        vcpus: 2,
        memory_mb: 1024,
        swap_mb: 256,
        kernel: KernelInfo {
            image: "vmlinux".into(),
            release: "6.12".into(),
            tree: None,
            tree_commit: None,
            build_key: None,
            series_hash: None,
            head_commit: None,
            build_sandboxed: None,
            build_warnings: vec![],
            series: None,
            patchwork: None,
            flavour: crate::kernel::Flavour::Default,
            upstream: None,
            compiler: None,
            thp: None,
            config: None,
        },
        job: Default::default(),
        attempts: 1,
        qemu_exit: None,
        timed_out: false,
        bad_lines: vec![],
        metrics: ScenarioMetrics::Mglru(metrics),
        image: None,
        splats: vec![],
        timing: Timing::default(),
    }
}
