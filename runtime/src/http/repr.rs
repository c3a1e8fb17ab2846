//! Representations (`v=ref|default|full|custom:(…)`), links and paging: the one mechanism
//! every resource goes through (docs/api.md, "Conventions").
//!
//! A resource says which properties its `default` and `full` representations list and how
//! to produce one property; `render` does the rest (ref shape, links, `resourceVersion`,
//! custom property lists, unknown-property errors).

use crate::http::error::{ApiError, ApiResult};
use serde_json::{Map, Value, json};

/// How much of an object to serialise.
#[derive(Debug, Clone, PartialEq)]
pub enum Rep {
    Ref,
    Default,
    Full,
    /// Properties in the order asked, each with its own nested representation.
    Custom(Vec<(String, Rep)>),
}

/// The nested representation a property takes inside `default` or `full`.
pub type Props = &'static [(&'static str, Rep)];

impl Rep {
    /// Parses the `v` parameter; `None` when absent.
    pub fn parse(v: Option<&str>) -> ApiResult<Option<Rep>> {
        let Some(v) = v else { return Ok(None) };
        match v {
            "ref" => Ok(Some(Rep::Ref)),
            "default" => Ok(Some(Rep::Default)),
            "full" => Ok(Some(Rep::Full)),
            _ => match v.strip_prefix("custom:") {
                Some(spec) => parse_custom(&balanced(spec.trim())).map(Some),
                None => Err(ApiError::BadRequest(format!("Unknown representation: {v}"))),
            },
        }
    }
}

/// A custom representation as OpenMRS reads it: closing parentheses missing at the end
/// are supplied (the O3 modules send some such), and a list without its outer parentheses
/// (`custom:uuid,display`) is taken as one.
fn balanced(spec: &str) -> String {
    let opened = spec.bytes().filter(|b| *b == b'(').count();
    let closed = spec.bytes().filter(|b| *b == b')').count();
    let mut out = if spec.starts_with('(') {
        spec.to_string()
    } else {
        format!("({spec})")
    };
    for _ in closed..opened {
        out.push(')');
    }
    out
}

fn parse_custom(spec: &str) -> ApiResult<Rep> {
    let inner = spec
        .strip_prefix('(')
        .and_then(|s| s.strip_suffix(')'))
        .ok_or_else(|| ApiError::BadRequest(format!("Invalid custom representation: {spec}")))?;
    let mut props = Vec::new();
    for item in split_top(inner)? {
        let item = item.trim();
        if item.is_empty() {
            continue;
        }
        let (name, nested) = match item.split_once(':') {
            None => (item, Rep::Default),
            Some((name, sub)) => {
                let sub = sub.trim();
                let rep = if sub.starts_with('(') {
                    parse_custom(sub)?
                } else if sub.eq_ignore_ascii_case("ref") {
                    Rep::Ref
                } else if sub.eq_ignore_ascii_case("full") {
                    Rep::Full
                } else {
                    Rep::Default
                };
                (name.trim(), rep)
            }
        };
        props.push((name.to_string(), nested));
    }
    Ok(Rep::Custom(props))
}

/// Splits on commas at nesting depth 0.
fn split_top(s: &str) -> ApiResult<Vec<&str>> {
    let mut out = Vec::new();
    let (mut depth, mut start) = (0i32, 0);
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth < 0 {
                    return Err(ApiError::BadRequest(
                        "Unbalanced parentheses in representation".into(),
                    ));
                }
            }
            ',' if depth == 0 => {
                out.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    if depth != 0 {
        return Err(ApiError::BadRequest(
            "Unbalanced parentheses in representation".into(),
        ));
    }
    out.push(&s[start..]);
    Ok(out)
}

