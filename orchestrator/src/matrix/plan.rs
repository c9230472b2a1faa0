//! A matrix file becomes a validated [`Plan`] before anything runs: cells
//! with stable ids and fully resolved guest jobs, kernel variants with
//! resolved paths, the run order, shards and a cost estimate.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use mmci_record::{GuestJob, Scenario, ScriptJob};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::expand::{self, Combo, Placed};
use super::file::{self, Expectation, KernelEntry, MatrixFile, Pos, Scalar, ScriptEntry};
use crate::arch::Arch;
use crate::kernel::Flavour;
use crate::scenario::script::MetricDecl;

/// Keys the host interprets; every other key is a guest job parameter.
pub const MACHINE_KEYS: [&str; 4] = ["arch", "vcpus", "memory_mb", "swap_mb"];

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
    fn at(file: &str, pos: Option<Pos>, what: impl Into<String>) -> MatrixError {
        MatrixError {
            file: file.to_string(),
            pos: pos.map(|p| format!("{p}: ")).unwrap_or_default(),
            what: what.into(),
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
}

/// A kernel variant, paths resolved.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Variant {
    pub name: String,
    pub series: Option<PathBuf>,
    pub lore: Option<String>,
    /// OWNER/REPO#N.
    #[serde(default)]
    pub github_pr: Option<String>,
    /// A series on patchwork.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub patchwork: Option<crate::series::patchwork::SeriesRef>,
    /// Written to manifests with its credentials masked (see
    /// [`crate::kernel::tree::redact_url`]).
    #[serde(serialize_with = "serialize_redacted_url")]
    pub tree: Option<String>,
    pub git_ref: Option<String>,
    /// A prebuilt image (`mmci run --kernel`).
    pub image: Option<PathBuf>,
    /// The series given on the command line (`--series`, `--lore`,
    /// `--github-pr`); `series`/`lore` then only describe it.
    #[serde(default)]
    pub from_command_line: bool,
    /// Revision N of the series instead of the newest complete one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revision: Option<u32>,
}

fn serialize_redacted_url<S: serde::Serializer>(
    url: &Option<String>,
    s: S,
) -> Result<S::Ok, S::Error> {
    url.as_deref()
        .map(crate::kernel::tree::redact_url)
        .serialize(s)
}

impl Variant {
    pub fn base() -> Variant {
        Variant {
            name: "base".into(),
            series: None,
            lore: None,
            github_pr: None,
            patchwork: None,
            tree: None,
            git_ref: None,
            image: None,
            from_command_line: false,
            revision: None,
        }
    }

    /// What this variant is, for reports: `base tree`, `series x.mbox`, ...
    pub fn describe(&self) -> String {
        let mut parts = vec![];
        if let Some(i) = &self.image {
            parts.push(format!("image {}", i.display()));
        }
        let tree = self.tree.as_deref().map(crate::kernel::tree::redact_url);
        match (tree, &self.git_ref) {
            (Some(t), Some(r)) => parts.push(format!("tree {t} {r}")),
            (Some(t), None) => parts.push(format!("tree {t}")),
            _ => {}
        }
        let revision = self
            .revision
            .map(|n| format!(" (v{n})"))
            .unwrap_or_default();
        if let Some(s) = &self.series {
            parts.push(format!("series {}{revision}", s.display()));
        }
        if let Some(l) = &self.lore {
            parts.push(format!("lore {l}{revision}"));
        }
        if let Some(pr) = &self.github_pr {
            parts.push(format!("pull request {pr}"));
        }
        if let Some(pw) = &self.patchwork {
            parts.push(format!("patchwork series {} ({})", pw.series, pw.url));
        }
        if parts.is_empty() {
            "base tree".into()
        } else {
            parts.join(", ")
        }
    }
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
}

/// A script of the plan: where its image's recipe is and what it reports.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ScriptDef {
    /// The image's recipe folder, absolute.
    pub recipe: PathBuf,
    /// Its name (the folder's).
    pub image: String,
    /// Its declared `MMCI-METRIC:` metrics.
    pub metrics: BTreeMap<String, MetricDecl>,
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
}

fn placed(v: &serde_saphyr::Spanned<Scalar>) -> Placed {
    Placed {
        value: v.value.clone(),
        pos: Pos::of(v),
    }
}

fn to_combo(entry: &BTreeMap<String, serde_saphyr::Spanned<Scalar>>) -> Combo {
    entry.iter().map(|(k, v)| (k.clone(), placed(v))).collect()
}

/// The key that selects one of the matrix's `scripts:`.
pub const SCRIPT_KEY: &str = "script";
/// The key that selects the kernel flavour (`config: [default, debug]`).
pub const FLAVOUR_KEY: &str = "config";

fn known_key(k: &str) -> bool {
    MACHINE_KEYS.contains(&k)
        || GuestJob::PARAM_KEYS.contains(&k)
        || k == SCRIPT_KEY
        || k == FLAVOUR_KEY
}

fn known_keys_hint() -> String {
    let mut all: Vec<&str> = MACHINE_KEYS.to_vec();
    all.extend(GuestJob::PARAM_KEYS);
    all.push(SCRIPT_KEY);
    all.push(FLAVOUR_KEY);
    all.join(", ")
}

/// Sets one key of a cell from its text; the error says what was expected.
fn apply(
    cell: &mut Cell,
    key: &str,
    text: &str,
    scripts: &BTreeMap<String, ScriptDef>,
) -> Result<(), String> {
    let bad = |expected: &str| format!("{key}: `{text}` is not {expected}");
    match key {
        SCRIPT_KEY => {
            let def = scripts.get(text).ok_or_else(|| {
                if scripts.is_empty() {
                    format!("script `{text}`: this matrix has no `scripts:` section")
                } else {
                    format!(
                        "script `{text}` is not one of the matrix's scripts ({})",
                        scripts.keys().cloned().collect::<Vec<_>>().join(", ")
                    )
                }
            })?;
            cell.job.script = Some(def.job.clone());
            cell.job.scenario = Scenario::Script;
        }
        FLAVOUR_KEY => cell.flavour = text.parse().map_err(|e| format!("{key}: {e}"))?,
        "arch" => cell.arch = text.parse().map_err(|_| bad("an arch (x86_64, arm64)"))?,
        "vcpus" => {
            cell.vcpus = text
                .parse()
                .ok()
                .filter(|n| (1..=64).contains(n))
                .ok_or_else(|| bad("a vCPU count from 1 to 64"))?
        }
        "memory_mb" => {
            cell.memory_mb = text
                .parse()
                .ok()
                .filter(|n| *n >= 128)
                .ok_or_else(|| bad("a size in MiB of at least 128"))?
        }
        "swap_mb" => cell.swap_mb = text.parse().map_err(|_| bad("a size in MiB"))?,
        _ if !known_key(key) => {
            return Err(format!(
                "unknown key `{key}`; known keys: {}",
                known_keys_hint()
            ))
        }
        _ => cell.job.set(key, text).map_err(|e| e.to_string())?,
    }
    Ok(())
}

