//! A route's stack, outermost first: what a request goes through after routing chose this
//! route. Filters the route does not use are absent (no per-request branch); the
//! per-cluster timeout and retry are tower's `option_layer`. The bracketed
//! slots are where the next layers go: each is one line here plus its filters module.
//! Reordering these lines is reviewed like an API change.

use std::sync::Arc;

use ferry_config::{Action, Route};
use ferry_filters::authorization::{AuthorizationLayer, AuthorizationSettings};
use ferry_filters::bridge::BridgeLayer;
use ferry_filters::bridge::tfserving::TfServingLayer;
use ferry_filters::fault::{FaultKind, FaultLayer};
use ferry_filters::limits::{ConcurrencyLayer, RateLimitLayer};
use ferry_filters::load_report::{AnswerReports, AnswerReportsLayer};
use ferry_filters::tensor_check::TensorValidationLayer;
use ferry_filters::trace_context::{TraceLayer, TraceSettings};
use ferry_filters::transcode::{TranscodeLayer, Transcoder};
use ferry_filters::translate::OipTranslateLayer;
use tower::ServiceBuilder;
use tower::util::Either;

use super::RouteService;
use super::filters::Filters;
use crate::cluster::Cluster;
use crate::direct::Direct;
use crate::filter_settings;
use crate::forward::{BalanceLayer, EndpointClient, HashKeyLayer, RetryLayer, Split, TimeoutLayer};
use crate::metrics::{FaultLabels, Metrics, RouteLabels};
use crate::mirror::{MirrorLayer, MirrorTarget, TargetParts};
use crate::request_meta::Outcome;
use crate::rewrite::{Edits, RewriteLayer};
use crate::route::ShareableService;
use crate::state::RouteState;
use crate::tls::IdentityStore;
use crate::traces::RouteTracing;
use opentelemetry::KeyValue;

/// What a route's stack is built from.
#[derive(Debug)]
pub struct RouteParts<'a> {
    /// The route's config.
    pub route: &'a Route,
    /// Its metric labels.
    pub labels: RouteLabels,
    /// Its weighted clusters (empty for a direct response).
    pub targets: &'a [(u32, Arc<Cluster>)],
    /// Its mirrors' candidate clusters, in `route.mirror` order.
    pub mirrors: &'a [Arc<Cluster>],
    /// Its descriptor-set transcoder, if it transcodes.
    pub transcoder: Option<Transcoder>,
    /// Its state (kept across reloads).
    pub state: &'a Arc<RouteState>,
    /// Its authorization policy, converted from `route.authorization`.
    pub authorization: Option<AuthorizationSettings>,
    /// The workload identity (for `x-forwarded-client-cert`), when the config has one.
    pub identity: Option<Arc<IdentityStore>>,
    /// Its rate limits (state kept across reloads).
    pub rate_limit: Option<RateLimitLayer>,
    /// Its concurrency limit (state kept across reloads).
    pub concurrency: Option<ConcurrencyLayer>,
    /// Its trace layer, when the config traces.
    pub tracing: Option<TraceLayer>,
}

