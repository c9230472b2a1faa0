//! Running guests: one guest run from start to result (`guest`), its
//! classification (`outcome`), the accelerator probe (`accel`), and the
//! executor of a whole plan (`executor`) with its progress display, and a
//! `mmci run` request turned into the executor's options (`request`).

pub mod accel;
pub mod executor;
pub mod guest;
pub mod outcome;
pub mod progress;
pub mod request;
