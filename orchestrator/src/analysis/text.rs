//! Numbers as people read them, shared by the one-line reasons of the
//! model and the renderers, so that a change reads the same everywhere.

use super::stats::{Change, Summary};

/// A value: whole numbers without decimals, others with 4 significant
/// digits.
pub fn num(v: f64) -> String {
    if !v.is_finite() {
        return format!("{v}");
    }
    if v.fract() == 0.0 || v.abs() >= 1000.0 {
        return format!("{v:.0}");
    }
    let digits = (3 - v.abs().log10().floor() as i32).clamp(0, 12) as usize;
    format!("{v:.digits$}")
}

/// A relative change: `+12.3%`.
pub fn pct(rel: f64) -> String {
    if rel.abs() >= 10.0 {
        format!("{:+.0}%", rel * 100.0)
    } else {
        format!("{:+.1}%", rel * 100.0)
    }
}

/// `+12.3% [+4.0%, +20.6%]`, `0 -> 35645`, `0 -> 0`.
pub fn change(c: &Change) -> String {
    match c {
        Change::Relative {
            rel,
            ci: Some((lo, hi)),
        } => {
            format!("{} [{}, {}]", pct(*rel), pct(*lo), pct(*hi))
        }
        Change::Relative { rel, ci: None } => pct(*rel),
        Change::FromZero { to } => format!("0 -> {}", num(*to)),
        Change::ToZero { from } => format!("{} -> 0", num(*from)),
        Change::BothZero => "0 -> 0".into(),
    }
}

/// Like [`change`] without the interval, for one-line reasons.
pub fn change_short(c: &Change) -> String {
    match c {
        Change::Relative { rel, .. } => pct(*rel),
        _ => change(c),
    }
}

/// A p-value: `0.0079`, `<0.0001`.
pub fn p(p: f64) -> String {
    if p < 1e-4 {
        "<0.0001".into()
    } else {
        format!("{p:.4}")
    }
}

/// `mean ± sd (n)`, or the value alone when every run agrees.
pub fn summary(s: &Summary) -> String {
    match s.stddev {
        Some(sd) if sd > 0.0 => format!("{} ± {} (n={})", num(s.mean), num(sd), s.n),
        _ => format!("{} (n={})", num(s.mean), s.n),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_read_naturally() {
        assert_eq!(num(35645.0), "35645");
        assert_eq!(num(1234.56), "1235");
        assert_eq!(num(0.35075), "0.3508");
        assert_eq!(num(12.345), "12.35");
        assert_eq!(num(0.0), "0");
        assert_eq!(pct(0.123), "+12.3%");
        assert_eq!(pct(-0.05), "-5.0%");
        assert_eq!(pct(15.0), "+1500%");
        assert_eq!(p(0.0079365), "0.0079");
        assert_eq!(p(1e-7), "<0.0001");
    }

    #[test]
    fn zero_baselines_read_as_transitions() {
        assert_eq!(change(&Change::FromZero { to: 35645.0 }), "0 -> 35645");
        assert_eq!(change(&Change::BothZero), "0 -> 0");
        assert_eq!(change(&Change::ToZero { from: 51.0 }), "51 -> 0");
        assert_eq!(
            change(&Change::Relative {
                rel: 0.22,
                ci: Some((0.05, 0.39))
            }),
            "+22.0% [+5.0%, +39.0%]"
        );
    }
}