/// Builds one route's stack.
pub fn route(p: RouteParts<'_>, metrics: &Arc<Metrics>) -> RouteService {
    let r = p.route;
    let fetch_failures = metrics
        .tensor_metadata_fetch_failures
        .get_or_create(&p.labels)
        .clone();
    let tensors =
        filter_settings::validate_tensors(r.validate_tensors.as_ref(), r.translate.as_ref()).map(
            |s| {
                TensorValidationLayer::new(s).on_fetch_failure(Arc::new(move || {
                    fetch_failures.inc();
                }))
            },
        );
    let denied = metrics.authz_denied.get_or_create(&p.labels).clone();
    let authorization = p.authorization.map(|s| {
        AuthorizationLayer::new(s).on_deny(Arc::new(move |_| {
            denied.inc();
        }))
    });
    let fault = filter_settings::fault(r.fault.as_ref()).map(|settings| {
        let counter = |kind| {
            metrics
                .faults_injected
                .get_or_create(&FaultLabels {
                    listener: p.labels.listener.clone(),
                    route: p.labels.route.clone(),
                    kind,
                })
                .clone()
        };
        let (delays, aborts) = (counter("delay"), counter("abort"));
        FaultLayer::new(settings).on_fault(Arc::new(move |kind| {
            match kind {
                FaultKind::Delay => delays.inc(),
                FaultKind::Abort => aborts.inc(),
            };
        }))
    });
    let answer_reports = AnswerReportsLayer::new(
        AnswerReports {
            report: r.load_report.report,
            strip: r.load_report.strip,
            concurrency: p.concurrency.as_ref().map(|c| c.state().clone()),
        },
        p.state.in_flight.clone(),
    );
    let filters = Filters::default()
        // Load reports on answers (ferry's own added, the upstream's stripped): outside the
        // limits, so requests waiting for a slot count as in flight, and every upstream
        // answer passes it.
        .then_unboxed(answer_reports)
        // Who may call this route's models: before anything reads the body or spends a limit.
        .then_unboxed(authorization)
        // Drills: after authorization (a refused caller stays refused), before the limits (an
        // injected delay holds no slot, an abort spends no rate).
        .then(fault)
        // Rate limits, then the in-flight cap: shed before any body is read, and a request over
        // its rate never waits in a queue.
        .then_unboxed(p.rate_limit)
        .then(p.concurrency)
        // Check input tensors against the model's metadata before the bytes travel; it reads
        // the protocol the caller speaks, so it sits before translation.
        .then(tensors)
        // Translation: what follows (timeouts, retries) applies to the translated request.
        // TF Serving gRPC callers: to OIP gRPC first (then REST below, for a REST upstream).
        .then(filter_settings::tfserving(r.translate.as_ref(), false).map(TfServingLayer::new))
        // gRPC callers of a bridge that reads OIP REST (TorchServe, KServe V1): translated to
        // REST first.
        .then(crate::filter_settings_torchserve::grpc_callers(
            r.translate.as_ref(),
        ))
        // Between serving protocols (OIP ⇄ KServe V1, OIP → TorchServe): V1 callers to OIP
        // REST first (then gRPC below, for a gRPC upstream).
        .then(filter_settings::bridge(r.translate.as_ref()).map(BridgeLayer::new))
        // OIP REST ⇄ gRPC, alone or between a bridge and the side speaking OIP.
        .then(filter_settings::translate(r.translate.as_ref()).map(OipTranslateLayer::new))
        // TF Serving gRPC upstreams: OIP gRPC (from the caller or the translator) to TF.
        .then(filter_settings::tfserving(r.translate.as_ref(), true).map(TfServingLayer::new))
        .then(p.transcoder.map(TranscodeLayer::new));
    let stack = ServiceBuilder::new()
        // The route's header edits, prefix rewrite and forwarding headers; upgrades.
        .layer(RewriteLayer::new(Edits {
            request: r.request_headers.clone(),
            response: r.response_headers.clone(),
            prefix: r.prefix_rewrite.clone(),
            identity: p.identity.clone(),
        }))
        // [trace context]: the hop's span and the context sent upstream, outside the filters
        // so the phases they own (limits, translation) and every attempt are recorded under
        // it. Written out, not boxed: an unsampled request allocates nothing here.
        .option_layer(p.tracing)
        // The filters above, in that order; absent ones are not there at all.
        .layer(filters)
        // Mirrors: around the split, so a candidate gets what the primary upstream gets
        // (translated) and never the route's timeout or retries.
        .option_layer(mirror_layer(r, p.mirrors, &p.labels, metrics))
        .service(destination(r, p.targets, p.state, &p.labels, metrics));
    RouteService::new(stack)
}

