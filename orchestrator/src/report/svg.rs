//! Small, dependency-free SVG charts for the HTML report: a strip plot of
//! per-run values (one dot per run, base against candidate, with the
//! means), a line chart of time series (nr_isolated per run) and a
//! histogram of two samples. Every chart has a title, labelled axes and a
//! legend; sizes are fixed so that the page lays out without scripts.

use std::fmt::Write;

use crate::analysis::text;

pub const BASE_COLOR: &str = "#3b6fb6";
pub const CANDIDATE_COLOR: &str = "#d9622b";

const W: f64 = 360.0;
const H: f64 = 220.0;
/// Plot area: left, right, top, bottom margins.
const L: f64 = 58.0;
const R: f64 = 12.0;
const T: f64 = 28.0;
const B: f64 = 40.0;

/// Escapes text for SVG (which is XML).
pub fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// At most this many intervals between ticks on an axis.
pub const MAX_TICKS: usize = 20;

/// A "nice" axis range and ticks covering lo..hi (1, 2, 5 x 10^k steps),
/// at most [`MAX_TICKS`] intervals, the range never empty. Ticks are
/// computed by index, not by adding a step, and a step too small to
/// move a value (two adjacent floats, 1e16 and 1e16 + 2) gives the data's
/// own ends as the only ticks: the kernel controls these values.
pub fn ticks(lo: f64, hi: f64) -> (f64, f64, Vec<f64>) {
    let (lo, hi) = if !(lo.is_finite() && hi.is_finite()) {
        (0.0, 1.0)
    } else if hi <= lo {
        // One value: all zero reads best as 0..1 (counts never go below
        // zero), anything else with 10% either side.
        if lo == 0.0 {
            (0.0, 1.0)
        } else {
            let pad = lo.abs() * 0.1;
            (lo - pad, lo + pad)
        }
    } else {
        (lo, hi)
    };
    // The data's ends, when no round step fits.
    let plain = || {
        if lo < hi && (hi - lo).is_finite() {
            (lo, hi, vec![lo, hi])
        } else {
            (0.0, 1.0, vec![0.0, 1.0])
        }
    };
    // About five intervals: enough gridlines to read values off.
    let raw = (hi - lo) / 5.0;
    if !(raw.is_finite() && raw > 0.0) {
        return plain();
    }
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * mag);
    let start = (lo / step).floor() * step;
    let end = (hi / step).ceil() * step;
    let n = ((end - start) / step).round();
    let usable = step.is_finite()
        && step > 0.0
        && start.is_finite()
        && end.is_finite()
        && (1.0..=MAX_TICKS as f64).contains(&n);
    // A step below half an ulp of the values would not move them.
    if !usable || start + step == start || end - step == end {
        return plain();
    }
    let t = (0..=n as usize)
        .map(|i| {
            let x = start + step * i as f64;
            if x.abs() < step * 1e-9 {
                0.0
            } else {
                x
            }
        })
        .collect();
    (start, end, t)
}

fn tick_label(v: f64) -> String {
    let a = v.abs();
    if a >= 1e9 {
        format!("{}G", text::num(v / 1e9))
    } else if a >= 1e6 {
        format!("{}M", text::num(v / 1e6))
    } else if a >= 1e4 {
        format!("{}k", text::num(v / 1e3))
    } else {
        // Ticks are round: no trailing zeros (`0.5`, not `0.5000`).
        let s = text::num(v);
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s
        }
    }
}

struct Frame {
    out: String,
    y0: f64,
    y1: f64,
}

