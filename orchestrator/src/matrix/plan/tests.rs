//! The tests of the plan (`matrix::plan`), in a file of their own so that
//! its module stays under the layering test's 800 lines.

use super::*;

pub(super) const SAMPLE: &str = "\
description: test
axes:
  arch: [x86_64, arm64]
  threads: [64, 192]
  duration_s: [10]
exclude:
  - {arch: arm64, threads: 192}
include:
  - {arch: x86_64, threads: 64, vcpus: 4}
repeats: 3
";

pub(super) fn plan_of(text: &str) -> Result<Plan, MatrixError> {
    from_text(text, "m.yaml", Path::new("."), &Overrides::default())
}

#[test]
fn errors_name_file_line_column_and_the_fix() {
    let e = plan_of("axes:\n  threads: [64, lots]\n")
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        "m.yaml: line 2 column 17: guest parameter `mmci.threads`: `lots` is not a non-negative whole number"
    );
    let e = plan_of("axes:\n  treads: [64]\n").unwrap_err().to_string();
    assert!(
        e.starts_with(
            "m.yaml: line 2 column 11: axes: unknown key `treads`; known keys: arch, vcpus"
        ),
        "{e}"
    );
    let e = plan_of("axes:\n  vcpus: [0]\n").unwrap_err().to_string();
    assert!(
        e.starts_with("m.yaml: line 2 column 11: vcpus: `0` is not a vCPU count"),
        "{e}"
    );
    let e = plan_of("axes:\n  threads: [1]\nexclude:\n  - {vcpus: 2}\n")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("line 4 column 5: exclude: `vcpus` is not an axis"),
        "{e}"
    );
    let e = plan_of("axes:\n  arch: [sparc]\n").unwrap_err().to_string();
    assert!(
        e.contains("line 2 column 10: arch: `sparc` is not an arch"),
        "{e}"
    );
    let e = plan_of("axes:\n  threads: [1]\nrepeats: 0\n")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("line 3 column 10: repeats must be at least 1"),
        "{e}"
    );
    let e = plan_of("axes:\n  threads: [1]\nkernels:\n  - name: p\n    series: nope.mbox\n")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("line 4 column 5: kernel `p`: series ./nope.mbox not found"),
        "{e}"
    );
    let e = plan_of("axes:\n  threads: []\n").unwrap_err().to_string();
    assert!(e.contains("no cells"), "{e}");
    let e = plan_of("axes:\n  threads: [1]\n  x: 1\n")
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("m.yaml: line 3"), "{e}");
}

#[test]
fn a_kernels_own_expectations_stay_with_it() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("s.mbox"), "").unwrap();
    let of = |kernels: &str| {
        from_text(
            &format!("axes:\n  threads: [1]\nkernels:\n{kernels}"),
            "m.yaml",
            dir.path(),
            &Overrides::default(),
        )
    };
    let p = of("  - name: base\n  - name: p\n    series: s.mbox\n    expect:\n      throttle_isolated: nonzero\n").unwrap();
    assert!(p.expect.is_empty());
    assert!(p.variants[0].expect.is_empty());
    assert_eq!(
        p.variants[1].expect["throttle_isolated"].kind(),
        file::ExpectKind::Nonzero
    );
    // The manifest keeps them; the plan's identity does not change.
    let back: Variant =
        serde_json::from_str(&serde_json::to_string(&p.variants[1]).unwrap()).unwrap();
    assert_eq!(back, p.variants[1]);
    let without = of("  - name: base\n  - name: p\n    series: s.mbox\n").unwrap();
    assert_eq!(p.fingerprint(), without.fingerprint());
    // A series given on the command line replaces the kernels, and
    // with them their expectations.
    let over = Overrides {
        variants: Some(vec![
            Variant::base(),
            Variant {
                name: "patched".into(),
                series: Some(crate::series::SeriesSpec::Mbox(dir.path().join("s.mbox"))),
                from_command_line: true,
                ..Variant::base()
            },
        ]),
        ..Default::default()
    };
    let p = from_text(
        "axes:\n  threads: [1]\nkernels:\n  - name: base\n  - name: p\n    series: s.mbox\n    expect:\n      throttle_isolated: nonzero\n",
        "m.yaml",
        dir.path(),
        &over,
    )
    .unwrap();
    assert!(p.variants.iter().all(|v| v.expect.is_empty()));
    // Errors name the kernel and its entry's line.
    let cases: &[(&str, &str)] = &[
        (
            "  - name: base\n  - name: p\n    series: s.mbox\n    expect:\n      throttled: nonzero\n",
            "m.yaml: line 5 column 5: kernel `p`: expect: unknown metric `throttled`",
        ),
        (
            "  - name: base\n    expect:\n      touches: increase\n  - name: p\n",
            "m.yaml: line 4 column 5: kernel `base` is the baseline: its `expect:` would compare it with itself",
        ),
        (
            "  - name: base\n  - name: p\n    expect:\n      noio_calls: nonzero\n",
            "m.yaml: line 5 column 5: kernel `p`: expect: noio_calls is measured in noio_verity runs",
        ),
    ];
    for (kernels, want) in cases {
        let e = of(kernels).unwrap_err().to_string();
        assert!(e.starts_with(want), "{kernels}\n{e}");
    }
}

