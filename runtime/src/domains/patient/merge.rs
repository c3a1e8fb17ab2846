//! Merging a duplicate patient into the preferred one, with the rules of core's
//! `PatientService.mergePatients`, and finding the likely duplicates a data manager reviews.
//!
//! What a merge does, in one transaction under the clinical write lock:
//! - every record of the non-preferred patient, of every kind the domains register
//!   (`Registry::patient_records`, the same list a purge checks, so a new kind of record
//!   cannot be left behind), voided ones included, is pointed at the preferred patient
//!   (`record::retarget`, `record::rewrite_all`); a relationship between the two is voided;
//! - the preferred patient keeps her own names, identifiers, addresses and attributes as
//!   they are (preferred) and gains the other's that she lacks, as non-preferred; her sex
//!   is taken from the other when hers is neither M nor F, her birth date when she has none
//!   or hers is estimated and the other's is not, and her death fields where hers are empty;
//! - the non-preferred patient is voided, "Merged with patient <uuid>", and the identifiers
//!   she held are the preferred patient's from then on.
//!
//! Refused (400, nothing written): merging a patient with herself, a voided patient, and
//! whatever the domains refuse (`Registry::merge_refusals`: both in an active visit, both
//! actively enrolled in one programme, both with active orders of one order type).

use crate::store::record::{PatientMerge, Rewrite};
use crate::store::{
    AddressRecord, IdentifierRecord, NameRecord, PatientRecord, PatientVoiding, Store, StoreError,
};
use std::collections::BTreeMap;

/// The person attribute type of telephone numbers (OpenMRS's standard uuid).
pub const PHONE_ATTRIBUTE_TYPE: &str = "14d4f066-15f5-102d-96e4-000c29c2a5d7";

/// Why a merge was not made.
#[derive(Debug)]
pub enum MergeError {
    NotFound,
    Refused(String),
    Store(StoreError),
}

impl From<StoreError> for MergeError {
    fn from(e: StoreError) -> Self {
        MergeError::Store(e)
    }
}

/// What a merge did: the two patients as stored after it, and how many records of each
/// kind moved (an encounter's observations and the bed she occupies counted apart:
/// `MergeMove::counted_as`).
#[derive(Debug)]
pub struct Merged {
    pub preferred: PatientRecord,
    pub non_preferred: PatientRecord,
    pub moved: BTreeMap<&'static str, usize>,
}

/// Merges `m.from` into `m.into`. `keys_of` gives the uniqueness keys of a patient's
/// identifiers (they depend on the content's identifier types).
pub fn merge(
    store: &Store,
    m: &PatientMerge,
    keys_of: impl Fn(&PatientRecord) -> Vec<String>,
) -> Result<Merged, MergeError> {
    if m.from == m.into {
        return Err(MergeError::Refused(
            "A patient cannot be merged with herself".into(),
        ));
    }
    // Nothing may be made for either patient between the checks and the write.
    let _one_writer = store.write_lock();
    let preferred = store.patient(&m.into)?.ok_or(MergeError::NotFound)?;
    let other = store.patient(&m.from)?.ok_or(MergeError::NotFound)?;
    if preferred.voided || other.voided {
        return Err(MergeError::Refused(
            "A voided patient cannot be merged: unvoid it first".into(),
        ));
    }
    for refusal in store.registry().merge_refusals {
        if let Some(why) = refusal(store, m)? {
            return Err(MergeError::Refused(why));
        }
    }
    let mut rewrites = Vec::new();
    let mut moved = BTreeMap::new();
    for kind in store.registry().patient_records {
        for mv in kind.moves {
            let uuids = (mv.of_patient)(store, &m.from)?;
            let found = rewrites_of(store, mv, &uuids, m)?;
            *moved.entry(mv.counted_as.unwrap_or(kind.kind)).or_insert(0) += found.len();
            rewrites.extend(found);
        }
    }
    moved.retain(|_, n| *n > 0);
    let (preferred, non_preferred) = merged_patients(&preferred, &other, m);
    let other_keys = keys_of(&other);
    store.write_merge(&preferred, &non_preferred, &other_keys, &rewrites)?;
    Ok(Merged {
        preferred,
        non_preferred,
        moved,
    })
}