/// Turns one combination, then the command line's `--set`s, into a cell.
fn cell_of(
    combo: &Combo,
    sets: &[String],
    file: &str,
    scripts: &BTreeMap<String, ScriptDef>,
) -> Result<Cell, MatrixError> {
    let mut cell = Cell {
        id: String::new(),
        label: combo
            .iter()
            .map(|(k, v)| format!("{k}={}", v.value))
            .collect::<Vec<_>>()
            .join(" "),
        arch: Arch::X86_64,
        vcpus: DEFAULT_VCPUS,
        memory_mb: DEFAULT_MEMORY_MB,
        swap_mb: DEFAULT_SWAP_MB,
        flavour: Flavour::Default,
        job: GuestJob::default(),
    };
    for (key, v) in combo {
        apply(&mut cell, key, &v.value.to_string(), scripts)
            .map_err(|what| MatrixError::at(file, Some(v.pos), what))?;
    }
    for s in sets {
        let (k, v) = s.split_once('=').ok_or_else(|| {
            MatrixError::at(
                "command line",
                None,
                format!("--set {s}: expected KEY=VALUE"),
            )
        })?;
        apply(&mut cell, k, v, scripts)
            .map_err(|what| MatrixError::at("command line", None, format!("--set {s}: {what}")))?;
    }
    match (cell.job.scenario, &cell.job.script) {
        (Scenario::Script, None) => {
            return Err(MatrixError::at(
                file,
                combo.get("scenario").map(|v| v.pos),
                "scenario script needs `script: NAME` (one of the matrix's `scripts:`)",
            ))
        }
        (other, Some(_)) if other != Scenario::Script => {
            return Err(MatrixError::at(
                file,
                combo.get(SCRIPT_KEY).map(|v| v.pos),
                format!("`script:` runs scenario script, not {other}"),
            ))
        }
        _ => {}
    }
    if !cell.job.swap.enabled() {
        cell.swap_mb = 0;
    }
    cell.id = cell_id(&cell);
    Ok(cell)
}

/// `<arch>-<scenario>-<10 hex>` (`<arch>-<scenario>-<flavour>-<10 hex>`
/// for a flavour other than the default): readable, and a hash of
/// everything that defines the cell. The default flavour is left out of
/// the hash, so cells without one keep the ids they had.
pub fn cell_id(cell: &Cell) -> String {
    let mut canonical = serde_json::json!({
        "arch": cell.arch,
        "vcpus": cell.vcpus,
        "memory_mb": cell.memory_mb,
        "swap_mb": cell.swap_mb,
        "job": cell.job,
    });
    let mut flavour = String::new();
    if !cell.flavour.is_default() {
        canonical["flavour"] = serde_json::json!(cell.flavour);
        flavour = format!("{}-", cell.flavour);
    }
    let digest = Sha256::digest(canonical.to_string().as_bytes());
    format!(
        "{}-{}-{flavour}{}",
        cell.arch,
        cell.job.scenario,
        &hex::encode(digest)[..10]
    )
}

fn check_keys(
    file: &str,
    entries: impl Iterator<Item = (String, Pos)>,
    axes: Option<&BTreeSet<String>>,
    what: &str,
) -> Result<(), MatrixError> {
    for (k, pos) in entries {
        if !known_key(&k) {
            return Err(MatrixError::at(
                file,
                Some(pos),
                format!(
                    "{what}: unknown key `{k}`; known keys: {}",
                    known_keys_hint()
                ),
            ));
        }
        if let Some(axes) = axes {
            if !axes.contains(&k) {
                return Err(MatrixError::at(
                    file,
                    Some(pos),
                    format!(
                        "exclude: `{k}` is not an axis of this matrix (axes: {})",
                        axes.iter().cloned().collect::<Vec<_>>().join(", ")
                    ),
                ));
            }
        }
    }
    Ok(())
}

fn resolve_variant(
    entry: &KernelEntry,
    base_dir: &Path,
    file: &str,
    pos: Pos,
) -> Result<Variant, MatrixError> {
    let name_ok = !entry.name.is_empty()
        && entry
            .name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.');
    if !name_ok {
        return Err(MatrixError::at(
            file,
            Some(pos),
            format!("kernel name `{}`: use letters, digits, `-`, `_` or `.` (it becomes part of run ids)", entry.name),
        ));
    }
    let sources = [
        entry.series.is_some(),
        entry.lore.is_some(),
        entry.github_pr.is_some(),
        entry.patchwork.is_some(),
    ];
    if sources.iter().filter(|s| **s).count() > 1 {
        return Err(MatrixError::at(
            file,
            Some(pos),
            format!(
                "kernel `{}`: give one of `series`, `lore`, `github_pr`, `patchwork`",
                entry.name
            ),
        ));
    }
    if let Some(pr) = &entry.github_pr {
        if crate::series::fetch::parse_pull_request(pr).is_none() {
            return Err(MatrixError::at(
                file,
                Some(pos),
                format!(
                    "kernel `{}`: github_pr `{pr}` is not OWNER/REPO#NUMBER",
                    entry.name
                ),
            ));
        }
    }
    let patchwork = match &entry.patchwork {
        Some(r) => Some(crate::series::patchwork::SeriesRef {
            url: crate::series::patchwork::check_url("patchwork: url:", &r.url).map_err(|e| {
                MatrixError::at(file, Some(pos), format!("kernel `{}`: {e}", entry.name))
            })?,
            series: r.series,
        }),
        None => None,
    };
    match entry.revision {
        Some(0) => {
            return Err(MatrixError::at(
                file,
                Some(pos),
                format!(
                    "kernel `{}`: revision 0: revisions count from 1 (v1 is the first posting)",
                    entry.name
                ),
            ))
        }
        Some(_) if entry.series.is_none() && entry.lore.is_none() => {
            return Err(MatrixError::at(
                file,
                Some(pos),
                format!(
                    "kernel `{}`: `revision` picks a revision of a thread: give it with `series` or `lore`",
                    entry.name
                ),
            ))
        }
        _ => {}
    }
    if entry.git_ref.is_some() && entry.tree.is_none() {
        return Err(MatrixError::at(
            file,
            Some(pos),
            format!("kernel `{}`: `ref` needs `tree`", entry.name),
        ));
    }
    if let Some(t) = &entry.tree {
        // The check the command line's --tree and --ref get: nothing git
        // would read as an option, only the allowed transports.
        crate::kernel::tree::TreeSpec::parse(t, entry.git_ref.as_deref()).map_err(|e| {
            let key = if e.is_ref() { "ref" } else { "tree" };
            MatrixError::at(
                file,
                Some(pos),
                format!("kernel `{}`: `{key}`: {e}", entry.name),
            )
        })?;
    }
    let series = match &entry.series {
        // Absolute, so reports and manifests say which file it was.
        Some(p) => Some(confine(base_dir, "series", Path::new(p)).map_err(|e| {
            MatrixError::at(file, Some(pos), format!("kernel `{}`: {e}", entry.name))
        })?),
        None => None,
    };
    Ok(Variant {
        name: entry.name.clone(),
        series,
        lore: entry.lore.clone(),
        github_pr: entry.github_pr.clone(),
        patchwork,
        tree: entry.tree.clone(),
        git_ref: entry.git_ref.clone(),
        image: None,
        from_command_line: false,
        revision: entry.revision,
    })
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
    let measured = super::expectations::of_cells(&cells, &scripts);
    for (name, e) in &m.expect {
        super::expectations::validate(name, &e.value, &measured)
            .map_err(|err| MatrixError::at(file, Some(Pos::of(e)), err.to_string()))?;
    }
    Ok(Plan {
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
    })
}

