//! One cell from one combination of axis values: its keys checked
//! against the known ones, the values applied to the machine and the guest
//! job, and its stable id ([`cell_id`]).

use super::*;
use crate::scenario::registry;

pub(super) fn placed(v: &serde_saphyr::Spanned<Scalar>) -> Placed {
    Placed {
        value: v.value.clone(),
        pos: Pos::of(v),
    }
}

pub(super) fn to_combo(entry: &BTreeMap<String, serde_saphyr::Spanned<Scalar>>) -> Combo {
    entry.iter().map(|(k, v)| (k.clone(), placed(v))).collect()
}

/// The key that selects one of the matrix's `scripts:`.
pub const SCRIPT_KEY: &str = "script";
/// The key that selects the kernel flavour (`config: [default, debug]`).
pub const FLAVOUR_KEY: &str = "config";

pub(super) fn known_key(k: &str) -> bool {
    MACHINE_KEYS.contains(&k)
        || GuestJob::PARAM_KEYS.contains(&k)
        || k == SCRIPT_KEY
        || k == FLAVOUR_KEY
}

pub(super) fn known_keys_hint() -> String {
    let mut all: Vec<&str> = MACHINE_KEYS.to_vec();
    all.extend(GuestJob::PARAM_KEYS);
    all.push(SCRIPT_KEY);
    all.push(FLAVOUR_KEY);
    all.join(", ")
}

/// Sets one key of a cell from its text; the error says what was expected.
pub(super) fn apply(
    cell: &mut Cell,
    key: &str,
    text: &str,
    scripts: &BTreeMap<String, ScriptDef>,
) -> Result<(), String> {
    let bad = |expected: &str| format!("{key}: `{text}` is not {expected}");
    super::limits::check(key, text)?;
    match key {
        SCRIPT_KEY => {
            let def = scripts.get(text).ok_or_else(|| {
                if scripts.is_empty() {
                    format!("script `{text}`: this matrix has no `scripts:` section")
                } else {
                    format!(
                        "script `{text}` is not one of the matrix's scripts ({})",
                        scripts.keys().cloned().collect::<Vec<_>>().join(", ")
                    )
                }
            })?;
            cell.job.script = Some(def.job.clone());
            cell.job.scenario = registry::RUNS_SCRIPTS;
        }
        FLAVOUR_KEY => cell.flavour = text.parse().map_err(|e| format!("{key}: {e}"))?,
        "arch" => cell.arch = text.parse().map_err(|_| bad("an arch (x86_64, arm64)"))?,
        "vcpus" => {
            cell.vcpus = text
                .parse()
                .ok()
                .filter(|n| (1..=64).contains(n))
                .ok_or_else(|| bad("a vCPU count from 1 to 64"))?
        }
        "memory_mb" => {
            cell.memory_mb = text
                .parse()
                .ok()
                .filter(|n| *n >= 128)
                .ok_or_else(|| bad("a size in MiB of at least 128"))?
        }
        "swap_mb" => cell.swap_mb = text.parse().map_err(|_| bad("a size in MiB"))?,
        _ if !known_key(key) => {
            return Err(format!(
                "unknown key `{key}`; known keys: {}",
                known_keys_hint()
            ))
        }
        _ => cell.job.set(key, text).map_err(|e| e.to_string())?,
    }
    Ok(())
}

