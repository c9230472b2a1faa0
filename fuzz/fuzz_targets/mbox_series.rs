//! mbox bytes to series: mail parsing, the thread model and revision
//! choice, with the first mail's id requested and with --revision.
#![no_main]
use libfuzzer_sys::fuzz_target;
use mmci::series::{self, Selection};

fuzz_target!(|data: &[u8]| {
    let mails = series::mails_from_mbox(data);
    let first = mails.first().map(|m| m.message_id.clone());
    for sel in [
        Selection::default(),
        Selection {
            requested: first,
            revision: None,
        },
        Selection {
            requested: None,
            revision: Some(2),
        },
    ] {
        if let Ok(s) = series::assemble_with(&mails, "fuzz", &sel) {
            assert_eq!(s.patches.len() as u32, s.total);
            assert!(s.patches.windows(2).all(|w| w[0].index < w[1].index));
        }
    }
});
