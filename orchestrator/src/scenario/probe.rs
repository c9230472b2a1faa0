//! Scenario probe: the guest says hello and powers off. It probes
//! accelerators and times boots; it measures nothing.

use std::time::Duration;

use mmci_record::Scenario;

use crate::scenario::def::{self, Def};
use crate::scenario::ScenarioMetrics;

pub static DEF: Def = Def {
    id: Scenario::Probe,
    title: None,
    timeout: |_| Duration::from_secs(60),
    disks: def::no_disks,
    metrics: |_, _| ScenarioMetrics::None,
    not_reproduced: def::no_precondition,
    kernel_check: def::no_check,
    files: def::no_files,
    metric_entries: &[],
    borrows: None,
    per_work: &[],
    work_unit: None,
    histograms: &[],
    report_guest: crate::scenario::report::cgroup_guest,
    runs_figure: def::no_figure,
    report_sections: |_, _| String::new(),
    anatomy: None,
    guards: &[],
};
