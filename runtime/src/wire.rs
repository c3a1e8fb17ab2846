//! Dates and datetimes as OpenMRS writes and reads them, and as index keys hold them;
//! today and ages. One place for every format.

use chrono::{DateTime, Datelike, NaiveDate, NaiveDateTime, Utc};
use serde_json::{Value, json};

/// OpenMRS's date format: `yyyy-MM-dd'T'HH:mm:ss.SSSZ`.
pub fn format_date(date: &str) -> Value {
    // Parsed by hand and printed by `NaiveDate`'s `Display` (the ISO form): chrono's
    // parser interprets format items on every call, a measurable part of a search page.
    match parse_date(date) {
        // Stored dates are already in ISO form: no need to print them again.
        Some(_) if is_iso_date(date) => Value::String([date, "T00:00:00.000+0000"].concat()),
        Some(d) => Value::String(format!("{d}T00:00:00.000+0000")),
        None => Value::Null,
    }
}

/// `yyyy-MM-dd` exactly (whether the day exists is `parse_date`'s business).
fn is_iso_date(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 10
        && b.iter().enumerate().all(|(i, c)| {
            if i == 4 || i == 7 {
                *c == b'-'
            } else {
                c.is_ascii_digit()
            }
        })
}

pub fn format_datetime(rfc3339: &str) -> Value {
    if crate::wire::is_key_shaped(rfc3339) {
        return Value::String(format!("{}+0000", &rfc3339[..23]));
    }
    match chrono::DateTime::parse_from_rfc3339(rfc3339) {
        Ok(d) => json!(
            d.with_timezone(&chrono::Utc)
                .format("%Y-%m-%dT%H:%M:%S%.3f+0000")
                .to_string()
        ),
        Err(_) => Value::Null,
    }
}

/// Lenient date input: `2020-1-5`, `2020-01-05T10:00:00.000+0000`, `2020-01-05 10:00:00`.
pub fn parse_date(s: &str) -> Option<NaiveDate> {
    let s = s.trim();
    let day = s.split(['T', ' ']).next()?;
    // A time, when one is given, must be a real one (`T25:61` is refused, not dropped).
    if day.len() < s.len() && crate::wire::parse_datetime(s).is_none() {
        return None;
    }
    let mut parts = day.split('-');
    let (y, m, d) = (
        parts.next()?.parse().ok()?,
        parts.next()?.parse().ok()?,
        parts.next()?.parse().ok()?,
    );
    if parts.next().is_some() {
        return None;
    }
    NaiveDate::from_ymd_opt(y, m, d)
}

/// Today in UTC, the day validation and ages are counted to.
pub fn today() -> NaiveDate {
    chrono::Utc::now().date_naive()
}

/// Whole years from `birthdate` to `t`; 0 for a birthdate after `t`.
pub fn age_on(birthdate: &str, t: NaiveDate) -> Option<i32> {
    let b = parse_date(birthdate)?;
    let mut years = t.year() - b.year();
    if (t.month(), t.day()) < (b.month(), b.day()) {
        years -= 1;
    }
    Some(years.max(0))
}

/// A datetime as index keys hold it: UTC, fixed width, so that keys sort by time.
pub fn datetime_key(t: DateTime<Utc>) -> String {
    t.format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string()
}

/// A key-form datetime cut to the second (`2026-11-23T09:15:30`), for comparing clinical
/// times as OpenMRS compares them: its databases (MySQL, MariaDB) keep whole seconds, so
/// there a visit started at 09:15:30.600 holds an encounter sent as 09:15:30, and a visit
/// may end in the second it started. Keys sort the same cut or whole.
pub fn to_the_second(key: &str) -> &str {
    key.get(..19).unwrap_or(key)
}

/// Whether `s` has exactly the shape `datetime_key` writes (`2026-11-23T09:15:30.000Z`),
/// so that formatting it again is a matter of cutting and appending: answers render
/// hundreds of stored datetimes, and parsing each one cost a tenth of an encounter page.
pub fn is_key_shaped(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 24
        && b.iter().enumerate().all(|(i, c)| match i {
            4 | 7 => *c == b'-',
            10 => *c == b'T',
            13 | 16 => *c == b':',
            19 => *c == b'.',
            23 => *c == b'Z',
            _ => c.is_ascii_digit(),
        })
        // Ranges too, so that the shortcut answers exactly what parsing would have.
        && {
            let n = |from: usize, to: usize| s[from..to].parse::<u32>().unwrap_or(u32::MAX);
            chrono::NaiveDate::from_ymd_opt(n(0, 4) as i32, n(5, 7), n(8, 10)).is_some()
                && n(11, 13) < 24
                && n(14, 16) < 60
                && n(17, 19) < 60
        }
}