/// One kind's records of the non-preferred patient, pointed at the preferred one.
fn rewrites_of(
    store: &Store,
    mv: &crate::store::record::MergeMove,
    uuids: &[String],
    m: &PatientMerge,
) -> Result<Vec<Rewrite>, MergeError> {
    let txn = store.begin_read()?;
    let table = txn.open_table(mv.table.table)?;
    let keys: Vec<&str> = uuids.iter().map(String::as_str).collect();
    let mut out = Vec::new();
    for (uuid, old) in uuids.iter().zip(table.get_many(&keys)?) {
        let Some(old) = old else { continue };
        let old = old.value().to_vec();
        let corrupt = |detail| StoreError::Corrupt {
            table: mv.table.name,
            detail,
        };
        let mut json = (mv.table.codec.to_json)(&old).map_err(corrupt)?;
        if !crate::store::record::retarget(&mut json, m) {
            continue;
        }
        if let Some(adjust) = mv.adjust {
            adjust(&mut json, m);
        }
        let new = (mv.table.codec.from_json)(&json).map_err(corrupt)?;
        out.push(Rewrite {
            table: mv.table,
            uuid: uuid.clone(),
            old,
            new,
        });
    }
    Ok(out)
}

/// The two patients after the merge: the preferred one with what she gains from the other
/// (core's rules, see the module's comment), and the other voided.
pub fn merged_patients(
    preferred: &PatientRecord,
    other: &PatientRecord,
    m: &PatientMerge,
) -> (PatientRecord, PatientRecord) {
    let mut p = preferred.clone();
    let same_name = |a: &NameRecord, b: &NameRecord| {
        let f = |s: &Option<String>| s.as_deref().map(crate::search::fold);
        f(&a.given_name) == f(&b.given_name)
            && f(&a.middle_name) == f(&b.middle_name)
            && f(&a.family_name) == f(&b.family_name)
            && f(&a.family_name2) == f(&b.family_name2)
    };
    for n in &other.names {
        if !p.names.iter().any(|x| same_name(x, n)) {
            p.names.push(NameRecord {
                uuid: crate::store::record::new_uuid(),
                preferred: false,
                ..n.clone()
            });
        }
    }
    for i in &other.identifiers {
        let same = |x: &IdentifierRecord| {
            x.identifier == i.identifier && x.identifier_type == i.identifier_type
        };
        if !p.identifiers.iter().any(same) {
            p.identifiers.push(IdentifierRecord {
                uuid: crate::store::record::new_uuid(),
                preferred: false,
                ..i.clone()
            });
        }
    }
    for a in &other.addresses {
        if !p.addresses.iter().any(|x| x.fields == a.fields) {
            p.addresses.push(AddressRecord {
                uuid: crate::store::record::new_uuid(),
                preferred: false,
                ..a.clone()
            });
        }
    }
    for a in &other.attributes {
        let same = |x: &crate::store::AttributeRecord| {
            x.attribute_type == a.attribute_type && x.value == a.value
        };
        if !p.attributes.iter().any(same) {
            p.attributes.push(crate::store::AttributeRecord {
                uuid: crate::store::record::new_uuid(),
                ..a.clone()
            });
        }
    }
    if !matches!(p.gender.as_str(), "M" | "F") {
        p.gender = other.gender.clone();
    }
    if other.birthdate.is_some()
        && (p.birthdate.is_none() || (p.birthdate_estimated && !other.birthdate_estimated))
    {
        p.birthdate = other.birthdate.clone();
        p.birthdate_estimated = other.birthdate_estimated;
    }
    if other.dead {
        p.dead = true;
    }
    if p.death_date.is_none() {
        p.death_date = other.death_date.clone();
    }
    if p.cause_of_death.is_none() && p.cause_of_death_non_coded.is_none() {
        p.cause_of_death = other.cause_of_death.clone();
        p.cause_of_death_non_coded = other.cause_of_death_non_coded.clone();
    }
    let now = m.now.to_rfc3339();
    p.changed = Some((m.user.clone(), now.clone()));
    let mut o = other.clone();
    o.voided = true;
    o.voiding = Some(PatientVoiding {
        voided_by: m.user.clone(),
        date_voided: now,
        void_reason: format!("Merged with patient {}", m.into),
    });
    (p, o)
}

