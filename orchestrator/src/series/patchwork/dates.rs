//! Patchwork's dates: it runs with Django's USE_TZ=False, so every date it
//! writes is naive (no zone; patchwork.kernel.org's are UTC), and its
//! sqlite and MySQL backends refuse a timezone-aware one in a filter
//! (`?since=...Z` is an HTTP 500). What mmci sends is therefore naive UTC
//! ([`naive_utc`], from any ISO 8601 time a user gives), and what it reads
//! back is ordered by [`date_key`].

/// An ISO 8601 date as patchwork writes it (`2026-11-30T10:19:14.123456`,
/// UTC, the fraction optional), as a key that orders like the time.
pub fn date_key(date: &str) -> Option<(String, u32)> {
    let d = date.trim().trim_end_matches('Z');
    let d = d.strip_suffix("+00:00").unwrap_or(d);
    let (secs, frac) = match d.split_once('.') {
        Some((s, f)) => (s, f),
        None => (d, ""),
    };
    let b = secs.as_bytes();
    let shape = b.len() == 19
        && b.iter().enumerate().all(|(i, c)| match i {
            4 | 7 => *c == b'-',
            10 => *c == b'T' || *c == b' ',
            13 | 16 => *c == b':',
            _ => c.is_ascii_digit(),
        });
    if !shape || !frac.chars().all(|c| c.is_ascii_digit()) || frac.len() > 9 {
        return None;
    }
    let micros = format!("{frac:0<6}")[..6].parse().ok()?;
    Some((secs.replace(' ', "T"), micros))
}

/// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's
/// days_from_civil).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The date of a day count since 1970-01-01 (civil_from_days).
fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (
        if m <= 2 {
            yoe + era * 400 + 1
        } else {
            yoe + era * 400
        },
        m,
        d,
    )
}

