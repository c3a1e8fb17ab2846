//! Reference ranges of numeric concepts that depend on the patient (OpenMRS 2.7's
//! `ConceptReferenceRange`, from Initializer's `conceptreferencerange/`): their criteria, as
//! written in the content, parsed once at build time, and evaluated against a patient.
//!
//! OpenMRS evaluates a criterion as a template expression (Velocity, then Spring's
//! expression language) with the patient in scope. The content written for it compares
//! the patient's age and sex: `$patient.getAge() >= 6 && $patient.getAge() < 8`,
//! `$patient.getAgeInMonths() < 3`, `$patient.getGender() == "F"`. That language is what
//! [`parse`] reads: comparisons of the patient's age (in years, months, weeks or days) or
//! sex with numbers and strings, joined with `&&`, `||`, `!` (or `and`, `or`, `not`) and
//! parentheses. A criterion naming anything else (`$fn.getObsWeeks(…)`, `$obs`) is refused
//! at build time with its position, never silently taken as false.

use serde::{Deserialize, Serialize};

/// A numeric concept's range for the patients its criteria select.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConceptReferenceRange {
    pub uuid: String,
    /// The concept numeric's uuid.
    pub concept: String,
    pub limits: Limits,
    pub criteria: Criteria,
    /// The criteria as the content wrote them.
    pub criteria_text: String,
}

/// The six limits of a range; any may be absent.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Limits {
    pub low_absolute: Option<f64>,
    pub low_critical: Option<f64>,
    pub low_normal: Option<f64>,
    pub hi_normal: Option<f64>,
    pub hi_critical: Option<f64>,
    pub hi_absolute: Option<f64>,
}

impl Limits {
    pub fn is_empty(&self) -> bool {
        *self == Limits::default()
    }

    /// The strictest of several ranges, limit by limit: the highest of each low limit, the
    /// lowest of each high one (OpenMRS 2.7.5's rule when several ranges match a patient).
    pub fn strictest<'a>(ranges: impl IntoIterator<Item = &'a Limits>) -> Limits {
        let pick = |a: Option<f64>, b: Option<f64>, high: bool| match (a, b) {
            (Some(x), Some(y)) => Some(if high { x.min(y) } else { x.max(y) }),
            (x, y) => x.or(y),
        };
        ranges.into_iter().fold(Limits::default(), |acc, r| Limits {
            low_absolute: pick(acc.low_absolute, r.low_absolute, false),
            low_critical: pick(acc.low_critical, r.low_critical, false),
            low_normal: pick(acc.low_normal, r.low_normal, false),
            hi_normal: pick(acc.hi_normal, r.hi_normal, true),
            hi_critical: pick(acc.hi_critical, r.hi_critical, true),
            hi_absolute: pick(acc.hi_absolute, r.hi_absolute, true),
        })
    }

    /// How a value reads against the range, as OpenMRS's `Obs.Interpretation` names it:
    /// at or beyond a critical limit is critical, beyond a normal limit high or low, and
    /// within the normal limits normal; `None` when the range has no normal or critical
    /// limit to judge by.
    pub fn interpretation(&self, value: f64) -> Option<&'static str> {
        Some(if self.hi_critical.is_some_and(|h| value >= h) {
            "CRITICALLY_HIGH"
        } else if self.low_critical.is_some_and(|l| value <= l) {
            "CRITICALLY_LOW"
        } else if self.hi_normal.is_some_and(|h| value > h) {
            "HIGH"
        } else if self.low_normal.is_some_and(|l| value < l) {
            "LOW"
        } else if self.hi_normal.is_some() || self.low_normal.is_some() {
            "NORMAL"
        } else {
            return None;
        })
    }
}

impl crate::ConceptNumeric {
    /// The concept's own limits, which apply to patients no range of the content selects.
    pub fn limits(&self) -> Limits {
        Limits {
            low_absolute: self.low_absolute,
            low_critical: self.low_critical,
            low_normal: self.low_normal,
            hi_normal: self.hi_normal,
            hi_critical: self.hi_critical,
            hi_absolute: self.hi_absolute,
        }
    }
}

/// A parsed criterion.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Criteria {
    Or(Vec<Criteria>),
    And(Vec<Criteria>),
    Not(Box<Criteria>),
    Compare(Operand, Comparison, Operand),
    /// A bare `true` or `false`.
    Constant(bool),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Operand {
    Number(f64),
    Text(String),
    Patient(PatientFact),
}

