//! `mmci analyse --resample`'s table: the verdicts drawn, by status, and
//! each guard by decision (`analysis::resample`).

use crate::analysis::resample::Characteristic;

/// The operating characteristic as the terminal shows it.
pub fn render(oc: &Characteristic, seed: u64) -> String {
    let mut out = format!(
        "{} verdicts of {} + {} runs drawn from at least {} a side (seed {seed}, one look of {}), candidate's swap and fault counters {}{:.0}%\n",
        oc.verdicts,
        oc.per_side,
        oc.per_side,
        oc.pool,
        oc.looks,
        if oc.inflate >= 0.0 { "+" } else { "" },
        oc.inflate * 100.0
    );
    for (status, n) in &oc.by_status {
        out.push_str(&format!(
            "  {status:<13} {n:>5}  {:>5.1}%\n",
            100.0 * oc.rate(status)
        ));
    }
    out.push_str("per guard and cell (regression / no regression / undecided or not judged):\n");
    for (metric, [reg, ok, other]) in &oc.by_guard {
        out.push_str(&format!("  {metric:<24} {reg:>5} {ok:>5} {other:>5}\n"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_shows_rates_and_guards() {
        let oc = Characteristic {
            verdicts: 200,
            per_side: 5,
            inflate: 0.1,
            pool: 30,
            looks: 1,
            by_status: [("FAIL".to_string(), 2), ("PASS".to_string(), 198)].into(),
            by_guard: [("pswpin_per_ktouch".to_string(), [2, 190, 8])].into(),
        };
        assert_eq!(
            render(&oc, 3),
            "200 verdicts of 5 + 5 runs drawn from at least 30 a side (seed 3, one look of 1), candidate's swap and fault counters +10%\n\
             \x20 FAIL              2    1.0%\n\
             \x20 PASS            198   99.0%\n\
             per guard and cell (regression / no regression / undecided or not judged):\n\
             \x20 pswpin_per_ktouch            2   190     8\n"
        );
    }
}
