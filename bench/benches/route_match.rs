//! `route_match/*`: the router's first-match lookup over 10 and 10,000 routes of mixed kinds
//! (path prefix, exact path, model name, path template). The index should make 10k cost about
//! what 10 does; `linear_10k` is the naive scan for comparison.

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use ferry_config::{ModelMatch, PathMatch, PathTemplate, RouteMatch, StringMatch, TemplateSegment};
use ferry_filters::model_name::ModelRef;
use ferry_proxy::router::{RequestView, Router};
use http::{HeaderMap, Method};
use std::hint::black_box;

/// `n` routes cycling through the four kinds; route `i` is reachable by `request_for(i)`.
fn routes(n: usize) -> Vec<(RouteMatch, usize)> {
    (0..n)
        .map(|i| {
            let m = match i % 4 {
                0 => RouteMatch {
                    path: Some(PathMatch::Prefix(format!("/svc-{i}/"))),
                    ..Default::default()
                },
                1 => RouteMatch {
                    path: Some(PathMatch::Exact(format!("/exact/{i}"))),
                    ..Default::default()
                },
                2 => RouteMatch {
                    model: Some(ModelMatch {
                        name: StringMatch::Exact(format!("model-{i}")),
                        version: None,
                    }),
                    ..Default::default()
                },
                _ => RouteMatch {
                    path: Some(PathMatch::Template(PathTemplate {
                        source: format!("/t{i}/{{model}}/infer"),
                        segments: vec![
                            TemplateSegment::Literal(format!("t{i}")),
                            TemplateSegment::Var("model".into()),
                            TemplateSegment::Literal("infer".into()),
                        ],
                    })),
                    ..Default::default()
                },
            };
            (m, i)
        })
        .collect()
}

/// The path and model of a request that only route `i` matches.
fn request_for(i: usize) -> (String, Option<ModelRef>) {
    match i % 4 {
        0 => (format!("/svc-{i}/v1/predict"), None),
        1 => (format!("/exact/{i}"), None),
        2 => (
            "/v2/infer".to_owned(),
            Some(ModelRef {
                name: format!("model-{i}"),
                version: None,
            }),
        ),
        _ => (format!("/t{i}/resnet/infer"), None),
    }
}

fn bench(c: &mut Criterion) {
    let headers = HeaderMap::new();
    let mut group = c.benchmark_group("route_match");
    for n in [10usize, 10_000] {
        let router = Router::new(routes(n));
        // The last route of each kind: the worst case for a linear scan.
        let probes: Vec<_> = (n - 4..n).map(request_for).collect();
        let label = if n == 10 { "10_routes" } else { "10k_routes" };
        group.bench_function(BenchmarkId::from_parameter(label), |b| {
            b.iter(|| {
                for (path, model) in &probes {
                    let view = RequestView {
                        method: &Method::POST,
                        authority: Some("models.svc"),
                        path,
                        headers: &headers,
                        model: model.as_ref(),
                    };
                    black_box(router.route(black_box(&view)));
                }
            });
        });
    }
    // The naive alternative: one router per route, tried in order (a linear scan).
    let singles: Vec<Router<usize>> = routes(10_000)
        .into_iter()
        .map(|r| Router::new(vec![r]))
        .collect();
    let (path, model) = request_for(9_999);
    group.bench_function(BenchmarkId::from_parameter("linear_10k_routes"), |b| {
        b.iter(|| {
            let view = RequestView {
                method: &Method::POST,
                authority: Some("models.svc"),
                path: &path,
                headers: &headers,
                model: model.as_ref(),
            };
            black_box(singles.iter().find_map(|r| r.route(&view)))
        });
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
