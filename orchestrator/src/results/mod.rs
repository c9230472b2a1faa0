//! Results on disk: one guest run's record and files (`run`), and a
//! matrix's results dir with its manifest (`dir`); the kernel splats a run's
//! record carries, and the detector that finds them on a console (`splat`).

pub mod dir;
pub mod outcome;
pub mod run;
pub mod splat;

pub use run::*;
