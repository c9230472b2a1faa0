//! Matrices: which guests run on which kernels, how often.
//!
//! `file` is the YAML as written (positions kept), `expand` applies GitHub
//! Actions' product/exclude/include rules, `plan` validates the result into
//! cells, kernel variants, run slots and shards; `embedded` holds the
//! compiled-in default matrix and the series it names.

pub mod embedded;
pub mod expand;
pub mod file;
pub mod plan;
pub mod schedule;
pub mod show;
pub mod synthetic;

pub use plan::{load, Cell, MatrixError, Overrides, Plan, ScriptDef, Shard, Slot, Variant};

pub use embedded::DEFAULT_MATRIX;

/// The embedded default plan; its series resolves wherever mmci runs from
/// (see [`embedded`]).
pub fn default_plan(over: &Overrides) -> Result<Plan, MatrixError> {
    let file = "matrix/default.yaml (embedded)";
    let error = |what: String| MatrixError {
        file: file.to_string(),
        pos: String::new(),
        what,
    };
    let root = embedded::extracted_root().map_err(|e| {
        error(format!(
            "cannot write the embedded series into the cache dir: {e} (set $XDG_CACHE_HOME \
             to a writable directory, or give --matrix)"
        ))
    })?;
    let m = embedded::default_file().map_err(error)?;
    plan::plan(&m, file, &root, over)
}

/// The checkout's `matrix/` directory (developer commands: `mmci bench`).
pub fn source_matrix_dir() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../matrix")
}
