//! `mmci bench`: speed targets measured on this machine with the real
//! kernel and QEMU, never in timed unit tests: guest boot (`boot`), matrix
//! expansion and scheduling (`matrix`), analysis and rendering (`analysis`).

pub mod analysis;
pub mod boot;
pub mod matrix;
pub mod series;