/// Two patients who may be the same person, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct Candidates {
    pub a: String,
    pub b: String,
    /// `name`, `birthdate`, `gender`, `phone`, `identifier`.
    pub reasons: Vec<&'static str>,
}

/// The pairs of living, non-voided patients who may be duplicates: the same names (in any
/// order, accents and case aside), or the same telephone number, or the same identifier
/// value under different types; each pair with what else they share (birth date, sex).
/// Ordered by how much they share, then by uuid. Reads every patient record once: a data
/// manager's review, not a request a screen polls.
pub fn likely_duplicates(store: &Store) -> Result<Vec<Candidates>, StoreError> {
    let patients: Vec<PatientRecord> = store
        .patients()?
        .into_iter()
        .filter(|p| !p.voided)
        .collect();
    let mut blocks: BTreeMap<(u8, String), Vec<usize>> = BTreeMap::new();
    for (i, p) in patients.iter().enumerate() {
        for n in &p.names {
            let mut words: Vec<String> = [&n.given_name, &n.middle_name, &n.family_name]
                .into_iter()
                .flatten()
                .flat_map(|s| {
                    crate::search::fold(s)
                        .split_whitespace()
                        .map(str::to_string)
                        .collect::<Vec<_>>()
                })
                .collect();
            if words.len() >= 2 {
                words.sort();
                words.dedup();
                blocks.entry((0, words.join(" "))).or_default().push(i);
            }
        }
        for a in p
            .attributes
            .iter()
            .filter(|a| a.attribute_type == PHONE_ATTRIBUTE_TYPE)
        {
            let digits: String = a.value.chars().filter(char::is_ascii_digit).collect();
            if digits.len() >= 6 {
                blocks.entry((1, digits)).or_default().push(i);
            }
        }
        for id in &p.identifiers {
            blocks
                .entry((2, id.identifier.trim().to_uppercase()))
                .or_default()
                .push(i);
        }
    }
    let mut pairs: BTreeMap<(usize, usize), Vec<&'static str>> = BTreeMap::new();
    for ((kind, _), members) in &blocks {
        let mut members = members.clone();
        members.sort_unstable();
        members.dedup();
        // A name shared by a crowd is no evidence: such a block is skipped.
        if members.len() < 2 || members.len() > 20 {
            continue;
        }
        let reason = ["name", "phone", "identifier"][usize::from(*kind)];
        for (x, &i) in members.iter().enumerate() {
            for &j in &members[x + 1..] {
                let r = pairs.entry((i, j)).or_default();
                if !r.contains(&reason) {
                    r.push(reason);
                }
            }
        }
    }
    let mut out: Vec<Candidates> = pairs
        .into_iter()
        .map(|((i, j), mut reasons)| {
            let (a, b) = (&patients[i], &patients[j]);
            if a.birthdate.is_some() && a.birthdate == b.birthdate {
                reasons.push("birthdate");
            }
            if a.gender == b.gender {
                reasons.push("gender");
            }
            let (a, b) = if a.uuid < b.uuid { (a, b) } else { (b, a) };
            Candidates {
                a: a.uuid.clone(),
                b: b.uuid.clone(),
                reasons,
            }
        })
        .collect();
    out.sort_by(|x, y| {
        y.reasons
            .len()
            .cmp(&x.reasons.len())
            .then_with(|| x.a.cmp(&y.a))
            .then_with(|| x.b.cmp(&y.b))
    });
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn patient(uuid: &str, given: &str, family: &str) -> PatientRecord {
        serde_json::from_value(serde_json::json!({
            "v": 1, "uuid": uuid, "gender": "U", "birthdate": "1990-01-01",
            "birthdate_estimated": true, "dead": false, "death_date": null,
            "cause_of_death": null,
            "names": [{"uuid": format!("{uuid}-n"), "given_name": given, "middle_name": null,
                       "family_name": family, "family_name2": null, "prefix": null,
                       "degree": null, "preferred": true}],
            "identifiers": [], "addresses": [], "attributes": [],
            "voided": false, "date_created": "2026-01-01T00:00:00Z", "creator": "u"
        }))
        .expect("a patient record")
    }

    fn merge_of(from: &str, into: &str) -> PatientMerge {
        PatientMerge {
            from: from.into(),
            into: into.into(),
            user: "admin".into(),
            now: chrono::Utc::now(),
        }
    }

    #[test]
    fn the_preferred_patient_keeps_hers_and_gains_the_others_as_non_preferred() {
        let mut a = patient("a", "Grâce", "Kapinga");
        let mut b = patient("b", "Grace", "Kapinga Mbuyi");
        b.gender = "F".into();
        b.birthdate = Some("1991-05-02".into());
        b.birthdate_estimated = false;
        a.identifiers.push(IdentifierRecord {
            uuid: "i1".into(),
            identifier: "100".into(),
            identifier_type: "t".into(),
            location: None,
            preferred: true,
        });
        b.identifiers = a.identifiers.clone();
        b.identifiers.push(IdentifierRecord {
            uuid: "i2".into(),
            identifier: "200".into(),
            identifier_type: "t".into(),
            location: None,
            preferred: true,
        });
        let (p, o) = merged_patients(&a, &b, &merge_of("b", "a"));
        assert_eq!(p.names.len(), 2);
        assert!(p.names[0].preferred && !p.names[1].preferred);
        let ids: Vec<(&str, bool)> = p
            .identifiers
            .iter()
            .map(|i| (i.identifier.as_str(), i.preferred))
            .collect();
        assert_eq!(ids, vec![("100", true), ("200", false)]);
        // Her sex was unknown and her birth date estimated: the other's are taken.
        assert_eq!(
            (p.gender.as_str(), p.birthdate.as_deref()),
            ("F", Some("1991-05-02"))
        );
        assert!(o.voided);
        assert_eq!(
            o.voiding.map(|v| v.void_reason),
            Some("Merged with patient a".to_string())
        );
    }

    #[test]
    fn a_known_sex_and_an_exact_birth_date_are_kept() {
        let mut a = patient("a", "Grâce", "Kapinga");
        a.gender = "F".into();
        a.birthdate_estimated = false;
        let mut b = patient("b", "Grâce", "Kapinga");
        b.gender = "M".into();
        b.birthdate = Some("1980-01-01".into());
        b.birthdate_estimated = false;
        let (p, _) = merged_patients(&a, &b, &merge_of("b", "a"));
        assert_eq!(
            (p.gender.as_str(), p.birthdate.as_deref()),
            ("F", Some("1990-01-01"))
        );
        // The same name (accents aside) is not copied twice.
        assert_eq!(p.names.len(), 1);
    }

    #[test]
    fn a_death_recorded_on_the_other_record_is_kept() {
        let a = patient("a", "Grâce", "Kapinga");
        let mut b = patient("b", "Grâce", "Kapinga");
        b.dead = true;
        b.death_date = Some("2026-01-02T03:04:05.000Z".into());
        let (p, _) = merged_patients(&a, &b, &merge_of("b", "a"));
        assert!(p.dead);
        assert_eq!(p.death_date.as_deref(), Some("2026-01-02T03:04:05.000Z"));
    }
}