/// A metric or script name: lower case letters, digits and `_`.
fn plain_name(n: &str) -> bool {
    !n.is_empty()
        && n.len() <= 64
        && n.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}

/// Checks one `scripts:` entry and reads its file.
fn resolve_script(name: &str, e: &ScriptEntry, base_dir: &Path) -> Result<ScriptDef, String> {
    if !plain_name(name) {
        return Err(format!(
            "script name `{name}`: use lower case letters, digits and _"
        ));
    }
    let recipe = confine(base_dir, "image", Path::new(&e.image))
        .map_err(|err| format!("script `{name}`: {err}"))?;
    if !recipe
        .join(crate::guest::image::recipe::RECIPE_FILE)
        .is_file()
    {
        return Err(format!(
            "script `{name}`: image {} has no {} (paths are relative to the matrix file)",
            recipe.display(),
            crate::guest::image::recipe::RECIPE_FILE
        ));
    }
    let image = recipe
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let text = match &e.file {
        Some(f) => {
            let full = confine(base_dir, "file", Path::new(f))
                .map_err(|err| format!("script `{name}`: {err}"))?;
            Some(
                crate::host::fs::read_capped_to_string(
                    &full,
                    MAX_FILE_BYTES,
                    "MAX_FILE_BYTES",
                    crate::host::fs::Accept::Regular,
                )
                .map_err(|err| format!("script `{name}`: file {}: {err}", full.display()))?,
            )
        }
        None => None,
    };
    if e.command.is_empty() && text.is_none() {
        return Err(format!(
            "script `{name}`: give `command:` (argv in the image) or `file:` (a script to copy in)"
        ));
    }
    for m in e.metrics.keys() {
        if !plain_name(m) {
            return Err(format!(
                "script `{name}`: metric `{m}`: use lower case letters, digits and _ (as printed after {})",
                mmci_record::METRIC_PREFIX
            ));
        }
        if crate::scenario::catalog::metric(m).is_some() {
            return Err(format!(
                "script `{name}`: metric `{m}` is one of mmci's own; give the script's figure another name"
            ));
        }
    }
    if e.timeout_s == Some(0) {
        return Err(format!("script `{name}`: timeout_s must be at least 1"));
    }
    Ok(ScriptDef {
        recipe,
        image: image.clone(),
        metrics: e.metrics.clone(),
        job: ScriptJob {
            name: name.to_string(),
            image,
            command: e.command.clone(),
            text,
            env: e.env.clone(),
            timeout_s: e.timeout_s.unwrap_or(0),
        },
    })
}

/// `given`, the value of a matrix's `key` (`series`, `image`, `file`),
/// resolved against the matrix file's directory `base_dir`: the canonical
/// path (symbolic links resolved), which must lie in that directory or in
/// the git repository that holds it (the nearest directory above with a
/// `.git`). A matrix from elsewhere (a pull request, a CI input) must not
/// copy /etc/shadow into the plan, the manifest and the report.
pub fn confine(base_dir: &Path, key: &str, given: &Path) -> Result<PathBuf, String> {
    let base_dir = if base_dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        base_dir
    };
    let full = base_dir.join(given);
    let real = full.canonicalize().map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            format!(
                "{key} {} not found (paths are relative to the matrix file)",
                full.display()
            )
        } else {
            format!("{key} {}: {e}", full.display())
        }
    })?;
    let dir = base_dir.canonicalize().map_err(|e| {
        format!(
            "{key} {}: the matrix file's directory {}: {e}",
            given.display(),
            base_dir.display()
        )
    })?;
    let repo = dir.ancestors().find(|a| a.join(".git").exists());
    if real.starts_with(&dir) || repo.is_some_and(|r| real.starts_with(r)) {
        return Ok(real);
    }
    Err(format!(
        "{key} {}: {} is outside the matrix file's directory {}{}; a matrix may only name files next to it or in its repository: move the file there",
        given.display(),
        real.display(),
        dir.display(),
        repo.map(|r| format!(" and its repository {}", r.display()))
            .unwrap_or_default()
    ))
}

