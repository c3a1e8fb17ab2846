//! Versions and version ranges of content packages and OpenMRS modules, as
//! `content.properties` writes them.
//!
//! Versions compare the way Maven orders them: numeric parts first (missing parts count as
//! zero), then the qualifier, where a pre-release sorts before its release
//! (`alpha < beta < milestone < rc < snapshot < release < sp`), so `1.1.2-SNAPSHOT` comes
//! just before `1.1.2`. Ranges accept the forms packages use: comparators (`>=1.1.2-SNAPSHOT`,
//! `<2`, `=1.0.0`), npm-style `^1.2.0` and `~1.2.0`, wildcards (`1.x`, `*`, `latest`), Maven
//! brackets (`[1.0,2.0)`), a bare version (exactly that version when it has three parts;
//! `1.0` is every `1.0.*`, as the OpenMRS SDK reads it), several comparators
//! separated by spaces (all must hold) and alternatives separated by `||`.

use std::cmp::Ordering;
use std::fmt;

/// Equal when they order equal (`1.1` and `1.1.0` are the same version).
#[derive(Debug, Clone)]
pub struct Version {
    pub text: String,
    numbers: Vec<u64>,
    qualifier: String,
}

impl PartialEq for Version {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other).is_eq()
    }
}

impl Eq for Version {}

impl Version {
    pub fn parse(text: &str) -> Option<Version> {
        let t = text.trim().trim_start_matches(['v', 'V']);
        if t.is_empty() {
            return None;
        }
        // Build metadata (`+…`) does not order.
        let ordered = t.split('+').next().unwrap_or("");
        let split = ordered.find('-').unwrap_or(ordered.len());
        let (numeric, rest) = ordered.split_at(split);
        let mut numbers = Vec::new();
        for part in numeric.split('.') {
            numbers.push(part.parse::<u64>().ok()?);
        }
        let qualifier = rest.trim_start_matches('-').to_ascii_lowercase();
        Some(Version {
            text: t.to_string(),
            numbers,
            qualifier,
        })
    }