/// What every rendering needs: where links point and which locale names display in.
pub struct Ctx<'a> {
    /// `scheme://host[:port]/openmrs/ws/rest/v1`
    pub base: String,
    pub locale: String,
    /// Locales to try after `locale`: the user's default, then `default_locale`.
    pub fallbacks: Vec<String>,
    pub catalog: &'a crate::catalog::Catalog,
    /// For representations that nest stored records (a visit's encounters).
    pub store: &'a crate::store::Store,
    /// The API's roles and privileges, for representations that resolve a user's privileges.
    pub access: &'a arc_swap::ArcSwap<crate::access::Access>,
    /// The day ages are counted to (read once per request, not per patient).
    pub today: chrono::NaiveDate,
    /// Resources already written in this request (`nested_once_to`), by representation
    /// node, resource and uuid.
    pub written: std::cell::RefCell<std::collections::HashMap<ContentKey, Vec<u8>>>,
}

/// Which content resource in which representation: the representation node's address (the
/// same node of one parsed request), the resource's alias and its uuid.
pub type ContentKey = (usize, &'static str, String);

impl Ctx<'_> {
    pub fn fallbacks(&self) -> Vec<&str> {
        self.fallbacks.iter().map(String::as_str).collect()
    }

    pub fn link(&self, rel: &str, path: &str, alias: &str, suffix: &str) -> Value {
        json!({"rel": rel, "uri": format!("{}/{path}{suffix}", self.base), "resourceAlias": alias})
    }
}

pub trait Resource {
    /// The resource name used in links and as `resourceAlias` (`patient`, `identifier`).
    fn alias(&self) -> &'static str;
    fn version(&self) -> &'static str;
    fn uuid(&self) -> String;
    fn display(&self, ctx: &Ctx) -> String;
    /// Path below `/ws/rest/v1` (sub-resources override it).
    fn path(&self) -> String {
        format!("{}/{}", self.alias(), self.uuid())
    }
    /// `("voided", true)` / `("retired", true)`; shown in `ref` only when true.
    fn flag(&self) -> Option<(&'static str, bool)> {
        None
    }
    fn default_props(&self) -> Props;
    fn full_props(&self) -> Props;
    /// One property, with the representation its value should take; `None` if the
    /// resource has no such property.
    fn prop(&self, name: &str, nested: &Rep, ctx: &Ctx) -> Option<Value>;
    /// One property written straight as JSON into `out` (`render_to`); `None`, writing
    /// nothing, if the resource has no such property. By default through `prop`; a
    /// resource that nests others in large numbers (an encounter's observations)
    /// overrides it for those properties, with `nested_to` and `nested_list_to`.
    fn write_prop(&self, name: &str, nested: &Rep, ctx: &Ctx, out: &mut Vec<u8>) -> Option<()> {
        let value = self.prop(name, nested, ctx)?;
        write_json(out, &value);
        Some(())
    }
}

/// Appends `value` as JSON (serialising a string, a number or a `Value` into a vector
/// cannot fail; a failure would leave the vector as it was, followed by `null`).
pub fn write_json(out: &mut Vec<u8>, value: &(impl serde::Serialize + ?Sized)) {
    let mark = out.len();
    if serde_json::to_writer(&mut *out, value).is_err() {
        out.truncate(mark);
        out.extend_from_slice(b"null");
    }
}

/// Writes the members of a JSON object one after the other.
struct ObjectWriter {
    first: bool,
}

impl ObjectWriter {
    fn open(out: &mut Vec<u8>) -> ObjectWriter {
        out.push(b'{');
        ObjectWriter { first: true }
    }

    fn key(&mut self, out: &mut Vec<u8>, key: &str) {
        if !self.first {
            out.push(b',');
        }
        self.first = false;
        write_json(out, key);
        out.push(b':');
    }

    fn close(self, out: &mut Vec<u8>) {
        out.push(b'}');
    }
}

fn write_base_prop(
    r: &dyn Resource,
    name: &str,
    nested: &Rep,
    ctx: &Ctx,
    out: &mut Vec<u8>,
) -> Option<()> {
    match name {
        "uuid" => write_json(out, &r.uuid()),
        "display" => write_json(out, &r.display(ctx)),
        _ => return r.write_prop(name, nested, ctx, out),
    }
    Some(())
}

