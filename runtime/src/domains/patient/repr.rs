//! The patient's and person's REST representations (and their names, identifiers, addresses
//! and attributes), and the displays other records name a person by.

use crate::content::concept::ConceptRes;
use crate::content::location::LocationRes;
use crate::content::person_types::{AttributeTypeRes, IdentifierTypeRes};
use crate::http::repr::{Ctx, Props, Rep, Resource, nested, nested_list};
use crate::store::{AddressRecord, AttributeRecord, IdentifierRecord, NameRecord, PatientRecord};
use crate::wire::{age_on, format_date, format_datetime};
use serde_json::{Value, json};

pub(crate) fn full_name(n: &NameRecord) -> String {
    [
        &n.prefix,
        &n.given_name,
        &n.middle_name,
        &n.family_name,
        &n.family_name2,
        &n.degree,
    ]
    .into_iter()
    .flatten()
    .filter(|s| !s.is_empty())
    .cloned()
    .collect::<Vec<_>>()
    .join(" ")
}

/// A patient's person as other records name it (a relationship's persons, a provider's
/// person): the preferred name in full.
pub fn person_display(p: &PatientRecord) -> String {
    preferred_name(p).map(full_name).unwrap_or_default()
}

pub(crate) fn preferred_name(p: &PatientRecord) -> Option<&NameRecord> {
    p.names
        .iter()
        .find(|n| n.preferred)
        .or_else(|| p.names.first())
}

pub(crate) fn preferred_identifier(p: &PatientRecord) -> Option<&IdentifierRecord> {
    p.identifiers
        .iter()
        .find(|i| i.preferred)
        .or_else(|| p.identifiers.first())
}

pub struct PatientRes<'a>(pub &'a PatientRecord);
pub struct PersonRes<'a>(pub &'a PatientRecord);
pub struct NameRes<'a>(pub &'a str, pub &'a NameRecord);
pub struct IdentifierRes<'a>(pub &'a str, pub &'a IdentifierRecord);
pub struct AddressRes<'a>(pub &'a str, pub &'a AddressRecord);
pub struct AttributeRes<'a>(pub &'a str, pub &'a AttributeRecord);

impl Resource for PatientRes<'_> {
    fn alias(&self) -> &'static str {
        "patient"
    }
    fn version(&self) -> &'static str {
        "1.8"
    }
    fn uuid(&self) -> String {
        self.0.uuid.clone()
    }
    fn display(&self, _: &Ctx) -> String {
        match (preferred_identifier(self.0), preferred_name(self.0)) {
            (Some(i), Some(n)) => format!("{} - {}", i.identifier, full_name(n)),
            (None, Some(n)) => full_name(n),
            _ => String::new(),
        }
    }
    fn flag(&self) -> Option<(&'static str, bool)> {
        Some(("voided", self.0.voided))
    }
    fn default_props(&self) -> Props {
        &[
            ("uuid", Rep::Default),
            ("display", Rep::Default),
            ("identifiers", Rep::Ref),
            ("person", Rep::Default),
            ("voided", Rep::Default),
        ]
    }
    fn full_props(&self) -> Props {
        &[
            ("uuid", Rep::Default),
            ("display", Rep::Default),
            ("identifiers", Rep::Default),
            ("person", Rep::Full),
            ("voided", Rep::Default),
            ("auditInfo", Rep::Default),
        ]
    }
    fn prop(&self, name: &str, rep: &Rep, ctx: &Ctx) -> Option<Value> {
        let p = self.0;
        Some(match name {
            "identifiers" => {
                let ids: Vec<IdentifierRes> = p
                    .identifiers
                    .iter()
                    .map(|i| IdentifierRes(&p.uuid, i))
                    .collect();
                nested_list(ids.iter().map(|i| i as &dyn Resource), rep, ctx)
            }
            "patientIdentifier" => nested(
                preferred_identifier(p)
                    .map(|i| IdentifierRes(&p.uuid, i))
                    .as_ref()
                    .map(|r| r as &dyn Resource),
                rep,
                ctx,
            ),
            "person" => nested(Some(&PersonRes(p)), rep, ctx),
            "voided" => json!(p.voided),
            "patientId" => Value::Null,
            "auditInfo" => audit(p, ctx),
            // O3 asks for person properties on the patient (Patient extends Person).
            other => return PersonRes(p).prop(other, rep, ctx),
        })
    }
}

