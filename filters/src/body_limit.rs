//! The error a size-limited request body fails with, shared by whoever enforces the limit (the
//! proxy's listener wraps every request body) and whoever buffers the body behind it
//! (translation, tensor validation). A filter that reads a body and meets this error answers
//! 413 / RESOURCE_EXHAUSTED, not 400: the caller sent too much, it did not send garbage.

use std::error::Error;

/// The caller's request body could not be read: malformed framing (an invalid chunk size, an
/// oversized chunk extension) or the caller resetting or leaving mid-body. The caller's
/// fault, answered 400, never blamed on the upstream (no 5xx, no outlier ejection).
#[derive(Debug, thiserror::Error)]
#[error("malformed request body: {source}")]
pub struct MalformedBody {
    /// What the HTTP server reported.
    #[source]
    pub source: Box<dyn Error + Send + Sync>,
}

/// The [`MalformedBody`] in `e` or anywhere in its `source()` chain.
pub fn find_malformed<'a>(e: &'a (dyn Error + 'static)) -> Option<&'a MalformedBody> {
    let mut current = Some(e);
    while let Some(err) = current {
        if let Some(m) = err.downcast_ref::<MalformedBody>() {
            return Some(m);
        }
        current = err.source();
    }
    None
}

/// A request body grew past the configured limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("request body exceeds the limit of {limit} bytes")]
pub struct BodyTooLarge {
    /// The limit in bytes.
    pub limit: u64,
}

/// The [`BodyTooLarge`] in `e` or anywhere in its `source()` chain (bodies and clients wrap
/// their inner errors, so the limit may be a few levels down).
pub fn find(e: &(dyn Error + 'static)) -> Option<BodyTooLarge> {
    let mut current = Some(e);
    while let Some(err) = current {
        if let Some(too_large) = err.downcast_ref::<BodyTooLarge>() {
            return Some(*too_large);
        }
        current = err.source();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("reading failed")]
    struct Wrapper(#[source] Box<dyn Error + Send + Sync>);

    #[test]
    fn found_directly_and_through_sources() {
        let direct: Box<dyn Error + Send + Sync> = Box::new(BodyTooLarge { limit: 7 });
        assert_eq!(find(direct.as_ref()), Some(BodyTooLarge { limit: 7 }));
        let wrapped = Wrapper(Box::new(BodyTooLarge { limit: 9 }));
        assert_eq!(find(&wrapped), Some(BodyTooLarge { limit: 9 }));
        let other = Wrapper("connection reset".into());
        assert_eq!(find(&other), None);
    }
}
