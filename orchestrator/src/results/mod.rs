//! Results on disk: one guest run's record and files (`run`), and a
//! matrix's results dir with its manifest (`dir`) and its kernels with
//! their `.config` copies (`kernels`); the kernel splats a run's record
//! carries, and the detector that finds them on a console (`splat`).

pub mod dir;
pub mod find;
pub mod kernels;
pub mod outcome;
pub mod run;
pub mod splat;

pub use run::*;
