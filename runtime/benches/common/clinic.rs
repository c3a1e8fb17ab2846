//! The clinical benchmarks' data: a facility's visits, encounters and observations written
//! straight into a store, and the calls that read and write them over HTTP.

use super::*;
use runtime::domains::encounter::store::{Change, write_in};
use runtime::domains::encounter::{EncounterRecord, ObsRecord, ObsValue};
use runtime::domains::visit::VisitRecord;
use runtime::store::record::{Audit, Voiding};
use runtime::wire::datetime_key;

pub const ENCOUNTERS_PER_PATIENT: usize = 10;
pub const OBS_PER_ENCOUNTER: usize = 10;
/// The day of the first round's first encounter; rounds are 30 days apart and spread their
/// patients over 28 days.
pub const FIRST_DAY: &str = "2022-01-03T08:00:00Z";

/// The last day holding encounters (the last round's 28th day).
pub fn last_day() -> chrono::DateTime<chrono::Utc> {
    chrono::DateTime::parse_from_rfc3339(FIRST_DAY)
        .unwrap()
        .with_timezone(&chrono::Utc)
        + chrono::Duration::days(((ENCOUNTERS_PER_PATIENT - 1) * 30 + 27) as i64)
}
/// Patients written per transaction while generating.
pub const CHUNK: usize = 10_000;

/// The content's vital-sign and biometric concepts (CIEL), with a plausible value range.
pub const VITALS: &[(&str, f64, f64)] = &[
    ("5088AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", 36.0, 39.5), // temperature
    ("5087AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", 55.0, 120.0), // pulse
    ("5085AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", 95.0, 170.0), // systolic
    ("5086AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", 55.0, 100.0), // diastolic
    ("5242AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", 12.0, 30.0), // respiratory rate
    ("5092AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", 88.0, 100.0), // SpO2
    ("5089AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", 3.0, 95.0),  // weight
    ("5090AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", 50.0, 190.0), // height
    ("1343AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", 11.0, 35.0), // MUAC
    ("5088AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", 36.0, 39.5), // a second temperature
];

/// What the generated records refer to.
pub struct Refs {
    pub admin: String,
    pub encounter_type: String,
    pub visit_type: String,
    pub location: String,
}

/// A cheap deterministic generator (xorshift), so two runs write the same values.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn between(&mut self, low: f64, high: f64) -> f64 {
        let unit = (self.next() % 10_000) as f64 / 10_000.0;
        ((low + unit * (high - low)) * 10.0).round() / 10.0
    }
}

/// What a benchmark may add to the generated data (nothing by default): other encounter
/// types for the encounter that opens each visit, and coded observations for a share of the
/// patients. The numeric observations stay the same either way.
#[derive(Default)]
pub struct Extra {
    /// The type of the encounter that opens each visit (instead of `Refs::encounter_type`;
    /// the visit's second encounter keeps that one).
    pub opening_type: Option<String>,
    /// For one patient in `.1`, the type of the encounter that opens each visit instead
    /// (an admission).
    pub admission: Option<(String, usize)>,
    /// Coded observations written in every encounter of one patient in `coded_every`, one
    /// per question: (question, answers), the answer turning with the patient and the
    /// encounter (every combination of answers among the patients of an encounter round).
    pub coded: Vec<(String, Vec<String>)>,
    pub coded_every: usize,
}

/// Writes the visits, encounters and observations: per patient, one visit every two
/// encounters a month apart, each encounter with `OBS_PER_ENCOUNTER` observations. Rounds go
/// over every patient, as a facility's days do. Answers (visits, encounters, observations).
pub fn generate(
    store: &runtime::store::Store,
    patients: &[String],
    refs: &Refs,
) -> (u64, u64, u64) {
    generate_with(store, patients, refs, &Extra::default())
}

