//! A matrix file becomes a validated [`Plan`] before anything runs: cells
//! with stable ids and fully resolved guest jobs, kernel variants with
//! resolved paths, the run order, shards and a cost estimate.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use mmci_record::{GuestJob, ScriptJob};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::expand::{self, Combo, Placed};
use super::file::{self, Expectation, KernelEntry, MatrixFile, Pos, Scalar, ScriptEntry};
use crate::arch::Arch;
use crate::kernel::Flavour;
use crate::scenario::DeclaredMetric;

pub mod budget;
mod cell;
pub mod expectations;
mod limits;
pub mod order;
mod regimes;
mod scripts;
mod shard;
mod variant;

pub use cell::*;
pub use limits::{MAX_DURATION_S, MAX_MEMORY_MB, MAX_SWAP_MB, MAX_VERITY_MB};
pub use order::*;
pub use scripts::*;
pub use shard::*;
pub use variant::*;

/// Keys the host interprets; every other key is a guest job parameter.
pub const MACHINE_KEYS: [&str; 4] = ["arch", "vcpus", "memory_mb", "swap_mb"];

/// What the guest sets up beyond a cell's job, as a version in every plan
/// fingerprint: bumped when runs of the same cells stop being comparable
/// with the runs before, so that a results dir of old runs is neither
/// resumed nor merged into (cell ids stay, so old dirs still read).
/// 2: guest-init sets THP (the `thp` parameter, default never); runs
/// before it had the kernel's default, always, and their jobs no `thp`.
pub const GUEST_SETUP: u32 = 2;

/// Machine shape when a matrix does not say.
pub const DEFAULT_VCPUS: u32 = 2;
pub const DEFAULT_MEMORY_MB: u64 = 1024;
pub const DEFAULT_SWAP_MB: u64 = 256;

/// Most cells a matrix may have (axes' product, before `exclude`, plus
/// `include` entries): a plan is expanded in memory, and a matrix larger
/// than this is a typo (an axis pasted twice) more often than a plan.
pub const MAX_CELLS: u64 = 10_000;
/// Most runs a plan may have (cells x kernels x repeats): at ~15 s a run
/// that is weeks of one host; results dirs and reports hold every run.
pub const MAX_RUNS: u64 = 100_000;
/// Largest matrix file read, in bytes.
pub const MAX_FILE_BYTES: u64 = 1 << 20;

/// A matrix error: file, position and what to do.
#[derive(Debug, thiserror::Error)]
#[error("{file}: {pos}{what}")]
pub struct MatrixError {
    pub file: String,
    /// "line L column C: " when known.
    pub pos: String,
    pub what: String,
}

impl MatrixError {
    /// The message quotes values from the file: its control characters
    /// are escaped (`\u{1b}`), so that an error cannot write to the
    /// terminal through them.
    fn at(file: &str, pos: Option<Pos>, what: impl Into<String>) -> MatrixError {
        let what: String = what.into();
        MatrixError {
            file: file.to_string(),
            pos: pos.map(|p| format!("{p}: ")).unwrap_or_default(),
            what: what
                .chars()
                .map(|c| match c.is_control() {
                    true => c.escape_default().to_string(),
                    false => c.to_string(),
                })
                .collect(),
        }
    }
}

/// One machine + workload combination; every kernel variant runs it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Cell {
    /// Stable id: derived from the resolved parameters, so reordering the
    /// file or adding other cells never renames it (resume and merge rely
    /// on this).
    pub id: String,
    /// The values the matrix set, `key=value` (what tells cells apart).
    pub label: String,
    pub arch: Arch,
    pub vcpus: u32,
    pub memory_mb: u64,
    pub swap_mb: u64,
    /// The kernel flavour its runs boot (`config:`); a default one is left
    /// out, so plans without flavours serialize as they always did.
    #[serde(default, skip_serializing_if = "Flavour::is_default")]
    pub flavour: Flavour,
    pub job: GuestJob,
    /// The regime the matrix's `regimes:` says this cell was calibrated
    /// for (absent: none said).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub regime: Option<file::BaseOom>,
}