pub(crate) fn audit(p: &PatientRecord, ctx: &Ctx) -> Value {
    use crate::http::answer::user_ref;
    let (changed_by, date_changed) = match &p.changed {
        Some((by, at)) => (user_ref(by, ctx), format_datetime(at)),
        None => (Value::Null, Value::Null),
    };
    let mut audit = json!({"creator": user_ref(&p.creator, ctx), "dateCreated": format_datetime(&p.date_created), "changedBy": changed_by, "dateChanged": date_changed});
    if let Some(v) = &p.voiding {
        audit["voidedBy"] = user_ref(&v.voided_by, ctx);
        audit["dateVoided"] = format_datetime(&v.date_voided);
        audit["voidReason"] = json!(v.void_reason);
    }
    audit
}

impl Resource for PersonRes<'_> {
    fn alias(&self) -> &'static str {
        "person"
    }
    fn version(&self) -> &'static str {
        "1.11"
    }
    fn uuid(&self) -> String {
        self.0.uuid.clone()
    }
    fn display(&self, _: &Ctx) -> String {
        preferred_name(self.0).map(full_name).unwrap_or_default()
    }
    fn flag(&self) -> Option<(&'static str, bool)> {
        Some(("voided", self.0.voided))
    }
    fn default_props(&self) -> Props {
        &[
            ("uuid", Rep::Default),
            ("display", Rep::Default),
            ("gender", Rep::Default),
            ("age", Rep::Default),
            ("birthdate", Rep::Default),
            ("birthdateEstimated", Rep::Default),
            ("dead", Rep::Default),
            ("deathDate", Rep::Default),
            ("causeOfDeath", Rep::Ref),
            ("preferredName", Rep::Ref),
            ("preferredAddress", Rep::Ref),
            ("attributes", Rep::Ref),
            ("voided", Rep::Default),
            ("birthtime", Rep::Default),
            ("deathdateEstimated", Rep::Default),
        ]
    }
    fn full_props(&self) -> Props {
        &[
            ("uuid", Rep::Default),
            ("display", Rep::Default),
            ("gender", Rep::Default),
            ("age", Rep::Default),
            ("birthdate", Rep::Default),
            ("birthdateEstimated", Rep::Default),
            ("dead", Rep::Default),
            ("deathDate", Rep::Default),
            ("causeOfDeath", Rep::Default),
            ("preferredName", Rep::Default),
            ("preferredAddress", Rep::Default),
            ("names", Rep::Default),
            ("addresses", Rep::Default),
            ("attributes", Rep::Default),
            ("voided", Rep::Default),
            ("auditInfo", Rep::Default),
            ("birthtime", Rep::Default),
            ("deathdateEstimated", Rep::Default),
            ("causeOfDeathNonCoded", Rep::Default),
        ]
    }
    fn prop(&self, name: &str, rep: &Rep, ctx: &Ctx) -> Option<Value> {
        let p = self.0;
        let uuid = p.uuid.as_str();
        Some(match name {
            "gender" => json!(p.gender),
            "age" => json!(p.birthdate.as_deref().and_then(|b| age_on(b, ctx.today))),
            "birthdate" => p
                .birthdate
                .as_deref()
                .map(format_date)
                .unwrap_or(Value::Null),
            "birthdateEstimated" => json!(p.birthdate_estimated),
            "dead" => json!(p.dead),
            "deathDate" => p
                .death_date
                .as_deref()
                .map(|d| {
                    if d.contains('T') {
                        crate::wire::wire_datetime(d)
                    } else {
                        format_date(d)
                    }
                })
                .unwrap_or(Value::Null),
            "causeOfDeath" => nested(
                p.cause_of_death
                    .as_deref()
                    .and_then(|c| ctx.catalog.content.concept(c))
                    .map(crate::content::concept::ConceptRes)
                    .as_ref()
                    .map(|r| r as &dyn Resource),
                rep,
                ctx,
            ),
            "causeOfDeathNonCoded" => json!(p.cause_of_death_non_coded),
            "preferredName" | "personName" => nested(
                preferred_name(p)
                    .map(|n| NameRes(uuid, n))
                    .as_ref()
                    .map(|r| r as &dyn Resource),
                rep,
                ctx,
            ),
            "preferredAddress" => {
                let a = p
                    .addresses
                    .iter()
                    .find(|a| a.preferred)
                    .or_else(|| p.addresses.first());
                nested(
                    a.map(|a| AddressRes(uuid, a))
                        .as_ref()
                        .map(|r| r as &dyn Resource),
                    rep,
                    ctx,
                )
            }
            "names" => {
                let v: Vec<NameRes> = p.names.iter().map(|n| NameRes(uuid, n)).collect();
                nested_list(v.iter().map(|r| r as &dyn Resource), rep, ctx)
            }
            "addresses" => {
                let v: Vec<AddressRes> = p.addresses.iter().map(|a| AddressRes(uuid, a)).collect();
                nested_list(v.iter().map(|r| r as &dyn Resource), rep, ctx)
            }
            "attributes" => {
                let v: Vec<AttributeRes> =
                    p.attributes.iter().map(|a| AttributeRes(uuid, a)).collect();
                nested_list(v.iter().map(|r| r as &dyn Resource), rep, ctx)
            }
            "voided" => json!(p.voided),
            "birthtime" => Value::Null,
            "deathdateEstimated" => json!(false),
            "isPatient" => json!(true),
            "auditInfo" => audit(p, ctx),
            _ => return None,
        })
    }
}