/// `generate`, with what `extra` adds.
pub fn generate_with(
    store: &runtime::store::Store,
    patients: &[String],
    refs: &Refs,
    extra: &Extra,
) -> (u64, u64, u64) {
    let first_day = chrono::DateTime::parse_from_rfc3339(FIRST_DAY)
        .unwrap()
        .with_timezone(&chrono::Utc);
    let created = chrono::Utc::now();
    // Encounters and their observations are recorded when they happen (so that "what
    // changed since yesterday" is a day's worth, as at a facility).
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut visits_of: Vec<String> = vec![String::new(); patients.len()];
    let (mut visits, mut encounters, mut observations) = (0u64, 0u64, 0u64);
    for round in 0..ENCOUNTERS_PER_PATIENT {
        let began = Instant::now();
        for (chunk_no, chunk) in patients.chunks(CHUNK).enumerate() {
            // Unaudited: each visit and each encounter with its observations gets the
            // trail's write it would have had, made one at a time (`created_by`).
            store
                .write_unaudited(|txn| {
                    for (i, patient) in chunk.iter().enumerate() {
                        let n = chunk_no * CHUNK + i;
                        let day = first_day
                            + chrono::Duration::days((round * 30 + n % 28) as i64)
                            + chrono::Duration::minutes((n % 480) as i64);
                        let at = datetime_key(day);
                        if round % 2 == 0 {
                            let last = round + 2 >= ENCOUNTERS_PER_PATIENT;
                            let open = last && n.is_multiple_of(200);
                            let visit = VisitRecord {
                                v: 1,
                                uuid: uuid::Uuid::now_v7().to_string(),
                                patient: patient.clone(),
                                visit_type: refs.visit_type.clone(),
                                location: Some(refs.location.clone()),
                                indication: None,
                                start: at.clone(),
                                stop: (!open)
                                    .then(|| datetime_key(day + chrono::Duration::days(1))),
                                audit: Audit::new(&refs.admin, created),
                                voiding: Voiding::default(),
                                attributes: Vec::new(),
                            };
                            runtime::domains::visit::store::put_in(txn, None, &visit)?;
                            created_by(txn, refs, &at, patient, [("visits", &visit.uuid)])?;
                            visits_of[n] = visit.uuid;
                            visits += 1;
                        }
                        let mut encounter_type = &refs.encounter_type;
                        if round % 2 == 0 {
                            match (&extra.admission, &extra.opening_type) {
                                (Some((admission, every)), _) if n.is_multiple_of(*every) => {
                                    encounter_type = admission;
                                }
                                (_, Some(opening)) => encounter_type = opening,
                                _ => {}
                            }
                        }
                        let encounter = EncounterRecord {
                            v: 1,
                            uuid: uuid::Uuid::now_v7().to_string(),
                            patient: patient.clone(),
                            encounter_type: encounter_type.clone(),
                            datetime: at.clone(),
                            location: Some(refs.location.clone()),
                            form: None,
                            visit: Some(visits_of[n].clone()),
                            providers: Vec::new(),
                            audit: Audit::new(&refs.admin, day),
                            voiding: Voiding::default(),
                        };
                        let observation = |concept: &str, value: ObsValue| ObsRecord {
                            v: 1,
                            uuid: uuid::Uuid::now_v7().to_string(),
                            person: patient.clone(),
                            concept: concept.into(),
                            encounter: Some(encounter.uuid.clone()),
                            obs_group: None,
                            datetime: at.clone(),
                            location: Some(refs.location.clone()),
                            value,
                            comment: None,
                            form_field_namespace: None,
                            form_field_path: None,
                            status: "FINAL".into(),
                            interpretation: None,
                            order: None,
                            previous_version: None,
                            audit: Audit::new(&refs.admin, day),
                            voiding: Voiding::default(),
                        };
                        let mut obs: Vec<ObsRecord> = VITALS
                            .iter()
                            .take(OBS_PER_ENCOUNTER)
                            .map(|&(concept, low, high)| {
                                observation(concept, ObsValue::Numeric(rng.between(low, high)))
                            })
                            .collect();
                        if extra.coded_every > 0 && n.is_multiple_of(extra.coded_every) {
                            // Each question turns slower than the ones before it, by their
                            // numbers of answers, so every combination of answers is given.
                            let mut pace = 1;
                            for (question, answers) in &extra.coded {
                                let turn = n / extra.coded_every / pace + round;
                                let answer = &answers[turn % answers.len()];
                                obs.push(observation(question, ObsValue::Coded(answer.clone())));
                                pace *= answers.len();
                            }
                        }
                        let change = Change {
                            encounter: Some((None, &encounter)),
                            obs: obs.iter().map(|o| (None, o)).collect(),
                        };
                        write_in(txn, &change)?;
                        let records = std::iter::once(("encounters", &encounter.uuid))
                            .chain(obs.iter().map(|o| ("obs", &o.uuid)));
                        created_by(txn, refs, &at, patient, records)?;
                        encounters += 1;
                        observations += obs.len() as u64;
                    }
                    Ok(())
                })
                .unwrap();
        }
        println!(
            "  round {}/{ENCOUNTERS_PER_PATIENT}: {} encounters in {:.1} s ({observations} observations so far)",
            round + 1,
            patients.len(),
            began.elapsed().as_secs_f64()
        );
    }
    (visits, encounters, observations)
}

