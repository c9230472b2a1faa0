//! A cover letter's own claims, checked: its before/after tables read
//! (`table`), each row mapped to the mmci metric it speaks of and set
//! beside the measurement of the cells its test set-up describes
//! (`judge`): agrees, contradicts, not significant, or not measured here.
//! Rows mmci cannot measure are listed, never dropped.

pub mod judge;
pub mod table;

pub use judge::{check, metric_for, ClaimCheck, Finding};
pub use table::{parse, ClaimRow, ClaimTable, Quantity};
