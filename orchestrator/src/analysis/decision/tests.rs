use super::*;

#[test]
fn holm_steps_down_and_stops_at_the_first_kept() {
    // (ps, alpha, rejected)
    let cases: &[(&[f64], f64, &[bool])] = &[
        (&[0.001, 0.02, 0.04], 0.05, &[true, true, true]),
        (&[0.04, 0.02, 0.001], 0.05, &[true, true, true]),
        (&[0.001, 0.03, 0.04], 0.05, &[true, false, false]),
        (&[0.02, 0.02, 0.02], 0.05, &[false, false, false]),
        (&[0.016, 0.5], 0.05, &[true, false]),
        (&[], 0.05, &[]),
    ];
    for (ps, alpha, want) in cases {
        let got: Vec<bool> = holm(ps, *alpha).iter().map(|(_, r)| *r).collect();
        assert_eq!(&got, want, "{ps:?}");
    }
    // The levels: alpha / 3, then / 2, then past the first kept: none.
    let l = holm(&[0.001, 0.03, 0.04], 0.06);
    assert!((l[0].0.unwrap() - 0.02).abs() < 1e-15, "{l:?}");
    assert!((l[1].0.unwrap() - 0.03).abs() < 1e-15, "{l:?}");
    assert!((l[2].0.unwrap() - 0.06).abs() < 1e-15, "{l:?}");
    assert_eq!(holm(&[0.001, 0.03, 0.04], 0.05)[2].0, None);
}

#[test]
fn the_floor_tests_are_dual_to_the_interval() {
    // For every level the rank test can attain at 5 + 5, the regression
    // test rejects at a exactly when the 1 - 2a interval's lower bound
    // lies above the floor (on the log scale), and the no-regression test
    // exactly when its upper bound lies below.
    let base = [100.0, 103.0, 98.0, 101.0, 99.5];
    for shift in [0.0, 0.03, 0.05, 0.07, 0.09, 0.12, 0.2] {
        let cand: Vec<f64> = [101.0, 99.0, 104.0, 100.5, 98.5]
            .iter()
            .map(|v| v * (1.0f64 + shift))
            .collect();
        let t = floor_tests(&base, &cand, Better::Lower, 0.05).unwrap();
        for confidence in [0.99, 0.98, 0.95, 0.9] {
            let e = crate::analysis::effect::effect(&base, &cand, confidence).unwrap();
            let a = (1.0 - e.level) / 2.0;
            let (lo, hi) = e.relative_interval.unwrap();
            assert_eq!(
                t.p_regression <= a + 1e-12,
                lo > 0.05,
                "shift {shift} level {}: p {} interval [{lo}, {hi}]",
                e.level,
                t.p_regression
            );
            assert_eq!(
                t.p_no_regression <= a + 1e-12,
                hi < 0.05,
                "shift {shift} level {}: p {} interval [{lo}, {hi}]",
                e.level,
                t.p_no_regression
            );
        }
    }
}

#[test]
fn floor_tests_by_direction() {
    let base = [100.0, 101.0, 99.0, 100.5, 99.5];
    let up: Vec<f64> = base.iter().map(|v| v * 1.2).collect();
    let down: Vec<f64> = base.iter().map(|v| v * 0.8).collect();
    let same: Vec<f64> = base.iter().map(|v| v * 1.001).collect();
    // (cand, better, regression p is the smallest attainable, no-regression
    // p likewise)
    let min = 1.0 / 252.0;
    let cases: &[(&[f64], Better, bool, bool)] = &[
        (&up, Better::Lower, true, false),
        (&up, Better::Higher, false, true),
        (&down, Better::Higher, true, false),
        (&down, Better::Lower, false, true),
        (&same, Better::Lower, false, true),
        (&same, Better::Higher, false, true),
        (&same, Better::Neither, false, true),
        (&up, Better::Neither, true, false),
        (&down, Better::Neither, true, false),
    ];
    for (cand, better, reg, ok) in cases {
        let t = floor_tests(&base, cand, *better, 0.05).unwrap();
        let at_min = |p: f64, doubled: bool| {
            let m = if doubled { 2.0 * min } else { min };
            (p - m).abs() < 1e-12
        };
        assert_eq!(
            at_min(t.p_regression, *better == Better::Neither),
            *reg,
            "{better:?} {cand:?}: {t:?}"
        );
        assert_eq!(
            at_min(t.p_no_regression, false),
            *ok,
            "{better:?} {cand:?}: {t:?}"
        );
    }
    // A linear metric (a 0 among the values) against its baseline median.
    let t = floor_tests(
        &[0.0, 10.0, 10.0, 10.0, 10.0],
        &[20.0; 5],
        Better::Lower,
        0.05,
    )
    .unwrap();
    assert!(t.p_regression < 0.01, "{t:?}");
    // No relative floor: the baseline's median is 0.
    assert!(floor_tests(&[0.0; 5], &[1.0; 5], Better::Lower, 0.05).is_none());
    assert!(floor_tests(&[], &[1.0], Better::Lower, 0.05).is_none());
}

#[test]
fn the_smallest_change_caught_grows_with_the_spread_and_falls_with_runs() {
    let tight = [100.0, 101.0, 99.0, 100.5, 99.5];
    let loose = [100.0, 110.0, 90.0, 105.0, 95.0];
    let d = |b: &[f64], n: usize| {
        let c: Vec<f64> = b.iter().cycle().take(n).copied().collect();
        let b: Vec<f64> = b.iter().cycle().take(n).copied().collect();
        detectable_change(&b, &c, Better::Lower, 0.05, 0.05 / 8.0).unwrap()
    };
    assert!(
        d(&tight, 5) > 0.05 && d(&tight, 5) < 0.1,
        "{}",
        d(&tight, 5)
    );
    assert!(d(&loose, 5) > d(&tight, 5));
    assert!(d(&loose, 15) < d(&loose, 5));
    assert!(detectable_change(&[1.0], &[1.0, 2.0], Better::Lower, 0.05, 0.01).is_none());
}

#[test]
fn the_kill_rate_a_pass_could_have_missed() {
    // 5 + 5, none killed on base, at 0.05: only 4 or 5 of 5 killed is
    // significant (4 of 5: p = 0.024), so only a high rate is caught.
    let q5 = detectable_kill_rate(0, 5, 5, 0.05).unwrap();
    assert!(q5 > 0.7, "{q5}");
    // 15 + 15 catches a lower rate.
    let q15 = detectable_kill_rate(0, 15, 15, 0.05).unwrap();
    assert!(q15 < 0.5 && q15 > 0.2, "{q15}");
    // 2 + 2 at 0.01: nothing can be significant.
    assert_eq!(detectable_kill_rate(0, 2, 2, 0.01), None);
}