/// Writes a resource in a representation: the same JSON `render` builds, serialised,
/// without building the tree first.
pub fn render_to(r: &dyn Resource, rep: &Rep, ctx: &Ctx, out: &mut Vec<u8>) -> ApiResult<()> {
    let links = |rels: &[(&str, &str)]| links_of(r, ctx, rels);
    let mut obj = ObjectWriter::open(out);
    match rep {
        Rep::Ref => {
            obj.key(out, "uuid");
            write_json(out, &r.uuid());
            obj.key(out, "display");
            write_json(out, &r.display(ctx));
            if let Some((flag, true)) = r.flag() {
                obj.key(out, flag);
                out.extend_from_slice(b"true");
            }
            obj.key(out, "links");
            write_json(out, &links(&[("self", "")]));
            obj.close(out);
            return Ok(());
        }
        Rep::Default | Rep::Full => {
            let (props, rels) = listed(r, rep);
            for (name, nested) in props {
                obj.key(out, name);
                if write_base_prop(r, name, nested, ctx, out).is_none() {
                    out.extend_from_slice(b"null");
                }
            }
            obj.key(out, "links");
            write_json(out, &links(rels));
        }
        Rep::Custom(props) => {
            for (i, (name, nested)) in props.iter().enumerate() {
                // A property asked twice keeps its first place and its last representation,
                // as the tree's map keeps them (the O3 medications app asks for `orderType`
                // twice).
                if props[..i].iter().any(|(n, _)| n == name) {
                    continue;
                }
                let nested = props[i + 1..]
                    .iter()
                    .rev()
                    .find(|(n, _)| n == name)
                    .map_or(nested, |(_, last)| last);
                obj.key(out, name);
                if name == "links" {
                    write_json(out, &links(&[("self", ""), ("default", "?v=default")]));
                    continue;
                }
                write_base_prop(r, name, nested, ctx, out).ok_or_else(|| {
                    ApiError::BadRequest(format!(
                        "Unknown property '{name}' on resource {}",
                        r.alias()
                    ))
                })?;
            }
        }
    }
    obj.key(out, "resourceVersion");
    write_json(out, r.version());
    obj.close(out);
    Ok(())
}

/// `nested`, written into `out`.
pub fn nested_to(r: Option<&dyn Resource>, rep: &Rep, ctx: &Ctx, out: &mut Vec<u8>) {
    let mark = out.len();
    let written = r.map(|r| render_to(r, rep, ctx, out));
    if !matches!(written, Some(Ok(()))) {
        // A nested unknown property is reported at the top level only; inside, null.
        out.truncate(mark);
        out.extend_from_slice(b"null");
    }
}

/// `nested_to` for a resource a request nests many times (the content's concepts, queues
/// and care settings; an order's encounter): written once per representation node and
/// copied after, `find` called only the first time. A page of 50 queue entries nests the
/// same few queues, statuses and priorities, each 2 KB of JSON in the default
/// representation: most of the page. Keyed by the representation node's address (a node
/// of the one parsed request), `alias` and `uuid`.
pub fn nested_once_to<R: Resource>(
    alias: &'static str,
    uuid: Option<&str>,
    rep: &Rep,
    ctx: &Ctx,
    out: &mut Vec<u8>,
    find: impl FnOnce(&str) -> Option<R>,
) {
    written_once_to(alias, uuid, rep, ctx, out, |uuid, out| {
        let found = find(uuid);
        nested_to(found.as_ref().map(|r| r as &dyn Resource), rep, ctx, out);
    })
}

/// `nested_once_to` for a resource of the content (a concept, a drug, a queue, a care
/// setting…), whose representation depends only on the catalog, the representation and
/// the caller's locale and origin: also kept in the catalog's `RenderCache` across
/// requests, so a list of orders renders a drug's concept once, not once a request.
pub fn nested_content_to<R: Resource>(
    alias: &'static str,
    uuid: Option<&str>,
    rep: &Rep,
    ctx: &Ctx,
    out: &mut Vec<u8>,
    find: impl FnOnce(&str) -> Option<R>,
) {
    written_once_to(alias, uuid, rep, ctx, out, |uuid, out| {
        let key = format!(
            "nested\0{alias}\0{uuid}\0{rep:?}\0{}\0{}\0{:?}",
            ctx.base, ctx.locale, ctx.fallbacks
        );
        if let Some(bytes) = ctx.catalog.rendered.get(&key) {
            out.extend_from_slice(&bytes);
            return;
        }
        let mark = out.len();
        let found = find(uuid);
        nested_to(found.as_ref().map(|r| r as &dyn Resource), rep, ctx, out);
        ctx.catalog
            .rendered
            .insert(key, axum::body::Bytes::copy_from_slice(&out[mark..]));
    })
}

