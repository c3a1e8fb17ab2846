//! Field and global errors of a validation failure, as a domain's rules report them; the
//! API renders them as OpenMRS's "Invalid Submission" body (`http::error`).

/// Field and global errors of a validation failure.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Invalid {
    pub global: Vec<String>,
    /// (field, code, message)
    pub fields: Vec<(String, String, String)>,
}

impl Invalid {
    pub fn global(&mut self, message: impl Into<String>) {
        self.global.push(message.into());
    }

    pub fn field(&mut self, field: &str, code: &str, message: &str) {
        self.fields
            .push((field.into(), code.into(), message.into()));
    }

    pub fn is_empty(&self) -> bool {
        self.global.is_empty() && self.fields.is_empty()
    }
}
