//! Patient identifiers: check-digit validators and sequential identifier generation.
//!
//! Luhn mod N is the algorithm of the idgen module's `LuhnModNIdentifierValidator` family
//! (mod 30 over `0123456789ACDEFGHJKLMNPRTUVWXY`, mod 10 over digits); core's
//! `LuhnIdentifierValidator` writes its check digit after a dash (`1234-5`).

use model::{IdentifierSourceKind, PatientIdentifierType};

pub const MOD30_CHARS: &str = "0123456789ACDEFGHJKLMNPRTUVWXY";
pub const MOD10_CHARS: &str = "0123456789";

const IDGEN_MOD30: &str = "org.openmrs.module.idgen.validator.LuhnMod30IdentifierValidator";
const IDGEN_MOD10: &str = "org.openmrs.module.idgen.validator.LuhnMod10IdentifierValidator";
const CORE_LUHN: &str = "org.openmrs.patient.impl.LuhnIdentifierValidator";

fn luhn_sum(input: &str, chars: &str, start_factor: u32) -> Option<u32> {
    let n = chars.chars().count() as u32;
    let mut factor = start_factor;
    let mut sum = 0;
    for c in input.chars().rev() {
        let code = chars.find(c)? as u32;
        let addend = factor * code;
        factor = if factor == 2 { 1 } else { 2 };
        sum += addend / n + addend % n;
    }
    Some(sum)
}

/// The check character for `input` under Luhn mod N over `chars`.
pub fn luhn_check_char(input: &str, chars: &str) -> Option<char> {
    let n = chars.chars().count() as u32;
    let sum = luhn_sum(input, chars, 2)?;
    chars.chars().nth(((n - sum % n) % n) as usize)
}

/// Whether `input` (ending with its check character) is valid under Luhn mod N.
pub fn luhn_valid(input: &str, chars: &str) -> bool {
    input.chars().count() >= 2
        && luhn_sum(input, chars, 1).is_some_and(|s| s % chars.chars().count() as u32 == 0)
}

#[derive(Debug, PartialEq, Eq)]
pub enum CheckError {
    Invalid,
    Unsupported(String),
}

/// Validates an identifier against its type's validator (nothing to do without one).
pub fn validate(identifier: &str, validator: Option<&str>) -> Result<(), CheckError> {
    let upper = identifier.to_uppercase();
    let ok = match validator {
        None => true,
        Some(IDGEN_MOD30) => luhn_valid(&upper, MOD30_CHARS),
        Some(IDGEN_MOD10) => luhn_valid(&upper, MOD10_CHARS),
        Some(CORE_LUHN) => match upper.rsplit_once('-') {
            Some((body, check)) => {
                check.len() == 1 && luhn_valid(&format!("{body}{check}"), MOD10_CHARS)
            }
            None => false,
        },
        Some(other) => return Err(CheckError::Unsupported(other.to_string())),
    };
    if ok { Ok(()) } else { Err(CheckError::Invalid) }
}

/// Appends the check character the validator expects.
pub fn with_check(identifier: &str, validator: Option<&str>) -> Result<String, CheckError> {
    match validator {
        None => Ok(identifier.to_string()),
        Some(IDGEN_MOD30) => luhn_check_char(identifier, MOD30_CHARS)
            .map(|c| format!("{identifier}{c}"))
            .ok_or(CheckError::Invalid),
        Some(IDGEN_MOD10) => luhn_check_char(identifier, MOD10_CHARS)
            .map(|c| format!("{identifier}{c}"))
            .ok_or(CheckError::Invalid),
        Some(CORE_LUHN) => luhn_check_char(identifier, MOD10_CHARS)
            .map(|c| format!("{identifier}-{c}"))
            .ok_or(CheckError::Invalid),
        Some(other) => Err(CheckError::Unsupported(other.to_string())),
    }
}

#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum GenerateError {
    #[error("identifier source is not sequential")]
    NotSequential,
    #[error(
        "identifier source is exhausted: the next identifier would be longer than {0} characters"
    )]
    Exhausted(u32),
    #[error("the first identifier base uses characters outside the base character set")]
    BadBase,
    #[error("the identifier type's validator {0} is not supported")]
    Unsupported(String),
}

