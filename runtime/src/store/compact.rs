//! The compact forms the store keeps identifiers and datetimes in, for records and binary
//! index keys alike: a uuid as 16 bytes (or a CIEL-style `5089AAAA…` as its number), a
//! key-form datetime as milliseconds, each falling back to the text whenever the compact
//! form would not give back the very same text. A facility keeps millions of observations
//! and audit entries, and reads them from the disk once the store outgrows memory, so every
//! byte is paid many times over.
//!
//! `Uid::key_bytes` and `time_key_bytes` are the same forms made to sort as the text does
//! (byte order), for binary index keys.

/// A uuid as the store keeps it.
#[derive(Debug, Clone, PartialEq, bincode::Encode, bincode::Decode)]
pub enum Uid {
    /// A canonical uuid (lowercase hexadecimal, hyphenated), as 16 bytes.
    Hex([u8; 16]),
    /// A CIEL-style uuid: decimal digits padded with `A` to 36 characters (`5089AAAA…`).
    Padded { number: u64, digits: u8 },
    /// Anything else, as written.
    Text(String),
}

const UUID_LEN: usize = 36;

impl Uid {
    pub fn from_text(s: &str) -> Uid {
        if s.len() == UUID_LEN {
            if let Ok(u) = uuid::Uuid::try_parse(s)
                && u.hyphenated()
                    .encode_lower(&mut uuid::Uuid::encode_buffer())
                    == s
            {
                return Uid::Hex(*u.as_bytes());
            }
            let digits = s.bytes().take_while(u8::is_ascii_digit).count();
            if (1..=19).contains(&digits)
                && s.bytes().skip(digits).all(|b| b == b'A')
                && let Ok(number) = s[..digits].parse::<u64>()
            {
                let padded = Uid::Padded {
                    number,
                    digits: digits as u8,
                };
                if padded.to_text() == s {
                    return padded;
                }
            }
        }
        Uid::Text(s.to_string())
    }

    // Written by hand rather than through `format!`: the chart decodes a hundred
    // observations a page, six uuids each.
    pub fn to_text(&self) -> String {
        match self {
            Uid::Hex(bytes) => uuid::Uuid::from_bytes(*bytes)
                .hyphenated()
                .encode_lower(&mut uuid::Uuid::encode_buffer())
                .to_string(),
            Uid::Padded { number, digits } => {
                let mut out = [b'A'; UUID_LEN];
                let mut n = *number;
                for i in (0..(*digits as usize).min(UUID_LEN)).rev() {
                    out[i] = b'0' + (n % 10) as u8;
                    n /= 10;
                }
                String::from_utf8_lossy(&out).into_owned()
            }
            Uid::Text(s) => s.clone(),
        }
    }

    /// The uuid as a part of a binary index key: prefix-free (no part's bytes begin another
    /// part's), so that `a|b` keys never mix; equal texts give equal bytes, different texts
    /// different bytes. Canonical uuids sort as their texts do.
    pub fn key_bytes(s: &str, out: &mut Vec<u8>) {
        match Uid::from_text(s) {
            Uid::Hex(bytes) => {
                out.push(0);
                out.extend_from_slice(&bytes);
            }
            Uid::Padded { number, digits } => {
                out.push(1);
                out.extend_from_slice(&number.to_be_bytes());
                out.push(digits);
            }
            Uid::Text(text) => {
                // Its length first: prefix-free whatever the text holds.
                out.push(2);
                out.extend_from_slice(&(text.len() as u32).to_be_bytes());
                out.extend_from_slice(text.as_bytes());
            }
        }
    }

    /// The text of a uuid part written by `key_bytes` (exactly those bytes).
    pub fn from_key_bytes(part: &[u8]) -> Option<String> {
        if Uid::key_len(part)? != part.len() {
            return None;
        }
        let uid = match part[0] {
            0 => Uid::Hex(part[1..17].try_into().ok()?),
            1 => Uid::Padded {
                number: u64::from_be_bytes(part[1..9].try_into().ok()?),
                digits: part[9],
            },
            _ => Uid::Text(String::from_utf8(part[5..].to_vec()).ok()?),
        };
        Some(uid.to_text())
    }

    /// How many bytes of `key` its first uuid part (`key_bytes`) takes; `None` when they
    /// are not one.
    pub fn key_len(key: &[u8]) -> Option<usize> {
        let len = match key.first()? {
            0 => 17,
            1 => 10,
            2 => {
                let n: [u8; 4] = key.get(1..5)?.try_into().ok()?;
                5 + u32::from_be_bytes(n) as usize
            }
            _ => return None,
        };
        (len <= key.len()).then_some(len)
    }
}

/// A key-form datetime (`2026-11-23T09:15:30.000Z`) as the store keeps it.
#[derive(Debug, Clone, PartialEq, bincode::Encode, bincode::Decode)]
pub enum Time {
    Millis(i64),
    Text(String),
}

impl Time {
    pub fn from_text(s: &str) -> Time {
        match millis_of(s) {
            Some(ms) => Time::Millis(ms),
            None => Time::Text(s.to_string()),
        }
    }

    pub fn to_text(&self) -> String {
        match self {
            Time::Millis(ms) => key_text(*ms).unwrap_or_default(),
            Time::Text(s) => s.clone(),
        }
    }
}

