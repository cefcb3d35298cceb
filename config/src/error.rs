//! Config errors: every problem is reported as `file:line:col: field.path: problem (expected …)`
//! so an operator can jump straight to it, and all problems of a file are reported at once.

use std::fmt;

/// One problem in a config file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct ConfigError {
    /// The source name given to [`crate::parse`] (usually the file path).
    pub file: String,
    /// 1-based line; 0 when the problem is not tied to a position (e.g. unreadable file).
    pub line: usize,
    /// 1-based column; 0 when `line` is 0.
    pub col: usize,
    /// Dotted field path such as `listeners[0].routes[2].timeout`; empty for whole-file problems.
    pub path: String,
    /// What is wrong, usually followed by `(expected …)`.
    pub message: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.file)?;
        if self.line > 0 {
            write!(f, ":{}:{}", self.line, self.col)?;
        }
        if !self.path.is_empty() {
            write!(f, ": {}", self.path)?;
        }
        write!(f, ": {}", self.message)
    }
}

/// Every problem found in a config file, in file order. Never empty.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct ConfigErrors {
    /// The individual problems.
    pub errors: Vec<ConfigError>,
}

impl ConfigErrors {
    /// Wraps a single error.
    pub fn single(error: ConfigError) -> Self {
        Self {
            errors: vec![error],
        }
    }

    /// Iterates over the errors.
    pub fn iter(&self) -> std::slice::Iter<'_, ConfigError> {
        self.errors.iter()
    }

    /// Number of errors.
    pub fn len(&self) -> usize {
        self.errors.len()
    }

    /// True when there are no errors (never the case for a value returned by this crate).
    pub fn is_empty(&self) -> bool {
        self.errors.is_empty()
    }
}

impl fmt::Display for ConfigErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, e) in self.errors.iter().enumerate() {
            if i > 0 {
                f.write_str("\n")?;
            }
            write!(f, "{e}")?;
        }
        Ok(())
    }
}

impl<'a> IntoIterator for &'a ConfigErrors {
    type Item = &'a ConfigError;
    type IntoIter = std::slice::Iter<'a, ConfigError>;

    fn into_iter(self) -> Self::IntoIter {
        self.errors.iter()
    }
}