/// A validated matrix.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    /// Where it came from (a path, or `embedded:default.yaml`).
    pub source: String,
    pub description: Option<String>,
    pub cells: Vec<Cell>,
    pub variants: Vec<Variant>,
    pub repeats: u32,
    pub expect: BTreeMap<String, Expectation>,
    /// The matrix's `scripts:`, resolved (scenario script).
    #[serde(default)]
    pub scripts: BTreeMap<String, ScriptDef>,
    /// The seed of the run order ([`run_order`]): each block's kernels
    /// shuffled. Set when a results dir is made (`mmci run --seed`, else a
    /// fresh one) and read back on resume; not part of the fingerprint, so
    /// shards and resumes of one plan match whatever their seeds. `None`
    /// (a plan not run yet, or a results dir from before the seed): the
    /// plan's order, the baseline first in every block.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub order_seed: Option<u64>,
    /// The sequential budget: the runs a side a cell whose verdict is still
    /// undecided may reach (`mmci run --max-repeats`, the matrix's
    /// `max_repeats:`; see [`budget`]). `None`: no budget. Not part of the
    /// fingerprint, as [`Plan::extra_repeats`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_repeats: Option<u32>,
    /// Per cell id, the runs a kernel the budget added after the planned
    /// [`Plan::repeats`] (numbered on from them). Recorded in the results
    /// dir's manifest before they run, so that a resume runs them too; not
    /// part of the fingerprint: the plan is the same, it has more runs.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub extra_repeats: BTreeMap<String, u32>,
}

/// A script of the plan: where its image's recipe is and what it reports.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ScriptDef {
    /// The image's recipe folder, absolute.
    pub recipe: PathBuf,
    /// Its name (the folder's).
    pub image: String,
    /// Its declared `MMCI-METRIC:` metrics.
    pub metrics: BTreeMap<String, DeclaredMetric>,
    /// The job part every cell that selects it gets.
    pub job: ScriptJob,
}

/// One guest run of the plan.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Slot {
    pub cell: String,
    pub variant: String,
    /// 1-based.
    pub repeat: u32,
}

impl Slot {
    /// Directory name of the run in a results dir.
    pub fn id(&self) -> String {
        format!("{}-{}-r{}", self.cell, self.variant, self.repeat)
    }
}

/// What the command line adds to a matrix file.
#[derive(Clone, Debug, Default)]
pub struct Overrides {
    /// `--set key=value`, applied to every cell after the matrix's values.
    pub sets: Vec<String>,
    /// Replace the file's kernel variants.
    pub variants: Option<Vec<Variant>>,
    pub repeats: Option<u32>,
    /// `--max-repeats`: the sequential budget (0: none), over the matrix's.
    pub max_repeats: Option<u32>,
}

