//! Message-id normalisation (what --lore and Atom feeds give) and the
//! lore URL built from it.
#![no_main]
use libfuzzer_sys::fuzz_target;
use mmci::series::fetch;

fuzz_target!(|data: &[u8]| {
    let Ok(s) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(id) = fetch::normalize_message_id(s) {
        let url = fetch::lore_thread_url("https://lore.kernel.org", &id);
        assert!(!url.contains(char::is_whitespace), "{s:?} -> {url:?}");
    }
});