/// `nested_once_to` with the writing left to `write` (for resources that borrow a record
/// read from the store).
pub fn written_once_to(
    alias: &'static str,
    uuid: Option<&str>,
    rep: &Rep,
    ctx: &Ctx,
    out: &mut Vec<u8>,
    write: impl FnOnce(&str, &mut Vec<u8>),
) {
    let Some(uuid) = uuid else {
        out.extend_from_slice(b"null");
        return;
    };
    let key = (rep as *const Rep as usize, alias, uuid.to_string());
    if let Some(bytes) = ctx.written.borrow().get(&key) {
        out.extend_from_slice(bytes);
        return;
    }
    let mark = out.len();
    write(uuid, out);
    ctx.written.borrow_mut().insert(key, out[mark..].to_vec());
}

/// `nested_list`, written into `out`.
pub fn nested_list_to<'r>(
    items: impl Iterator<Item = &'r dyn Resource>,
    rep: &Rep,
    ctx: &Ctx,
    out: &mut Vec<u8>,
) {
    out.push(b'[');
    for (i, r) in items.enumerate() {
        if i > 0 {
            out.push(b',');
        }
        nested_to(Some(r), rep, ctx, out);
    }
    out.push(b']');
}

fn base_prop(r: &dyn Resource, name: &str, nested: &Rep, ctx: &Ctx) -> Option<Value> {
    match name {
        "uuid" => Some(Value::String(r.uuid())),
        "display" => Some(Value::String(r.display(ctx))),
        _ => r.prop(name, nested, ctx),
    }
}

/// The resource's links with these relations (its path is built only for the
/// representations that link to it).
fn links_of(r: &dyn Resource, ctx: &Ctx, rels: &[(&str, &str)]) -> Value {
    let path = r.path();
    Value::Array(
        rels.iter()
            .map(|(rel, suffix)| ctx.link(rel, &path, r.alias(), suffix))
            .collect(),
    )
}

/// The properties `default` or `full` lists, and the links that follow them.
fn listed(r: &dyn Resource, rep: &Rep) -> (Props, &'static [(&'static str, &'static str)]) {
    if *rep == Rep::Full {
        (r.full_props(), &[("self", "")])
    } else {
        (r.default_props(), &[("self", ""), ("full", "?v=full")])
    }
}

/// Serialises a resource in a representation.
pub fn render(r: &dyn Resource, rep: &Rep, ctx: &Ctx) -> ApiResult<Value> {
    let mut out = Map::with_capacity(match rep {
        Rep::Custom(props) => props.len() + 1,
        _ => 8,
    });
    let links = |rels: &[(&str, &str)]| links_of(r, ctx, rels);
    match rep {
        Rep::Ref => {
            out.insert("uuid".into(), Value::String(r.uuid()));
            out.insert("display".into(), Value::String(r.display(ctx)));
            if let Some((flag, true)) = r.flag() {
                out.insert(flag.into(), Value::Bool(true));
            }
            out.insert("links".into(), links(&[("self", "")]));
            return Ok(Value::Object(out));
        }
        Rep::Default | Rep::Full => {
            let (props, rels) = listed(r, rep);
            for (name, nested) in props {
                let value = base_prop(r, name, nested, ctx).unwrap_or(Value::Null);
                out.insert(name.to_string(), value);
            }
            out.insert("links".into(), links(rels));
        }
        Rep::Custom(props) => {
            for (name, nested) in props {
                if name == "links" {
                    out.insert(
                        "links".into(),
                        links(&[("self", ""), ("default", "?v=default")]),
                    );
                    continue;
                }
                let value = base_prop(r, name, nested, ctx).ok_or_else(|| {
                    ApiError::BadRequest(format!(
                        "Unknown property '{name}' on resource {}",
                        r.alias()
                    ))
                })?;
                out.insert(name.clone(), value);
            }
        }
    }
    out.insert("resourceVersion".into(), Value::String(r.version().into()));
    Ok(Value::Object(out))
}

