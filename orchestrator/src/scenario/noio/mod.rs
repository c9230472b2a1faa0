//! Scenario B: GFP_NOIO direct reclaim through dm-verity, and the scratch
//! disks (verity data and hash) its guest needs.

pub mod catalog;
pub mod disks;
pub mod metrics;

pub use metrics::*;