    fn number(&self, i: usize) -> u64 {
        self.numbers.get(i).copied().unwrap_or(0)
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// Maven's order of well-known qualifiers (unknown ones after them, alphabetically), then
/// the qualifier's trailing number (`rc9 < rc10`).
fn qualifier_rank(q: &str) -> (u8, &str, u64) {
    let head = q.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.' || c == '-');
    let number = q[head.len()..]
        .trim_start_matches(['.', '-'])
        .parse::<u64>()
        .unwrap_or(0);
    let rank = match head {
        "alpha" | "a" => 0,
        "beta" | "b" => 1,
        "milestone" | "m" => 2,
        "rc" | "cr" => 3,
        "snapshot" => 4,
        "" | "ga" | "final" | "release" => 5,
        "sp" => 6,
        _ => 7,
    };
    (rank, if rank == 7 { head } else { "" }, number)
}

impl Ord for Version {
    fn cmp(&self, other: &Self) -> Ordering {
        let n = self.numbers.len().max(other.numbers.len());
        (0..n)
            .map(|i| self.number(i).cmp(&other.number(i)))
            .find(|o| o.is_ne())
            .unwrap_or(Ordering::Equal)
            .then_with(|| qualifier_rank(&self.qualifier).cmp(&qualifier_rank(&other.qualifier)))
    }
}

impl PartialOrd for Version {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Ge,
    Gt,
    Le,
    Lt,
    Eq,
}

#[derive(Debug, Clone)]
struct Comparator {
    op: Op,
    version: Version,
}

impl Comparator {
    fn holds(&self, v: &Version) -> bool {
        let o = v.cmp(&self.version);
        match self.op {
            Op::Ge => o.is_ge(),
            Op::Gt => o.is_gt(),
            Op::Le => o.is_le(),
            Op::Lt => o.is_lt(),
            Op::Eq => o.is_eq(),
        }
    }
}

/// A parsed range: alternatives, each a set of comparators that must all hold.
#[derive(Debug, Clone)]
pub struct Range {
    pub text: String,
    alternatives: Vec<Vec<Comparator>>,
}

impl Range {
    pub fn parse(text: &str) -> Result<Range, String> {
        let t = text.trim();
        if t.is_empty() {
            return Err("the version range is empty".into());
        }
        let mut alternatives = Vec::new();
        if t.starts_with(['[', '(']) {
            // Maven ranges: `[1.0,2.0)`, `[1.0,)`, `[1.0]`, several joined by commas.
            let mut rest = t;
            while !rest.is_empty() {
                let end = rest
                    .find([']', ')'])
                    .ok_or_else(|| format!("unclosed bracket in '{t}'"))?;
                alternatives.push(maven_range(&rest[..=end], t)?);
                rest = rest[end + 1..].trim_start_matches([',', ' ']);
            }
        } else {
            for alt in t.split("||") {
                let mut all = Vec::new();
                if alt.trim().is_empty() {
                    return Err(format!("'{t}' has an empty alternative"));
                }
                let mut words = alt.split_whitespace().peekable();
                while let Some(word) = words.next() {
                    // `>= 1.0` written with a space.
                    let word = if matches!(word, ">=" | ">" | "<=" | "<" | "=") {
                        format!("{word}{}", words.next().unwrap_or(""))
                    } else {
                        word.to_string()
                    };
                    all.extend(comparators(&word, t)?);
                }
                alternatives.push(all);
            }
        }
        Ok(Range {
            text: t.to_string(),
            alternatives,
        })
    }

    pub fn contains(&self, v: &Version) -> bool {
        self.alternatives
            .iter()
            .any(|all| all.iter().all(|c| c.holds(v)))
    }
}

impl fmt::Display for Range {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

fn version(text: &str, whole: &str) -> Result<Version, String> {
    Version::parse(text).ok_or_else(|| format!("'{text}' in '{whole}' is not a version"))
}

fn comparators(word: &str, whole: &str) -> Result<Vec<Comparator>, String> {
    let c = |op, version| Comparator { op, version };
    for (prefix, op) in [
        (">=", Op::Ge),
        ("<=", Op::Le),
        (">", Op::Gt),
        ("<", Op::Lt),
        ("=", Op::Eq),
    ] {
        if let Some(v) = word.strip_prefix(prefix) {
            if op == Op::Eq {
                return exact_or_partial(v, whole);
            }
            return Ok(vec![c(op, version(v, whole)?)]);
        }
    }
    if matches!(word, "*" | "x" | "X" | "latest" | "next") {
        return Ok(Vec::new());
    }
    if let Some(v) = word.strip_prefix('^') {
        // Up to the next change of the first non-zero part.
        let low = version(v, whole)?;
        let parts = v.split(['-', '+']).next().unwrap_or("").split('.').count();
        let i = (0..parts)
            .find(|&i| low.number(i) != 0)
            .unwrap_or(parts.saturating_sub(1));
        return Ok(vec![c(Op::Ge, low.clone()), c(Op::Lt, bump(&low, i)?)]);
    }
    if let Some(v) = word.strip_prefix('~') {
        // Patch-level changes when a minor is given, minor-level otherwise.
        let low = version(v, whole)?;
        let parts = v.split(['-', '+']).next().unwrap_or("").split('.').count();
        let i = if parts >= 2 { 1 } else { 0 };
        return Ok(vec![c(Op::Ge, low.clone()), c(Op::Lt, bump(&low, i)?)]);
    }
    let parts: Vec<&str> = word.split('.').collect();
    if let Some(w) = parts.iter().position(|p| matches!(*p, "x" | "X" | "*")) {
        // `1.x`, `1.2.*`: anything with the given leading parts.
        if w == 0 {
            return Ok(Vec::new());
        }
        let low = version(&parts[..w].join("."), whole)?;
        return Ok(vec![c(Op::Ge, low.clone()), c(Op::Lt, bump(&low, w - 1)?)]);
    }
    exact_or_partial(word, whole)
}

/// `1.0.0` is that version exactly; `1.0` and `1` stand for every version that starts so
/// (`>=1.0.0 <1.1.0`), as the OpenMRS SDK reads them.
fn exact_or_partial(word: &str, whole: &str) -> Result<Vec<Comparator>, String> {
    let v = version(word, whole)?;
    let parts = word
        .split(['-', '+'])
        .next()
        .unwrap_or("")
        .split('.')
        .count();
    if parts >= 3 || word.contains(['-', '+']) {
        return Ok(vec![Comparator {
            op: Op::Eq,
            version: v,
        }]);
    }
    Ok(vec![
        Comparator {
            op: Op::Ge,
            version: v.clone(),
        },
        Comparator {
            op: Op::Lt,
            version: bump(&v, parts - 1)?,
        },
    ])
}

/// The smallest release above every version whose parts up to `i` equal `v`'s.
fn bump(v: &Version, i: usize) -> Result<Version, String> {
    let mut numbers: Vec<u64> = (0..=i).map(|k| v.number(k)).collect();
    numbers[i] = numbers[i]
        .checked_add(1)
        .ok_or_else(|| format!("'{v}' has no next version"))?;
    let text = numbers
        .iter()
        .map(u64::to_string)
        .collect::<Vec<_>>()
        .join(".");
    // The first pre-release of the next version, so `^1.0` excludes `2.0.0-alpha` too.
    Ok(Version::parse(&format!("{text}-alpha")).expect("a bumped version parses"))
}

fn maven_range(part: &str, whole: &str) -> Result<Vec<Comparator>, String> {
    let mut chars = part.chars();
    let (Some(open @ ('[' | '(')), Some(close @ (']' | ')'))) = (chars.next(), chars.next_back())
    else {
        return Err(format!("'{part}' in '{whole}' is not a bracketed range"));
    };
    let inner = chars.as_str();
    let c = |op, version| Comparator { op, version };
    match inner.split_once(',') {
        None => Ok(vec![c(Op::Eq, version(inner, whole)?)]),
        Some((low, high)) => {
            let mut out = Vec::new();
            if !low.trim().is_empty() {
                let op = if open == '[' { Op::Ge } else { Op::Gt };
                out.push(c(op, version(low, whole)?));
            }
            if !high.trim().is_empty() {
                let op = if close == ']' { Op::Le } else { Op::Lt };
                out.push(c(op, version(high, whole)?));
            }
            Ok(out)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> Version {
        Version::parse(s).unwrap()
    }

    fn within(range: &str, version: &str) -> bool {
        Range::parse(range).unwrap().contains(&v(version))
    }

    #[test]
    fn versions_order_as_maven_orders_them() {
        assert!(v("1.1.2-SNAPSHOT") < v("1.1.2"));
        assert!(v("1.1.2-alpha") < v("1.1.2-beta"));
        assert!(v("1.1.2-rc1") < v("1.1.2-SNAPSHOT"));
        assert!(v("1.1.2") < v("1.1.10"));
        assert_eq!(v("1.1").cmp(&v("1.1.0")), Ordering::Equal);
        assert!(v("2.0.0") > v("1.99.99"));
        assert!(Version::parse("one").is_none());
        assert!(v("1.0-rc9") < v("1.0-rc10"));
        assert_eq!(v("1.0.0+build.7"), v("1.0.0"));
        assert_eq!(v("1.1"), v("1.1.0"));
    }

    #[test]
    fn ranges_accept_the_forms_packages_write() {
        assert!(within(">=1.1.2-SNAPSHOT", "1.1.2-SNAPSHOT"));
        assert!(within(">=1.1.2-SNAPSHOT", "1.1.2"));
        assert!(within(">=1.1.2-SNAPSHOT", "3.0.0"));
        assert!(!within(">=1.1.2-SNAPSHOT", "1.1.1"));
        assert!(within("^1.2.0", "1.9.0") && !within("^1.2.0", "2.0.0"));
        assert!(within("^0.2.0", "0.2.5") && !within("^0.2.0", "0.3.0"));
        assert!(within("~1.2.0", "1.2.9") && !within("~1.2.0", "1.3.0"));
        assert!(within("1.x", "1.7") && !within("1.x", "2.0-beta"));
        assert!(within("*", "0.0.1") && within("1.0 || *", "9"));
        assert!(Range::parse("1.0 ||").is_err());
        assert!(within("1.0.0", "1.0.0") && !within("1.0.0", "1.0.1"));
        assert!(within("=1.0.0", "1.0"));
        assert!(within("1.0", "1.0.7") && !within("=1.0", "1.1.0"));
        assert!(within(">=1.0 <2.0", "1.5") && !within(">=1.0 <2.0", "2.0"));
        assert!(within(">= 1.0", "1.5"));
        assert!(within("<1.0 || >=2.0", "2.1") && !within("<1.0 || >=2.0", "1.5"));
        assert!(within("[1.0,2.0)", "1.0") && !within("[1.0,2.0)", "2.0"));
        assert!(within("(1.0,)", "1.1") && !within("(1.0,)", "1.0"));
        assert!(within("[1.0]", "1.0"));
        assert!(Range::parse(">=banana").is_err());
        assert!(Range::parse("").is_err());
        assert!(Range::parse("[1.0,2.0").is_err());
        // Hostile input is an error, never a panic.
        for bad in [
            "[1.0]]",
            "[1.0]é]",
            "]",
            "[",
            "()",
            "^18446744073709551615",
            "18446744073709551615.x",
            "~18446744073709551615",
        ] {
            assert!(Range::parse(bad).is_err(), "{bad}");
        }
    }
}
