//! Multi-document YAML in and out.
//!
//! Documents are split on `---` lines so that each keeps its original text: a document ferry
//! does not change is written back byte for byte (comments, quoting and order intact). Changed
//! documents are re-serialized from a key-order-preserving JSON value; the YAML library drops
//! their comments.

use serde_json::Value;

use crate::error::InjectError;

/// One YAML document of an input stream.
#[derive(Debug, Clone)]
pub struct Document {
    /// The original text, including its `---` line if it had one.
    pub raw: String,
    /// Whether `raw` starts with a `---` line.
    pub has_marker: bool,
    /// Text to parse: `raw` without the marker (but with anything after it on that line).
    body: String,
    /// 1-based line of `body`'s first line in the whole input, for error positions.
    first_line: usize,
}

/// A YAML syntax error with its position in the whole input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyntaxError {
    /// 1-based line, when known.
    pub line: Option<usize>,
    /// 1-based column, when known.
    pub column: Option<usize>,
    /// The parser's message.
    pub message: String,
}

impl std::fmt::Display for SyntaxError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (self.line, self.column) {
            (Some(l), Some(c)) => write!(f, "{l}:{c}: invalid YAML: {}", self.message),
            _ => write!(f, "invalid YAML: {}", self.message),
        }
    }
}

fn is_marker(line: &str) -> bool {
    line.strip_prefix("---")
        .is_some_and(|rest| rest.is_empty() || rest.starts_with([' ', '\t', '\r', '\n']))
}

/// Splits a YAML stream into documents. Empty leading text before a first `---` is kept as its
/// own (empty) document so that output reproduces input exactly.
pub fn split(text: &str) -> Vec<Document> {
    let mut docs = Vec::new();
    let mut current: Option<Document> = None;
    for (index, line) in text.split_inclusive('\n').enumerate() {
        let line_no = index + 1;
        if is_marker(line) {
            if let Some(doc) = current.take() {
                docs.push(doc);
            }
            current = Some(Document {
                raw: line.to_owned(),
                has_marker: true,
                body: format!("{}\n", line[3..].trim_end_matches(['\r', '\n'])),
                first_line: line_no,
            });
        } else {
            let doc = current.get_or_insert_with(|| Document {
                raw: String::new(),
                has_marker: false,
                body: String::new(),
                first_line: line_no,
            });
            doc.raw.push_str(line);
            doc.body.push_str(line);
        }
    }
    docs.extend(current);
    docs
}

// === impl Document ===

impl Document {
    /// Parses the document; blank or comment-only documents are `Null`.
    pub fn parse(&self) -> Result<Value, SyntaxError> {
        let blank = self.body.lines().all(|l| {
            let t = l.trim();
            t.is_empty() || t.starts_with('#') || t == "..."
        });
        if blank {
            return Ok(Value::Null);
        }
        serde_norway::from_str(&self.body).map_err(|e| {
            let loc = e.location();
            SyntaxError {
                line: loc.as_ref().map(|l| l.line() + self.first_line - 1),
                column: loc.as_ref().map(|l| l.column()),
                message: strip_position(&e.to_string()),
            }
        })
    }

    /// Comment lines that open the document (before its first content line). Re-serializing
    /// loses comments; these at least keep the header that usually explains the object.
    pub fn leading_comments(&self) -> String {
        let body = if self.has_marker {
            self.raw.split_once('\n').map_or("", |(_, rest)| rest)
        } else {
            &self.raw
        };
        let mut out = String::new();
        for line in body.split_inclusive('\n') {
            if !line.trim_start().starts_with('#') {
                break;
            }
            out.push_str(line);
        }
        out
    }
}

/// serde_norway appends "at line X column Y" relative to the document; the caller prints the
/// absolute position instead.
fn strip_position(message: &str) -> String {
    match message.find(" at line ") {
        Some(i) => message[..i].to_owned(),
        None => message.to_owned(),
    }
}

/// Serializes a changed document, with a `---` line when it needs one.
pub fn render(value: &Value, doc: &Document) -> Result<String, InjectError> {
    let body = serde_norway::to_string(value).map_err(|e| InjectError::Serialize(e.to_string()))?;
    let marker = if doc.has_marker { "---\n" } else { "" };
    Ok(format!("{marker}{}{body}", doc.leading_comments()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_keeps_text_exactly() {
        let text = "# head\na: 1\n---\nb: 2\n--- # c\nc: 3\n";
        let docs = split(text);
        assert_eq!(docs.len(), 3);
        let joined: String = docs.iter().map(|d| d.raw.as_str()).collect();
        assert_eq!(joined, text);
        assert_eq!(docs[2].parse().unwrap(), serde_json::json!({"c": 3}));
        assert!(!docs[0].has_marker && docs[1].has_marker);
    }

    #[test]
    fn markers_need_a_separator() {
        assert!(is_marker("---\n"));
        assert!(is_marker("--- !x\n"));
        assert!(!is_marker("----\n"));
        assert!(!is_marker("---x\n"));
    }

    #[test]
    fn errors_carry_absolute_lines() {
        let docs = split("a: 1\n---\nb: [1, 2\n");
        let e = docs[1].parse().unwrap_err();
        assert!(e.line.unwrap() >= 3, "{e}");
        assert!(e.to_string().contains("invalid YAML"), "{e}");
    }
}