impl Frame {
    /// The chart's frame, title, y axis with gridlines and its label.
    fn new(title: &str, y_label: &str, lo: f64, hi: f64) -> Frame {
        let (y0, y1, yt) = ticks(lo, hi);
        let mut out = String::with_capacity(4096);
        let _ = write!(
            out,
            r##"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" role="img" font-family="sans-serif" font-size="11"><title>{t}</title><rect width="{W}" height="{H}" fill="#fff"/><text x="{cx}" y="16" text-anchor="middle" font-size="12" font-weight="bold">{t}</text>"##,
            t = esc(title),
            cx = W / 2.0
        );
        for v in yt {
            let y = T + (H - T - B) * (1.0 - (v - y0) / (y1 - y0));
            let _ = write!(
                out,
                r##"<line x1="{L}" x2="{x2}" y1="{y:.1}" y2="{y:.1}" stroke="#e3e3e3"/><text x="{lx}" y="{ty:.1}" text-anchor="end">{l}</text>"##,
                x2 = W - R,
                lx = L - 4.0,
                ty = y + 4.0,
                l = tick_label(v)
            );
        }
        let _ = write!(
            out,
            r##"<line x1="{L}" x2="{L}" y1="{T}" y2="{yb}" stroke="#555"/><line x1="{L}" x2="{xr}" y1="{yb}" y2="{yb}" stroke="#555"/><text transform="translate(13 {cy}) rotate(-90)" text-anchor="middle">{yl}</text>"##,
            yb = H - B,
            xr = W - R,
            cy = T + (H - T - B) / 2.0,
            yl = esc(y_label)
        );
        Frame { out, y0, y1 }
    }

    fn y(&self, v: f64) -> f64 {
        T + (H - T - B) * (1.0 - (v - self.y0) / (self.y1 - self.y0))
    }

    fn x_label(&mut self, label: &str) {
        let _ = write!(
            self.out,
            r#"<text x="{x}" y="{y}" text-anchor="middle">{l}</text>"#,
            x = L + (W - L - R) / 2.0,
            y = H - 6.0,
            l = esc(label)
        );
    }

    /// A legend at the top right of the plot area.
    fn legend(&mut self, items: &[(&str, &str)]) {
        for (i, (name, color)) in items.iter().enumerate() {
            let y = T + 8.0 + 14.0 * i as f64;
            let x = W - R - 110.0;
            let _ = write!(
                self.out,
                r#"<rect x="{x}" y="{ry}" width="10" height="10" fill="{color}"/><text x="{tx}" y="{ty}">{n}</text>"#,
                ry = y - 8.0,
                tx = x + 14.0,
                ty = y + 1.0,
                n = esc(name)
            );
        }
    }

    fn finish(mut self) -> String {
        self.out.push_str("</svg>");
        self.out
    }
}

fn extent<'a>(values: impl Iterator<Item = &'a f64>) -> Option<(f64, f64)> {
    values
        .filter(|v| v.is_finite())
        .fold(None, |acc, &v| match acc {
            None => Some((v, v)),
            Some((lo, hi)) => Some((lo.min(v), hi.max(v))),
        })
}

/// Per-run values of two kernels side by side, one dot per run (spread
/// sideways so equal values stay visible), a bar at each mean.
pub fn strip(title: &str, unit: &str, sides: [(&str, &[f64]); 2]) -> String {
    let (lo, hi) = extent(sides.iter().flat_map(|(_, v)| v.iter())).unwrap_or((0.0, 1.0));
    // Counts start at zero: a bar chart's eye expects it, and it shows
    // how large a change is relative to the value.
    let lo = if lo >= 0.0 { 0.0 } else { lo };
    let mut f = Frame::new(title, unit, lo, hi);
    let colors = [BASE_COLOR, CANDIDATE_COLOR];
    let col_w = (W - L - R) / 2.0;
    for (i, (name, values)) in sides.iter().enumerate() {
        let cx = L + col_w * (i as f64 + 0.5);
        let n = values.len().max(1) as f64;
        for (j, v) in values.iter().enumerate() {
            let dx = if n > 1.0 {
                (j as f64 / (n - 1.0) - 0.5) * col_w * 0.4
            } else {
                0.0
            };
            let _ = write!(
                f.out,
                r#"<circle cx="{:.1}" cy="{:.1}" r="4" fill="{}" fill-opacity="0.75"><title>{}</title></circle>"#,
                cx + dx,
                f.y(*v),
                colors[i],
                text::num(*v)
            );
        }
        if !values.is_empty() {
            let mean = values.iter().sum::<f64>() / values.len() as f64;
            let _ = write!(
                f.out,
                r#"<line x1="{:.1}" x2="{:.1}" y1="{y:.1}" y2="{y:.1}" stroke="{}" stroke-width="2"/>"#,
                cx - col_w * 0.3,
                cx + col_w * 0.3,
                colors[i],
                y = f.y(mean)
            );
        }
        let _ = write!(
            f.out,
            r#"<text x="{cx:.1}" y="{y}" text-anchor="middle">{} (n={})</text>"#,
            esc(name),
            values.len(),
            y = H - B + 14.0
        );
    }
    f.x_label("kernel (dots: runs, bar: mean)");
    f.finish()
}