/// The audit trail's write of records created together by the administrator at `at`.
fn created_by<'a>(
    txn: &runtime::store::kv::WriteTransaction,
    refs: &Refs,
    at: &str,
    patient: &str,
    records: impl IntoIterator<Item = (&'static str, &'a String)>,
) -> runtime::store::StoreResult<()> {
    use runtime::store::audit::{Action, AuditWrite, WriteEntry};
    let write = AuditWrite {
        uuid: runtime::store::audit::new_write_uuid(),
        at: at.to_string(),
        user: Some(refs.admin.clone()),
        address: Some("127.0.0.1".into()),
        entries: records
            .into_iter()
            .map(|(table, record)| WriteEntry {
                table: table.into(),
                record: record.clone(),
                patients: vec![patient.to_string()],
                action: Action::Created,
                changes: Vec::new(),
            })
            .collect(),
    };
    runtime::store::audit::append(txn, &write)
}

pub fn basic() -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(format!("admin:{PASSWORD}"))
}

/// One authenticated GET; answers its status.
pub fn get(port: u16, path: &str) -> u16 {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    let req = format!(
        "GET {path} HTTP/1.1\r\nHost: x\r\nAuthorization: Basic {}\r\n\r\n",
        basic()
    );
    s.write_all(req.as_bytes()).unwrap();
    read_response(&mut s)
}

/// One authenticated GET with extra headers; answers its status, head and body.
pub fn get_whole(port: u16, path: &str, headers: &str) -> (u16, String, Vec<u8>) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    let req = format!(
        "GET {path} HTTP/1.1\r\nHost: x\r\nAuthorization: Basic {}\r\n{headers}\r\n",
        basic()
    );
    s.write_all(req.as_bytes()).unwrap();
    read_whole_response(&mut s)
}

/// A whole-system FHIR bulk export, as a national warehouse runs it: the kick-off, then a
/// poll every half second until the manifest. Answers the time it took and the manifest's
/// resources and files.
pub fn bulk_export(port: u16) -> (Duration, u64, usize) {
    let began = Instant::now();
    let (status, head, body) = get_whole(
        port,
        "/openmrs/ws/fhir2/R4/$export?_outputFormat=application/fhir%2Bndjson",
        "Prefer: respond-async\r\n",
    );
    assert_eq!(status, 202, "{head}{}", String::from_utf8_lossy(&body));
    let location = head
        .lines()
        .find_map(|l| {
            let lower = l.to_ascii_lowercase();
            lower
                .starts_with("content-location:")
                .then(|| l["content-location:".len()..].trim().to_string())
        })
        .expect("a Content-Location to poll");
    let path = &location[location.find("/openmrs").expect("the runtime's path")..];
    loop {
        let (status, head, body) = get_whole(port, path, "");
        match status {
            202 => std::thread::sleep(Duration::from_millis(500)),
            200 => {
                let manifest: serde_json::Value = serde_json::from_slice(&body).unwrap();
                let outputs = manifest["output"].as_array().cloned().unwrap_or_default();
                let resources = outputs.iter().filter_map(|o| o["count"].as_u64()).sum();
                return (began.elapsed(), resources, outputs.len());
            }
            _ => panic!("export poll: {head}{}", String::from_utf8_lossy(&body)),
        }
    }
}

/// A wrk script that cycles over `paths`.
pub fn script(dir: &std::path::Path, name: &str, paths: &[String]) -> std::path::PathBuf {
    let file = dir.join(format!("{name}.lua"));
    let mut lua = String::from("local paths = {\n");
    for p in paths {
        lua.push_str(&format!("  \"{p}\",\n"));
    }
    lua.push_str(
        "}\nlocal i = 0\nrequest = function()\n  i = i + 1\n  return wrk.format(\"GET\", paths[(i % #paths) + 1])\nend\n",
    );
    std::fs::write(&file, lua).unwrap();
    file
}