/// Renders a nested object, `null` when absent.
pub fn nested(r: Option<&dyn Resource>, rep: &Rep, ctx: &Ctx) -> Value {
    match r {
        // A nested unknown property is reported at the top level only; inside, null.
        Some(r) => render(r, rep, ctx).unwrap_or(Value::Null),
        None => Value::Null,
    }
}

pub fn nested_list<'r>(
    items: impl Iterator<Item = &'r dyn Resource>,
    rep: &Rep,
    ctx: &Ctx,
) -> Value {
    Value::Array(
        items
            .map(|r| render(r, rep, ctx).unwrap_or(Value::Null))
            .collect(),
    )
}

/// Paging parameters of a list request.
#[derive(Debug, Clone)]
pub struct Paging {
    pub limit: usize,
    pub start: usize,
    pub total_count: bool,
}

pub const DEFAULT_LIMIT: usize = 50;
pub const MAX_LIMIT: usize = 100;

impl Paging {
    pub fn from_query(q: &[(String, String)]) -> ApiResult<Paging> {
        let get = |k: &str| {
            q.iter()
                .rev()
                .find(|(key, _)| key == k)
                .map(|(_, v)| v.as_str())
        };
        let limit = match get("limit").map(str::parse::<i64>) {
            Some(Ok(n)) if n <= 0 => {
                return Err(ApiError::BadRequest(
                    "If you specify a number of results to return, it must be >0 and not null"
                        .into(),
                ));
            }
            Some(Ok(n)) if n as usize > MAX_LIMIT => {
                return Err(ApiError::BadRequest(format!(
                    "Administrator has set absolute limit at {MAX_LIMIT}"
                )));
            }
            Some(Ok(n)) => n as usize,
            // OpenMRS ignores a limit that is not a number; a clear 400 helps the client more.
            Some(Err(_)) => {
                return Err(ApiError::BadRequest(
                    "limit must be a whole number greater than 0".into(),
                ));
            }
            None => DEFAULT_LIMIT,
        };
        let start = match get("startIndex").map(|s| s.trim().parse::<usize>()) {
            None => 0,
            Some(Ok(n)) => n,
            Some(Err(_)) => {
                return Err(ApiError::BadRequest(
                    "startIndex must be a whole number, 0 or more".into(),
                ));
            }
        };
        let total_count = get("totalCount").is_some_and(|v| v.eq_ignore_ascii_case("true"));
        Ok(Paging {
            limit,
            start,
            total_count,
        })
    }

    /// Builds `{results, links?, totalCount?}` from the full list of matches.
    pub fn page(&self, items: Vec<Value>, request: &RequestUrl) -> Value {
        let total = items.len();
        let results: Vec<Value> = items
            .into_iter()
            .skip(self.start)
            .take(self.limit)
            .collect();
        let more = self.start + self.limit < total;
        self.answer(results, more, self.total_count.then_some(total), request)
    }

    /// Builds `{results, links?, totalCount?}` from one page already cut: whether more
    /// matches follow it, and the total when it was counted.
    pub fn answer(
        &self,
        results: Vec<Value>,
        more: bool,
        total: Option<usize>,
        request: &RequestUrl,
    ) -> Value {
        let mut out = Map::new();
        out.insert("results".into(), Value::Array(results));
        let links = self.links(more, request);
        if !links.is_empty() {
            out.insert("links".into(), Value::Array(links));
        }
        if let Some(total) = total {
            out.insert("totalCount".into(), Value::from(total));
        }
        Value::Object(out)
    }