/// Turns one combination, then the command line's `--set`s, into a cell.
pub(super) fn cell_of(
    combo: &Combo,
    sets: &[String],
    file: &str,
    scripts: &BTreeMap<String, ScriptDef>,
) -> Result<Cell, MatrixError> {
    let mut cell = Cell {
        id: String::new(),
        label: combo
            .iter()
            .map(|(k, v)| format!("{k}={}", v.value))
            .collect::<Vec<_>>()
            .join(" "),
        arch: Arch::X86_64,
        vcpus: DEFAULT_VCPUS,
        memory_mb: DEFAULT_MEMORY_MB,
        swap_mb: DEFAULT_SWAP_MB,
        flavour: Flavour::Default,
        job: GuestJob::default(),
        regime: None,
    };
    for (key, v) in combo {
        apply(&mut cell, key, &v.value.to_string(), scripts)
            .map_err(|what| MatrixError::at(file, Some(v.pos), what))?;
    }
    for s in sets {
        let (k, v) = s.split_once('=').ok_or_else(|| {
            MatrixError::at(
                "command line",
                None,
                format!("--set {s}: expected KEY=VALUE"),
            )
        })?;
        apply(&mut cell, k, v, scripts)
            .map_err(|what| MatrixError::at("command line", None, format!("--set {s}: {what}")))?;
    }
    match (cell.job.scenario, &cell.job.script) {
        (s, None) if s == registry::RUNS_SCRIPTS => {
            return Err(MatrixError::at(
                file,
                combo.get("scenario").map(|v| v.pos),
                "scenario script needs `script: NAME` (one of the matrix's `scripts:`)",
            ))
        }
        (other, Some(_)) if other != registry::RUNS_SCRIPTS => {
            return Err(MatrixError::at(
                file,
                combo.get(SCRIPT_KEY).map(|v| v.pos),
                format!("`script:` runs scenario script, not {other}"),
            ))
        }
        _ => {}
    }
    resolve(&mut cell, combo, sets);
    cell.id = cell_id(&cell);
    Ok(cell)
}

/// What follows from the values a cell was given (`combo`, then `sets`):
/// no swap size without swap, scenario B's own MGLRU switch. A matrix's
/// `regimes:` resolve their pairs the same way to find the cells they name.
pub(super) fn resolve(cell: &mut Cell, combo: &Combo, sets: &[String]) {
    if !cell.job.swap.enabled() {
        cell.swap_mb = 0;
    }
    carry_mglru_to_scenario_b(cell, combo, sets);
}

/// Scenario B keeps MGLRU off unless asked (its own job field,
/// `noio_mglru`, since the job's `mglru` is on by default and every
/// scenario B cell so far was recorded with it on and unused): a `mglru:`
/// given for a scenario B cell, in the matrix or by `--set`, is carried
/// there, and `mglru` goes back to its default, so that `mglru: false`
/// names the same cell as no `mglru:` at all. A `--set noio_mglru=` of
/// the command line is the cell's own switch said outright: it wins.
fn carry_mglru_to_scenario_b(cell: &mut Cell, combo: &Combo, sets: &[String]) {
    if cell.job.scenario != registry::OWN_MGLRU_SWITCH {
        return;
    }
    let set = |key: &str| {
        sets.iter()
            .any(|s| s.split_once('=').is_some_and(|(k, _)| k == key))
    };
    let given = combo.contains_key("mglru") || set("mglru");
    if given {
        if !set("noio_mglru") {
            cell.job.noio_mglru = cell.job.mglru;
        }
        cell.job.mglru = GuestJob::default().mglru;
    }
}

/// Job keys added after cell ids were first recorded: left out of the hash
/// at their default value, so that cells without them keep their ids.
const KEYS_ADDED_LATER: [&str; 9] = [
    "thp",
    "memcgs",
    "neighbour_mb",
    "kill_after_s",
    "apps",
    "app_cache_mb",
    "app_anon_mb",
    "noio_mglru",
    "app_stream_kb_s",
];

/// `<arch>-<scenario>-<10 hex>` (`<arch>-<scenario>-<flavour>-<10 hex>`
/// for a flavour other than the default): readable, and a hash of
/// everything that defines the cell. The default flavour and the job keys
/// added later at their defaults are left out of the hash, so cells
/// without them keep the ids they had (old runs of the THP-less ids ran
/// with THP always: the plan fingerprint's [`super::GUEST_SETUP`] keeps
/// them apart).
pub fn cell_id(cell: &Cell) -> String {
    let mut job = serde_json::json!(cell.job);
    let defaults = serde_json::json!(GuestJob::default());
    if let Some(j) = job.as_object_mut() {
        for key in KEYS_ADDED_LATER {
            if j.get(key) == defaults.get(key) {
                j.remove(key);
            }
        }
    }
    let mut canonical = serde_json::json!({
        "arch": cell.arch,
        "vcpus": cell.vcpus,
        "memory_mb": cell.memory_mb,
        "swap_mb": cell.swap_mb,
        "job": job,
    });
    let mut flavour = String::new();
    if !cell.flavour.is_default() {
        canonical["flavour"] = serde_json::json!(cell.flavour);
        flavour = format!("{}-", cell.flavour);
    }
    let digest = Sha256::digest(canonical.to_string().as_bytes());
    format!(
        "{}-{}-{flavour}{}",
        cell.arch,
        cell.job.scenario,
        &hex::encode(digest)[..10]
    )
}