/// What a criterion can ask of the patient.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum PatientFact {
    AgeInYears,
    AgeInMonths,
    AgeInWeeks,
    AgeInDays,
    Gender,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Comparison {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

/// The patient as the criteria see it: ages in whole units (to today, or to the death
/// date), `None` without a birth date.
#[derive(Debug, Clone, Default)]
pub struct PatientFacts {
    pub age_in_years: Option<i64>,
    pub age_in_months: Option<i64>,
    pub age_in_weeks: Option<i64>,
    pub age_in_days: Option<i64>,
    pub gender: Option<String>,
}

enum Value<'a> {
    Number(f64),
    Text(&'a str),
    Missing,
}

impl Criteria {
    /// Whether the criteria select this patient. A comparison with something the patient
    /// lacks (an age without a birth date) is false, as OpenMRS's template engine
    /// answered it.
    pub fn matches(&self, p: &PatientFacts) -> bool {
        match self {
            Criteria::Or(items) => items.iter().any(|c| c.matches(p)),
            Criteria::And(items) => items.iter().all(|c| c.matches(p)),
            Criteria::Not(c) => !c.matches(p),
            Criteria::Constant(b) => *b,
            Criteria::Compare(left, op, right) => compare(value(left, p), *op, value(right, p)),
        }
    }
}

fn value<'a>(o: &'a Operand, p: &'a PatientFacts) -> Value<'a> {
    let number = |n: Option<i64>| n.map_or(Value::Missing, |n| Value::Number(n as f64));
    match o {
        Operand::Number(n) => Value::Number(*n),
        Operand::Text(t) => Value::Text(t),
        Operand::Patient(PatientFact::AgeInYears) => number(p.age_in_years),
        Operand::Patient(PatientFact::AgeInMonths) => number(p.age_in_months),
        Operand::Patient(PatientFact::AgeInWeeks) => number(p.age_in_weeks),
        Operand::Patient(PatientFact::AgeInDays) => number(p.age_in_days),
        Operand::Patient(PatientFact::Gender) => {
            p.gender.as_deref().map_or(Value::Missing, Value::Text)
        }
    }
}

fn compare(a: Value, op: Comparison, b: Value) -> bool {
    use std::cmp::Ordering;
    let ordering = match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.partial_cmp(&y),
        (Value::Text(x), Value::Text(y)) => Some(x.cmp(y)),
        _ => None,
    };
    let Some(o) = ordering else {
        return false;
    };
    match op {
        Comparison::Eq => o == Ordering::Equal,
        Comparison::Ne => o != Ordering::Equal,
        Comparison::Lt => o == Ordering::Less,
        Comparison::Le => o != Ordering::Greater,
        Comparison::Gt => o == Ordering::Greater,
        Comparison::Ge => o != Ordering::Less,
    }
}

/// Why a criterion could not be read: where (a character offset into the text and a
/// length), what, and what would do.
#[derive(Debug, Clone, PartialEq)]
pub struct CriteriaError {
    pub offset: usize,
    pub len: usize,
    pub message: String,
    pub help: String,
}

const SUPPORTED: &str = "a criterion compares $patient.getAge(), getAgeInMonths(), getAgeInWeeks(), getAgeInDays() or getGender() with numbers and quoted strings, joined with &&, || and !";