/// 32 clients creating encounters with 20 observations for 10 seconds over keep-alive
/// connections; answers creations per second (each answered 201 after its commit).
pub fn creations(port: u16, patients: &[String], refs: &Refs) -> f64 {
    let deadline = Instant::now() + Duration::from_secs(10);
    let started = Instant::now();
    let threads: Vec<_> = (0..32)
        .map(|t| {
            let basic = basic();
            let patients: Vec<String> = patients.iter().skip(t).step_by(32).take(500).cloned().collect();
            let (kind, location) = (refs.encounter_type.clone(), refs.location.clone());
            std::thread::spawn(move || {
                let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
                let (mut ok, mut failed) = (0usize, 0usize);
                let mut n = 0;
                while Instant::now() < deadline {
                    let patient = &patients[n % patients.len()];
                    n += 1;
                    let obs: Vec<String> = (0..20)
                        .map(|i| {
                            let (concept, low, _) = VITALS[i % VITALS.len()];
                            format!(r#"{{"concept":"{concept}","value":{}}}"#, low + (i / 10) as f64)
                        })
                        .collect();
                    let body = format!(
                        r#"{{"patient":"{patient}","encounterType":"{kind}","location":"{location}","encounterDatetime":"2026-11-01T10:{:02}:00.000+0000","obs":[{}]}}"#,
                        n % 60,
                        obs.join(",")
                    );
                    let req = format!(
                        "POST /openmrs/ws/rest/v1/encounter HTTP/1.1\r\nHost: x\r\nAuthorization: Basic {basic}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
                        body.len()
                    );
                    s.write_all(req.as_bytes()).unwrap();
                    if read_response(&mut s) == 201 {
                        ok += 1;
                    } else {
                        failed += 1;
                    }
                }
                (ok, failed)
            })
        })
        .collect();
    let (mut total, mut failed) = (0, 0);
    for t in threads {
        let (ok, bad) = t.join().unwrap();
        total += ok;
        failed += bad;
    }
    if failed > 0 {
        eprintln!("warning: {failed} encounter creations were not answered 201");
    }
    total as f64 / started.elapsed().as_secs_f64()
}

/// The calls the chart makes when it opens, over `sample` patients: (name, one path per
/// patient).
/// What an integration asks of FHIR, over the patients at `sample` (their indexes in the
/// seed): a patient by the identifier on her card, by her names, and every observation
/// changed since the day before the last (a warehouse's incremental extraction, a page of
/// 100 and its total).
pub fn integration_calls(sample: &[usize]) -> Vec<(&'static str, Vec<String>)> {
    let since = (last_day() - chrono::Duration::days(1)).format("%Y-%m-%d");
    vec![
        (
            "FHIR Patient?identifier=",
            sample
                .iter()
                .map(|&i| {
                    format!(
                        "/openmrs/ws/fhir2/R4/Patient?identifier={}",
                        seeded_identifier(i)
                    )
                })
                .collect(),
        ),
        (
            "FHIR Patient?name=&given=",
            sample
                .iter()
                .map(|&i| {
                    let (given, family) = seeded_name(i);
                    format!(
                        "/openmrs/ws/fhir2/R4/Patient?name={}&given={}",
                        urlencode(&family),
                        urlencode(given)
                    )
                })
                .collect(),
        ),
        (
            "FHIR Observation?_lastUpdated=gt<yesterday>&_count=100",
            vec![format!(
                "/openmrs/ws/fhir2/R4/Observation?_lastUpdated=gt{since}&_count=100"
            )],
        ),
    ]
}

fn urlencode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

pub fn chart_calls(sample: &[&String]) -> Vec<(&'static str, Vec<String>)> {
    let vitals = VITALS[..9]
        .iter()
        .map(|v| v.0)
        .collect::<Vec<_>>()
        .join(",");
    let five = VITALS[..5]
        .iter()
        .map(|v| v.0)
        .collect::<Vec<_>>()
        .join(",");
    vec![
        ("banner (patient, full)", sample.iter().map(|p| format!("/openmrs/ws/rest/v1/patient/{p}?v=full")).collect()),
        ("active visit", sample.iter().map(|p| format!("/openmrs/ws/rest/v1/visit?patient={p}&includeInactive=false&v=custom:(uuid,display,startDatetime,stopDatetime,visitType:(uuid,display),location:(uuid,display),encounters:(uuid,encounterDatetime))")).collect()),
        ("vitals (FHIR Observation, 9 codes, 100 newest)", sample.iter().map(|p| format!("/openmrs/ws/fhir2/R4/Observation?subject:Patient={p}&code={vitals}&_summary=data&_sort=-date&_count=100")).collect()),
        ("encounters with their observations (10 newest)", sample.iter().map(|p| format!("/openmrs/ws/rest/v1/encounter?patient={p}&limit=10&v=custom:(uuid,encounterDatetime,encounterType:(uuid,display),location:(uuid,display),obs:(uuid,concept:(uuid,display),value,obsDatetime))")).collect()),
        ("observations of 5 concepts (50 newest)", sample.iter().map(|p| format!("/openmrs/ws/rest/v1/obs?patient={p}&concept={five}&limit=50&v=custom:(uuid,concept:(uuid),value,obsDatetime)")).collect()),
    ]
}
