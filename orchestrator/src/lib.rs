//! mmci: kernel CI for Linux memory-management patches.
//!
//! One module per stage; data flows one way: `tree` (kernel sources in git)
//! -> `build` (configured, cached kernel builds) -> `image` (initramfs) ->
//! `vm` (QEMU) -> `run` (one guest run, classified by `outcome`, measured by
//! `metrics`, stored by `results`) -> `report`; a matrix's results dir
//! -> `analysis` (base vs candidates, expectations, verdict) -> `post`
//! (GitHub, email). `app` strings them together
//! for the command line.

pub mod accel;
pub mod analysis;
pub mod app;
pub mod arch;
pub mod bench;
pub mod bench_matrix;
pub mod build;
pub mod disks;
pub mod doctor;
pub mod guest_bin;
pub mod image;
pub mod kconfig;
pub mod kernel;
pub mod matrix;
pub mod matrix_report;
pub mod matrix_run;
pub mod metrics;
pub mod outcome;
pub mod paths;
pub mod post;
pub mod process;
pub mod progress;
pub mod render;
pub mod report;
pub mod results;
pub mod results_dir;
pub mod run;
pub mod schedule;
pub mod series;
pub mod splat;
pub mod tree;
pub mod vm;
pub mod warnings;
pub mod watch;
