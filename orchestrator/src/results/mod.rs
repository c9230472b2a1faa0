//! Results on disk: one guest run's record and files (`run`), and a
//! matrix's results dir with its manifest (`dir`).

pub mod dir;
pub mod outcome;
pub mod run;

pub use run::*;
