use std::sync::Arc;

use ferry_config::{
    HeaderMatch, ModelMatch, PathMatch, PathTemplate, RouteMatch, StringMatch, TemplateSegment,
};
use ferry_filters::model_name::ModelRef;
use http::{HeaderMap, HeaderValue, Method};

use super::*;

fn prefix(p: &str) -> RouteMatch {
    RouteMatch {
        path: Some(PathMatch::Prefix(p.into())),
        ..Default::default()
    }
}

fn view<'a>(path: &'a str, headers: &'a HeaderMap, model: Option<&'a ModelRef>) -> RequestView<'a> {
    RequestView {
        method: &Method::POST,
        authority: Some("Models.svc:8000"),
        path,
        headers,
        model,
    }
}

#[test]
fn first_match_in_file_order_across_buckets() {
    let template = PathTemplate {
        source: "/v2/models/{model}/infer".into(),
        segments: vec![
            TemplateSegment::Literal("v2".into()),
            TemplateSegment::Literal("models".into()),
            TemplateSegment::Var("model".into()),
            TemplateSegment::Literal("infer".into()),
        ],
    };
    let routes = vec![
        (
            RouteMatch {
                headers: vec![HeaderMatch {
                    name: "x-canary".into(),
                    value: Some(StringMatch::Exact("1".into())),
                    invert: false,
                }],
                ..Default::default()
            },
            "canary",
        ),
        (
            RouteMatch {
                model: Some(ModelMatch {
                    name: StringMatch::Exact("resnet".into()),
                    version: Some(StringMatch::Exact("2".into())),
                }),
                ..Default::default()
            },
            "resnet-v2",
        ),
        (
            RouteMatch {
                path: Some(PathMatch::Template(template)),
                ..Default::default()
            },
            "oip",
        ),
        (prefix("/v2/"), "v2"),
        (
            RouteMatch {
                authority: Some(StringMatch::Exact("models.svc".into())),
                ..Default::default()
            },
            "by-host",
        ),
    ];
    let router = Router::new(routes);
    assert!(router.uses_model());
    let none = HeaderMap::new();
    let mut canary = HeaderMap::new();
    canary.insert("x-canary", HeaderValue::from_static("1"));
    let v2 = ModelRef {
        name: "resnet".into(),
        version: Some("2".into()),
    };
    let v1 = ModelRef {
        name: "resnet".into(),
        version: Some("1".into()),
    };
    let path = "/v2/models/resnet/infer";
    assert_eq!(
        router.route(&view(path, &canary, Some(&v2))),
        Some(&"canary")
    );
    assert_eq!(
        router.route(&view(path, &none, Some(&v2))),
        Some(&"resnet-v2")
    );
    assert_eq!(router.route(&view(path, &none, Some(&v1))), Some(&"oip"));
    assert_eq!(
        router.route(&view("/v2/models/resnet", &none, None)),
        Some(&"v2")
    );
    assert_eq!(router.route(&view("/other", &none, None)), Some(&"by-host"));
}

#[test]
fn no_match_and_regex() {
    let re = Arc::new(regex::Regex::new("^(?:/predictions/[a-z]+)$").unwrap());
    let router = Router::new(vec![
        (
            RouteMatch {
                path: Some(PathMatch::Regex(re)),
                methods: vec!["POST".into()],
                ..Default::default()
            },
            1,
        ),
        (prefix("/v1/"), 2),
    ]);
    let none = HeaderMap::new();
    assert_eq!(
        router.route(&view("/predictions/abc", &none, None)),
        Some(&1)
    );
    assert_eq!(router.route(&view("/predictions/ABC", &none, None)), None);
    assert_eq!(router.route(&view("/v1/x", &none, None)), Some(&2));
    assert_eq!(router.route(&view("/v", &none, None)), None);
    assert!(!router.uses_model());
}

#[test]
fn ten_thousand_routes_pick_the_right_one() {
    let routes: Vec<_> = (0..10_000)
        .map(|i| (prefix(&format!("/v2/models/model-{i}/")), i))
        .collect();
    let router = Router::new(routes);
    let none = HeaderMap::new();
    assert_eq!(
        router.route(&view("/v2/models/model-9999/infer", &none, None)),
        Some(&9999)
    );
    assert_eq!(
        router.route(&view("/v2/models/model-5/infer", &none, None)),
        Some(&5)
    );
}

#[test]
fn the_index_agrees_with_an_in_order_scan() {
    // Overlapping conditions of every kind, so a wrong bucket or order shows.
    let mut routes: Vec<_> = (0..50)
        .map(|i| (prefix(&format!("/v2/models/m{}", i % 7)), i))
        .collect();
    routes.insert(
        10,
        (
            RouteMatch {
                path: Some(PathMatch::Exact("/v2/models/m3/infer".into())),
                ..Default::default()
            },
            100,
        ),
    );
    routes.push((RouteMatch::default(), 200));
    let router = Router::new(routes);
    let none = HeaderMap::new();
    for path in [
        "/v2/models/m3/infer",
        "/v2/models/m36",
        "/v2/models/m",
        "/",
        "/v2/models/m6/x",
    ] {
        let req = view(path, &none, None);
        assert_eq!(router.route(&req), router.route_by_scan(&req), "{path}");
    }
    assert_eq!(
        router.route_by_scan(&view("/v2/models/m3/infer", &none, None)),
        Some(&3)
    );
}

#[test]
fn a_trailing_rest_template_matches_its_bare_prefix() {
    // Found by the route_match fuzz target: the index filed `/v1/{rest=**}` under `/v1/`,
    // so `/v1` (no segments for `rest`), which the template matches, found no route.
    let template = PathTemplate {
        source: "/v1/{rest=**}".into(),
        segments: vec![
            TemplateSegment::Literal("v1".into()),
            TemplateSegment::Rest("rest".into()),
        ],
    };
    let router = Router::new(vec![(
        RouteMatch {
            path: Some(PathMatch::Template(template)),
            ..Default::default()
        },
        1,
    )]);
    let none = HeaderMap::new();
    for path in ["/v1", "/v1/", "/v1/a/b"] {
        let req = view(path, &none, None);
        assert_eq!(router.route(&req), Some(&1), "{path}");
        assert_eq!(router.route(&req), router.route_by_scan(&req));
    }
    assert_eq!(router.route(&view("/v10", &none, None)), None);
}
