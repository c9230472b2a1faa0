//! A matrix's `regimes:`: each entry's pairs checked as a cell's are, and
//! the regime given to every cell that has them (the first entry that
//! names a cell wins; a cell no entry names has none). A regime is checked
//! on the baseline's OOM kills, so a cell that counts none cannot have one.

use super::expectations::of_cell;
use super::*;
use crate::matrix::file::RegimeEntry;
use crate::scenario::catalog::RUN_ENDING_KILLS;
use serde_saphyr::Spanned;

/// Gives each of `cells` the regime of the first of `entries` it has the
/// pairs of. An entry that names no cell is not an error: `--set` may
/// have moved every cell off the values it was calibrated at.
pub(super) fn assign(
    entries: &[Spanned<RegimeEntry>],
    file: &str,
    cells: &mut [Cell],
    scripts: &BTreeMap<String, ScriptDef>,
) -> Result<(), MatrixError> {
    for entry in entries {
        if entry.value.when.is_empty() {
            return Err(MatrixError::at(
                file,
                Some(Pos::of(entry)),
                "regimes: an entry needs `when:` pairs that name its cells, e.g. {threads: 288}",
            ));
        }
        check_keys(
            file,
            entry
                .value
                .when
                .iter()
                .map(|(k, v)| (k.clone(), Pos::of(v))),
            None,
            "regimes",
        )?;
        // Every value, whether or not an earlier entry takes the cells.
        if let Some(any) = cells.first() {
            has_pairs(any, &entry.value.when, file, scripts)?;
        }
    }
    for cell in cells.iter_mut() {
        for entry in entries {
            if !has_pairs(cell, &entry.value.when, file, scripts)? {
                continue;
            }
            let counts = of_cell(cell, scripts)
                .iter()
                .any(|m| RUN_ENDING_KILLS.contains(&m.name.as_ref()));
            if !counts {
                return Err(MatrixError::at(
                    file,
                    Some(Pos::of(entry)),
                    format!(
                        "regimes: this entry names cell {} ({}), which counts no OOM kills ({}) to check a regime by: narrow its `when:`",
                        if cell.label.is_empty() { &cell.id } else { &cell.label },
                        cell.job.scenario,
                        RUN_ENDING_KILLS.join(", ")
                    ),
                ));
            }
            cell.regime = Some(entry.value.base_oom);
            break;
        }
    }
    Ok(())
}