pub(super) fn check_keys(
    file: &str,
    entries: impl Iterator<Item = (String, Pos)>,
    axes: Option<&BTreeSet<String>>,
    what: &str,
) -> Result<(), MatrixError> {
    for (k, pos) in entries {
        if !known_key(&k) {
            return Err(MatrixError::at(
                file,
                Some(pos),
                format!(
                    "{what}: unknown key `{k}`; known keys: {}",
                    known_keys_hint()
                ),
            ));
        }
        if let Some(axes) = axes {
            if !axes.contains(&k) {
                return Err(MatrixError::at(
                    file,
                    Some(pos),
                    format!(
                        "exclude: `{k}` is not an axis of this matrix (axes: {})",
                        axes.iter().cloned().collect::<Vec<_>>().join(", ")
                    ),
                ));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// matrix/default.yaml as the cell ids below were recorded from (its
    /// high cell was 192 threads until the regimes were recalibrated): the
    /// ids of old results dirs must not move when a key is added.
    const RECORDED_DEFAULT: &str =
        "description: Scenario A (MGLRU isolation throttling), bundled series vs its base
axes:
  arch: [x86_64]
  vcpus: [2]
  memory_mb: [1024]
  scenario: [mglru_isolation]
  memcg_max_mb: [16]
  working_set_mb: [48]
  swap_delay_ms: [50]
  threads: [64, 192]
  duration_s: [20]
repeats: 5
kernels:
  - name: base
  - name: patched
    series: ../kernels/series/mglru-isolation.mbox
";
    use crate::matrix::plan::tests::{plan_of, SAMPLE};

    #[test]
    fn cells_resolve_machine_and_job() {
        let p = plan_of(SAMPLE).unwrap();
        assert_eq!(p.cells.len(), 3);
        assert_eq!(p.repeats, 3);
        let x64 = p
            .cells
            .iter()
            .find(|c| c.arch == Arch::X86_64 && c.job.threads == 64)
            .unwrap();
        assert_eq!(x64.vcpus, 4);
        assert_eq!(x64.job.duration_s, 10);
        assert_eq!(x64.memory_mb, DEFAULT_MEMORY_MB);
        assert!(x64.id.starts_with("x86_64-mglru_isolation-"), "{}", x64.id);
        assert_eq!(x64.label, "arch=x86_64 threads=64 vcpus=4");
        assert_eq!(p.variants, [Variant::base()]);
    }

    #[test]
    fn ids_do_not_depend_on_file_order() {
        let a = plan_of("axes:\n  threads: [64, 192]\n  vcpus: [2]\n").unwrap();
        let b = plan_of("axes:\n  vcpus: [2]\n  threads: [192, 64]\n").unwrap();
        let ids = |p: &Plan| {
            p.cells
                .iter()
                .map(|c| c.id.clone())
                .collect::<BTreeSet<_>>()
        };
        assert_eq!(ids(&a), ids(&b));
        assert_eq!(
            a.fingerprint(),
            plan_of("axes:\n  threads: [64, 192]\n  vcpus: [2]\n")
                .unwrap()
                .fingerprint()
        );
    }

    /// The `thp` axis: a matrix that does not name it (or names `never`,
    /// the default) keeps its cells' ids, recorded before the axis existed;
    /// other modes are other cells. Old results dirs of those ids ran with
    /// THP always, so the plan fingerprint is another (GUEST_SETUP).
    #[test]
    fn thp_axis_ids() {
        let default_yaml = RECORDED_DEFAULT;
        let matrix_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../matrix");
        let recorded: BTreeSet<String> = [
            "x86_64-mglru_isolation-f7609106d9",
            "x86_64-mglru_isolation-644f8eae0d",
        ]
        .map(String::from)
        .into();
        let ids_with = |axis: Option<(&str, &str)>| -> BTreeSet<String> {
            let text = match axis {
                None => default_yaml.to_string(),
                Some((key, v)) => default_yaml.replace(
                    "  arch: [x86_64]\n",
                    &format!("  arch: [x86_64]\n  {key}: {v}\n"),
                ),
            };
            let p = from_text(&text, "m.yaml", &matrix_dir, &Overrides::default()).unwrap();
            p.cells.iter().map(|c| c.id.clone()).collect()
        };
        let ids = |v: Option<&str>| ids_with(v.map(|v| ("thp", v)));
        // (thp axis, ids are the recorded ones)
        let cases = [
            (None, true),
            (Some("[never]"), true),
            (Some("[always]"), false),
            (Some("[madvise]"), false),
            (Some("[kernel]"), false),
        ];
        for (axis, same) in cases {
            assert_eq!(ids(axis) == recorded, same, "{axis:?}");
        }
        assert_eq!(ids(Some("[never, always]")).len(), 4);
        // The other keys added later (KEYS_ADDED_LATER): at their default
        // the recorded ids, at any other value other cells.
        // (key, values, ids are the recorded ones)
        let later = [
            ("memcgs", "[1]", true),
            ("memcgs", "[16]", false),
            ("neighbour_mb", "[0]", true),
            ("neighbour_mb", "[16]", false),
            ("kill_after_s", "[0]", true),
            ("kill_after_s", "[10]", false),
            ("apps", "[0]", true),
            ("apps", "[40]", false),
            ("app_cache_mb", "[2]", true),
            ("app_cache_mb", "[4]", false),
            ("app_anon_mb", "[1]", true),
            ("app_anon_mb", "[0]", false),
            ("app_stream_kb_s", "[0]", true),
            ("app_stream_kb_s", "[256]", false),
        ];
        for (key, values, same) in later {
            assert_eq!(
                ids_with(Some((key, values))) == recorded,
                same,
                "{key} {values}"
            );
        }
        // The embedded default matrix runs THP off in every cell.
        let embedded = crate::matrix::embedded::DEFAULT_MATRIX;
        let p = from_text(embedded, "m.yaml", &matrix_dir, &Overrides::default()).unwrap();
        assert!(p
            .cells
            .iter()
            .all(|c| c.job.thp == mmci_record::ThpMode::Never));
        // `--set thp=always` is the axis too.
        let over = Overrides {
            sets: vec!["thp=always".into()],
            ..Overrides::default()
        };
        let p = from_text(default_yaml, "m.yaml", &matrix_dir, &over).unwrap();
        assert!(p
            .cells
            .iter()
            .all(|c| c.job.thp == mmci_record::ThpMode::Always));
        assert!(p.cells.iter().all(|c| !recorded.contains(&c.id)));
    }

    /// matrix/default.yaml's cell ids as `mmci matrix show` printed them
    /// before flavours existed: a matrix without `config` (or with
    /// `config: [default]`) keeps them.
    #[test]
    fn flavour_axis_ids_and_labels() {
        let default_yaml = RECORDED_DEFAULT;
        let matrix_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../matrix");
        let recorded_ids = [
            "x86_64-mglru_isolation-f7609106d9".to_string(),
            "x86_64-mglru_isolation-644f8eae0d".to_string(),
        ];
        let with_axis = |values: &str| {
            default_yaml.replace(
                "  arch: [x86_64]\n",
                &format!("  arch: [x86_64]\n  config: {values}\n"),
            )
        };
        let set = |s: &str| Overrides {
            sets: vec![s.to_string()],
            ..Overrides::default()
        };
        type Case<'a> = (
            &'a str,
            String,
            Overrides,
            &'a [(&'a str, Flavour, &'a str)],
        );
        let cases: Vec<Case> = vec![
            (
                "no config key",
                default_yaml.to_string(),
                Overrides::default(),
                &[
                    ("", Flavour::Default, "threads=64"),
                    ("", Flavour::Default, "threads=192"),
                ],
            ),
            (
                "config: [default]",
                with_axis("[default]"),
                Overrides::default(),
                &[
                    ("", Flavour::Default, "threads=64"),
                    ("", Flavour::Default, "threads=192"),
                ],
            ),
            (
                "config: [debug]: the flavour is in every label",
                with_axis("[debug]"),
                Overrides::default(),
                &[
                    ("-debug-", Flavour::Debug, "config=debug threads=64"),
                    ("-debug-", Flavour::Debug, "config=debug threads=192"),
                ],
            ),
            (
                "config: [default, debug]",
                with_axis("[default, debug]"),
                Overrides::default(),
                &[
                    ("", Flavour::Default, "config=default threads=64"),
                    ("", Flavour::Default, "config=default threads=192"),
                    ("-debug-", Flavour::Debug, "config=debug threads=64"),
                    ("-debug-", Flavour::Debug, "config=debug threads=192"),
                ],
            ),
            (
                "--set config=debug",
                default_yaml.to_string(),
                set("config=debug"),
                &[
                    ("-debug-", Flavour::Debug, "config=debug threads=64"),
                    ("-debug-", Flavour::Debug, "config=debug threads=192"),
                ],
            ),
        ];
        for (what, text, over, want) in cases {
            let p = from_text(&text, "m.yaml", &matrix_dir, &over).unwrap();
            let got: Vec<(Flavour, &str)> = p
                .cells
                .iter()
                .map(|c| (c.flavour, c.label.as_str()))
                .collect();
            let expected: Vec<(Flavour, &str)> = want.iter().map(|(_, f, l)| (*f, *l)).collect();
            assert_eq!(got, expected, "{what}");
            for (cell, (infix, flavour, _)) in p.cells.iter().zip(want) {
                if flavour.is_default() {
                    // The id the cell had before flavours existed.
                    assert!(recorded_ids.contains(&cell.id), "{what}: {}", cell.id);
                } else {
                    assert!(
                        cell.id.starts_with("x86_64-mglru_isolation") && cell.id.contains(infix),
                        "{what}: {}",
                        cell.id
                    );
                    assert!(!recorded_ids.contains(&cell.id), "{what}: {}", cell.id);
                }
            }
        }
        // A debug cell is another cell than its default twin, and the plan
        // another plan.
        let both = from_text(
            &with_axis("[default, debug]"),
            "m.yaml",
            &matrix_dir,
            &Overrides::default(),
        )
        .unwrap();
        let ids: BTreeSet<&String> = both.cells.iter().map(|c| &c.id).collect();
        assert_eq!(ids.len(), 4);
        let fingerprint = |text: &str| {
            from_text(text, "m.yaml", &matrix_dir, &Overrides::default())
                .unwrap()
                .fingerprint()
        };
        assert_eq!(
            fingerprint(default_yaml),
            fingerprint(&with_axis("[default]"))
        );
        assert_ne!(
            fingerprint(default_yaml),
            fingerprint(&with_axis("[debug]"))
        );
    }

    /// Scenario B's `mglru:` goes to its own job field: off unless asked
    /// (matrix/noio.yaml's cell keeps its id), the same cell however it is
    /// asked for, and scenario A's `mglru` as it was.
    #[test]
    fn scenario_b_takes_mglru_into_its_own_field() {
        let noio = include_str!("../../../../matrix/noio.yaml");
        let axis = |v: &str| {
            noio.replace(
                "  duration_s: [30]\n",
                &format!("  duration_s: [30]\n  mglru: [{v}]\n"),
            )
        };
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../matrix");
        let cell = |text: &str, sets: &[&str]| {
            let over = Overrides {
                sets: sets.iter().map(|s| s.to_string()).collect(),
                ..Overrides::default()
            };
            let p = from_text(text, "noio.yaml", &dir, &over).unwrap();
            assert_eq!(p.cells.len(), 1);
            let c = p.cells[0].clone();
            (c.job.noio_mglru, c.job.mglru, c.id)
        };
        let (off, _, classic_id) = cell(noio, &[]);
        assert!(!off);
        // The id of matrix/noio.yaml's cell (the seed's shape) in its runs
        // of 3 Dec 2026 (docs/scenario-b.md).
        assert_eq!(classic_id, "x86_64-noio_verity-e9d62fc06a");
        let (_, _, on_id) = cell(&axis("true"), &[]);
        assert_ne!(on_id, classic_id);
        // (what, matrix text, --sets, noio_mglru, mglru, the cell's id)
        type Case<'a> = (&'a str, String, &'a [&'a str], bool, bool, &'a String);
        let cases: [Case; 6] = [
            (
                "mglru: [false]",
                axis("false"),
                &[],
                false,
                true,
                &classic_id,
            ),
            ("mglru: [true]", axis("true"), &[], true, true, &on_id),
            (
                "--set mglru=y",
                noio.to_string(),
                &["mglru=y"],
                true,
                true,
                &on_id,
            ),
            (
                "--set noio_mglru=y",
                noio.to_string(),
                &["noio_mglru=y"],
                true,
                true,
                &on_id,
            ),
            (
                "--set noio_mglru=y over mglru: [false]",
                axis("false"),
                &["noio_mglru=y"],
                true,
                true,
                &on_id,
            ),
            (
                "--set mglru=n over mglru: [true]",
                axis("true"),
                &["mglru=n"],
                false,
                true,
                &classic_id,
            ),
        ];
        for (what, text, sets, want_on, want_mglru, want_id) in cases {
            let (on, mglru, id) = cell(&text, sets);
            assert_eq!((on, mglru, &id), (want_on, want_mglru, want_id), "{what}");
        }
        // Scenario A keeps `mglru` where it was.
        let a = plan_of("axes:\n  threads: [64]\n  mglru: [false]\n").unwrap();
        assert_eq!(
            (a.cells[0].job.mglru, a.cells[0].job.noio_mglru),
            (false, false)
        );
    }

    #[test]
    fn unknown_flavours_name_the_line_and_the_known_ones() {
        for (text, over, want) in [
            (
                "axes:\n  threads: [1]\n  config: [default, kmsan]\n",
                vec![],
                "m.yaml: line 3 column 21: config: `kmsan` is not a kernel flavour (known flavours: default, debug, kasan)",
            ),
            (
                "axes:\n  threads: [1]\ninclude:\n  - {threads: 2, config: Debug}\n",
                vec![],
                "m.yaml: line 4 column 26: config: `Debug` is not a kernel flavour (known flavours: default, debug, kasan)",
            ),
            (
                "axes:\n  threads: [1]\n",
                vec!["config=fast".to_string()],
                "command line: --set config=fast: config: `fast` is not a kernel flavour (known flavours: default, debug, kasan)",
            ),
        ] {
            let over = Overrides {
                sets: over,
                ..Overrides::default()
            };
            let e = from_text(text, "m.yaml", Path::new("."), &over)
                .unwrap_err()
                .to_string();
            assert_eq!(e, want);
        }
    }

    #[test]
    fn command_line_sets_override_every_cell() {
        let over = Overrides {
            sets: vec!["duration_s=3".into(), "vcpus=1".into()],
            ..Default::default()
        };
        let p = from_text(SAMPLE, "m.yaml", Path::new("."), &over).unwrap();
        assert!(p
            .cells
            .iter()
            .all(|c| c.job.duration_s == 3 && c.vcpus == 1));
        let over = Overrides {
            sets: vec!["treads=3".into()],
            ..Default::default()
        };
        let e = from_text(SAMPLE, "m.yaml", Path::new("."), &over)
            .unwrap_err()
            .to_string();
        assert!(e.contains("--set treads=3: unknown key `treads`"), "{e}");
        let over = Overrides {
            sets: vec!["swap=n".into()],
            ..Default::default()
        };
        let p = from_text(SAMPLE, "m.yaml", Path::new("."), &over).unwrap();
        assert!(p.cells.iter().all(|c| c.swap_mb == 0));
    }
}
