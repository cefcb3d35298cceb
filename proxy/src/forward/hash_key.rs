//! The consistent-hashing key of a request (`lb: {policy: hash, key: [...]}`), computed once
//! per request above the retries, so every attempt of a request hashes alike, and handed to
//! the balancer as a [`HashKey`] extension.
//!
//! Parts the request lacks are left out; a request with none has no key and is balanced by
//! the cluster's `fallback`. `prompt_prefix:N` reads the body only as far as the first N
//! bytes of prompt text (at most [`PROMPT_READ_BASE`] + 6 × N bytes: the JSON before the
//! prompt, and the prompt itself fully escaped), and every byte read is replayed upstream.

use std::sync::Arc;
use std::task::{Context, Poll};

use ferry_config::HashKeyPart;
use ferry_filters::connection::Connection;
use ferry_filters::model_name::{self, ModelRef};
use ferry_filters::prompt_prefix::{PromptPrefix, prompt_prefix};
use http::Request;
use http::header::{CONTENT_TYPE, COOKIE};
use xxhash_rust::xxh3::Xxh3;

use futures_util::TryFutureExt;
use futures_util::future::Either;

use crate::body::{self, BoxError, BoxFuture, Peeked, ProxyBody};
use crate::cluster::HashKey;
use crate::failure::Failure;
use crate::headers;

/// Body bytes read for `prompt_prefix` besides the prompt itself: the JSON before the prompt
/// (`model`, tool definitions), as the model-name sniffing's default bound.
pub const PROMPT_READ_BASE: usize = 16 * 1024;

/// Computes the hash key of each request.
#[derive(Debug, Clone)]
pub struct HashKeyLayer {
    parts: Arc<[HashKeyPart]>,
    /// `prompt_prefix:N`'s N, when the key has one (the body is then read).
    prompt: Option<usize>,
}

/// The service made by [`HashKeyLayer`].
#[derive(Debug, Clone)]
pub struct HashKeyService<S> {
    inner: S,
    layer: HashKeyLayer,
}

// === impl HashKeyLayer ===

impl HashKeyLayer {
    /// Keys made of `parts`, in order.
    pub fn new(parts: &[HashKeyPart]) -> Self {
        let prompt = parts.iter().find_map(|p| match p {
            HashKeyPart::PromptPrefix(n) => Some(n.get()),
            _ => None,
        });
        HashKeyLayer {
            parts: parts.into(),
            prompt,
        }
    }
}

impl<S> tower::Layer<S> for HashKeyLayer {
    type Service = HashKeyService<S>;

    fn layer(&self, inner: S) -> HashKeyService<S> {
        HashKeyService {
            inner,
            layer: self.clone(),
        }
    }
}

// === impl HashKeyService ===

impl<S> tower::Service<Request<ProxyBody>> for HashKeyService<S>
where
    S: tower::Service<Request<ProxyBody>, Response = http::Response<ProxyBody>, Error = BoxError>
        + Clone
        + Send
        + 'static,
    S::Future: Send + 'static,
{
    type Response = http::Response<ProxyBody>;
    type Error = BoxError;
    type Future = Either<S::Future, BoxFuture>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut req: Request<ProxyBody>) -> Self::Future {
        let Some(n) = self.layer.prompt.filter(|_| reads_prompt(&req)) else {
            // No body to read: the key from the head alone, and the inner future as it is.
            if let Some(key) = key_of(&self.layer.parts, &req, None) {
                req.extensions_mut().insert(key);
            }
            return Either::Left(self.inner.call(req));
        };
        let parts = self.layer.parts.clone();
        let mut inner = self.inner.clone();
        std::mem::swap(&mut inner, &mut self.inner);
        // The key first (a concrete future), then the inner call chained on, not awaited in an
        // async block: rustc cannot prove such a block `Send` over the generic inner future.
        let keyed = Box::pin(with_prompt_key(parts, req, n));
        Either::Right(Box::pin(keyed.and_then(move |req| inner.call(req))))
    }
}

