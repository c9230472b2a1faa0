//! A matrix's `regimes:`: each entry's pairs checked as a cell's are, and
//! the regime given to every cell that has them (the first entry that
//! names a cell wins; a cell no entry names has none).

use super::*;
use crate::matrix::file::RegimeEntry;
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
    }
    for cell in cells.iter_mut() {
        for entry in entries {
            if has_pairs(cell, &entry.value.when, file, scripts)? {
                cell.regime = Some(entry.value.base_oom);
                break;
            }
        }
    }
    Ok(())
}

/// Whether `cell` has every pair of `when`: setting them changes nothing
/// that defines it (its id). So `threads: 288` names the cells that run
/// 288 threads after the command line's `--set`s, however the file wrote
/// the value; a value no cell could have is an error at its line.
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
        ];
        for (text, want) in cases {
            let e = plan(&text, &[]).unwrap_err().to_string();
            assert!(e.starts_with("m.yaml: ") && e.contains("line "), "{e}");
            assert!(e.contains(want), "{e}\nwanted: {want}");
        }
    }
}