/// One line per run: `(label, color, points)`.
pub struct Line<'a> {
    pub color: &'a str,
    pub points: Vec<(f64, f64)>,
}

/// Time series of several runs; the legend names the colors.
pub fn lines(
    title: &str,
    x_label: &str,
    y_label: &str,
    lines: &[Line],
    legend: &[(&str, &str)],
) -> String {
    let (x0, x1) =
        extent(lines.iter().flat_map(|l| l.points.iter().map(|p| &p.0))).unwrap_or((0.0, 1.0));
    let (_, yhi) =
        extent(lines.iter().flat_map(|l| l.points.iter().map(|p| &p.1))).unwrap_or((0.0, 1.0));
    let mut f = Frame::new(title, y_label, 0.0, yhi);
    let (x0, x1, xt) = ticks(x0.min(0.0), x1);
    let px = |x: f64| L + (W - L - R) * (x - x0) / (x1 - x0);
    for x in xt {
        let _ = write!(
            f.out,
            r#"<text x="{:.1}" y="{}" text-anchor="middle">{}</text>"#,
            px(x),
            H - B + 14.0,
            tick_label(x)
        );
    }
    for l in lines {
        let pts: Vec<String> = l
            .points
            .iter()
            .map(|(x, y)| format!("{:.1},{:.1}", px(*x), f.y(*y)))
            .collect();
        let _ = write!(
            f.out,
            r#"<polyline points="{}" fill="none" stroke="{}" stroke-opacity="0.8" stroke-width="1.5"/>"#,
            pts.join(" "),
            l.color
        );
    }
    f.legend(legend);
    f.x_label(x_label);
    f.finish()
}

