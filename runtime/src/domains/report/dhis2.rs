//! A report's figures as DHIS2 aggregate data (`dataValueSets`): each mapped cell of the
//! first data set becomes a data value of the content's data element and category option
//! combination, for the run's month and the facility's organisation unit. Sending imports
//! them with `CREATE_AND_UPDATE`, so sending a month again replaces its values in DHIS2
//! instead of adding to them.

use crate::domains::report::eval::{Period, ReportData};
use chrono::Datelike;
use model::reports::ReportDefinition;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// The last sending of a run's figures, kept on the request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Sending {
    /// Key form.
    pub at: String,
    pub by: String,
    /// SENT or FAILED.
    pub status: String,
    /// DHIS2's answer in a sentence (counts, or why it refused), or why it was not reached.
    pub message: String,
    pub period: String,
    pub org_unit: String,
}

/// The DHIS2 period of a run: a whole calendar month (`202601`), the only period the
/// national monthly data sets take.
pub fn month_of(period: &Period) -> Result<String, String> {
    let (s, e) = (period.start, period.end);
    let last = crate::domains::report::eval::previous_month(
        e.checked_add_months(chrono::Months::new(1))
            .and_then(|d| d.with_day(1))
            .unwrap_or(e),
    )
    .1;
    if s.day() != 1 || s.year() != e.year() || s.month() != e.month() || e != last {
        return Err(format!(
            "DHIS2 takes a whole month: the run covers {s} to {e}, not the first to the last day of one month"
        ));
    }
    Ok(format!("{:04}{:02}", s.year(), s.month()))
}

/// The `dataValueSets` payload of a run (DHIS2's documented format).
pub fn payload(
    report: &ReportDefinition,
    data: &ReportData,
    period: &Period,
    org_unit: &str,
    completed: &str,
) -> Result<Value, String> {
    let Some(mapping) = &report.dhis2 else {
        return Err("This report has no DHIS2 mapping in the content".into());
    };
    let month = month_of(period)?;
    let Some(first) = data.data_sets.first() else {
        return Err("The run has no data set".into());
    };
    let mut values = Vec::new();
    for m in &mapping.values {
        let Some(i) = first.columns.iter().position(|c| c.name == m.column) else {
            return Err(format!("The run has no cell '{}'", m.column));
        };
        let value = first
            .rows
            .first()
            .and_then(|r| r.get(i))
            .map(|c| c.as_text())
            .unwrap_or_default();
        let mut v = json!({"dataElement": m.data_element, "value": value});
        if let Some(coc) = &m.category_option_combo {
            v["categoryOptionCombo"] = json!(coc);
        }
        values.push(v);
    }
    Ok(json!({
        "dataSet": mapping.data_set,
        "completeDate": completed,
        "period": month,
        "orgUnit": org_unit,
        "dataValues": values,
    }))
}

/// DHIS2's import summary in a sentence, and whether it took the values. Versions before
/// 2.38 answer the summary itself; later ones wrap it in `response`.
pub fn summary(status: u16, body: &str) -> Result<String, String> {
    let v: Value = serde_json::from_str(body).unwrap_or(Value::Null);
    let s = v
        .get("response")
        .filter(|r| r.get("importCount").is_some())
        .unwrap_or(&v);
    let count = |k: &str| s["importCount"][k].as_u64().unwrap_or(0);
    let conflicts: Vec<String> = s["conflicts"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c["value"].as_str().map(str::to_string))
        .collect();
    let state = s["status"].as_str().unwrap_or_default();
    if (200..300).contains(&status)
        && (state == "SUCCESS" || state == "WARNING" || state == "OK")
        && conflicts.is_empty()
    {
        return Ok(format!(
            "imported {}, updated {}, ignored {}",
            count("imported"),
            count("updated"),
            count("ignored")
        ));
    }
    let why = if !conflicts.is_empty() {
        conflicts.join("; ")
    } else {
        v["message"]
            .as_str()
            .or_else(|| s["description"].as_str())
            .map(str::to_string)
            .unwrap_or_else(|| format!("HTTP {status}"))
    };
    Err(format!("DHIS2 refused the data ({state}): {why}"))
}