fn days_in_month(y: i64, m: i64) -> i64 {
    match m {
        2 if (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Seconds east of UTC of a zone designator: `Z`, `±HH`, `±HHMM`,
/// `±HH:MM`; "" (none) is UTC.
fn offset_secs(zone: &str) -> Option<i64> {
    if zone.is_empty() || zone.eq_ignore_ascii_case("z") {
        return Some(0);
    }
    let (sign, rest) = match zone.as_bytes()[0] {
        b'+' => (1, &zone[1..]),
        b'-' => (-1, &zone[1..]),
        _ => return None,
    };
    let digits: String = rest.chars().filter(|c| *c != ':').collect();
    let colon_ok = !rest.contains(':') || (rest.len() == 5 && &rest[2..3] == ":");
    if !colon_ok || !digits.chars().all(|c| c.is_ascii_digit()) {
        return None;
    }
    let (h, m) = match digits.len() {
        2 => (digits.parse::<i64>().ok()?, 0),
        4 => (digits[..2].parse().ok()?, digits[2..].parse().ok()?),
        _ => return None,
    };
    (h <= 23 && m <= 59).then_some(sign * (h * 3600 + m * 60))
}

/// An ISO 8601 time as patchwork's filters take it: naive UTC,
/// `YYYY-MM-DDTHH:MM:SS` with the given fraction (at most 6 digits kept).
/// Takes a date alone (midnight UTC), `T` or a space between date and
/// time, minutes without seconds, and a zone (`Z`, `+02:00`, `-0500`),
/// which is converted away; a time without a zone is UTC already. None
/// for anything else (a day that does not exist included).
pub fn naive_utc(given: &str) -> Option<String> {
    let g = given.trim();
    let (date, time) = match g.find(['T', 't', ' ']) {
        Some(i) => (&g[..i], &g[i + 1..]),
        None => (g, "00:00:00"),
    };
    let db = date.as_bytes();
    let date_shape = db.len() == 10
        && db.iter().enumerate().all(|(i, c)| {
            if i == 4 || i == 7 {
                *c == b'-'
            } else {
                c.is_ascii_digit()
            }
        });
    if !date_shape {
        return None;
    }
    let (y, mo, d): (i64, i64, i64) = (
        date[..4].parse().ok()?,
        date[5..7].parse().ok()?,
        date[8..].parse().ok()?,
    );
    if !(1..=12).contains(&mo) || d < 1 || d > days_in_month(y, mo) {
        return None;
    }
    // The clock, then the zone.
    let zone_at = time.find(['Z', 'z', '+', '-']).unwrap_or(time.len());
    let (clock, zone) = time.split_at(zone_at);
    let (hms, frac) = match clock.split_once('.') {
        Some((a, f)) if !f.is_empty() && f.chars().all(|c| c.is_ascii_digit()) => (a, f),
        Some(_) => return None,
        None => (clock, ""),
    };
    let parts: Vec<&str> = hms.split(':').collect();
    let num = |s: &str| {
        (s.len() == 2 && s.chars().all(|c| c.is_ascii_digit()))
            .then(|| s.parse::<i64>().ok())
            .flatten()
    };
    let (h, mi, s) = match parts.as_slice() {
        [h, m] if frac.is_empty() => (num(h)?, num(m)?, 0),
        [h, m, s] => (num(h)?, num(m)?, num(s)?),
        _ => return None,
    };
    if h > 23 || mi > 59 || s > 59 {
        return None;
    }
    let unix = days_from_civil(y, mo, d) * 86_400 + h * 3600 + mi * 60 + s - offset_secs(zone)?;
    let (y, mo, d) = civil_from_days(unix.div_euclid(86_400));
    let rem = unix.rem_euclid(86_400);
    let mut out = format!(
        "{y:04}-{mo:02}-{d:02}T{:02}:{:02}:{:02}",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    );
    if !frac.is_empty() {
        out.push('.');
        out.push_str(&frac[..frac.len().min(6)]);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_order_like_times() {
        let cases: &[(&str, Option<(&str, u32)>)] = &[
            ("2026-11-30T10:19:14", Some(("2026-11-30T10:19:14", 0))),
            (
                "2026-11-30T10:19:14.5",
                Some(("2026-11-30T10:19:14", 500_000)),
            ),
            (
                "2026-11-30T10:19:14.123456Z",
                Some(("2026-11-30T10:19:14", 123_456)),
            ),
            (
                "2026-11-30 10:19:14+00:00",
                Some(("2026-11-30T10:19:14", 0)),
            ),
            ("yesterday", None),
            ("2026-11-30T10:19", None),
        ];
        for (d, want) in cases {
            assert_eq!(date_key(d), want.map(|(s, m)| (s.to_string(), m)), "{d}");
        }
        assert!(date_key("2026-11-30T10:19:14Z") < date_key("2026-11-30T10:19:14.000001"));
    }

    #[test]
    fn iso_times_become_naive_utc() {
        let cases: &[(&str, Option<&str>)] = &[
            ("2020-01-01T00:00:00Z", Some("2020-01-01T00:00:00")),
            ("2020-01-01T00:00:00", Some("2020-01-01T00:00:00")),
            ("2020-01-01", Some("2020-01-01T00:00:00")),
            ("2020-01-01 12:30", Some("2020-01-01T12:30:00")),
            ("2026-11-30T10:00:00.250Z", Some("2026-11-30T10:00:00.250")),
            (
                "2026-11-30T10:00:00.1234567",
                Some("2026-11-30T10:00:00.123456"),
            ),
            // Offsets converted, across days, months and years.
            ("2026-12-01T01:30:00+02:00", Some("2026-11-30T23:30:00")),
            ("2026-12-31T22:00:00-0500", Some("2027-01-01T03:00:00")),
            ("2024-03-01T00:00:00+01", Some("2024-02-29T23:00:00")),
            ("2026-11-30t10:00:00z", Some("2026-11-30T10:00:00")),
            // Not times.
            ("last week", None),
            ("", None),
            ("2026-02-29T00:00:00", None),
            ("2026-13-01", None),
            ("2026-11-30T24:00:00", None),
            ("2026-11-30T10:00:00+2:00", None),
            ("2026-11-30T10:00:00+25:00", None),
            ("2026-11-30T10:00:00.Z", None),
            ("2026-11-30T10:00.5", None),
            ("2026-11-30T10", None),
        ];
        for (given, want) in cases {
            assert_eq!(naive_utc(given).as_deref(), *want, "{given}");
        }
        // Round trips over four centuries of month ends.
        for days in (-200_000..200_000).step_by(997) {
            let (y, m, d) = civil_from_days(days);
            assert_eq!(days_from_civil(y, m, d), days);
        }
    }
}
