//! Reads `google.api.http` rules from a descriptor pool and indexes them for matching.
//!
//! The option is read from the method options' raw bytes (extension field 72295728), so it
//! works whether or not the set carries `google/api/annotations.proto`.

use std::collections::HashMap;

use http::Method;
use prost_reflect::{DescriptorPool, FieldDescriptor, Kind, MethodDescriptor};

use super::error::LoadError;
use super::template::{Captures, Template, split_verb};

/// Most path segments a transcoded request may have.
const MAX_SEGMENTS: usize = 256;

/// `google.api.HttpRule`, the fields transcoding reads.
#[derive(Clone, PartialEq, prost::Message)]
struct HttpRule {
    #[prost(string, tag = "2")]
    get: String,
    #[prost(string, tag = "3")]
    put: String,
    #[prost(string, tag = "4")]
    post: String,
    #[prost(string, tag = "5")]
    delete: String,
    #[prost(string, tag = "6")]
    patch: String,
    #[prost(string, tag = "7")]
    body: String,
    #[prost(message, optional, tag = "8")]
    custom: Option<CustomHttpPattern>,
    #[prost(message, repeated, tag = "11")]
    additional_bindings: Vec<HttpRule>,
    #[prost(string, tag = "12")]
    response_body: String,
}

#[derive(Clone, PartialEq, prost::Message)]
struct CustomHttpPattern {
    #[prost(string, tag = "1")]
    kind: String,
    #[prost(string, tag = "2")]
    path: String,
}

/// `google.protobuf.MethodOptions` with only the `google.api.http` extension.
#[derive(Clone, PartialEq, prost::Message)]
struct HttpOption {
    #[prost(message, optional, tag = "72295728")]
    http: Option<HttpRule>,
}

/// Where the request body goes.
#[derive(Debug, Clone)]
pub(crate) enum BodyTarget {
    /// No body: every field comes from the path and the query.
    None,
    /// `body: "*"`: the whole request message.
    Whole,
    /// `body: "field"`: one top-level field.
    Field(FieldDescriptor),
}

/// One HTTP binding of a method.
#[derive(Debug, Clone)]
pub(crate) struct Binding {
    pub(crate) method: MethodDescriptor,
    pub(crate) template: Template,
    pub(crate) body: BodyTarget,
    /// `response_body`: answer with this field of the response, not the whole message.
    pub(crate) response_field: Option<FieldDescriptor>,
    /// The gRPC path, `/pkg.Service/Method`.
    pub(crate) grpc_path: String,
}

/// All bindings, indexed by HTTP method and first literal segment so a request only tries the
/// few rules that can match; rules starting with a variable sit in a per-method list.
#[derive(Debug, Default)]
pub(crate) struct RuleIndex {
    bindings: Vec<Binding>,
    by_literal: HashMap<(Method, String), Vec<usize>>,
    by_method: HashMap<Method, Vec<usize>>,
}

// === impl RuleIndex ===

impl RuleIndex {
    /// Builds the index for the services in `pool`; `only` (full names) restricts it.
    pub(crate) fn build(pool: &DescriptorPool, only: &[String]) -> Result<RuleIndex, LoadError> {
        for name in only {
            if pool.get_service_by_name(name).is_none() {
                return Err(LoadError::UnknownService(name.clone()));
            }
        }
        let mut index = RuleIndex::default();
        for service in pool.services() {
            if !only.is_empty() && !only.iter().any(|s| s == service.full_name()) {
                continue;
            }
            for method in service.methods() {
                let Some(rule) = http_rule(&method)? else {
                    continue;
                };
                index.add_rule(&method, &rule, true)?;
            }
        }
        // More literal segments first, so `/v1/books:count` wins over `/v1/{name}`.
        let bindings = &index.bindings;
        let order = |ids: &mut Vec<usize>| {
            ids.sort_by_key(|&i| {
                std::cmp::Reverse(bindings.get(i).map_or(0, |b| b.template.literal_count()))
            })
        };
        index.by_literal.values_mut().for_each(order);
        index.by_method.values_mut().for_each(order);
        Ok(index)
    }

