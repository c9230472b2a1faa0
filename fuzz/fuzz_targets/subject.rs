//! Subject parsing: tags, reply prefixes, fixlet titles, public-inbox
//! normalisation, on any UTF-8 string.
#![no_main]
use libfuzzer_sys::fuzz_target;
use mmci::series::subject;

fuzz_target!(|data: &[u8]| {
    let Ok(s) = std::str::from_utf8(data) else {
        return;
    };
    if let Some(tag) = subject::parse_subject(s) {
        let _ = (tag.index(), tag.total(), tag.is_fixlet());
        if let Some((n, m)) = tag.counter {
            assert!(n <= m && m > 0, "{s:?}");
        }
    }
    let _ = subject::is_reply(s);
    let _ = subject::normalized(s);
});