    /// `answer`, written: `write_results` writes the page's items, separated by commas,
    /// into the results array.
    pub fn answer_to(
        &self,
        write_results: impl FnOnce(&mut Vec<u8>) -> ApiResult<()>,
        more: bool,
        total: Option<usize>,
        request: &RequestUrl,
    ) -> ApiResult<Vec<u8>> {
        let mut out = Vec::with_capacity(8192);
        out.extend_from_slice(b"{\"results\":[");
        write_results(&mut out)?;
        out.push(b']');
        let links = self.links(more, request);
        if !links.is_empty() {
            out.extend_from_slice(b",\"links\":");
            write_json(&mut out, &links);
        }
        if let Some(total) = total {
            out.extend_from_slice(b",\"totalCount\":");
            write_json(&mut out, &total);
        }
        out.push(b'}');
        Ok(out)
    }

    fn links(&self, more: bool, request: &RequestUrl) -> Vec<Value> {
        let mut links = Vec::new();
        if more {
            links.push(
                json!({"rel": "next", "uri": request.with_start(Some(self.start + self.limit))}),
            );
        }
        if self.start > 0 {
            let prev = self.start.saturating_sub(self.limit);
            links.push(
                json!({"rel": "prev", "uri": request.with_start((prev > 0).then_some(prev))}),
            );
        }
        links
    }
}

/// The request's absolute URL, to build paging links.
pub struct RequestUrl {
    pub base: String,
    pub path: String,
    pub query: Vec<(String, String)>,
}

impl RequestUrl {
    fn with_start(&self, start: Option<usize>) -> String {
        let mut s = format!("{}{}?", self.base, self.path);
        for (k, v) in self.query.iter().filter(|(k, _)| k != "startIndex") {
            s.push_str(&encode(k));
            s.push('=');
            s.push_str(&encode(v));
            s.push('&');
        }
        if let Some(n) = start {
            s.push_str("startIndex=");
            s.push_str(&n.to_string());
        }
        s
    }
}

/// Percent-encodes a query component (as `URLEncoder` does, space as `+`).
pub fn encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'*' => {
                out.push(b as char)
            }
            b' ' => out.push('+'),
            _ => {
                const HEX: &[u8; 16] = b"0123456789ABCDEF";
                out.push('%');
                out.push(HEX[usize::from(b >> 4)] as char);
                out.push(HEX[usize::from(b & 0xf)] as char);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_nested_custom_representations() {
        let rep = Rep::parse(Some(
            "custom:(uuid,person:(gender,names:ref),identifiers:full,attributes,links)",
        ))
        .unwrap();
        assert_eq!(
            rep,
            Some(Rep::Custom(vec![
                ("uuid".into(), Rep::Default),
                (
                    "person".into(),
                    Rep::Custom(vec![
                        ("gender".into(), Rep::Default),
                        ("names".into(), Rep::Ref)
                    ])
                ),
                ("identifiers".into(), Rep::Full),
                ("attributes".into(), Rep::Default),
                ("links".into(), Rep::Default),
            ]))
        );
        // Missing closing parentheses are supplied, as OpenMRS does; extra ones are errors.
        assert_eq!(
            Rep::parse(Some("custom:(a,b:(c,d:(e)")).unwrap(),
            Rep::parse(Some("custom:(a,b:(c,d:(e)))")).unwrap()
        );
        assert_eq!(
            Rep::parse(Some("custom:uuid,display")).unwrap(),
            Rep::parse(Some("custom:(uuid,display)")).unwrap()
        );
        assert!(Rep::parse(Some("custom:(a,b))")).is_err());
        assert!(Rep::parse(Some("fancy")).is_err());
        assert!(Rep::parse(Some("")).is_err());
        assert_eq!(Rep::parse(None).unwrap(), None);
    }

    #[test]
    fn encodes_like_java() {
        assert_eq!(
            encode("custom:(uuid,display)"),
            "custom%3A%28uuid%2Cdisplay%29"
        );
        assert_eq!(encode("a b"), "a+b");
        assert_eq!(encode("é~"), "%C3%A9%7E");
    }
}