/// Sends a payload; answers DHIS2's summary, or why nothing was taken.
pub fn send(cfg: &crate::http::state::Dhis2, payload: &Value) -> Result<String, String> {
    use base64::Engine;
    let basic = base64::engine::general_purpose::STANDARD
        .encode(format!("{}:{}", cfg.username, cfg.password));
    let mut tls = ureq::tls::TlsConfig::builder();
    if let Some(pem) = &cfg.ca_pem {
        let roots: Vec<ureq::tls::Certificate<'static>> = ureq::tls::parse_pem(pem)
            .filter_map(|item| match item {
                Ok(ureq::tls::PemItem::Certificate(c)) => Some(c),
                _ => None,
            })
            .collect();
        tls = tls.root_certs(ureq::tls::RootCerts::Specific(std::sync::Arc::new(roots)));
    }
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(std::time::Duration::from_secs(60)))
        .tls_config(tls.build())
        .build()
        .into();
    let url = format!(
        "{}/api/dataValueSets?importStrategy=CREATE_AND_UPDATE",
        cfg.url
    );
    let mut response = agent
        .post(&url)
        .header("Authorization", &format!("Basic {basic}"))
        .header("Accept", "application/json")
        .content_type("application/json")
        .send(payload.to_string().as_bytes())
        .map_err(|e| format!("DHIS2 could not be reached at {}: {e}", cfg.url))?;
    let status = response.status().as_u16();
    let body = response
        .body_mut()
        .with_config()
        .limit(1 << 20)
        .read_to_string()
        .unwrap_or_default();
    if status == 401 || status == 403 {
        return Err(format!("DHIS2 refused the credentials (HTTP {status})"));
    }
    summary(status, &body)
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::NaiveDate;

    fn p(s: &str, e: &str) -> Period {
        Period {
            start: NaiveDate::parse_from_str(s, "%Y-%m-%d").unwrap(),
            end: NaiveDate::parse_from_str(e, "%Y-%m-%d").unwrap(),
            location: None,
        }
    }

    #[test]
    fn only_whole_months_go_to_dhis2() {
        assert_eq!(month_of(&p("2026-02-01", "2026-02-28")).unwrap(), "202602");
        assert_eq!(month_of(&p("2024-02-01", "2024-02-29")).unwrap(), "202402");
        assert_eq!(month_of(&p("2026-12-01", "2026-12-31")).unwrap(), "202612");
        assert!(month_of(&p("2026-02-01", "2026-02-27")).is_err());
        assert!(month_of(&p("2026-02-02", "2026-02-28")).is_err());
        assert!(month_of(&p("2026-01-01", "2026-02-28")).is_err());
    }

    #[test]
    fn import_summaries_of_both_generations_are_read() {
        let old = r#"{"responseType":"ImportSummary","status":"SUCCESS","importCount":{"imported":3,"updated":0,"ignored":0,"deleted":0}}"#;
        assert_eq!(
            summary(200, old).unwrap(),
            "imported 3, updated 0, ignored 0"
        );
        let new = r#"{"httpStatus":"OK","httpStatusCode":200,"status":"OK","response":{"responseType":"ImportSummary","status":"SUCCESS","importCount":{"imported":0,"updated":11,"ignored":0,"deleted":0}}}"#;
        assert_eq!(
            summary(200, new).unwrap(),
            "imported 0, updated 11, ignored 0"
        );
        let conflict = r#"{"httpStatus":"Conflict","httpStatusCode":409,"status":"ERROR","response":{"status":"ERROR","importCount":{"imported":0,"updated":0,"ignored":1,"deleted":0},"conflicts":[{"object":"abc","value":"Data element not found or not accessible: abc"}]}}"#;
        assert!(
            summary(409, conflict)
                .unwrap_err()
                .contains("Data element not found")
        );
        assert!(summary(500, "gateway error").is_err());
    }
}
