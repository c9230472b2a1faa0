//! The one list of what PID 1 runs per scenario: each scenario module
//! defines its `DEF`, and `scenario::run` dispatches through [`of`]
//! instead of matching on `mmci_record::Scenario`. See docs/scenarios.md.

use std::sync::Arc;

use mmci_record::{GuestJob, Scenario};

use crate::port::RecordPort;
use crate::step::StepError;

/// One scenario, guest side.
pub struct Def {
    pub id: Scenario,
    /// Sets it up, runs it and sends its records (after `hello`, before
    /// `done`).
    pub run: fn(&GuestJob, &Arc<RecordPort>) -> Result<(), StepError>,
}

/// Every scenario, in `Scenario::ALL`'s order.
pub static ALL: [&Def; 5] = [
    &super::probe::DEF,
    &super::mglru::DEF,
    &super::noio::DEF,
    &super::script::DEF,
    &super::compaction::DEF,
];

/// The scenario `id`.
pub fn of(id: Scenario) -> &'static Def {
    ALL.iter()
        .find(|d| d.id == id)
        .expect("every Scenario is registered (checked by a test)")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_scenario_is_registered_once_in_order() {
        let ids: Vec<Scenario> = ALL.iter().map(|d| d.id).collect();
        assert_eq!(ids, Scenario::ALL.to_vec());
        for s in Scenario::ALL {
            assert_eq!(of(s).id, s);
        }
    }
}
