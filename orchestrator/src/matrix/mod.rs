//! Matrices: which guests run on which kernels, how often.
//!
//! `file` is the YAML as written (positions kept), `expand` applies GitHub
//! Actions' product/exclude/include rules, `plan` validates the result into
//! cells, kernel variants, run slots and shards.

pub mod expand;
pub mod file;
pub mod plan;
pub mod schedule;
pub mod show;
pub mod synthetic;

pub use plan::{load, Cell, MatrixError, Overrides, Plan, ScriptDef, Shard, Slot, Variant};

/// `matrix/default.yaml`, compiled in: what `mmci run` runs when no
/// `--matrix` is given. Relative paths in it resolve against the source
/// tree's `matrix/` directory.
pub const DEFAULT_MATRIX: &str = include_str!("../../../matrix/default.yaml");

/// Where the embedded default's relative paths point.
pub fn default_matrix_dir() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../matrix")
}

/// The embedded default plan.
pub fn default_plan(over: &Overrides) -> Result<Plan, MatrixError> {
    plan::from_text(
        DEFAULT_MATRIX,
        "matrix/default.yaml (embedded)",
        &default_matrix_dir(),
        over,
    )
}