    fn add_rule(
        &mut self,
        method: &MethodDescriptor,
        rule: &HttpRule,
        top: bool,
    ) -> Result<(), LoadError> {
        let bad = |why: String| LoadError::BadRule {
            method: method.full_name().to_owned(),
            why,
        };
        let (http_method, path) = pattern(rule).map_err(|w| bad(w.to_owned()))?;
        let template = Template::parse(path).map_err(|e| bad(e.to_string()))?;
        for var in &template.variables {
            resolve_path(&method.input(), &var.field_path).map_err(|w| bad(w.to_string()))?;
        }
        let body = match rule.body.as_str() {
            "" => BodyTarget::None,
            "*" => BodyTarget::Whole,
            field => BodyTarget::Field(
                method
                    .input()
                    .get_field_by_name(field)
                    .ok_or_else(|| bad(format!("body field {field:?} not in the request")))?,
            ),
        };
        let response_field = match rule.response_body.as_str() {
            "" => None,
            field => Some(
                method
                    .output()
                    .get_field_by_name(field)
                    .ok_or_else(|| bad(format!("response_body {field:?} not in the response")))?,
            ),
        };
        let id = self.bindings.len();
        match template.first_literal() {
            Some(lit) => self
                .by_literal
                .entry((http_method, lit.to_owned()))
                .or_default()
                .push(id),
            None => self.by_method.entry(http_method).or_default().push(id),
        }
        self.bindings.push(Binding {
            method: method.clone(),
            template,
            body,
            response_field,
            grpc_path: format!("/{}/{}", method.parent_service().full_name(), method.name()),
        });
        // Additional bindings may not nest further (HttpRule documentation).
        if top {
            for extra in &rule.additional_bindings {
                self.add_rule(method, extra, false)?;
            }
        }
        Ok(())
    }

    /// How many bindings (for `/config_dump`).
    pub(crate) fn len(&self) -> usize {
        self.bindings.len()
    }

    /// The binding for a request and its path variables, or `None` (not a transcoded call).
    pub(crate) fn find(&self, method: &Method, path: &str) -> Option<(&Binding, Captures)> {
        let rest = path.strip_prefix('/')?;
        let (rest, verb) = split_verb(rest);
        // Bounded: a path with absurdly many segments is not transcoded (it passes through)
        // rather than matched on a truncated prefix.
        let segments: Vec<&str> = rest.split('/').take(MAX_SEGMENTS + 1).collect();
        if segments.len() > MAX_SEGMENTS {
            return None;
        }
        let first = segments.first().copied().unwrap_or("");
        let literal = self
            .by_literal
            .get(&(method.clone(), first.to_owned()))
            .into_iter()
            .flatten();
        let wild = self.by_method.get(method).into_iter().flatten();
        literal.chain(wild).find_map(|&id| {
            let b = self.bindings.get(id)?;
            if let Some(captures) = b.template.matches(&segments, verb) {
                return Some((b, captures));
            }
            // A literal last segment containing ':' is not a verb for templates without one.
            if verb.is_some() && b.template.verb.is_none() {
                let whole: Vec<&str> = path[1..].split('/').take(MAX_SEGMENTS).collect();
                return b.template.matches(&whole, None).map(|c| (b, c));
            }
            None
        })
    }
}

fn http_rule(method: &MethodDescriptor) -> Result<Option<HttpRule>, LoadError> {
    use prost::Message;
    let raw = method.options().encode_to_vec();
    let option = HttpOption::decode(raw.as_slice()).map_err(|e| LoadError::BadOption {
        method: method.full_name().to_owned(),
        why: e.to_string(),
    })?;
    Ok(option.http)
}

fn pattern(rule: &HttpRule) -> Result<(Method, &str), &'static str> {
    let simple = [
        (Method::GET, &rule.get),
        (Method::PUT, &rule.put),
        (Method::POST, &rule.post),
        (Method::DELETE, &rule.delete),
        (Method::PATCH, &rule.patch),
    ];
    if let Some((m, p)) = simple.into_iter().find(|(_, p)| !p.is_empty()) {
        return Ok((m, p.as_str()));
    }
    let custom = rule.custom.as_ref().ok_or("rule without a pattern")?;
    let m = Method::from_bytes(custom.kind.as_bytes()).map_err(|_| "bad custom method kind")?;
    Ok((m, custom.path.as_str()))
}

/// Checks a `a.b.c` path names fields, every one but the last a singular message.
pub(crate) fn resolve_path(
    msg: &prost_reflect::MessageDescriptor,
    path: &[String],
) -> Result<Vec<FieldDescriptor>, String> {
    let mut out = Vec::with_capacity(path.len());
    let mut current = msg.clone();
    for (i, name) in path.iter().enumerate() {
        let field = current
            .get_field_by_name(name)
            .or_else(|| current.get_field_by_json_name(name))
            .ok_or_else(|| format!("unknown field {:?}", path.join(".")))?;
        if i + 1 < path.len() {
            match field.kind() {
                Kind::Message(m) if !field.is_list() && !field.is_map() => current = m,
                _ => return Err(format!("{:?} is not a message field", path[..=i].join("."))),
            }
        }
        out.push(field);
    }
    Ok(out)
}