pub fn parse_key(key: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(key)
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

/// A datetime as clients send it: `2026-11-23T10:15:30.000+0100`, `…Z`, `…+01:00`, without
/// a zone (UTC), or a date alone (midnight UTC).
pub fn parse_datetime(s: &str) -> Option<DateTime<Utc>> {
    let s = s.trim();
    if let Ok(t) = DateTime::parse_from_rfc3339(s) {
        return Some(t.with_timezone(&Utc));
    }
    for f in [
        "%Y-%m-%dT%H:%M:%S%.f%z",
        "%Y-%m-%dT%H:%M:%S%z",
        "%Y-%m-%d %H:%M:%S%.f%z",
    ] {
        if let Ok(t) = DateTime::parse_from_str(s, f) {
            return Some(t.with_timezone(&Utc));
        }
    }
    for f in [
        "%Y-%m-%dT%H:%M:%S%.f",
        "%Y-%m-%dT%H:%M",
        "%Y-%m-%d %H:%M:%S%.f",
        "%Y-%m-%d %H:%M",
    ] {
        if let Ok(t) = NaiveDateTime::parse_from_str(s, f) {
            return Some(t.and_utc());
        }
    }
    NaiveDate::parse_from_str(s, "%Y-%m-%d")
        .ok()
        .and_then(|d| d.and_hms_opt(0, 0, 0))
        .map(|t| t.and_utc())
}

/// A stored key-form datetime in OpenMRS's wire form (`2026-11-23T10:15:30.000+0000`).
pub fn wire_datetime(key: &str) -> serde_json::Value {
    crate::wire::format_datetime(key)
}

/// A stored datetime as FHIR writes it (`2026-11-23T09:15:30+00:00`), `None` if unreadable.
pub fn fhir_datetime(key: &str) -> Option<String> {
    if is_key_shaped(key) {
        return Some(format!("{}+00:00", &key[..19]));
    }
    parse_key(key).map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, false))
}

/// How far a client's clock may run ahead of the server's before a datetime counts as
/// "in the future".
pub const CLOCK_SKEW: chrono::Duration = chrono::Duration::minutes(5);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stored_datetimes_are_formatted_by_the_shortcut_as_by_parsing() {
        for key in [
            "2026-11-23T09:15:30.000Z",
            "2024-02-29T23:59:59.999Z",
            "1999-12-31T00:00:00.123Z",
        ] {
            assert!(is_key_shaped(key), "{key}");
            let t = parse_key(key).unwrap();
            assert_eq!(
                fhir_datetime(key).unwrap(),
                t.to_rfc3339_opts(chrono::SecondsFormat::Secs, false)
            );
            assert_eq!(
                wire_datetime(key),
                serde_json::json!(t.format("%Y-%m-%dT%H:%M:%S%.3f+0000").to_string())
            );
        }
        for not_a_key in [
            "2023-02-29T10:00:00.000Z",
            "2026-13-01T10:00:00.000Z",
            "2026-11-23T24:00:00.000Z",
            "2026-11-23T09:15:30Z",
            "2026-11-23T09:15:30.000+01:00",
            "2026-11-23T09:15:30.000z",
        ] {
            assert!(!is_key_shaped(not_a_key), "{not_a_key}");
        }
        // Not key-shaped but readable: the slow path still answers.
        assert_eq!(
            fhir_datetime("2026-11-23T10:15:30.000+01:00").as_deref(),
            Some("2026-11-23T09:15:30+00:00")
        );
        assert_eq!(fhir_datetime("2023-02-29T10:00:00.000Z"), None);
    }

    #[test]
    fn datetimes_from_clients_in_every_form_openmrs_accepts() {
        let want = "2026-11-23T09:15:30.000Z";
        for s in [
            "2026-11-23T10:15:30.000+0100",
            "2026-11-23T10:15:30+01:00",
            "2026-11-23T09:15:30.000Z",
            "2026-11-23T09:15:30",
            "2026-11-23 09:15:30",
        ] {
            assert_eq!(
                parse_datetime(s).map(datetime_key).as_deref(),
                Some(want),
                "{s}"
            );
        }
        assert_eq!(
            parse_datetime("2026-11-23").map(datetime_key).as_deref(),
            Some("2026-11-23T00:00:00.000Z")
        );
        assert_eq!(parse_datetime("23/11/2026"), None);
        assert_eq!(parse_datetime(""), None);
    }

    #[test]
    fn keys_sort_by_time() {
        let a = parse_datetime("2026-01-02T03:04:05Z").unwrap();
        let b = parse_datetime("2026-01-02T03:04:05.001Z").unwrap();
        assert!(datetime_key(a) < datetime_key(b));
        assert_eq!(parse_key(&datetime_key(b)), Some(b));
    }

    #[test]
    fn ages_count_whole_years() {
        let on = |y, m, d| NaiveDate::from_ymd_opt(y, m, d).unwrap();
        assert_eq!(age_on("1990-06-15", on(2026, 6, 14)), Some(35));
        assert_eq!(age_on("1990-06-15", on(2026, 6, 15)), Some(36));
        assert_eq!(age_on("2000-02-29", on(2026, 2, 28)), Some(25));
        assert_eq!(age_on("2000-02-29", on(2026, 3, 1)), Some(26));
        assert_eq!(age_on("2030-01-01", on(2026, 1, 1)), Some(0));
        assert_eq!(age_on("15/06/1990", on(2026, 1, 1)), None);
        assert_eq!(
            format_date("0987-03-04"),
            json!("0987-03-04T00:00:00.000+0000")
        );
        assert_eq!(
            format_date("1987-3-4"),
            json!("1987-03-04T00:00:00.000+0000")
        );
        assert_eq!(format_date("4 March 1987"), Value::Null);
        assert_eq!(
            format_date("1987-3-04 "),
            json!("1987-03-04T00:00:00.000+0000")
        );
        assert_eq!(format_date("1987-02-30"), Value::Null);
    }

    #[test]
    fn dates_are_lenient_in_and_strict_out() {
        assert_eq!(parse_date("2020-1-5"), NaiveDate::from_ymd_opt(2020, 1, 5));
        assert_eq!(
            parse_date("2020-01-05T10:00:00.000+0000"),
            NaiveDate::from_ymd_opt(2020, 1, 5)
        );
        assert_eq!(parse_date("2020-02-30"), None);
        assert_eq!(parse_date("yesterday"), None);
        assert_eq!(
            format_date("1936-12-04"),
            json!("1936-12-04T00:00:00.000+0000")
        );
    }
}
