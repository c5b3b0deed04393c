//! Timestamps as `core.times.parse_ts` reads the stamps record headers write (`core.headers._iso`):
//! `YYYY-MM-DDTHH:MM:SS`, with `.` and six digits when a fraction was printed, and `Z` after a stamp
//! --tz moved to UTC (`utc_text`). Python's
//! `datetime.fromisoformat` refuses year 0, a month, day, hour, minute or second out of range
//! (no leap second, no `24:00`) and a fifth year digit; so does this. The answer is microseconds
//! on one scale (days from 0001-01-01), enough for the differences and order the engine compares.

/// Microseconds of a naive stamp, or of a UTC one (`Z`, as `utc_text` writes a stamp --tz moved),
/// or None where `parse_ts` says None.
pub fn parse_ts(ts: &str) -> Option<i64> {
    let b = ts.strip_suffix('Z').unwrap_or(ts).as_bytes();
    if b.len() != 19 && b.len() != 26 {
        return None;
    }
    let num = |from: usize, to: usize| -> Option<i64> {
        let mut n = 0i64;
        for &c in &b[from..to] {
            if !c.is_ascii_digit() {
                return None;
            }
            n = n * 10 + i64::from(c - b'0');
        }
        Some(n)
    };
    if b[4] != b'-' || b[7] != b'-' || b[10] != b'T' || b[13] != b':' || b[16] != b':' {
        return None;
    }
    let (year, month, day) = (num(0, 4)?, num(5, 7)?, num(8, 10)?);
    let (hour, minute, second) = (num(11, 13)?, num(14, 16)?, num(17, 19)?);
    let micro = if b.len() == 26 {
        if b[19] != b'.' {
            return None;
        }
        num(20, 26)?
    } else {
        0
    };
    if year < 1 || !(1..=12).contains(&month) || day < 1 || day > days_in_month(year, month) {
        return None;
    }
    if hour > 23 || minute > 59 || second > 59 {
        return None;
    }
    let days = days_before_year(year) + days_before_month(year, month) + day - 1;
    Some(((days * 24 + hour) * 60 + minute) * 60_000_000 + second * 1_000_000 + micro)
}

fn leap(year: i64) -> bool {
    year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
}

fn days_in_month(year: i64, month: i64) -> i64 {
    match month {
        2 if leap(year) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

fn days_before_year(year: i64) -> i64 {
    let y = year - 1;
    y * 365 + y / 4 - y / 100 + y / 400
}

fn days_before_month(year: i64, month: i64) -> i64 {
    (1..month).map(|m| days_in_month(year, m)).sum()
}

#[cfg(test)]
mod tests {
    use super::parse_ts;

    #[test]
    fn stamps_as_fromisoformat_reads_them() {
        assert!(parse_ts("2025-11-10T15:36:33.002301").is_some());
        assert_eq!(
            parse_ts("2025-11-10T15:36:34").unwrap() - parse_ts("2025-11-10T15:36:33.500000").unwrap(),
            500_000
        );
        assert_eq!(
            parse_ts("2025-01-01T00:00:00").unwrap() - parse_ts("2024-12-31T23:59:59").unwrap(),
            1_000_000
        );
        for bad in [
            "0000-01-01T00:00:00",
            "2023-02-29T00:00:00",
            "2025-11-10T24:00:00",
            "2025-11-10T23:59:60",
            "10000-01-01T00:00:00",
            "2025-13-01T00:00:00",
        ] {
            assert_eq!(parse_ts(bad), None, "{bad}");
        }
        assert!(parse_ts("2024-02-29T00:00:00").is_some());
        // UTC, as `utc_text` writes it: the same instant on the same scale
        assert_eq!(
            parse_ts("2025-11-10T15:36:33.002301Z"),
            parse_ts("2025-11-10T15:36:33.002301")
        );
        assert_eq!(parse_ts("2025-11-10T15:36:33Z"), parse_ts("2025-11-10T15:36:33"));
        assert_eq!(parse_ts("2025-11-10T15:36:33ZZ"), None);
    }
}