/// `req` with its key, the prompt read from its body.
async fn with_prompt_key(
    parts: Arc<[HashKeyPart]>,
    req: Request<ProxyBody>,
    n: usize,
) -> Result<Request<ProxyBody>, BoxError> {
    let (head, body) = req.into_parts();
    let (prompt, body) = read_prompt(body, n).await?;
    let mut req = Request::from_parts(head, body);
    if let Some(key) = key_of(&parts, &req, prompt.as_deref()) {
        req.extensions_mut().insert(key);
    }
    Ok(req)
}

/// Whether a request may carry an OpenAI-style JSON body: a POST, not gRPC, JSON or untyped.
fn reads_prompt(req: &Request<ProxyBody>) -> bool {
    req.method() == http::Method::POST
        && !headers::is_grpc(req.headers())
        && req
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_none_or(|ct| ct.contains("json"))
}

/// Reads the body until it has `n` bytes of prompt text (or the bound, or the end), and
/// returns them with a body replaying every byte read.
async fn read_prompt(body: ProxyBody, n: usize) -> Result<(Option<Vec<u8>>, ProxyBody), Failure> {
    let max = PROMPT_READ_BASE.saturating_add(n.saturating_mul(6));
    let mut found = None;
    let mut peeked = Peeked::read(body, max, |chunks, _| {
        let scan = match chunks {
            [only] => prompt_prefix(only, n, false),
            _ => prompt_prefix(&chunks.concat(), n, false),
        };
        match scan {
            PromptPrefix::NeedMore => false,
            done => {
                found = Some(done);
                true
            }
        }
    })
    .await
    .map_err(|e| match e.downcast::<body::BodyTooLarge>() {
        Ok(too_large) => Failure::BodyTooLarge {
            limit: too_large.limit,
        },
        Err(e) => Failure::BadRequest(format!("reading request body: {e}")),
    })?;
    // The body ended or the bound was reached first: what was read is all there is.
    let scan = match found {
        Some(scan) => scan,
        None => prompt_prefix(&peeked.head(max), n, true),
    };
    let prompt = match scan {
        PromptPrefix::Found(text) => Some(text),
        PromptPrefix::NeedMore | PromptPrefix::Absent => None,
    };
    Ok((prompt, peeked.replay()))
}

/// The key of `req` from `parts`, `None` when none of them is present.
pub fn key_of<B>(
    parts: &[HashKeyPart],
    req: &Request<B>,
    prompt: Option<&[u8]>,
) -> Option<HashKey> {
    let mut h = Xxh3::new();
    let mut any = false;
    let mut path_model: Option<ModelRef>;
    for (i, part) in parts.iter().enumerate() {
        let value: Option<&[u8]> = match part {
            HashKeyPart::Header(name) => req.headers().get(name).map(|v| v.as_bytes()),
            HashKeyPart::Cookie(name) => cookie(req.headers(), name),
            HashKeyPart::Model => match req.extensions().get::<ModelRef>() {
                Some(m) => Some(m.name.as_bytes()),
                None => {
                    path_model = model_name::from_oip_path(req.uri().path());
                    path_model.as_ref().map(|m| m.name.as_bytes())
                }
            },
            HashKeyPart::Client => Connection::of(req).map(|c| match &c.identity {
                Some(id) => id.0.as_bytes(),
                None => c.client.ip().as_bytes(),
            }),
            HashKeyPart::PromptPrefix(_) => prompt,
        };
        if let Some(v) = value {
            any = true;
            // The part's position and length go in too, so ("ab", "c") and ("a", "bc") differ.
            h.update(&(i as u64).to_le_bytes());
            h.update(&(v.len() as u64).to_le_bytes());
            h.update(v);
        }
    }
    any.then(|| HashKey(h.digest()))
}

/// A cookie's value from the request's `Cookie` headers.
fn cookie<'a>(headers: &'a http::HeaderMap, name: &str) -> Option<&'a [u8]> {
    headers
        .get_all(COOKIE)
        .iter()
        .flat_map(|v| v.as_bytes().split(|&b| b == b';'))
        .find_map(|pair| {
            let pair = pair.trim_ascii();
            let eq = pair.iter().position(|&b| b == b'=')?;
            let (k, v) = pair.split_at(eq);
            (k == name.as_bytes()).then(|| v.get(1..)).flatten()
        })
}

#[cfg(test)]
mod tests;