/// Validates `m` (read from `file`, relative paths against `base_dir`)
/// into a plan.
pub fn plan(
    m: &MatrixFile,
    file: &str,
    base_dir: &Path,
    over: &Overrides,
) -> Result<Plan, MatrixError> {
    let axis_names: BTreeSet<String> = m.axes.keys().cloned().collect();
    check_keys(
        file,
        m.axes.iter().map(|(k, v)| (k.clone(), Pos::of(v))),
        None,
        "axes",
    )?;
    let axes: BTreeMap<String, Vec<Placed>> = m
        .axes
        .iter()
        .map(|(k, vs)| (k.clone(), vs.value.iter().map(placed).collect()))
        .collect();
    let exclude: Vec<Combo> = m.exclude.iter().map(|e| to_combo(&e.value)).collect();
    for (e, raw) in exclude.iter().zip(&m.exclude) {
        check_keys(
            file,
            e.keys().map(|k| (k.clone(), Pos::of(raw))),
            Some(&axis_names),
            "exclude",
        )?;
    }
    let include: Vec<Combo> = m.include.iter().map(|e| to_combo(&e.value)).collect();
    for (e, raw) in include.iter().zip(&m.include) {
        check_keys(
            file,
            e.keys().map(|k| (k.clone(), Pos::of(raw))),
            None,
            "include",
        )?;
    }
    // Count before expanding: 10^6 x 10^6 must be an error, not an
    // allocation failure.
    let product = axes
        .values()
        .try_fold(1u64, |n, vs| n.checked_mul(vs.len() as u64))
        .and_then(|n| n.checked_add(include.len() as u64));
    if product.is_none_or(|n| n > MAX_CELLS) {
        let sizes = axes
            .iter()
            .map(|(k, vs)| format!("{k} {}", vs.len()))
            .collect::<Vec<_>>()
            .join(" x ");
        return Err(MatrixError::at(
            file,
            None,
            format!(
                "the axes give {} combinations ({sizes}); the limit is {MAX_CELLS} cells (MAX_CELLS): split the matrix or use fewer values",
                product.map_or("more than 2^64".to_string(), |n| n.to_string())
            ),
        ));
    }
    let scripts = m
        .scripts
        .iter()
        .map(|(name, e)| {
            resolve_script(name, &e.value, base_dir)
                .map(|d| (name.clone(), d))
                .map_err(|what| MatrixError::at(file, Some(Pos::of(e)), what))
        })
        .collect::<Result<BTreeMap<_, _>, _>>()?;
    let combos = expand::expand(&axes, &exclude, &include);
    // Labels show what tells cells apart: the keys whose values vary
    // (absent in some combination counts as varying). One pass.
    let mut first: BTreeMap<&String, Option<&Scalar>> = BTreeMap::new();
    let mut varying: BTreeSet<&String> = BTreeSet::new();
    for c in &combos {
        for (k, v) in c {
            match first.get(k) {
                None => {
                    first.insert(k, Some(&v.value));
                }
                Some(seen) if *seen != Some(&v.value) => {
                    varying.insert(k);
                }
                Some(_) => {}
            }
        }
    }
    for k in first.keys() {
        if combos.iter().any(|c| !c.contains_key(*k)) {
            varying.insert(k);
        }
    }
    let mut cells = Vec::with_capacity(combos.len());
    let mut seen = BTreeSet::new();
    for c in &combos {
        let mut cell = cell_of(c, &over.sets, file, &scripts)?;
        // What tells cells apart (nothing in a one-cell matrix), and a
        // flavour other than the default always: a debug kernel's numbers
        // are not the ones of the kernel as shipped, whatever else varies.
        let mut pairs: Vec<(String, String)> = c
            .iter()
            .filter(|(k, _)| varying.contains(k))
            .map(|(k, v)| (k.clone(), v.value.to_string()))
            .collect();
        if !cell.flavour.is_default() {
            pairs.retain(|(k, _)| k != FLAVOUR_KEY);
            pairs.push((FLAVOUR_KEY.to_string(), cell.flavour.to_string()));
            pairs.sort();
        }
        cell.label = pairs
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(" ");
        // Two combinations that resolve to the same guest are one cell.
        if seen.insert(cell.id.clone()) {
            cells.push(cell);
        }
    }
    if cells.is_empty() {
        return Err(MatrixError::at(
            file,
            None,
            "the matrix has no cells (every combination excluded, or an axis without values)",
        ));
    }
    regimes::assign(&m.regimes, file, &mut cells, &scripts)?;
    let repeats = over
        .repeats
        .or(m.repeats.as_ref().map(|r| r.value))
        .unwrap_or(1);
    if repeats == 0 {
        return Err(MatrixError::at(
            file,
            m.repeats.as_ref().map(Pos::of),
            "repeats must be at least 1",
        ));
    }
    let variants = match &over.variants {
        Some(v) => v.clone(),
        None if m.kernels.is_empty() => vec![Variant::base()],
        None => m
            .kernels
            .iter()
            .map(|k| resolve_variant(&k.value, base_dir, file, Pos::of(k)))
            .collect::<Result<_, _>>()?,
    };
    let mut names = BTreeSet::new();
    for v in &variants {
        if !names.insert(v.name.clone()) {
            return Err(MatrixError::at(
                file,
                None,
                format!("kernel `{}` is listed twice", v.name),
            ));
        }
    }
    let runs = (cells.len() as u64)
        .checked_mul(variants.len() as u64)
        .and_then(|n| n.checked_mul(u64::from(repeats)));
    if runs.is_none_or(|n| n > MAX_RUNS) {
        return Err(MatrixError::at(
            file,
            m.repeats.as_ref().map(Pos::of),
            format!(
                "{} cells x {} kernels x {repeats} repeats = {} runs; the limit is {MAX_RUNS} runs (MAX_RUNS): use fewer repeats or cells, or shard the plan over several results dirs",
                cells.len(),
                variants.len(),
                runs.map_or("more than 2^64".to_string(), |n| n.to_string())
            ),
        ));
    }
    // Expectations name catalog metrics measured by some cell.
    let measured = expectations::of_cells(&cells, &scripts);
    for (name, e) in &m.expect {
        expectations::validate(name, &e.value, &measured)
            .map_err(|err| MatrixError::at(file, Some(Pos::of(e)), err.to_string()))?;
    }
    // A kernel's own: at its entry (YAML positions inside an entry are
    // not kept), the kernel named.
    for k in &m.kernels {
        for (name, e) in &k.value.expect {
            expectations::validate(name, e, &measured).map_err(|err| {
                MatrixError::at(
                    file,
                    Some(Pos::of(k)),
                    format!("kernel `{}`: {err}", k.value.name),
                )
            })?;
        }
    }
    if let Some(k) = m.kernels.first().filter(|k| !k.value.expect.is_empty()) {
        return Err(MatrixError::at(
            file,
            Some(Pos::of(k)),
            format!(
                "kernel `{}` is the baseline: its `expect:` would compare it with itself; put it on a candidate",
                k.value.name
            ),
        ));
    }
    let max_repeats = budget::resolve(
        over.max_repeats,
        m.max_repeats.as_ref().map(|r| r.value),
        repeats,
    )
    .map_err(|what| match over.max_repeats {
        Some(_) => MatrixError::at("command line", None, what),
        None => MatrixError::at(file, m.max_repeats.as_ref().map(Pos::of), what),
    })?;
    let explicit = over.max_repeats.is_some() || m.max_repeats.is_some();
    let mut plan = Plan {
        source: file.to_string(),
        description: m.description.clone(),
        cells,
        variants,
        repeats,
        expect: m
            .expect
            .iter()
            .map(|(k, v)| (k.clone(), v.value.clone()))
            .collect(),
        scripts,
        order_seed: None,
        max_repeats,
        extra_repeats: BTreeMap::new(),
    };
    budget::check_runs(&mut plan, file, explicit)?;
    Ok(plan)
}