impl Resource for NameRes<'_> {
    fn alias(&self) -> &'static str {
        "name"
    }
    fn version(&self) -> &'static str {
        "1.8"
    }
    fn uuid(&self) -> String {
        self.1.uuid.clone()
    }
    fn path(&self) -> String {
        format!("person/{}/name/{}", self.0, self.1.uuid)
    }
    fn display(&self, _: &Ctx) -> String {
        full_name(self.1)
    }
    fn default_props(&self) -> Props {
        &[
            ("display", Rep::Default),
            ("uuid", Rep::Default),
            ("givenName", Rep::Default),
            ("middleName", Rep::Default),
            ("familyName", Rep::Default),
            ("familyName2", Rep::Default),
            ("voided", Rep::Default),
        ]
    }
    fn full_props(&self) -> Props {
        &[
            ("display", Rep::Default),
            ("uuid", Rep::Default),
            ("givenName", Rep::Default),
            ("middleName", Rep::Default),
            ("familyName", Rep::Default),
            ("familyName2", Rep::Default),
            ("voided", Rep::Default),
            ("preferred", Rep::Default),
            ("prefix", Rep::Default),
            ("familyNamePrefix", Rep::Default),
            ("familyNameSuffix", Rep::Default),
            ("degree", Rep::Default),
        ]
    }
    fn prop(&self, name: &str, _: &Rep, _: &Ctx) -> Option<Value> {
        let n = self.1;
        Some(match name {
            "givenName" => json!(n.given_name),
            "middleName" => json!(n.middle_name),
            "familyName" => json!(n.family_name),
            "familyName2" => json!(n.family_name2),
            "voided" => json!(false),
            "preferred" => json!(n.preferred),
            "prefix" => json!(n.prefix),
            "degree" => json!(n.degree),
            "familyNamePrefix" | "familyNameSuffix" => Value::Null,
            _ => return None,
        })
    }
}

impl Resource for IdentifierRes<'_> {
    fn alias(&self) -> &'static str {
        "identifier"
    }
    fn version(&self) -> &'static str {
        "1.8"
    }
    fn uuid(&self) -> String {
        self.1.uuid.clone()
    }
    fn path(&self) -> String {
        format!("patient/{}/identifier/{}", self.0, self.1.uuid)
    }
    fn display(&self, ctx: &Ctx) -> String {
        let type_name = ctx
            .catalog
            .identifier_type(&self.1.identifier_type)
            .map(|t| t.name.clone())
            .unwrap_or_default();
        format!("{type_name} = {}", self.1.identifier)
    }
    fn default_props(&self) -> Props {
        &[
            ("display", Rep::Default),
            ("uuid", Rep::Default),
            ("identifier", Rep::Default),
            ("identifierType", Rep::Ref),
            ("location", Rep::Ref),
            ("preferred", Rep::Default),
            ("voided", Rep::Default),
        ]
    }
    fn full_props(&self) -> Props {
        &[
            ("display", Rep::Default),
            ("uuid", Rep::Default),
            ("identifier", Rep::Default),
            ("identifierType", Rep::Default),
            ("location", Rep::Default),
            ("preferred", Rep::Default),
            ("voided", Rep::Default),
        ]
    }
    fn prop(&self, name: &str, rep: &Rep, ctx: &Ctx) -> Option<Value> {
        let i = self.1;
        Some(match name {
            "identifier" => json!(i.identifier),
            "identifierType" => nested(
                ctx.catalog
                    .identifier_type(&i.identifier_type)
                    .map(IdentifierTypeRes)
                    .as_ref()
                    .map(|r| r as &dyn Resource),
                rep,
                ctx,
            ),
            "location" => nested(
                i.location
                    .as_deref()
                    .and_then(|l| ctx.catalog.location(l))
                    .map(crate::content::location::LocationRes)
                    .as_ref()
                    .map(|r| r as &dyn Resource),
                rep,
                ctx,
            ),
            "preferred" => json!(i.preferred),
            "voided" => json!(false),
            _ => return None,
        })
    }
}

