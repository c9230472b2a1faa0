//! file:line in call traces on a debug kernel: the bundled tree built in the
//! debug flavour (DWARF line tables, the decoding scripts kept), a trace of
//! real functions of its vmlinux piped through the tree's own
//! scripts/decode_stacktrace.sh, each frame checked against addr2line run
//! here on the same address. Builds the debug flavour once (cached in the
//! tests' work dir: `MMCI_TEST_WORK_DIR`, else ~/.cache/mmci-test).

mod common;

use std::collections::BTreeMap;
use std::path::Path;

use mmci::arch::Arch;
use mmci::host::process::{self, Limits};
use mmci::kernel::decode::Decoder;
use mmci::kernel::{self, Flavour, KernelSource};

/// Text symbols of System.map: name -> address.
fn text_symbols(map: &str) -> BTreeMap<String, u64> {
    map.lines()
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            let (addr, kind, name) = (w.next()?, w.next()?, w.next()?);
            matches!(kind, "t" | "T")
                .then(|| Some((name.to_string(), u64::from_str_radix(addr, 16).ok()?)))
                .flatten()
        })
        .collect()
}

/// What addr2line says of `addr`, inlined callers included, with the
/// source tree's path cut off, on one line: decode_stacktrace.sh's form.
async fn addr2line(vmlinux: &Path, addr: u64, base: &str) -> String {
    let out = process::output_ok(
        tokio::process::Command::new("addr2line")
            .arg("-i")
            .arg("-e")
            .arg(vmlinux)
            .arg(format!("{addr:x}")),
        "addr2line",
        Limits::QUICK,
    )
    .await
    .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| l.strip_prefix(base).unwrap_or(l).to_string())
        .collect::<Vec<_>>()
        .join(" ")
}

#[tokio::test]
async fn debug_flavour_call_traces_get_file_and_line() {
    let work = common::work_dir();
    let mut source = KernelSource::bundled();
    source.flavour = Flavour::Debug;
    let info = kernel::prepare(&source, Arch::X86_64, &work)
        .await
        .expect("the bundled tree builds in the debug flavour (run ./mmci-setup first)");
    assert_eq!(info.flavour, Flavour::Debug);
    let decoder = Decoder::for_image(&info.image, Arch::X86_64)
        .expect("a debug build keeps its vmlinux, config with DEBUG_INFO and the scripts");
    let dir = info.image.parent().unwrap();
    let symbols = text_symbols(&std::fs::read_to_string(dir.join("System.map")).unwrap());

    // The tree's path as compiled in: where kernel_init's init/main.c is.
    let kernel_init = addr2line(&decoder.vmlinux, symbols["kernel_init"], "").await;
    let base = kernel_init
        .split(" ")
        .last()
        .and_then(|l| l.split("/init/main.c:").next())
        .map(|b| format!("{b}/"))
        .unwrap();
    assert!(base.starts_with('/'), "{kernel_init}");

    // Scenario A's reclaim path, as a WARNING in it would print it.
    let frames = [
        ("shrink_folio_list", 0x1c0u64),
        ("lru_gen_shrink_lruvec", 0x2a4),
        ("try_to_shrink_lruvec", 0xd1),
        ("shrink_node", 0x3e2),
        ("try_to_free_mem_cgroup_pages", 0x121),
    ];
    let mut excerpt = vec![
        "------------[ cut here ]------------".to_string(),
        "WARNING: CPU: 1 PID: 81 at mm/vmscan.c:1093 shrink_folio_list+0x1c0/0x1f00".to_string(),
        "Modules linked in:".to_string(),
        "RIP: 0010:shrink_folio_list+0x1c0/0x1f00".to_string(),
        "Code: 48 8b 45 c0 <0f> 0b e9 2c ff ff ff".to_string(),
        "Call Trace:".to_string(),
        " <TASK>".to_string(),
    ];
    for (f, off) in frames {
        excerpt.push(format!(" {f}+0x{off:x}/0x4000"));
    }
    excerpt.push(" </TASK>".to_string());
    let excerpt = excerpt.join("\n");
    let scratch = tempfile::tempdir().unwrap();
    let decoded = decoder.decode(&excerpt, scratch.path()).await.unwrap();
    let lines: Vec<&str> = decoded.lines().collect();
    assert_eq!(lines.len(), excerpt.lines().count(), "{decoded}");
    // Lines without a frame and the Code: line stay as they were.
    for i in [0, 2, 4, 5, 6] {
        assert_eq!(lines[i], excerpt.lines().nth(i).unwrap());
    }
    for (k, (f, off)) in frames.iter().enumerate() {
        let want = addr2line(&decoder.vmlinux, symbols[*f] + off, &base).await;
        assert!(
            want.contains(".c:") || want.contains(".h:"),
            "{f}: addr2line gave {want}"
        );
        assert_eq!(lines[7 + k], format!(" {f} ({want})"), "{decoded}");
    }
    assert!(
        lines[7].contains("mm/vmscan.c:"),
        "shrink_folio_list is in mm/vmscan.c: {}",
        lines[7]
    );
    // The decoded report is still the same splat.
    let splats = mmci::results::splat::detect(&decoded);
    assert_eq!(splats.len(), 1, "{splats:?}");
    assert_eq!(splats[0].title, "WARNING in shrink_folio_list");
}