/// Reads, parses and validates a matrix file.
pub fn load(path: &Path, over: &Overrides) -> Result<Plan, MatrixError> {
    let file = path.display().to_string();
    let cannot = |e: std::io::Error| MatrixError::at(&file, None, format!("cannot read: {e}"));
    // A regular file, capped by the bytes read: a FIFO without a writer
    // would block, /dev/zero never end.
    let text = crate::host::fs::read_capped_to_string(
        path,
        MAX_FILE_BYTES,
        "MAX_FILE_BYTES",
        crate::host::fs::Accept::Regular,
    )
    .map_err(|e| {
        if e.kind() == std::io::ErrorKind::FileTooLarge {
            MatrixError::at(
                &file,
                None,
                format!("more than {MAX_FILE_BYTES} bytes; the limit for a matrix file is {MAX_FILE_BYTES} bytes (MAX_FILE_BYTES)"),
            )
        } else {
            cannot(e)
        }
    })?;
    let base_dir = path.parent().unwrap_or(Path::new("."));
    from_text(&text, &file, base_dir, over)
}

/// Parses and validates matrix text.
pub fn from_text(
    text: &str,
    file: &str,
    base_dir: &Path,
    over: &Overrides,
) -> Result<Plan, MatrixError> {
    let m = file::parse(text).map_err(|what| MatrixError::at(file, None, what))?;
    plan(&m, file, base_dir, over)
}

impl Plan {
    /// Every run in the plan's order: per repeat, per cell, the variants
    /// back to back (A B A B ...), so that drift of a noisy host hits base
    /// and candidates alike. They run in [`run_order`]'s order: the same
    /// blocks, each one's kernels shuffled by [`Plan::order_seed`]. A cell
    /// with runs the budget added ([`Plan::extra_repeats`]) has its
    /// repeats after the planned ones, in blocks like them.
    pub fn slots(&self, cells: &[&Cell]) -> Vec<Slot> {
        let mut out = Vec::with_capacity(cells.len() * self.variants.len() * self.repeats as usize);
        for repeat in 1..=self.most_repeats() {
            for cell in cells.iter().filter(|c| repeat <= self.repeats_of(&c.id)) {
                for v in &self.variants {
                    out.push(Slot {
                        cell: cell.id.clone(),
                        variant: v.name.clone(),
                        repeat,
                    });
                }
            }
        }
        out
    }

    pub fn cell(&self, id: &str) -> Option<&Cell> {
        self.cells.iter().find(|c| c.id == id)
    }

    /// A hash of what the plan runs: cells, variants, repeats, and what
    /// the guest sets up ([`GUEST_SETUP`]). Results dirs and shards of the
    /// same plan share it.
    pub fn fingerprint(&self) -> String {
        // Cell ids stand for their full configuration; labels are cosmetic.
        let canonical = serde_json::json!({
            "guest_setup": GUEST_SETUP,
            "cells": self.cells.iter().map(|c| &c.id).collect::<Vec<_>>(),
            "variants": self.variants.iter().map(|v| {
                // The manifest's form: fingerprints stay what they were
                // before the series sources were one type.
                let v = VariantRepr::from(v.clone());
                let mut j = serde_json::json!({
                    "name": v.name,
                    "series": v.series.as_ref().map(|p| file_digest(p)),
                    "lore": v.lore, "github_pr": v.github_pr, "tree": v.tree.as_deref().map(crate::kernel::tree::redact_url), "ref": v.git_ref,
                    "image": v.image,
                });
                // Only when set: plans without it keep their fingerprints.
                if let Some(pw) = &v.patchwork {
                    j["patchwork"] = serde_json::json!(pw);
                }
                if let Some(n) = v.revision {
                    j["revision"] = serde_json::json!(n);
                }
                if let Some(p) = &v.patches {
                    j["patches"] = serde_json::json!(p);
                }
                if !v.cmdline.is_empty() {
                    j["cmdline"] = serde_json::json!(v.cmdline);
                }
                j
            }).collect::<Vec<_>>(),
            "repeats": self.repeats,
        });
        hex::encode(Sha256::digest(canonical.to_string().as_bytes()))[..16].to_string()
    }
}

#[cfg(test)]
mod tests;
