//! mmci: kernel CI for Linux memory-management patches.
//!
//! One folder per stage of the pipeline; a module imports only from the
//! stages before it:
//!
//! - `arch`: the guest architectures (shared by every stage).
//! - `host`: child processes, the work dir, atomic files, tools on PATH.
//! - `kernel`: source trees, patch series, config fragments, cached builds.
//! - `guest`: guest-init binaries, the initramfs, Debian guest images, QEMU.
//! - `scenario`: what each scenario measures (one folder per scenario).
//! - `matrix`: matrix files -> a validated plan, and its scheduling.
//! - `results`: one run's record (its splats included), a matrix's results dir.
//! - `run`: one guest run, its classification, the plan's executor.
//! - `analysis`: base vs candidates, expectations, the verdict.
//! - `report`: every rendering for people (terminal, markdown, email, HTML).
//! - `post`: GitHub check runs and comments, email replies.
//! - `watch`, `doctor`, `bench`: commands built on the stages above.
//! - `pipeline` and `error`: checks before any work, and exit codes.
//! - `cli`: the command line's arguments, each command translated into the
//!   request of the stage that does the work; the binary calls it.

pub mod analysis;
pub mod arch;
pub mod bench;
pub mod cli;
pub mod doctor;
pub mod error;
pub mod guest;
pub mod host;
pub mod kernel;
pub mod matrix;
pub mod pipeline;
pub mod post;
pub mod report;
pub mod results;
pub mod run;
pub mod scenario;
pub mod series;
pub mod watch;
