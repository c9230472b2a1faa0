//! `mmci bench matrix` and `mmci bench schedule`: the matrix issue's speed
//! targets, measured on this machine (never in timed unit tests).
//!
//! - expanding and validating a 10,000-cell matrix: <= 200 ms;
//! - 8 one-vCPU guests on 2 cores: wall <= 1.15 x (sum of guest run times / 2),
//!   i.e. the scheduler keeps both cores busy.

use std::path::Path;
use std::time::Instant;

use crate::bench::boot::median;
use crate::host::paths::WorkDir;
use crate::matrix::{plan, Overrides};
use crate::run::accel::AccelRequest;
use crate::run::executor::{self as matrix_run, MatrixRunError};
use crate::run::request::RunRequest;

pub const TARGET_EXPANSION_MS: f64 = 200.0;
pub const TARGET_PACKING_RATIO: f64 = 1.15;

pub struct ExpansionBench {
    pub cells: usize,
    pub runs_ms: Vec<f64>,
}

/// Parses, expands and validates a `cells`-cell matrix `rounds` times.
pub fn expansion(
    cells: usize,
    rounds: usize,
) -> Result<ExpansionBench, crate::matrix::MatrixError> {
    let text = crate::matrix::synthetic::synthetic_matrix(cells);
    let mut runs_ms = vec![];
    let mut n = 0;
    for _ in 0..rounds {
        let t = Instant::now();
        let p = plan::from_text(
            &text,
            "synthetic.yaml",
            Path::new("."),
            &Overrides::default(),
        )?;
        let all: Vec<_> = p.cells.iter().collect();
        let slots = p.slots(&all);
        runs_ms.push(t.elapsed().as_secs_f64() * 1000.0);
        n = p.cells.len();
        std::hint::black_box(slots);
    }
    Ok(ExpansionBench { cells: n, runs_ms })
}

pub fn render_expansion(b: &ExpansionBench) -> String {
    let med = median(&b.runs_ms).unwrap_or(0.0);
    format!(
        "matrix expansion + validation, {} cells (median of {}): {:.1} ms (min {:.1}, max {:.1}); target {:.0} ms: {}\n",
        b.cells,
        b.runs_ms.len(),
        med,
        b.runs_ms.iter().copied().fold(f64::MAX, f64::min),
        b.runs_ms.iter().copied().fold(0.0, f64::max),
        TARGET_EXPANSION_MS,
        if med <= TARGET_EXPANSION_MS { "ok" } else { "MISSED" }
    )
}

pub struct PackingBench {
    pub guests: usize,
    pub host_vcpus: u32,
    pub wall_s: f64,
    pub guest_run_s: Vec<f64>,
    pub failures: Vec<String>,
}

impl PackingBench {
    /// wall / (sum of guest run times / cores): 1.0 is perfect packing.
    pub fn ratio(&self) -> f64 {
        let ideal = self.guest_run_s.iter().sum::<f64>() / self.host_vcpus as f64;
        if ideal == 0.0 {
            f64::INFINITY
        } else {
            self.wall_s / ideal
        }
    }
}

/// Runs `guests` one-vCPU smoke guests (the bundled kernel, TCG or KVM as
/// probed) through the real scheduler with `host_vcpus` vCPUs of capacity.
pub async fn packing(
    work: &WorkDir,
    guests: usize,
    host_vcpus: u32,
    accel: AccelRequest,
    duration_s: u64,
) -> Result<PackingBench, MatrixRunError> {
    let smoke = crate::matrix::source_matrix_dir().join("smoke.yaml");
    let results = work
        .scratch()
        .join(format!("bench-packing-{}", std::process::id()));
    let req = RunRequest {
        matrix: Some(smoke),
        overrides: Overrides {
            sets: vec![format!("duration_s={duration_s}"), "vcpus=1".into()],
            repeats: Some(guests as u32),
            variants: None,
            max_repeats: None,
        },
        accel,
        retries: 0,
        guest_vcpus: Some(host_vcpus),
        guest_memory_mb: Some(
            crate::matrix::schedule::capacity(1, crate::host::facts::memory_mb(), 1.0).memory_mb,
        ),
        ..RunRequest::new(results.clone())
    };
    let opts = crate::run::request::matrix_options(req, work.clone())
        .await
        .expect("the bundled smoke matrix is valid");
    let outcome = matrix_run::run_matrix(&opts).await;
    let _ = std::fs::remove_dir_all(&results);
    let outcome = outcome?;
    let mut b = PackingBench {
        guests,
        host_vcpus,
        wall_s: outcome.guests_wall.as_secs_f64(),
        guest_run_s: vec![],
        failures: vec![],
    };
    for (slot, r) in &outcome.runs {
        match r {
            Some(r) => {
                // The guest's run time as the host saw it: QEMU's lifetime
                // plus mmci's own per-run work (initramfs, disks, results).
                b.guest_run_s.push(r.timing.total_ms / 1000.0);
                if r.classification.outcome != crate::run::outcome::Outcome::Completed {
                    b.failures
                        .push(format!("{}: {}", slot.id(), r.classification.reason));
                }
            }
            None => b.failures.push(format!("{}: not run", slot.id())),
        }
    }
    Ok(b)
}

pub fn render_packing(b: &PackingBench) -> String {
    let sum: f64 = b.guest_run_s.iter().sum();
    let mut out = format!(
        "{} one-vCPU guests on {} vCPUs of capacity: wall {:.1} s, sum of guest run times {:.1} s (median {:.1} s), ideal {:.1} s\nratio wall / ideal: {:.3}; target {:.2}: {}\n",
        b.guests,
        b.host_vcpus,
        b.wall_s,
        sum,
        median(&b.guest_run_s).unwrap_or(0.0),
        sum / b.host_vcpus as f64,
        b.ratio(),
        TARGET_PACKING_RATIO,
        if b.ratio() <= TARGET_PACKING_RATIO { "ok" } else { "MISSED" }
    );
    for f in &b.failures {
        out.push_str(&format!("failed: {f}\n"));
    }
    out
}