impl Resource for AddressRes<'_> {
    fn alias(&self) -> &'static str {
        "address"
    }
    fn version(&self) -> &'static str {
        "1.8"
    }
    fn uuid(&self) -> String {
        self.1.uuid.clone()
    }
    fn path(&self) -> String {
        format!("person/{}/address/{}", self.0, self.1.uuid)
    }
    fn display(&self, _: &Ctx) -> String {
        [
            "address1",
            "cityVillage",
            "countyDistrict",
            "stateProvince",
            "country",
        ]
        .iter()
        .find_map(|k| self.1.fields.get(*k))
        .cloned()
        .unwrap_or_default()
    }
    fn default_props(&self) -> Props {
        &[
            ("display", Rep::Default),
            ("uuid", Rep::Default),
            ("preferred", Rep::Default),
            ("address1", Rep::Default),
            ("address2", Rep::Default),
            ("cityVillage", Rep::Default),
            ("stateProvince", Rep::Default),
            ("country", Rep::Default),
            ("postalCode", Rep::Default),
            ("countyDistrict", Rep::Default),
            ("address3", Rep::Default),
            ("address4", Rep::Default),
            ("address5", Rep::Default),
            ("address6", Rep::Default),
            ("latitude", Rep::Default),
            ("longitude", Rep::Default),
            ("voided", Rep::Default),
        ]
    }
    fn full_props(&self) -> Props {
        self.default_props()
    }
    fn prop(&self, name: &str, _: &Rep, _: &Ctx) -> Option<Value> {
        Some(match name {
            "preferred" => json!(self.1.preferred),
            "voided" => json!(false),
            field if ADDRESS_FIELDS.contains(&field) => json!(self.1.fields.get(field)),
            _ => return None,
        })
    }
}

impl Resource for AttributeRes<'_> {
    fn alias(&self) -> &'static str {
        "attribute"
    }
    fn version(&self) -> &'static str {
        "1.8"
    }
    fn uuid(&self) -> String {
        self.1.uuid.clone()
    }
    fn path(&self) -> String {
        format!("person/{}/attribute/{}", self.0, self.1.uuid)
    }
    /// As webservices.rest writes it since 2.44 (`PersonAttribute#toString`): the value as
    /// its type shows it, a concept's or a location's name, else the value as written (the
    /// registration suite reads a telephone number back from it).
    fn display(&self, ctx: &Ctx) -> String {
        let format = ctx
            .catalog
            .person_attribute_type(&self.1.attribute_type)
            .and_then(|t| t.format.as_deref());
        match format {
            Some("org.openmrs.Concept") => ctx
                .catalog
                .concept(&self.1.value)
                .map(|c| ConceptRes(c).display(ctx)),
            Some("org.openmrs.Location") => ctx
                .catalog
                .location(&self.1.value)
                .map(|l| LocationRes(l).display(ctx)),
            _ => None,
        }
        .unwrap_or_else(|| self.1.value.clone())
    }
    fn default_props(&self) -> Props {
        &[
            ("display", Rep::Default),
            ("uuid", Rep::Default),
            ("value", Rep::Default),
            ("attributeType", Rep::Ref),
            ("voided", Rep::Default),
        ]
    }
    fn full_props(&self) -> Props {
        &[
            ("display", Rep::Default),
            ("uuid", Rep::Default),
            ("value", Rep::Default),
            ("attributeType", Rep::Default),
            ("voided", Rep::Default),
        ]
    }
    fn prop(&self, name: &str, rep: &Rep, ctx: &Ctx) -> Option<Value> {
        Some(match name {
            "value" => json!(self.1.value),
            "attributeType" => nested(
                ctx.catalog
                    .person_attribute_type(&self.1.attribute_type)
                    .map(AttributeTypeRes)
                    .as_ref()
                    .map(|r| r as &dyn Resource),
                rep,
                ctx,
            ),
            "voided" => json!(false),
            _ => return None,
        })
    }
}

pub const ADDRESS_FIELDS: &[&str] = &[
    "address1",
    "address2",
    "address3",
    "address4",
    "address5",
    "address6",
    "address7",
    "address8",
    "address9",
    "address10",
    "address11",
    "address12",
    "address13",
    "address14",
    "address15",
    "cityVillage",
    "countyDistrict",
    "stateProvince",
    "country",
    "postalCode",
    "latitude",
    "longitude",
    "startDate",
    "endDate",
];