#[derive(Debug, Clone, PartialEq)]
enum Token {
    Number(f64),
    Text(String),
    /// `$patient.getAge()` and the like, with the variable and member as written.
    Reference(String),
    Word(String),
    Op(&'static str),
    Open,
    Close,
}

fn tokens(text: &str) -> Result<Vec<(Token, usize, usize)>, CriteriaError> {
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    let mut out = Vec::new();
    let mut i = 0;
    let at = |i: usize| chars.get(i).map(|c| c.1);
    let offset = |i: usize| chars.get(i).map_or(text.len(), |c| c.0);
    while i < chars.len() {
        let c = chars[i].1;
        let start = i;
        if c.is_whitespace() {
            i += 1;
            continue;
        }
        let token =
            if c.is_ascii_digit() || (c == '.' && at(i + 1).is_some_and(|d| d.is_ascii_digit())) {
                while at(i).is_some_and(|d| d.is_ascii_digit() || d == '.') {
                    i += 1;
                }
                let written = &text[offset(start)..offset(i)];
                Token::Number(written.parse().map_err(|_| CriteriaError {
                    offset: offset(start),
                    len: written.len(),
                    message: format!("'{written}' is not a number"),
                    help: SUPPORTED.into(),
                })?)
            } else if c == '"' || c == '\'' {
                i += 1;
                while at(i).is_some_and(|d| d != c) {
                    i += 1;
                }
                if at(i).is_none() {
                    return Err(CriteriaError {
                        offset: offset(start),
                        len: text.len() - offset(start),
                        message: "this string is not closed".into(),
                        help: format!("end it with {c}"),
                    });
                }
                i += 1;
                Token::Text(text[offset(start) + 1..offset(i) - 1].to_string())
            } else if c == '$' || c.is_alphabetic() || c == '_' {
                i += 1;
                // A reference runs through members and their call parentheses: `$patient.getAge()`.
                while let Some(d) = at(i) {
                    if d.is_alphanumeric() || d == '_' || (c == '$' && d == '.') {
                        i += 1;
                    } else if c == '$' && d == '(' {
                        let mut depth = 0;
                        while let Some(e) = at(i) {
                            i += 1;
                            match e {
                                '(' => depth += 1,
                                ')' => {
                                    depth -= 1;
                                    if depth == 0 {
                                        break;
                                    }
                                }
                                _ => {}
                            }
                        }
                    } else {
                        break;
                    }
                }
                let written = text[offset(start)..offset(i)].to_string();
                if c == '$' {
                    Token::Reference(written)
                } else {
                    Token::Word(written.to_lowercase())
                }
            } else {
                let two = text.get(offset(i)..offset(i) + 2).unwrap_or("");
                let op = ["&&", "||", "==", "!=", "<=", ">="]
                    .into_iter()
                    .find(|o| *o == two);
                match (op, c) {
                    (Some(o), _) => {
                        i += 2;
                        Token::Op(o)
                    }
                    (None, '<') => {
                        i += 1;
                        Token::Op("<")
                    }
                    (None, '>') => {
                        i += 1;
                        Token::Op(">")
                    }
                    (None, '!') => {
                        i += 1;
                        Token::Op("!")
                    }
                    (None, '(') => {
                        i += 1;
                        Token::Open
                    }
                    (None, ')') => {
                        i += 1;
                        Token::Close
                    }
                    _ => {
                        return Err(CriteriaError {
                            offset: offset(start),
                            len: c.len_utf8(),
                            message: format!("unexpected '{c}'"),
                            help: SUPPORTED.into(),
                        });
                    }
                }
            };
        out.push((token, offset(start), offset(i) - offset(start)));
    }
    Ok(out)
}

/// Reads a criterion; see the module's documentation for the language.
pub fn parse(text: &str) -> Result<Criteria, CriteriaError> {
    let tokens = tokens(text)?;
    if tokens.is_empty() {
        return Err(CriteriaError {
            offset: 0,
            len: 0,
            message: "the criteria are empty".into(),
            help: "OpenMRS refuses a range without criteria; write the patients it applies to, e.g. $patient.getAge() >= 18".into(),
        });
    }
    let mut parser = Parser {
        tokens,
        at: 0,
        end: text.len(),
    };
    let criteria = parser.or()?;
    if let Some((_, offset, len)) = parser.tokens.get(parser.at) {
        return Err(CriteriaError {
            offset: *offset,
            len: *len,
            message: "unexpected text after a complete criterion".into(),
            help: "join criteria with && or ||".into(),
        });
    }
    Ok(criteria)
}

struct Parser {
    tokens: Vec<(Token, usize, usize)>,
    at: usize,
    end: usize,
}

impl Parser {
    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.at).map(|t| &t.0)
    }

    fn is_op(&self, ops: &[&str], words: &[&str]) -> bool {
        match self.peek() {
            Some(Token::Op(o)) => ops.contains(o),
            Some(Token::Word(w)) => words.contains(&w.as_str()),
            _ => false,
        }
    }

    fn error_here(&self, message: &str) -> CriteriaError {
        let (offset, len) = self
            .tokens
            .get(self.at)
            .map_or((self.end, 0), |t| (t.1, t.2));
        CriteriaError {
            offset,
            len,
            message: message.into(),
            help: SUPPORTED.into(),
        }
    }

    fn or(&mut self) -> Result<Criteria, CriteriaError> {
        let mut items = vec![self.and()?];
        while self.is_op(&["||"], &["or"]) {
            self.at += 1;
            items.push(self.and()?);
        }
        Ok(if items.len() == 1 {
            items.pop().expect("one item")
        } else {
            Criteria::Or(items)
        })
    }

    fn and(&mut self) -> Result<Criteria, CriteriaError> {
        let mut items = vec![self.unary()?];
        while self.is_op(&["&&"], &["and"]) {
            self.at += 1;
            items.push(self.unary()?);
        }
        Ok(if items.len() == 1 {
            items.pop().expect("one item")
        } else {
            Criteria::And(items)
        })
    }

    fn unary(&mut self) -> Result<Criteria, CriteriaError> {
        if self.is_op(&["!"], &["not"]) {
            self.at += 1;
            return Ok(Criteria::Not(Box::new(self.unary()?)));
        }
        if self.peek() == Some(&Token::Open) {
            self.at += 1;
            let inner = self.or()?;
            if self.peek() != Some(&Token::Close) {
                return Err(self.error_here("a ')' is missing here"));
            }
            self.at += 1;
            return Ok(inner);
        }
        if let Some(Token::Word(w)) = self.peek()
            && (w == "true" || w == "false")
        {
            let b = w == "true";
            self.at += 1;
            return Ok(Criteria::Constant(b));
        }
        let left = self.operand()?;
        let op = match self.peek() {
            Some(Token::Op("==")) => Comparison::Eq,
            Some(Token::Op("!=")) => Comparison::Ne,
            Some(Token::Op("<")) => Comparison::Lt,
            Some(Token::Op("<=")) => Comparison::Le,
            Some(Token::Op(">")) => Comparison::Gt,
            Some(Token::Op(">=")) => Comparison::Ge,
            Some(Token::Word(w)) => match w.as_str() {
                "eq" => Comparison::Eq,
                "ne" => Comparison::Ne,
                "lt" => Comparison::Lt,
                "le" => Comparison::Le,
                "gt" => Comparison::Gt,
                "ge" => Comparison::Ge,
                _ => {
                    return Err(
                        self.error_here("a comparison (==, !=, <, <=, >, >=) is expected here")
                    );
                }
            },
            _ => {
                return Err(self.error_here("a comparison (==, !=, <, <=, >, >=) is expected here"));
            }
        };
        self.at += 1;
        let right = self.operand()?;
        Ok(Criteria::Compare(left, op, right))
    }

    fn operand(&mut self) -> Result<Operand, CriteriaError> {
        let Some((token, offset, len)) = self.tokens.get(self.at).cloned() else {
            return Err(self.error_here("the criterion ends where a value is expected"));
        };
        let operand =
            match token {
                Token::Number(n) => Operand::Number(n),
                Token::Text(t) => Operand::Text(t),
                Token::Reference(r) => {
                    Operand::Patient(patient_fact(&r).ok_or_else(|| CriteriaError {
                        offset,
                        len,
                        message: format!("'{r}' is not something this distribution can evaluate"),
                        help: SUPPORTED.into(),
                    })?)
                }
                _ => return Err(self.error_here(
                    "a value (a number, a quoted string or $patient's age or sex) is expected here",
                )),
            };
        self.at += 1;
        Ok(operand)
    }
}

