//! A scenario's set-up steps: each either succeeds with a detail line for
//! the host or fails with the step's name, and is timed and reported.

use std::time::Instant;

use mmci_record::Record;

use crate::port::RecordPort;

/// A failed step: which one, and what went wrong.
pub struct StepError {
    pub stage: &'static str,
    pub message: String,
}

pub(crate) trait Stage<T> {
    fn stage(self, stage: &'static str) -> Result<T, StepError>;
}

impl<T, E: std::fmt::Display> Stage<T> for Result<T, E> {
    fn stage(self, stage: &'static str) -> Result<T, StepError> {
        self.map_err(|e| StepError {
            stage,
            message: e.to_string(),
        })
    }
}

/// Times a set-up step and reports it.
pub(crate) fn setup_step<T>(
    port: &RecordPort,
    step: &'static str,
    f: impl FnOnce() -> Result<(T, String), StepError>,
) -> Result<T, StepError> {
    let start = Instant::now();
    let (value, detail) = f()?;
    port.send(Record::Setup {
        step: step.into(),
        detail,
        ms: start.elapsed().as_millis() as u64,
    });
    Ok(value)
}