/// Whether `cell` has every pair of `when`: set on a copy, with what
/// follows from them resolved as the cell's own values were
/// ([`resolve`]), they change nothing that defines it (its id). So
/// `threads: 288` names the cells that run 288 threads after the command
/// line's `--set`s, however the file wrote the value; a value no cell
/// could have is an error at its line.
fn has_pairs(
    cell: &Cell,
    when: &BTreeMap<String, Spanned<Scalar>>,
    file: &str,
    scripts: &BTreeMap<String, ScriptDef>,
) -> Result<bool, MatrixError> {
    let mut probe = cell.clone();
    for (k, v) in when {
        apply(&mut probe, k, &v.value.to_string(), scripts)
            .map_err(|what| MatrixError::at(file, Some(Pos::of(v)), format!("regimes: {what}")))?;
    }
    resolve(&mut probe, &to_combo(when), &[]);
    Ok(cell_id(&probe) == cell.id)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matrix::file::BaseOom;

    const MATRIX: &str = "\
axes:
  threads: [64, 288, 512]
  duration_s: [20]
regimes:
  - when: {threads: 64}
    base_oom: none
  - when: {threads: \"288\", duration_s: 20}
    base_oom: most
  - when: {duration_s: 20}
    base_oom: none
";

    fn plan(text: &str, sets: &[&str]) -> Result<Plan, MatrixError> {
        let over = Overrides {
            sets: sets.iter().map(|s| s.to_string()).collect(),
            ..Overrides::default()
        };
        from_text(text, "m.yaml", Path::new("."), &over)
    }

    #[test]
    fn a_cell_gets_the_first_regime_whose_pairs_it_has() {
        use BaseOom::{Most, None as NoOom};
        let cases: [(&[&str], [Option<BaseOom>; 3]); 2] = [
            // 288 written as text is 288; 512 only has the catch-all's pair.
            (&[], [Some(NoOom), Some(Most), Some(NoOom)]),
            // --set moved every cell off duration_s 20: only the entry
            // that names threads alone still names a cell.
            (&["duration_s=60"], [Some(NoOom), None, None]),
        ];
        for (sets, want) in cases {
            let p = plan(MATRIX, sets).unwrap();
            let got: Vec<(String, Option<BaseOom>)> = p
                .cells
                .iter()
                .map(|c| (c.label.clone(), c.regime))
                .collect();
            let want: Vec<(String, Option<BaseOom>)> = ["threads=64", "threads=288", "threads=512"]
                .iter()
                .map(|l| l.to_string())
                .zip(want)
                .collect();
            assert_eq!(got, want, "--set {sets:?}");
        }
        // Without `regimes:` no cell has one, and the cells' ids are the
        // same: a regime is not part of what defines a cell.
        let without = plan(MATRIX.split("regimes:").next().unwrap(), &[]).unwrap();
        let with = plan(MATRIX, &[]).unwrap();
        assert!(without.cells.iter().all(|c| c.regime.is_none()));
        let ids = |p: &Plan| p.cells.iter().map(|c| c.id.clone()).collect::<Vec<_>>();
        assert_eq!(ids(&without), ids(&with));
    }

    #[test]
    fn bad_entries_name_their_line_and_what_to_write() {
        let entry = |e: &str| format!("axes:\n  threads: [64]\nregimes:\n  - {e}\n");
        let cases = [
            (
                entry("when: {treads: 64}\n    base_oom: none"),
                "regimes: unknown key `treads`; known keys: arch",
            ),
            (
                entry("when: {threads: lots}\n    base_oom: none"),
                "regimes: guest parameter `mmci.threads`: `lots` is not a non-negative whole number",
            ),
            (
                entry("when: {}\n    base_oom: none"),
                "regimes: an entry needs `when:` pairs that name its cells",
            ),
            (entry("when: {threads: 64}\n    base_oom: sometimes"), "sometimes"),
            (entry("when: {threads: 64}\n    base_om: none"), "base_om"),
            // A bad value after an entry that takes every cell is still one.
            (
                "axes:\n  threads: [64]\nregimes:\n  - when: {threads: 64}\n    base_oom: none\n  - when: {threads: lots}\n    base_oom: most\n".to_string(),
                "line 6 column 21: regimes: guest parameter `mmci.threads`: `lots` is not",
            ),
            // A value's control characters are escaped in the message.
            (
                entry("when: {threads: \"6\\e[31m4\"}\n    base_oom: none"),
                "`6\\u{1b}[31m4` is not a non-negative whole number",
            ),
            // Scenario B counts no OOM kills: nothing to check a regime by.
            (
                "axes:\n  scenario: [noio_verity]\nregimes:\n  - when: {scenario: noio_verity}\n    base_oom: none\n".to_string(),
                "regimes: this entry names cell x86_64-noio_verity-",
            ),
        ];
        for (text, want) in cases {
            let e = plan(&text, &[]).unwrap_err().to_string();
            assert!(e.starts_with("m.yaml: ") && e.contains("line "), "{e}");
            assert!(e.contains(want), "{e}\nwanted: {want}");
        }
    }

    #[test]
    fn pairs_are_resolved_as_a_cells_own_values_are() {
        // Scenario B carries `mglru` to its own switch, and a cell without
        // swap has no swap size: `when:` pairs name the cells the file
        // wrote with them all the same.
        let p = plan(
            "axes:\n  scenario: [noio_verity]\n  mglru: [false, true]\n  swap: [off]\n  swap_mb: [512]\n",
            &[],
        )
        .unwrap();
        let when = |text: &str| -> BTreeMap<String, Spanned<Scalar>> {
            serde_saphyr::from_str(text).unwrap()
        };
        let names = |text: &str| -> Vec<String> {
            p.cells
                .iter()
                .filter(|c| has_pairs(c, &when(text), "m.yaml", &p.scripts).unwrap())
                .map(|c| c.label.clone())
                .collect()
        };
        assert_eq!(names("{mglru: false}"), ["mglru=false"]);
        assert_eq!(names("{mglru: true}"), ["mglru=true"]);
        assert_eq!(names("{swap_mb: 512}"), ["mglru=false", "mglru=true"]);
        assert!(names("{mglru: true, threads: 7}").is_empty());
    }

    #[test]
    fn matrix_show_lists_each_cells_regime() {
        let p = plan(MATRIX, &[]).unwrap();
        let cap = crate::matrix::schedule::Capacity {
            vcpus: 2,
            memory_mb: 4096,
        };
        let out = crate::matrix::show::render(&p, None, cap);
        assert!(
            out.ends_with(
                "regime threads=64: calibrated for few or no base runs OOM-killed\n\
                 regime threads=288: calibrated for base OOM-killed in most runs\n\
                 regime threads=512: calibrated for few or no base runs OOM-killed\n"
            ),
            "{out}"
        );
    }
}
