//! A small spanned XML tree over quick-xml: elements with attributes, verbatim text
//! (entities decoded) and byte offsets, enough for global properties and address
//! configuration files.

use quick_xml::events::Event;

#[derive(Debug, Default)]
pub struct Element {
    pub name: String,
    pub attributes: Vec<(String, String)>,
    pub children: Vec<Element>,
    /// Concatenated text and CDATA directly inside, entities decoded, not trimmed.
    pub text: String,
    pub offset: usize,
}

impl Element {
    pub fn child(&self, name: &str) -> Option<&Element> {
        self.children.iter().find(|c| c.name == name)
    }

    pub fn children_named<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a Element> + 'a {
        self.children.iter().filter(move |c| c.name == name)
    }

    pub fn attr(&self, name: &str) -> Option<&str> {
        self.attributes
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// Text of the named child, trimmed.
    pub fn child_text(&self, name: &str) -> Option<String> {
        self.child(name)
            .map(|c| c.text.trim().to_string())
            .filter(|s| !s.is_empty())
    }
}

#[derive(Debug)]
pub struct XmlError {
    pub message: String,
    pub offset: usize,
}

fn resolve_entity(name: &str) -> Option<char> {
    match name {
        "amp" => Some('&'),
        "lt" => Some('<'),
        "gt" => Some('>'),
        "quot" => Some('"'),
        "apos" => Some('\''),
        _ => {
            let n = name.strip_prefix('#')?;
            let code = match n.strip_prefix('x').or_else(|| n.strip_prefix('X')) {
                Some(hex) => u32::from_str_radix(hex, 16).ok()?,
                None => n.parse().ok()?,
            };
            char::from_u32(code)
        }
    }
}

/// Parses a whole document into its root element.
pub fn parse(text: &str) -> Result<Element, XmlError> {
    let mut reader = quick_xml::Reader::from_str(text);
    reader.config_mut().check_end_names = true;
    let mut stack: Vec<Element> = Vec::new();
    let mut root: Option<Element> = None;
    let err = |message: String, offset: usize| XmlError { message, offset };
    loop {
        let offset = reader.buffer_position() as usize;
        let event = reader
            .read_event()
            .map_err(|e| err(e.to_string(), reader.error_position() as usize))?;
        match event {
            Event::Start(start) | Event::Empty(start) if root.is_some() => {
                let _ = start;
                return Err(err("content after the root element".into(), offset));
            }
            Event::Start(ref start) | Event::Empty(ref start) => {
                let mut el = Element {
                    name: String::from_utf8_lossy(start.name().as_ref()).into_owned(),
                    offset,
                    ..Element::default()
                };
                for a in start.attributes() {
                    let a = a.map_err(|e| err(e.to_string(), offset))?;
                    let value = a
                        .unescape_value()
                        .map_err(|e| err(e.to_string(), offset))?
                        .into_owned();
                    el.attributes
                        .push((String::from_utf8_lossy(a.key.as_ref()).into_owned(), value));
                }
                if matches!(event, Event::Empty(_)) {
                    match stack.last_mut() {
                        Some(parent) => parent.children.push(el),
                        None => root = Some(el),
                    }
                } else {
                    stack.push(el);
                }
            }
            Event::End(_) => {
                let el = stack.pop().expect("quick-xml checks end names");
                match stack.last_mut() {
                    Some(parent) => parent.children.push(el),
                    None => root = Some(el),
                }
            }
            Event::Text(t) => {
                if let Some(el) = stack.last_mut() {
                    let s = t.decode().map_err(|e| err(e.to_string(), offset))?;
                    el.text.push_str(&s);
                } else if !t.iter().all(u8::is_ascii_whitespace) {
                    return Err(err("text outside the root element".into(), offset));
                }
            }
            Event::CData(c) => {
                if let Some(el) = stack.last_mut() {
                    el.text.push_str(&String::from_utf8_lossy(&c));
                }
            }
            Event::GeneralRef(r) => {
                let name = r.decode().map_err(|e| err(e.to_string(), offset))?;
                let c = resolve_entity(&name)
                    .ok_or_else(|| err(format!("unknown entity '&{name};'"), offset))?;
                if let Some(el) = stack.last_mut() {
                    el.text.push(c);
                }
            }
            Event::Eof => break,
            Event::Decl(_) | Event::PI(_) | Event::DocType(_) | Event::Comment(_) => {}
        }
    }
    if !stack.is_empty() {
        return Err(err(
            format!(
                "element <{}> is not closed",
                stack.last().map_or("", |e| e.name.as_str())
            ),
            text.len(),
        ));
    }
    root.ok_or_else(|| err("the document has no root element".into(), 0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_text_verbatim_and_decodes_entities() {
        let root = parse("<config><v a=\"x&amp;y\"> a &lt;b&gt; &#233;<!-- c --></v><e/></config>")
            .unwrap();
        let v = root.child("v").unwrap();
        assert_eq!(v.text, " a <b> é");
        assert_eq!(v.attr("a"), Some("x&y"));
        assert!(root.child("e").is_some());
    }

    #[test]
    fn reports_mismatched_tags() {
        let e = parse("<a>\n<b></a>").unwrap_err();
        assert!(
            e.message.contains("b") || e.message.contains("a"),
            "{}",
            e.message
        );
        assert!(parse("<a></a><b/>").is_err());
        assert!(parse("<a>").is_err());
    }
}