/// Reads, parses and validates a matrix file.
pub fn load(path: &Path, over: &Overrides) -> Result<Plan, MatrixError> {
    let file = path.display().to_string();
    let cannot = |e: std::io::Error| MatrixError::at(&file, None, format!("cannot read: {e}"));
    // Capped by the bytes read: `--matrix /dev/zero` or a FIFO too.
    let text = crate::host::fs::read_capped_to_string(
        path,
        MAX_FILE_BYTES,
        "MAX_FILE_BYTES",
        crate::host::fs::Accept::Any,
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
    /// Every run in execution order: per repeat, per cell, the variants
    /// back to back (A B A B ...), so that drift of a noisy host hits base
    /// and candidates alike.
    pub fn slots(&self, cells: &[&Cell]) -> Vec<Slot> {
        let mut out = Vec::with_capacity(cells.len() * self.variants.len() * self.repeats as usize);
        for repeat in 1..=self.repeats {
            for cell in cells {
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

    /// A hash of what the plan runs: cells, variants, repeats. Results dirs
    /// and shards of the same plan share it.
    pub fn fingerprint(&self) -> String {
        // Cell ids stand for their full configuration; labels are cosmetic.
        let canonical = serde_json::json!({
            "cells": self.cells.iter().map(|c| &c.id).collect::<Vec<_>>(),
            "variants": self.variants.iter().map(|v| {
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
                j
            }).collect::<Vec<_>>(),
            "repeats": self.repeats,
        });
        hex::encode(Sha256::digest(canonical.to_string().as_bytes()))[..16].to_string()
    }
}

/// Content hash of a series file (its path may differ between machines).
fn file_digest(p: &Path) -> String {
    match std::fs::read(p) {
        Ok(bytes) => hex::encode(Sha256::digest(&bytes))[..16].to_string(),
        // A directory of patches, or unreadable: its name stands in.
        Err(_) => p.display().to_string(),
    }
}

/// `i/n` (1-based), as given to `--shard`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shard {
    pub index: u32,
    pub count: u32,
}

impl std::str::FromStr for Shard {
    type Err = String;
    fn from_str(s: &str) -> Result<Shard, String> {
        let (i, n) = s
            .split_once('/')
            .ok_or_else(|| format!("`{s}`: expected I/N, e.g. 2/4"))?;
        let index: u32 = i.parse().map_err(|_| format!("`{s}`: I is not a number"))?;
        let count: u32 = n.parse().map_err(|_| format!("`{s}`: N is not a number"))?;
        if count == 0 || index == 0 || index > count {
            return Err(format!("`{s}`: need 1 <= I <= N"));
        }
        Ok(Shard { index, count })
    }
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

/// Estimated guest seconds of one run of `cell`: boot and setup, the
/// workload, the after-snapshots. Under TCG a boot costs ~2 s and guest
/// set-up (swap, dm, cgroup) and teardown about 15 s more (measured).
pub fn estimated_run_seconds(cell: &Cell) -> f64 {
    20.0 + cell.job.duration_s as f64
}

/// The shard (1-based) of every cell when the plan is split `count` ways:
/// cells go, most expensive first, to the shard with the least estimated
/// work so far (ties: lowest index). Deterministic for a given plan, so N
/// machines given 1/N..N/N split it exactly.
pub fn shard_assignment(cells: &[Cell], count: u32) -> BTreeMap<String, u32> {
    let mut order: Vec<&Cell> = cells.iter().collect();
    order.sort_by(|a, b| {
        estimated_run_seconds(b)
            .total_cmp(&estimated_run_seconds(a))
            .then_with(|| a.id.cmp(&b.id))
    });
    let mut load = vec![0.0f64; count.max(1) as usize];
    let mut shard_of = BTreeMap::new();
    for c in order {
        let (i, _) = load
            .iter()
            .enumerate()
            .min_by(|a, b| a.1.total_cmp(b.1).then(a.0.cmp(&b.0)))
            .expect("count >= 1");
        load[i] += estimated_run_seconds(c);
        shard_of.insert(c.id.clone(), i as u32 + 1);
    }
    shard_of
}

/// The cells of shard `shard` (see [`shard_assignment`]), in the file's
/// order.
pub fn shard_cells(cells: &[Cell], shard: Shard) -> Vec<&Cell> {
    let shard_of = shard_assignment(cells, shard.count);
    cells
        .iter()
        .filter(|c| shard_of.get(&c.id) == Some(&shard.index))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "\
description: test
axes:
  arch: [x86_64, arm64]
  threads: [64, 192]
  duration_s: [10]
exclude:
  - {arch: arm64, threads: 192}
include:
  - {arch: x86_64, threads: 64, vcpus: 4}
repeats: 3
";

    fn plan_of(text: &str) -> Result<Plan, MatrixError> {
        from_text(text, "m.yaml", Path::new("."), &Overrides::default())
    }

    #[test]
    fn cells_resolve_machine_and_job() {
        let p = plan_of(SAMPLE).unwrap();
        assert_eq!(p.cells.len(), 3);
        assert_eq!(p.repeats, 3);
        let x64 = p
            .cells
            .iter()
            .find(|c| c.arch == Arch::X86_64 && c.job.threads == 64)
            .unwrap();
        assert_eq!(x64.vcpus, 4);
        assert_eq!(x64.job.duration_s, 10);
        assert_eq!(x64.memory_mb, DEFAULT_MEMORY_MB);
        assert!(x64.id.starts_with("x86_64-mglru_isolation-"), "{}", x64.id);
        assert_eq!(x64.label, "arch=x86_64 threads=64 vcpus=4");
        assert_eq!(p.variants, [Variant::base()]);
    }

    #[test]
    fn ids_do_not_depend_on_file_order() {
        let a = plan_of("axes:\n  threads: [64, 192]\n  vcpus: [2]\n").unwrap();
        let b = plan_of("axes:\n  vcpus: [2]\n  threads: [192, 64]\n").unwrap();
        let ids = |p: &Plan| {
            p.cells
                .iter()
                .map(|c| c.id.clone())
                .collect::<BTreeSet<_>>()
        };
        assert_eq!(ids(&a), ids(&b));
        assert_eq!(
            a.fingerprint(),
            plan_of("axes:\n  threads: [64, 192]\n  vcpus: [2]\n")
                .unwrap()
                .fingerprint()
        );
    }

    #[test]
    fn errors_name_file_line_column_and_the_fix() {
        let e = plan_of("axes:\n  threads: [64, lots]\n")
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "m.yaml: line 2 column 17: guest parameter `mmci.threads`: `lots` is not a non-negative whole number"
        );
        let e = plan_of("axes:\n  treads: [64]\n").unwrap_err().to_string();
        assert!(
            e.starts_with(
                "m.yaml: line 2 column 11: axes: unknown key `treads`; known keys: arch, vcpus"
            ),
            "{e}"
        );
        let e = plan_of("axes:\n  vcpus: [0]\n").unwrap_err().to_string();
        assert!(
            e.starts_with("m.yaml: line 2 column 11: vcpus: `0` is not a vCPU count"),
            "{e}"
        );
        let e = plan_of("axes:\n  threads: [1]\nexclude:\n  - {vcpus: 2}\n")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("line 4 column 5: exclude: `vcpus` is not an axis"),
            "{e}"
        );
        let e = plan_of("axes:\n  arch: [sparc]\n").unwrap_err().to_string();
        assert!(
            e.contains("line 2 column 10: arch: `sparc` is not an arch"),
            "{e}"
        );
        let e = plan_of("axes:\n  threads: [1]\nrepeats: 0\n")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("line 3 column 10: repeats must be at least 1"),
            "{e}"
        );
        let e = plan_of("axes:\n  threads: [1]\nkernels:\n  - name: p\n    series: nope.mbox\n")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("line 4 column 5: kernel `p`: series ./nope.mbox not found"),
            "{e}"
        );
        let e = plan_of("axes:\n  threads: []\n").unwrap_err().to_string();
        assert!(e.contains("no cells"), "{e}");
        let e = plan_of("axes:\n  threads: [1]\n  x: 1\n")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("m.yaml: line 3"), "{e}");
    }

    /// matrix/default.yaml's cell ids as `mmci matrix show` printed them
    /// before flavours existed: a matrix without `config` (or with
    /// `config: [default]`) keeps them.
    #[test]
    fn flavour_axis_ids_and_labels() {
        let default_yaml = include_str!("../../../matrix/default.yaml");
        let matrix_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../matrix");
        let recorded_ids = [
            "x86_64-mglru_isolation-f7609106d9".to_string(),
            "x86_64-mglru_isolation-644f8eae0d".to_string(),
        ];
        let with_axis = |values: &str| {
            default_yaml.replace(
                "  arch: [x86_64]\n",
                &format!("  arch: [x86_64]\n  config: {values}\n"),
            )
        };
        let set = |s: &str| Overrides {
            sets: vec![s.to_string()],
            ..Overrides::default()
        };
        type Case<'a> = (
            &'a str,
            String,
            Overrides,
            &'a [(&'a str, Flavour, &'a str)],
        );
        let cases: Vec<Case> = vec![
            (
                "no config key",
                default_yaml.to_string(),
                Overrides::default(),
                &[
                    ("", Flavour::Default, "threads=64"),
                    ("", Flavour::Default, "threads=192"),
                ],
            ),
            (
                "config: [default]",
                with_axis("[default]"),
                Overrides::default(),
                &[
                    ("", Flavour::Default, "threads=64"),
                    ("", Flavour::Default, "threads=192"),
                ],
            ),
            (
                "config: [debug]: the flavour is in every label",
                with_axis("[debug]"),
                Overrides::default(),
                &[
                    ("-debug-", Flavour::Debug, "config=debug threads=64"),
                    ("-debug-", Flavour::Debug, "config=debug threads=192"),
                ],
            ),
            (
                "config: [default, debug]",
                with_axis("[default, debug]"),
                Overrides::default(),
                &[
                    ("", Flavour::Default, "config=default threads=64"),
                    ("", Flavour::Default, "config=default threads=192"),
                    ("-debug-", Flavour::Debug, "config=debug threads=64"),
                    ("-debug-", Flavour::Debug, "config=debug threads=192"),
                ],
            ),
            (
                "--set config=debug",
                default_yaml.to_string(),
                set("config=debug"),
                &[
                    ("-debug-", Flavour::Debug, "config=debug threads=64"),
                    ("-debug-", Flavour::Debug, "config=debug threads=192"),
                ],
            ),
        ];
        for (what, text, over, want) in cases {
            let p = from_text(&text, "m.yaml", &matrix_dir, &over).unwrap();
            let got: Vec<(Flavour, &str)> = p
                .cells
                .iter()
                .map(|c| (c.flavour, c.label.as_str()))
                .collect();
            let expected: Vec<(Flavour, &str)> = want.iter().map(|(_, f, l)| (*f, *l)).collect();
            assert_eq!(got, expected, "{what}");
            for (cell, (infix, flavour, _)) in p.cells.iter().zip(want) {
                if flavour.is_default() {
                    // The id the cell had before flavours existed.
                    assert!(recorded_ids.contains(&cell.id), "{what}: {}", cell.id);
                } else {
                    assert!(
                        cell.id.starts_with("x86_64-mglru_isolation") && cell.id.contains(infix),
                        "{what}: {}",
                        cell.id
                    );
                    assert!(!recorded_ids.contains(&cell.id), "{what}: {}", cell.id);
                }
            }
        }
        // A debug cell is another cell than its default twin, and the plan
        // another plan.
        let both = from_text(
            &with_axis("[default, debug]"),
            "m.yaml",
            &matrix_dir,
            &Overrides::default(),
        )
        .unwrap();
        let ids: BTreeSet<&String> = both.cells.iter().map(|c| &c.id).collect();
        assert_eq!(ids.len(), 4);
        let fingerprint = |text: &str| {
            from_text(text, "m.yaml", &matrix_dir, &Overrides::default())
                .unwrap()
                .fingerprint()
        };
        assert_eq!(
            fingerprint(default_yaml),
            fingerprint(&with_axis("[default]"))
        );
        assert_ne!(
            fingerprint(default_yaml),
            fingerprint(&with_axis("[debug]"))
        );
    }

    #[test]
    fn unknown_flavours_name_the_line_and_the_known_ones() {
        for (text, over, want) in [
            (
                "axes:\n  threads: [1]\n  config: [default, kmsan]\n",
                vec![],
                "m.yaml: line 3 column 21: config: `kmsan` is not a kernel flavour (known flavours: default, debug, kasan)",
            ),
            (
                "axes:\n  threads: [1]\ninclude:\n  - {threads: 2, config: Debug}\n",
                vec![],
                "m.yaml: line 4 column 26: config: `Debug` is not a kernel flavour (known flavours: default, debug, kasan)",
            ),
            (
                "axes:\n  threads: [1]\n",
                vec!["config=fast".to_string()],
                "command line: --set config=fast: config: `fast` is not a kernel flavour (known flavours: default, debug, kasan)",
            ),
        ] {
            let over = Overrides {
                sets: over,
                ..Overrides::default()
            };
            let e = from_text(text, "m.yaml", Path::new("."), &over)
                .unwrap_err()
                .to_string();
            assert_eq!(e, want);
        }
    }

    #[test]
    fn kernel_revisions() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("t.mbox"), "").unwrap();
        let plan = |kernels: &str| {
            from_text(
                &format!("axes:\n  threads: [1]\nkernels:\n{kernels}"),
                "m.yaml",
                dir.path(),
                &Overrides::default(),
            )
        };
        // (kernels:, the error or the revisions of the variants)
        type Case<'a> = (&'a str, Result<&'a [Option<u32>], &'a str>);
        let cases: &[Case] = &[
            (
                "  - name: base\n  - name: v1\n    series: t.mbox\n    revision: 1\n  - name: v2\n    series: t.mbox\n",
                Ok(&[None, Some(1), None]),
            ),
            (
                "  - name: base\n  - name: v3\n    lore: x@y\n    revision: 3\n",
                Ok(&[None, Some(3)]),
            ),
            (
                "  - name: base\n  - name: v0\n    series: t.mbox\n    revision: 0\n",
                Err("line 5 column 5: kernel `v0`: revision 0: revisions count from 1"),
            ),
            (
                "  - name: base\n    revision: 2\n",
                Err("line 4 column 5: kernel `base`: `revision` picks a revision of a thread: give it with `series` or `lore`"),
            ),
            (
                "  - name: base\n  - name: v1\n    series: t.mbox\n    revision: one\n",
                Err("line 7"),
            ),
        ];
        for (kernels, want) in cases {
            match (plan(kernels), want) {
                (Ok(p), Ok(revs)) => assert_eq!(
                    p.variants.iter().map(|v| v.revision).collect::<Vec<_>>(),
                    *revs,
                    "{kernels}"
                ),
                (Err(e), Err(w)) => assert!(e.to_string().contains(w), "{kernels}: {e}"),
                (got, want) => panic!("{kernels}: got {got:?}, want {want:?}"),
            }
        }
        // The revision is part of what the plan runs, and of how a report
        // names the kernel.
        let one =
            plan("  - name: base\n  - name: p\n    series: t.mbox\n    revision: 1\n").unwrap();
        let newest = plan("  - name: base\n  - name: p\n    series: t.mbox\n").unwrap();
        assert_ne!(one.fingerprint(), newest.fingerprint());
        assert!(
            one.variants[1].describe().ends_with("t.mbox (v1)"),
            "{}",
            one.variants[1].describe()
        );
    }

    #[test]
    fn expectations_name_catalog_metrics() {
        let p = plan_of("axes:\n  threads: [1]\nexpect:\n  throttle_isolated: nonzero\n").unwrap();
        assert_eq!(p.expect.len(), 1);
        let e = plan_of("axes:\n  threads: [1]\nexpect:\n  throttled_isolated: nonzero\n")
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("m.yaml: line 4 column 23: expect: unknown metric `throttled_isolated`; known metrics: throttle_isolated, "),
            "{e}"
        );
        let e =
            plan_of("axes:\n  threads: [1]\nexpect:\n  oom_kills: {kind: zero, threshold: 0.1}\n")
                .unwrap_err()
                .to_string();
        assert!(
            e.contains("expect: oom_kills: a threshold means nothing for `zero`"),
            "{e}"
        );
    }

    #[test]
    fn command_line_sets_override_every_cell() {
        let over = Overrides {
            sets: vec!["duration_s=3".into(), "vcpus=1".into()],
            ..Default::default()
        };
        let p = from_text(SAMPLE, "m.yaml", Path::new("."), &over).unwrap();
        assert!(p
            .cells
            .iter()
            .all(|c| c.job.duration_s == 3 && c.vcpus == 1));
        let over = Overrides {
            sets: vec!["treads=3".into()],
            ..Default::default()
        };
        let e = from_text(SAMPLE, "m.yaml", Path::new("."), &over)
            .unwrap_err()
            .to_string();
        assert!(e.contains("--set treads=3: unknown key `treads`"), "{e}");
        let over = Overrides {
            sets: vec!["swap=n".into()],
            ..Default::default()
        };
        let p = from_text(SAMPLE, "m.yaml", Path::new("."), &over).unwrap();
        assert!(p.cells.iter().all(|c| c.swap_mb == 0));
    }

    #[test]
    fn slots_interleave_variants_within_each_repeat() {
        let mut p = plan_of("axes:\n  threads: [64, 192]\nrepeats: 2\n").unwrap();
        p.variants.push(Variant {
            name: "patched".into(),
            ..Variant::base()
        });
        let cells: Vec<&Cell> = p.cells.iter().collect();
        let order: Vec<String> = p
            .slots(&cells)
            .iter()
            .map(|s| format!("{}:{}:{}", &s.cell[..22], s.variant, s.repeat))
            .collect();
        let (c1, c2) = (&p.cells[0].id[..22], &p.cells[1].id[..22]);
        assert_eq!(
            order,
            [
                format!("{c1}:base:1"),
                format!("{c1}:patched:1"),
                format!("{c2}:base:1"),
                format!("{c2}:patched:1"),
                format!("{c1}:base:2"),
                format!("{c1}:patched:2"),
                format!("{c2}:base:2"),
                format!("{c2}:patched:2"),
            ]
        );
    }

    #[test]
    fn shards_partition_the_cells() {
        let p = plan_of("axes:\n  threads: [1, 2, 3, 4, 5, 6, 7]\n  duration_s: [5, 60, 20]\n")
            .unwrap();
        for n in 1..=8u32 {
            let mut seen: BTreeMap<String, u32> = BTreeMap::new();
            let mut loads = vec![];
            for i in 1..=n {
                let mine = shard_cells(&p.cells, Shard { index: i, count: n });
                loads.push(mine.iter().map(|c| estimated_run_seconds(c)).sum::<f64>());
                for c in mine {
                    *seen.entry(c.id.clone()).or_default() += 1;
                }
            }
            assert_eq!(seen.len(), p.cells.len(), "n={n}: every cell in a shard");
            assert!(
                seen.values().all(|&k| k == 1),
                "n={n}: no cell in two shards"
            );
            // Greedy largest-first keeps shards within one cell of each other.
            let (lo, hi) = loads
                .iter()
                .fold((f64::MAX, 0.0f64), |(l, h), &x| (l.min(x), h.max(x)));
            assert!(hi - lo <= 80.0, "n={n}: loads {loads:?}");
        }
    }

    #[test]
    fn shard_syntax() {
        assert_eq!(
            "2/4".parse::<Shard>().unwrap(),
            Shard { index: 2, count: 4 }
        );
        for bad in ["0/4", "5/4", "1/0", "x/2", "3"] {
            assert!(bad.parse::<Shard>().is_err(), "{bad}");
        }
    }

    #[test]
    fn oversized_plans_are_refused_naming_the_limit() {
        let values = |n: usize| {
            (1..=n)
                .map(|i| i.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        };
        // (matrix text, what the error must say)
        let cases = [
            // The case: 10^6 cells (two axes of 1000) x 10^6 repeats.
            (
                format!(
                    "axes:\n  threads: [{}]\n  working_set_mb: [{}]\nrepeats: 1000000\n",
                    values(1000),
                    values(1000)
                ),
                "the axes give 1000000 combinations (threads 1000 x working_set_mb 1000); the limit is 10000 cells (MAX_CELLS)",
            ),
            (
                "axes:\n  threads: [1, 2]\nrepeats: 4000000000\n".to_string(),
                "line 3 column 10: 2 cells x 1 kernels x 4000000000 repeats = 8000000000 runs; the limit is 100000 runs (MAX_RUNS)",
            ),
            (
                format!("axes:\n  threads: [{}]\nrepeats: 11\n", values(10_000)),
                "10000 cells x 1 kernels x 11 repeats = 110000 runs; the limit is 100000 runs",
            ),
        ];
        for (text, want) in cases {
            let e = plan_of(&text).unwrap_err().to_string();
            assert!(e.contains(want), "{e}\nwanted: {want}");
        }
        // Just under both limits is a plan.
        let p = plan_of(&format!(
            "axes:\n  threads: [{}]\nrepeats: 10\n",
            values(10_000)
        ))
        .unwrap();
        assert_eq!(p.cells.len(), 10_000);
    }

    #[test]
    fn kernel_trees_are_checked_and_their_credentials_masked() {
        let kernel =
            |k: &str| format!("axes:\n  threads: [1]\nkernels:\n  - name: base\n  - {k}\n");
        for (k, want) in [
            (
                "{name: p, tree: \"--upload-pack=touch /tmp/x;false\"}",
                "line 5 column 5: kernel `p`: `tree`: tree URL `--upload-pack=touch /tmp/x;false` starts with `-`",
            ),
            (
                "{name: p, tree: \"https://example.org/x.git\", ref: \"--output=/tmp/x\"}",
                "kernel `p`: `ref`: ref `--output=/tmp/x` starts with `-`",
            ),
            ("{name: p, tree: \"ext::sh -c id\"}", "remote helpers"),
        ] {
            let e = plan_of(&kernel(k)).unwrap_err().to_string();
            assert!(e.contains(want), "{e}\nwanted: {want}");
        }
        let p = plan_of(&kernel(
            "{name: c, tree: \"https://u:ghp_tok@example.org/x.git\", ref: next}",
        ))
        .unwrap();
        let c = &p.variants[1];
        assert_eq!(
            c.tree.as_deref(),
            Some("https://u:ghp_tok@example.org/x.git"),
            "git needs it"
        );
        assert_eq!(c.describe(), "tree https://***@example.org/x.git next");
        let json = serde_json::to_string(&p).unwrap();
        assert!(
            json.contains("https://***@example.org/x.git") && !json.contains("ghp_tok"),
            "{json}"
        );
        let rotated = plan_of(&kernel(
            "{name: c, tree: \"https://u:ghp_new@example.org/x.git\", ref: next}",
        ))
        .unwrap();
        assert_eq!(
            p.fingerprint(),
            rotated.fingerprint(),
            "a new token resumes the plan"
        );
    }

    #[test]
    fn oversized_matrix_file_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("big.yaml");
        let mut text = String::from("axes:\n  threads: [1]\n");
        while text.len() as u64 <= MAX_FILE_BYTES {
            text.push_str("# padding padding padding padding padding padding\n");
        }
        std::fs::write(&path, &text).unwrap();
        let e = load(&path, &Overrides::default()).unwrap_err().to_string();
        assert!(
            e.contains("the limit for a matrix file is 1048576 bytes (MAX_FILE_BYTES)"),
            "{e}"
        );
    }

    /// A matrix dir with an image recipe and a script file beside it.
    fn script_dir() -> tempfile::TempDir {
        let tmp = tempfile::tempdir().unwrap();
        // A repository, as the bundled matrices are in one: ../images is in it.
        std::fs::create_dir(tmp.path().join(".git")).unwrap();
        std::fs::create_dir_all(tmp.path().join("images/tools")).unwrap();
        std::fs::write(
            tmp.path().join("images/tools/image.yaml"),
            "suite: bookworm\n",
        )
        .unwrap();
        std::fs::create_dir_all(tmp.path().join("matrix/scripts")).unwrap();
        std::fs::write(tmp.path().join("matrix/scripts/r.sh"), "echo hi\n").unwrap();
        tmp
    }

    const SCRIPTS: &str = "scripts:\n  repro:\n    image: ../images/tools\n    file: scripts/r.sh\n    metrics:\n      ops: {unit: ops, better: higher}\n";

    #[test]
    fn script_cells_get_the_script_and_its_metrics() {
        let tmp = script_dir();
        let text = format!("{SCRIPTS}axes:\n  script: [repro]\n  threads: [4]\nexpect:\n  ops: increase\n  pswpout: decrease\n");
        let p = from_text(
            &text,
            "m.yaml",
            &tmp.path().join("matrix"),
            &Overrides::default(),
        )
        .unwrap();
        let job = &p.cells[0].job;
        assert_eq!(job.scenario, Scenario::Script);
        let s = job.script.as_ref().unwrap();
        assert_eq!((s.name.as_str(), s.image.as_str()), ("repro", "tools"));
        assert_eq!(s.text.as_deref(), Some("echo hi\n"));
        assert!(p.cells[0].id.contains("-script-"));
        assert_eq!(p.scripts["repro"].metrics["ops"].unit, "ops");
        // The cell measures scenario A's kernel-side counters, how the
        // script ended and what it declares; not the built-in workload's.
        let measured = super::super::expectations::of_cell(&p.cells[0], &p.scripts);
        let names: Vec<&str> = measured.iter().map(|m| m.name.as_ref()).collect();
        for n in ["pswpout", "throttle_isolated", "script_exit_code", "ops"] {
            assert!(names.contains(&n), "{n}: {names:?}");
        }
        for n in ["touches", "pswpout_per_ktouch", "noio_calls"] {
            assert!(!names.contains(&n), "{n}: {names:?}");
        }
    }

    #[test]
    fn script_errors_name_the_position_and_the_fix() {
        let tmp = script_dir();
        let base = tmp.path().join("matrix");
        // (matrix text, expected words)
        let cases = [
            (format!("{SCRIPTS}axes:\n  script: [other]\n"), "line 8 column 12: script `other` is not one of the matrix's scripts (repro)"),
            ("axes:\n  script: [repro]\n".to_string(), "script `repro`: this matrix has no `scripts:` section"),
            ("axes:\n  scenario: [script]\n".to_string(), "scenario script needs `script: NAME`"),
            (format!("{SCRIPTS}axes:\n  script: [repro]\nexpect:\n  opz: increase\n"), "unknown metric `opz`"),
            ("scripts:\n  r:\n    image: ../images/nope\n    command: [x]\naxes: {}\n".to_string(), "/images/nope not found (paths are relative to the matrix file)"),
            ("scripts:\n  r:\n    image: ../matrix\n    command: [x]\naxes: {}\n".to_string(), "has no image.yaml"),
            ("scripts:\n  r:\n    image: ../images/tools\naxes: {}\n".to_string(), "give `command:`"),
            ("scripts:\n  r:\n    image: ../images/tools\n    command: [x]\n    metrics:\n      pswpout: {unit: p, better: lower}\naxes: {}\n".to_string(), "one of mmci's own"),
            ("scripts:\n  r:\n    image: ../images/tools\n    comand: [x]\naxes: {}\n".to_string(), "unknown field `comand`"),
            (format!("{SCRIPTS}axes:\n  script: [repro]\nexpect:\n  touches: increase\n"), "touches is measured in mglru_isolation runs, and this matrix has no mglru_isolation cell"),
        ];
        for (text, words) in cases {
            let e = from_text(&text, "m.yaml", &base, &Overrides::default())
                .unwrap_err()
                .to_string();
            assert!(e.contains(words), "{text}\n=> {e}");
        }
    }

    /// Probes 25 and 26, and the ways around a prefix check: `series`,
    /// `image` and `file` resolve (symbolic links and `..` included) to
    /// the matrix file's directory or its repository, or are refused naming
    /// the key and the file; a matrix outside any repository has only its
    /// own directory.
    #[test]
    fn matrix_paths_stay_next_to_the_matrix() {
        let tmp = tempfile::tempdir().unwrap();
        let t = tmp.path().canonicalize().unwrap();
        let mkfile = |rel: &str, text: &str| {
            let p = t.join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(&p, text).unwrap();
            p
        };
        std::fs::create_dir_all(t.join("repo/.git")).unwrap();
        mkfile("repo/matrix/local.mbox", "");
        mkfile("repo/kernels/series/s.mbox", "");
        mkfile("repo/images/tools/image.yaml", "suite: bookworm\n");
        let secret = mkfile("outside/shadow", "root:SECRET-HASH:::\n");
        std::os::unix::fs::symlink(&secret, t.join("repo/matrix/innocent.mbox")).unwrap();
        std::os::unix::fs::symlink(t.join("outside"), t.join("repo/images/linked")).unwrap();
        mkfile("norepo/m/a.mbox", "");
        let repo_m = t.join("repo/matrix");
        let norepo_m = t.join("norepo/m");
        let outside = "is outside the matrix file's directory";
        // (matrix dir, key, value, Ok(resolved, relative to t) or Err(words))
        let cases: &[(&Path, &str, &str, Result<&str, &str>)] = &[
            (
                &repo_m,
                "series",
                "local.mbox",
                Ok("repo/matrix/local.mbox"),
            ),
            (
                &repo_m,
                "series",
                "./local.mbox",
                Ok("repo/matrix/local.mbox"),
            ),
            (
                &repo_m,
                "series",
                "../kernels/series/s.mbox",
                Ok("repo/kernels/series/s.mbox"),
            ),
            (&repo_m, "image", "../images/tools", Ok("repo/images/tools")),
            (&repo_m, "series", "/etc/shadow", Err(outside)),
            (&repo_m, "file", "/etc/passwd", Err(outside)),
            (&repo_m, "image", "/", Err(outside)),
            (&repo_m, "series", "../../outside/shadow", Err(outside)),
            (&repo_m, "series", "innocent.mbox", Err(outside)),
            (&repo_m, "image", "../images/linked", Err(outside)),
            (
                &repo_m,
                "series",
                "missing.mbox",
                Err("missing.mbox not found (paths are relative to the matrix file)"),
            ),
            (&norepo_m, "series", "a.mbox", Ok("norepo/m/a.mbox")),
            (
                &norepo_m,
                "series",
                "../../repo/kernels/series/s.mbox",
                Err(outside),
            ),
        ];
        for (dir, key, given, want) in cases {
            let got = confine(dir, key, Path::new(given));
            match (&got, want) {
                (Ok(p), Ok(rel)) => assert_eq!(p, &t.join(rel), "{key}: {given}"),
                (Err(e), Err(words)) => {
                    assert!(e.contains(words), "{key}: {given}: {e}");
                    assert!(e.starts_with(&format!("{key} ")), "{e}");
                }
                _ => panic!("{key}: {given}: got {got:?}, want {want:?}"),
            }
        }
        // The repository is named when there is one.
        let e = confine(&repo_m, "series", Path::new("/etc/shadow")).unwrap_err();
        assert!(
            e.contains(&format!("and its repository {}", t.join("repo").display())),
            "{e}"
        );
        assert!(!e.contains("SECRET"), "{e}");

        // Through the matrix: probe 25 (`series: /etc/shadow`) and probe 26
        // (`scripts: leak: {image: ..., file: /etc/shadow}`) are refused
        // with the file, line and key, and nothing of the file is read.
        let matrix = |text: &str| {
            from_text(text, "m.yaml", &repo_m, &Overrides::default()).map_err(|e| e.to_string())
        };
        let cases = [
            (
                "axes:\n  threads: [1]\nkernels:\n  - name: base\n  - name: p\n    series: /etc/shadow\n".to_string(),
                "m.yaml: line 5 column 5: kernel `p`: series /etc/shadow: /etc/shadow is outside the matrix file's directory",
            ),
            (
                format!("scripts:\n  leak:\n    image: ../images/tools\n    file: {}\naxes:\n  script: [leak]\n", secret.display()),
                "m.yaml: line 3 column 5: script `leak`: file ",
            ),
            (
                "scripts:\n  leak:\n    image: /etc\n    command: [x]\naxes: {}\n".to_string(),
                "script `leak`: image /etc: /etc is outside the matrix file's directory",
            ),
        ];
        for (text, words) in cases {
            let e = matrix(&text).unwrap_err();
            assert!(e.contains(words), "{text}\n=> {e}");
            assert!(!e.contains("SECRET"), "{e}");
        }
        let ok = matrix("scripts:\n  r:\n    image: ../images/tools\n    command: [x]\naxes:\n  script: [r]\nkernels:\n  - name: base\n  - name: p\n    series: ../kernels/series/s.mbox\n").unwrap();
        assert_eq!(
            ok.variants[1].series.as_deref(),
            Some(t.join("repo/kernels/series/s.mbox").as_path())
        );
    }

    /// Every shipped matrix names files in the repository: all still load.
    #[test]
    fn bundled_matrices_load() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../matrix");
        let mut n = 0;
        for e in std::fs::read_dir(&dir).unwrap() {
            let path = e.unwrap().path();
            if path.extension().is_some_and(|x| x == "yaml") {
                load(&path, &Overrides::default())
                    .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
                n += 1;
            }
        }
        assert!(n >= 8, "{n} matrices");
    }

    /// A matrix or script file is read capped by the bytes actually read:
    /// /dev/zero stops at the limit, a FIFO as a script is refused.
    #[test]
    fn unbounded_matrix_inputs_are_refused() {
        let e = load(Path::new("/dev/zero"), &Overrides::default())
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("the limit for a matrix file is 1048576 bytes (MAX_FILE_BYTES)"),
            "{e}"
        );
        let tmp = script_dir();
        let fifo = tmp.path().join("matrix/scripts/fifo.sh");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: mkfifo on a path we own.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let e = from_text(
            "scripts:\n  r:\n    image: ../images/tools\n    file: scripts/fifo.sh\naxes: {}\n",
            "m.yaml",
            &tmp.path().join("matrix"),
            &Overrides::default(),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("a FIFO, not a regular file"), "{e}");
    }
}
