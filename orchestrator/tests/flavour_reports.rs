//! Reports of a matrix with the `config` axis: the default matrix's
//! 64-thread cell on default and debug kernels side by side, on the
//! analysis bench's synthetic runs (mmci::analysis::synthetic). The debug
//! cell and kernels are named so in every format: the terminal table and
//! kernels block, markdown, email, HTML and JSON. Snapshots of the text
//! formats.

use std::path::{Path, PathBuf};

use mmci::analysis::synthetic::synthetic_for;
use mmci::analysis::{compare, Comparison, Options};
use mmci::kernel::Flavour;
use mmci::matrix::{plan, Overrides};
use mmci::report::{self, Format, ReportInput};
use mmci::results::dir::{Manifest, VariantKernel};
use mmci::results::KernelInfo;

const MATRIX: &str = "\
description: synthetic, default and debug kernels
axes:
  arch: [x86_64]
  config: [default, debug]
  threads: [64]
repeats: 5
kernels:
  - name: base
  - name: patched
    lore: <synthetic@mmci>
expect:
  throttle_isolated: nonzero
  touches: no_regression
";

fn comparison() -> (Comparison, Manifest) {
    let p = plan::from_text(
        MATRIX,
        "flavours.yaml",
        Path::new("."),
        &Overrides::default(),
    )
    .unwrap();
    let (mut m, runs, series) = synthetic_for(p);
    for flavour in [Flavour::Default, Flavour::Debug] {
        for (variant, description) in [("base", "base tree"), ("patched", "lore <synthetic@mmci>")]
        {
            m.kernels.push(VariantKernel {
                variant: variant.into(),
                arch: mmci::arch::Arch::X86_64,
                flavour,
                description: description.into(),
                kernel: KernelInfo {
                    image: PathBuf::from(format!("/cache/builds/{variant}-{flavour}/vmlinux")),
                    release: "6.12.57".into(),
                    tree: Some("linux-source-6.12".into()),
                    tree_commit: Some("2a7be210a22a8655e73e347054808314e73be671".into()),
                    build_key: Some(format!("{variant}-{flavour}")),
                    series_hash: None,
                    head_commit: Some("2a7be210a22a8655e73e347054808314e73be671".into()),
                    build_sandboxed: Some(true),
                    build_warnings: vec![],
                    series: None,
                    patchwork: None,
                    flavour,
                    upstream: None,
                    compiler: None,
                    thp: None,
                    config: None,
                },
                new_warnings: vec![],
                config: None,
            });
        }
    }
    let expect = m.plan.expect.clone();
    let c = compare(&m, &runs, &expect, series, &Options::default());
    (c, m)
}

fn render(format: Format) -> String {
    let (c, m) = comparison();
    report::render(format, &ReportInput::new(&c, &m))
}

#[test]
fn the_plan_has_one_cell_per_flavour() {
    let (c, m) = comparison();
    let labels: Vec<(&str, Flavour)> = m
        .plan
        .cells
        .iter()
        .map(|cell| (cell.label.as_str(), cell.flavour))
        .collect();
    assert_eq!(
        labels,
        [
            ("config=default", Flavour::Default),
            ("config=debug", Flavour::Debug)
        ]
    );
    assert_eq!(
        c.cells.iter().map(|cell| cell.flavour).collect::<Vec<_>>(),
        [Flavour::Default, Flavour::Debug]
    );
}

#[test]
fn terminal_names_the_debug_cell_and_kernels() {
    let (c, m) = comparison();
    let text = format!(
        "{}\n{}",
        mmci::report::comparison::render_fitted(&c, Some(100)),
        mmci::report::runs_table::render_kernels(&m)
    );
    assert!(text.contains("kernel base (x86_64, debug)"), "{text}");
    insta::assert_snapshot!(text);
}

#[test]
fn markdown_snapshot() {
    let md = render(Format::Markdown);
    assert!(md.contains("config=debug"), "{md}");
    insta::assert_snapshot!(md);
}

#[test]
fn email_snapshot() {
    let mail = render(Format::Email);
    assert!(mail.contains("config=debug"), "{mail}");
    insta::assert_snapshot!(mail);
}

#[test]
fn html_names_the_flavour_of_cells_and_kernels() {
    let html = render(Format::Html);
    for want in ["config=debug", "debug kernels (DEBUG_VM", "x86_64, debug"] {
        assert!(html.contains(want), "{want}");
    }
}

#[test]
fn json_carries_the_flavour_of_debug_cells_only() {
    let json: serde_json::Value = serde_json::from_str(&render(Format::Json)).unwrap();
    let cells = json["cells"].as_array().unwrap();
    assert_eq!(cells.len(), 2);
    // A default cell reads as it did before flavours: no key.
    assert!(cells[0].get("flavour").is_none(), "{}", cells[0]);
    assert_eq!(cells[1]["flavour"], "debug");
    assert_eq!(cells[1]["label"], "config=debug");
}