/// The `n`th identifier (0 first) of a sequential source, with its check character.
pub fn generate(
    kind: &IdentifierSourceKind,
    n: u64,
    id_type: Option<&PatientIdentifierType>,
) -> Result<String, GenerateError> {
    let IdentifierSourceKind::Sequential {
        prefix,
        suffix,
        first_identifier_base,
        base_character_set,
        min_length,
        max_length,
    } = kind
    else {
        return Err(GenerateError::NotSequential);
    };
    let chars: Vec<char> = base_character_set.chars().collect();
    let base = chars.len() as u128;
    let mut value: u128 = 0;
    for c in first_identifier_base.chars() {
        let digit = chars
            .iter()
            .position(|x| *x == c)
            .ok_or(GenerateError::BadBase)? as u128;
        value = value * base + digit;
    }
    value += n as u128;
    let mut body = Vec::new();
    loop {
        body.push(chars[(value % base) as usize]);
        value /= base;
        if value == 0 {
            break;
        }
    }
    let mut body: String = body.into_iter().rev().collect();
    let raw = |body: &str| {
        format!(
            "{}{body}{}",
            prefix.as_deref().unwrap_or(""),
            suffix.as_deref().unwrap_or("")
        )
    };
    if let Some(min) = min_length {
        while (raw(&body).chars().count() as u32) < *min {
            body.insert(0, chars[0]);
        }
    }
    let raw = raw(&body);
    if let Some(max) = max_length
        && raw.chars().count() as u32 > *max
    {
        return Err(GenerateError::Exhausted(*max));
    }
    with_check(&raw, id_type.and_then(|t| t.validator.as_deref())).map_err(|e| match e {
        CheckError::Unsupported(v) => GenerateError::Unsupported(v),
        CheckError::Invalid => GenerateError::BadBase,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn luhn_mod10_matches_the_classic_algorithm() {
        // The textbook example: 7992739871 has check digit 3.
        assert_eq!(luhn_check_char("7992739871", MOD10_CHARS), Some('3'));
        assert!(luhn_valid("79927398713", MOD10_CHARS));
        assert!(!luhn_valid("79927398710", MOD10_CHARS));
    }

    #[test]
    fn mod30_round_trips_and_catches_typos() {
        for body in ["100000", "10000A", "YYY", "1"] {
            let id = with_check(body, Some(IDGEN_MOD30)).unwrap();
            assert_eq!(id.len(), body.len() + 1);
            assert_eq!(validate(&id, Some(IDGEN_MOD30)), Ok(()));
            assert_eq!(validate(&id.to_lowercase(), Some(IDGEN_MOD30)), Ok(()));
        }
        let id = with_check("100000", Some(IDGEN_MOD30)).unwrap();
        let mut typo: Vec<char> = id.chars().collect();
        typo.swap(1, 2);
        typo[0] = '2';
        assert_eq!(
            validate(&typo.iter().collect::<String>(), Some(IDGEN_MOD30)),
            Err(CheckError::Invalid)
        );
        assert_eq!(
            validate("1000O0", Some(IDGEN_MOD30)),
            Err(CheckError::Invalid)
        );
    }

    #[test]
    fn core_luhn_uses_a_dash() {
        let id = with_check("12345", Some(CORE_LUHN)).unwrap();
        assert_eq!(id, "12345-5");
        assert_eq!(validate(&id, Some(CORE_LUHN)), Ok(()));
        assert_eq!(
            validate("12345-4", Some(CORE_LUHN)),
            Err(CheckError::Invalid)
        );
    }

    #[test]
    fn sequential_generation_counts_in_the_base() {
        let kind = IdentifierSourceKind::Sequential {
            prefix: Some("P".into()),
            suffix: None,
            first_identifier_base: "9".into(),
            base_character_set: "0123456789".into(),
            min_length: Some(4),
            max_length: Some(4),
        };
        assert_eq!(generate(&kind, 0, None).unwrap(), "P009");
        assert_eq!(generate(&kind, 1, None).unwrap(), "P010");
        assert_eq!(generate(&kind, 990, None).unwrap(), "P999");
        assert_eq!(generate(&kind, 991, None), Err(GenerateError::Exhausted(4)));
    }
}