/// `$patient.getAge()`, `$patient.age` (the template engines' property form) and the like.
fn patient_fact(reference: &str) -> Option<PatientFact> {
    let member = reference.strip_prefix("$patient.")?;
    let member = member.strip_suffix("()").unwrap_or(member);
    Some(match member {
        "getAge" | "age" => PatientFact::AgeInYears,
        "getAgeInMonths" | "ageInMonths" => PatientFact::AgeInMonths,
        "getAgeInWeeks" | "ageInWeeks" => PatientFact::AgeInWeeks,
        "getAgeInDays" | "ageInDays" => PatientFact::AgeInDays,
        "getGender" | "gender" => PatientFact::Gender,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn child(years: i64, gender: &str) -> PatientFacts {
        PatientFacts {
            age_in_years: Some(years),
            age_in_months: Some(years * 12),
            age_in_weeks: Some(years * 52),
            age_in_days: Some(years * 365),
            gender: Some(gender.into()),
        }
    }

    #[test]
    fn the_reference_contents_criteria_read_and_select_by_age_and_sex() {
        let school_age = parse("$patient.getAge() >= 6 && $patient.getAge() < 8").unwrap();
        assert!(school_age.matches(&child(6, "M")));
        assert!(school_age.matches(&child(7, "F")));
        assert!(!school_age.matches(&child(8, "F")));
        assert!(!school_age.matches(&child(5, "F")));
        let newborn = parse("$patient.getAgeInMonths() < 3").unwrap();
        assert!(newborn.matches(&PatientFacts {
            age_in_months: Some(2),
            ..PatientFacts::default()
        }));
        assert!(!newborn.matches(&child(1, "M")));
        let women = parse(r#"$patient.getAge() >= 18 and ($patient.gender == "F" || $patient.getGender() == 'O')"#).unwrap();
        assert!(women.matches(&child(30, "F")));
        assert!(women.matches(&child(30, "O")));
        assert!(!women.matches(&child(30, "M")));
        assert!(!women.matches(&child(12, "F")));
        assert!(
            parse("!($patient.getAge() lt 18)")
                .unwrap()
                .matches(&child(18, "M"))
        );
        assert!(parse("true").unwrap().matches(&PatientFacts::default()));
    }

    #[test]
    fn a_patient_without_a_birth_date_matches_no_age() {
        let p = PatientFacts {
            gender: Some("F".into()),
            ..PatientFacts::default()
        };
        assert!(!parse("$patient.getAge() < 3").unwrap().matches(&p));
        assert!(!parse("$patient.getAge() >= 3").unwrap().matches(&p));
        assert!(parse("$patient.getGender() == 'F'").unwrap().matches(&p));
    }

    #[test]
    fn what_cannot_be_evaluated_is_refused_with_its_place() {
        let text = "$patient.getAge() >= 18 && $fn.getObsWeeks('CIEL:1427', $patient) >= 32";
        let e = parse(text).unwrap_err();
        assert_eq!(e.offset, text.find("$fn").unwrap());
        assert_eq!(
            &text[e.offset..e.offset + e.len],
            "$fn.getObsWeeks('CIEL:1427', $patient)"
        );
        let e = parse("$patient.getAge() >= ").unwrap_err();
        assert!(e.message.contains("ends"), "{e:?}");
        let e = parse("$patient.getAge() >= 6 $patient.getAge()").unwrap_err();
        assert_eq!(e.offset, 23);
        let e = parse("($patient.getAge() > 1").unwrap_err();
        assert!(e.message.contains("')'"), "{e:?}");
        assert!(parse("  ").unwrap_err().message.contains("empty"));
        assert!(parse("$patient.getAge() = 3").is_err());
        assert!(
            parse("$patient.getAge() > 'x")
                .unwrap_err()
                .message
                .contains("not closed")
        );
    }

    #[test]
    fn several_matching_ranges_give_the_strictest_limits() {
        let a = Limits {
            low_normal: Some(80.0),
            hi_normal: Some(150.0),
            ..Limits::default()
        };
        let b = Limits {
            low_normal: Some(60.0),
            hi_normal: Some(140.0),
            hi_critical: Some(200.0),
            ..Limits::default()
        };
        let s = Limits::strictest([&a, &b]);
        assert_eq!(
            (s.low_normal, s.hi_normal, s.hi_critical),
            (Some(80.0), Some(140.0), Some(200.0))
        );
        assert!(Limits::strictest([]).is_empty());
    }

    #[test]
    fn values_read_against_a_range_as_openmrs_interprets_them() {
        let temperature = Limits {
            low_critical: Some(35.0),
            low_normal: Some(36.0),
            hi_normal: Some(37.7),
            hi_critical: Some(38.0),
            ..Limits::default()
        };
        assert_eq!(temperature.interpretation(38.0), Some("CRITICALLY_HIGH"));
        assert_eq!(temperature.interpretation(37.8), Some("HIGH"));
        assert_eq!(temperature.interpretation(37.7), Some("NORMAL"));
        assert_eq!(temperature.interpretation(36.0), Some("NORMAL"));
        assert_eq!(temperature.interpretation(35.5), Some("LOW"));
        assert_eq!(temperature.interpretation(35.0), Some("CRITICALLY_LOW"));
        assert_eq!(Limits::default().interpretation(1.0), None);
    }
}