/// The route's mirrors, if it has any.
fn mirror_layer(
    r: &Route,
    clusters: &[Arc<Cluster>],
    labels: &RouteLabels,
    metrics: &Arc<Metrics>,
) -> Option<MirrorLayer> {
    let targets = r
        .mirror
        .iter()
        .zip(clusters)
        .map(|(m, cluster)| {
            MirrorTarget::new(
                TargetParts {
                    cluster: cluster.clone(),
                    fraction: m.fraction,
                    compare: filter_settings::mirror_compare(m),
                    timeout: m.timeout,
                    max_in_flight: m.max_in_flight,
                    listener: labels.listener.0.clone(),
                    route: labels.route.0.clone(),
                },
                metrics,
            )
        })
        .collect();
    MirrorLayer::new(targets)
}

/// Where the route sends requests: a direct response, or a weighted split over clusters,
/// each behind the route's timeout, retries and the cluster's balancer.
fn destination(
    r: &Route,
    targets: &[(u32, Arc<Cluster>)],
    state: &Arc<RouteState>,
    labels: &RouteLabels,
    metrics: &Arc<Metrics>,
) -> Either<RouteService, Split<impl ShareableService>> {
    if let Action::DirectResponse(direct) = &r.action {
        return Either::Left(RouteService::new(Direct::new(direct)));
    }
    crate::forward::retry::register(&metrics.retries, labels);
    let per_try = r.retry.as_ref().and_then(|p| p.per_try_timeout);
    let split = Split::new(targets.iter().map(|(weight, cluster)| {
        let path = ServiceBuilder::new()
            // The route's deadline for response headers, across every attempt.
            .option_layer(
                r.timeout
                    .map(|t| TimeoutLayer::new(t, cluster.name.clone())),
            )
            // The request's hash key (`lb: hash` clusters): once per request, not per attempt,
            // inside the deadline since `prompt_prefix` may wait for body bytes.
            .option_layer(
                cluster
                    .config
                    .hash
                    .as_ref()
                    .map(|h| HashKeyLayer::new(&h.key)),
            )
            // Retries within the route's budget; only with a retry policy.
            .option_layer(r.retry.as_ref().map(|policy| {
                RetryLayer::new(
                    policy.clone(),
                    state.budget.clone(),
                    metrics.retries.clone(),
                    labels.clone(),
                )
            }))
            // The endpoint for each attempt, its health and the attempt's own deadline.
            .layer(BalanceLayer::new(cluster.clone(), per_try, metrics))
            .service(EndpointClient::new(cluster.clone()));
        (*weight, path)
    }));
    Either::Right(split)
}

/// The trace layer of route `r` on `listener`: the route's names as span attributes, and the
/// request's trace id and start handed to its [`Outcome`] (the access record's trace id; the
/// span starts when the listener received the request, not when routing finished).
pub fn route_trace_layer(
    t: &RouteTracing,
    listener: &Arc<str>,
    r: &Route,
    targets: &[(u32, Arc<Cluster>)],
) -> TraceLayer {
    // Shared strings: every recorded request copies these into its span, and cloning an
    // owned `String` value was an allocation per attribute per request.
    let shared = |s: Arc<str>| opentelemetry::StringValue::from(s);
    let mut attributes = vec![
        KeyValue::new("ferry.listener", shared(listener.clone())),
        KeyValue::new("ferry.route", shared(Arc::from(r.name.as_str()))),
    ];
    if let [(_, cluster)] = targets {
        attributes.push(KeyValue::new("ferry.cluster", shared(cluster.name.clone())));
    }
    if let Some(t) = r.translate.as_ref() {
        attributes.push(KeyValue::new("ferry.translate", t.direction.label()));
    }
    TraceLayer::new(TraceSettings {
        propagation: t.propagation.clone(),
        ratio: t.ratio,
        tail: t.tail,
        sink: t.sink.clone(),
        attributes: Arc::new(ferry_filters::trace_context::FixedAttributes::new(
            attributes,
        )),
        names: Some(ferry_filters::trace_context::SpanNames::new(&r.name)),
        on_trace: Some(Arc::new(|ext: &http::Extensions, id, sampled| {
            let outcome = ext.get::<Arc<Outcome>>()?;
            outcome.set_trace(id, sampled);
            Some(outcome.started())
        })),
        classifiers: crate::failure::CLASSIFIERS,
        attempts_inject: true,
    })
}