#[test]
fn expectations_name_catalog_metrics() {
    let p = plan_of("axes:\n  threads: [1]\nexpect:\n  throttle_isolated: nonzero\n").unwrap();
    assert_eq!(p.expect.len(), 1);
    let e = plan_of("axes:\n  threads: [1]\nexpect:\n  throttled_isolated: nonzero\n")
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("m.yaml: line 4 column 23: expect: unknown metric `throttled_isolated`; known metrics: throttle_isolated, "),
        "{e}"
    );
    let e = plan_of("axes:\n  threads: [1]\nexpect:\n  oom_kills: {kind: zero, threshold: 0.1}\n")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("expect: oom_kills: a threshold means nothing for `zero`"),
        "{e}"
    );
}

#[test]
fn slots_interleave_variants_within_each_repeat() {
    let mut p = plan_of("axes:\n  threads: [64, 192]\nrepeats: 2\n").unwrap();
    p.variants.push(Variant {
        name: "patched".into(),
        ..Variant::base()
    });
    let cells: Vec<&Cell> = p.cells.iter().collect();
    let order: Vec<String> = p
        .slots(&cells)
        .iter()
        .map(|s| format!("{}:{}:{}", &s.cell[..22], s.variant, s.repeat))
        .collect();
    let (c1, c2) = (&p.cells[0].id[..22], &p.cells[1].id[..22]);
    assert_eq!(
        order,
        [
            format!("{c1}:base:1"),
            format!("{c1}:patched:1"),
            format!("{c2}:base:1"),
            format!("{c2}:patched:1"),
            format!("{c1}:base:2"),
            format!("{c1}:patched:2"),
            format!("{c2}:base:2"),
            format!("{c2}:patched:2"),
        ]
    );
}

#[test]
fn oversized_plans_are_refused_naming_the_limit() {
    let values = |n: usize| {
        (1..=n)
            .map(|i| i.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    };
    // (matrix text, what the error must say)
    let cases = [
        // The case: 10^6 cells (two axes of 1000) x 10^6 repeats.
        (
            format!(
                "axes:\n  threads: [{}]\n  working_set_mb: [{}]\nrepeats: 1000000\n",
                values(1000),
                values(1000)
            ),
            "the axes give 1000000 combinations (threads 1000 x working_set_mb 1000); the limit is 10000 cells (MAX_CELLS)",
        ),
        (
            "axes:\n  threads: [1, 2]\nrepeats: 4000000000\n".to_string(),
            "line 3 column 10: 2 cells x 1 kernels x 4000000000 repeats = 8000000000 runs; the limit is 100000 runs (MAX_RUNS)",
        ),
        (
            format!("axes:\n  threads: [{}]\nrepeats: 11\n", values(10_000)),
            "10000 cells x 1 kernels x 11 repeats = 110000 runs; the limit is 100000 runs",
        ),
    ];
    for (text, want) in cases {
        let e = plan_of(&text).unwrap_err().to_string();
        assert!(e.contains(want), "{e}\nwanted: {want}");
    }
    // Just under both limits is a plan.
    let p = plan_of(&format!(
        "axes:\n  threads: [{}]\nrepeats: 10\n",
        values(10_000)
    ))
    .unwrap();
    assert_eq!(p.cells.len(), 10_000);
}

#[test]
fn oversized_matrix_file_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("big.yaml");
    let mut text = String::from("axes:\n  threads: [1]\n");
    while text.len() as u64 <= MAX_FILE_BYTES {
        text.push_str("# padding padding padding padding padding padding\n");
    }
    std::fs::write(&path, &text).unwrap();
    let e = load(&path, &Overrides::default()).unwrap_err().to_string();
    assert!(
        e.contains("the limit for a matrix file is 1048576 bytes (MAX_FILE_BYTES)"),
        "{e}"
    );
}

/// Every shipped matrix names files in the repository: all still load.
#[test]
fn bundled_matrices_load() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../matrix");
    let mut n = 0;
    for e in std::fs::read_dir(&dir).unwrap() {
        let path = e.unwrap().path();
        if path.extension().is_some_and(|x| x == "yaml") {
            load(&path, &Overrides::default())
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            n += 1;
        }
    }
    assert!(n >= 8, "{n} matrices");
}

/// A matrix or script file is a regular file read capped by the bytes
/// actually read: /dev/zero and a FIFO (which blocked) are refused.
#[test]
fn unbounded_matrix_inputs_are_refused() {
    let e = load(Path::new("/dev/zero"), &Overrides::default())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("/dev/zero: cannot read: a character device, not a regular file; refused"),
        "{e}"
    );
    let tmp = script_dir();
    let fifo = tmp.path().join("matrix/scripts/fifo.sh");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: mkfifo on a path we own.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let e = from_text(
        "scripts:\n  r:\n    image: ../images/tools\n    file: scripts/fifo.sh\naxes: {}\n",
        "m.yaml",
        &tmp.path().join("matrix"),
        &Overrides::default(),
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("a FIFO, not a regular file"), "{e}");
    let e = load(&fifo, &Overrides::default()).unwrap_err().to_string();
    assert!(e.contains("a FIFO, not a regular file; refused"), "{e}");
}

/// A matrix dir with an image recipe and a script file beside it.
pub(super) fn script_dir() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    // A repository, as the bundled matrices are in one: ../images is in it.
    std::fs::create_dir(tmp.path().join(".git")).unwrap();
    std::fs::create_dir_all(tmp.path().join("images/tools")).unwrap();
    std::fs::write(
        tmp.path().join("images/tools/image.yaml"),
        "suite: bookworm\n",
    )
    .unwrap();
    std::fs::create_dir_all(tmp.path().join("matrix/scripts")).unwrap();
    std::fs::write(tmp.path().join("matrix/scripts/r.sh"), "echo hi\n").unwrap();
    tmp
}
