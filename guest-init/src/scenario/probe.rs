//! Scenario probe: nothing to set up or run; PID 1 says hello and powers
//! off (accelerator probes, boot timing).

use mmci_record::Scenario;

use super::registry::Def;

pub static DEF: Def = Def {
    id: Scenario::Probe,
    run: |_, _| Ok(()),
};