/// Milliseconds as `datetime_key` writes them (`2026-11-23T09:15:30.000Z`), digit by digit
/// (chrono's formatting machinery took most of an observation's decoding); `None` outside
/// the years 0 to 9999, which `millis_of` never gives.
pub fn key_text(ms: i64) -> Option<String> {
    use chrono::{Datelike, Timelike};
    let t = chrono::DateTime::from_timestamp_millis(ms)?;
    let year = u32::try_from(t.year()).ok().filter(|y| *y <= 9999)?;
    let mut out = *b"0000-00-00T00:00:00.000Z";
    let mut put = |at: usize, width: usize, mut n: u32| {
        for i in (at..at + width).rev() {
            out[i] = b'0' + (n % 10) as u8;
            n /= 10;
        }
    };
    put(0, 4, year);
    put(5, 2, t.month());
    put(8, 2, t.day());
    put(11, 2, t.hour());
    put(14, 2, t.minute());
    put(17, 2, t.second());
    put(20, 3, t.timestamp_subsec_millis());
    Some(String::from_utf8_lossy(&out).into_owned())
}

/// The milliseconds of a key-form datetime, when writing them again gives the same text.
pub fn millis_of(s: &str) -> Option<i64> {
    if !crate::wire::is_key_shaped(s) {
        return None;
    }
    let t = chrono::DateTime::parse_from_rfc3339(s).ok()?;
    let ms = t.timestamp_millis();
    (chrono::DateTime::from_timestamp_millis(ms).map(crate::wire::datetime_key)? == s).then_some(ms)
}

/// A key-form datetime as 8 bytes that sort as the datetimes do (its milliseconds, sign
/// flipped, big-endian); a text that is not one sorts first.
pub fn time_key_bytes(s: &str, out: &mut Vec<u8>) {
    time_key_of_millis(millis_of(s).unwrap_or(i64::MIN), out);
}

/// Milliseconds as `time_key_bytes` writes them.
pub fn time_key_of_millis(ms: i64, out: &mut Vec<u8>) {
    out.extend_from_slice(&((ms as u64) ^ (1 << 63)).to_be_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uuids_take_their_compact_form_only_when_it_gives_them_back() {
        for (text, compact) in [
            ("0b3c5a7e-1f2d-4c6b-8a9e-0d1c2b3a4f5e", true),
            ("5089AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", true),
            ("0005AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", true),
            // OpenMRS's daemon user: uppercase, so kept as text.
            ("A4F30A1B-5EB9-11DF-A648-37A07F9C90FB", false),
            ("0b3c5a7e1f2d4c6b8a9e0d1c2b3a4f5e", false),
            ("5089AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAB", false),
            ("99999999999999999999AAAAAAAAAAAAAAAA", false),
            ("admin", false),
            ("", false),
        ] {
            let u = Uid::from_text(text);
            assert_eq!(u.to_text(), text);
            assert_eq!(!matches!(u, Uid::Text(_)), compact, "{text}");
        }
    }

    #[test]
    fn datetimes_take_milliseconds_only_when_they_give_the_text_back() {
        for (text, compact) in [
            ("2026-11-23T09:15:30.000Z", true),
            ("1899-12-31T23:59:59.999Z", true),
            ("2026-11-23T09:15:30Z", false),
            ("2026-02-30T09:15:30.000Z", false),
            ("0001-01-01T00:00:00.000Z", true),
            ("9999-12-31T23:59:59.999Z", true),
            ("d", false),
        ] {
            let t = Time::from_text(text);
            assert_eq!(t.to_text(), text);
            assert_eq!(matches!(t, Time::Millis(_)), compact, "{text}");
        }
    }

    #[test]
    fn milliseconds_are_written_as_datetime_key_writes_them() {
        for ms in [
            0,
            -1,
            1,
            999,
            86_399_999,
            951_782_400_000, // 2000-02-29
            1_764_000_000_123,
            -2_208_988_800_001,
            253_402_300_799_999,
        ] {
            let t = chrono::DateTime::from_timestamp_millis(ms).unwrap();
            assert_eq!(key_text(ms).unwrap(), crate::wire::datetime_key(t), "{ms}");
        }
        assert_eq!(key_text(253_402_300_800_000), None, "year 10000");
    }

    #[test]
    fn key_bytes_sort_as_the_texts_do() {
        let times = [
            "1899-12-31T23:59:59.999Z",
            "1970-01-01T00:00:00.000Z",
            "2026-11-23T09:15:30.000Z",
            "2026-11-23T09:15:30.001Z",
        ];
        let keys: Vec<Vec<u8>> = times
            .iter()
            .map(|t| {
                let mut k = Vec::new();
                time_key_bytes(t, &mut k);
                k
            })
            .collect();
        assert!(keys.windows(2).all(|w| w[0] < w[1]));
        let uuids = [
            "0b3c5a7e-1f2d-4c6b-8a9e-0d1c2b3a4f5e",
            "0b3c5a7e-1f2d-4c6b-8a9e-0d1c2b3a4f5f",
            "fb3c5a7e-1f2d-4c6b-8a9e-0d1c2b3a4f5e",
        ];
        let keys: Vec<Vec<u8>> = uuids
            .iter()
            .map(|u| {
                let mut k = Vec::new();
                Uid::key_bytes(u, &mut k);
                k
            })
            .collect();
        assert!(keys.windows(2).all(|w| w[0] < w[1]));
        // No part's bytes begin another part's: a text uuid that is a prefix of another.
        let (mut a, mut b) = (Vec::new(), Vec::new());
        Uid::key_bytes("ab", &mut a);
        Uid::key_bytes("abc", &mut b);
        assert!(!b.starts_with(&a));
        for u in ["ab", uuids[0], "5089AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"] {
            let mut k = Vec::new();
            Uid::key_bytes(u, &mut k);
            let whole = k.len();
            assert_eq!(Uid::from_key_bytes(&k).as_deref(), Some(u));
            k.extend_from_slice(b"rest");
            assert_eq!(Uid::key_len(&k), Some(whole), "{u}");
            assert_eq!(Uid::from_key_bytes(&k), None, "{u}: more than one part");
        }
        assert_eq!(Uid::key_len(&[2, 0, 0, 0, 9, b'x']), None);
    }
}