/// Two samples binned alike (at most 12 bins), bars side by side.
pub fn histogram(title: &str, unit: &str, sides: [(&str, &[f64]); 2]) -> String {
    let (lo, hi) = extent(sides.iter().flat_map(|(_, v)| v.iter())).unwrap_or((0.0, 1.0));
    let (x0, x1, xt) = ticks(lo, hi);
    let total = sides.iter().map(|(_, v)| v.len()).max().unwrap_or(0);
    let bins = total.clamp(4, 12);
    let width = (x1 - x0) / bins as f64;
    let count = |v: &[f64]| {
        let mut c = vec![0usize; bins];
        for x in v {
            let i = (((x - x0) / width) as usize).min(bins - 1);
            c[i] += 1;
        }
        c
    };
    let counts = [count(sides[0].1), count(sides[1].1)];
    let ymax = counts.iter().flatten().copied().max().unwrap_or(1) as f64;
    let mut f = Frame::new(title, "runs", 0.0, ymax);
    let px = |x: f64| L + (W - L - R) * (x - x0) / (x1 - x0);
    let bw = (W - L - R) / bins as f64;
    let colors = [BASE_COLOR, CANDIDATE_COLOR];
    for (s, c) in counts.iter().enumerate() {
        for (i, n) in c.iter().enumerate() {
            if *n == 0 {
                continue;
            }
            let y = f.y(*n as f64);
            let _ = write!(
                f.out,
                r#"<rect x="{:.1}" y="{y:.1}" width="{:.1}" height="{:.1}" fill="{}" fill-opacity="0.8"/>"#,
                L + bw * i as f64 + bw * 0.5 * s as f64 + 1.0,
                bw * 0.5 - 2.0,
                H - B - y,
                colors[s]
            );
        }
    }
    for x in xt {
        let _ = write!(
            f.out,
            r#"<text x="{:.1}" y="{}" text-anchor="middle">{}</text>"#,
            px(x),
            H - B + 14.0,
            tick_label(x)
        );
    }
    f.legend(&[(sides[0].0, BASE_COLOR), (sides[1].0, CANDIDATE_COLOR)]);
    f.x_label(unit);
    f.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_round_and_cover_the_range() {
        let (lo, hi, t) = ticks(3.0, 97.0);
        assert_eq!((lo, hi), (0.0, 100.0));
        assert_eq!(t, [0.0, 20.0, 40.0, 60.0, 80.0, 100.0]);
        // A single value still gets a range.
        let (lo, hi, _) = ticks(5.0, 5.0);
        assert!(lo < 5.0 && hi > 5.0);
        assert_eq!(ticks(0.0, 0.0).0..ticks(0.0, 0.0).1, 0.0..1.0);
        assert_eq!(tick_label(0.5), "0.5");
        assert_eq!(tick_label(25000.0), "25k");
    }

    #[test]
    fn ticks_are_bounded_on_hostile_values() {
        let adjacent: f64 = 1e16 + 2.0;
        assert_eq!(adjacent.to_bits(), 1e16f64.to_bits() + 1, "adjacent floats");
        let huge: f64 = 1e19 / 1e3; // probe 37: 10^19 us in ms
        let huge_next = f64::from_bits(huge.to_bits() + 1);
        for (lo, hi) in [
            (1e16, adjacent),
            (-adjacent, -1e16),
            (huge, huge_next),
            (f64::MAX / 2.0, f64::MAX),
            (-f64::MAX, f64::MAX),
            (f64::MIN_POSITIVE, 2.0 * f64::MIN_POSITIVE),
            (0.0, 5e-324),
            (f64::NAN, 1.0),
            (1.0, f64::NAN),
            (f64::NEG_INFINITY, f64::INFINITY),
            (f64::INFINITY, f64::INFINITY),
            (f64::MAX, f64::MAX),
            (-0.0, 0.0),
            (3.0, 97.0),
            (97.0, 3.0),
        ] {
            let (a, b, t) = ticks(lo, hi);
            assert!(
                a.is_finite() && b.is_finite() && a < b,
                "{lo:e} {hi:e}: {a:e}..{b:e}"
            );
            assert!(
                (2..=MAX_TICKS + 1).contains(&t.len()),
                "{lo:e} {hi:e}: {t:?}"
            );
            assert!(t.iter().all(|x| x.is_finite()), "{lo:e} {hi:e}: {t:?}");
            assert!(t.windows(2).all(|w| w[0] < w[1]), "{lo:e} {hi:e}: {t:?}");
        }
        // The data's own ends when no step moves them.
        assert_eq!(
            ticks(1e16, adjacent),
            (1e16, adjacent, vec![1e16, adjacent])
        );
    }

    #[test]
    fn charts_of_adjacent_huge_values_are_drawn() {
        // Probe 37: base and patched latencies 2048 us apart at 10^19 us,
        // adjacent floats in ms; with a negative value the strip plot keeps
        // its own lower end too.
        let (a, b) = (1e16, 1e16 + 2.0);
        let h = histogram(
            "noio_latency_p50_ms",
            "ms",
            [("base", &[a, a]), ("patched", &[b])],
        );
        assert!(
            h.starts_with("<svg") && h.ends_with("</svg>") && !h.contains("NaN"),
            "{h}"
        );
        let s = strip("m", "x", [("base", &[-b, -b]), ("patched", &[-a])]);
        assert!(s.ends_with("</svg>") && !s.contains("NaN"), "{s}");
        let s = strip(
            "m",
            "x",
            [
                ("base", &[f64::NAN, f64::INFINITY]),
                ("patched", &[-f64::MAX]),
            ],
        );
        assert!(s.ends_with("</svg>"), "{s}");
    }

    #[test]
    fn charts_are_well_formed_and_escaped() {
        let s = strip("a<b", "ms", [("base", &[1.0, 2.0]), ("patched", &[3.0])]);
        assert!(s.starts_with("<svg") && s.ends_with("</svg>"));
        assert!(s.contains("a&lt;b") && !s.contains("a<b"));
        assert_eq!(s.matches("<circle").count(), 3);
        let h = histogram("h", "ms", [("base", &[1.0, 1.5, 9.0]), ("patched", &[4.0])]);
        assert_eq!(h.matches("<rect").count(), 1 + 3 + 2, "{h}");
        let l = lines(
            "t",
            "s",
            "pages",
            &[Line {
                color: BASE_COLOR,
                points: vec![(0.0, 1.0), (1.0, 4.0)],
            }],
            &[("base", BASE_COLOR)],
        );
        assert_eq!(l.matches("<polyline").count(), 1);
    }
}
