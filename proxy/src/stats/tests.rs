use std::time::Duration;

use super::*;

#[test]
fn buckets_are_half_octaves_from_100us() {
    assert_eq!(bucket(Duration::ZERO), 0);
    assert_eq!(bucket(Duration::from_micros(100)), 0);
    assert_eq!(bucket(Duration::from_micros(101)), 1);
    assert_eq!(bucket(Duration::from_micros(141)), 1);
    assert_eq!(bucket(Duration::from_micros(142)), 2);
    assert_eq!(bucket(Duration::from_micros(200)), 2);
    // 100 ms = 100 µs × 1000 ≈ √2^19.93.
    assert_eq!(bucket(Duration::from_millis(100)), 20);
    assert_eq!(bucket(Duration::from_secs(3600)), BUCKETS - 1);
    for i in 1..BUCKETS - 1 {
        // Floored to whole nanoseconds: rounding up would cross into the next bucket.
        let ub = Duration::from_nanos((upper_bound(i) * 1e9).floor() as u64);
        assert!(bucket(ub) <= i, "upper bound of {i} in {}", bucket(ub));
        assert_eq!(bucket(ub + Duration::from_micros(1)), i + 1);
    }
}

#[test]
fn quantiles_interpolate_inside_the_bucket() {
    let cell = Cell::default();
    // 98 answers at 10 ms, 2 at 1 s.
    for _ in 0..98 {
        cell.answer(Duration::from_millis(10), false, 0, false);
    }
    for _ in 0..2 {
        cell.answer(Duration::from_secs(1), true, 1, false);
    }
    let c = cell.read();
    assert_eq!(c.requests(), 100);
    assert_eq!(c.failures, 2);
    assert_eq!(c.retries, 2);
    // Each estimate lies in the bucket of the true value: within a factor √2 of it.
    let within = |q: f64, truth: f64| {
        let v = c.quantile(q).unwrap();
        let i = bucket(Duration::from_secs_f64(truth));
        assert!(
            (upper_bound(i - 1)..=upper_bound(i)).contains(&v),
            "q{q} {v} not in bucket {i} of {truth}"
        );
        assert!(v / truth < 2f64.sqrt() && truth / v < 2f64.sqrt());
    };
    within(0.5, 0.010);
    within(0.98, 0.010);
    within(0.99, 1.0);
    assert_eq!(Counts::default().quantile(0.5), None);
}

#[test]
fn a_replaced_cell_counts_from_zero() {
    let before = Cell::default();
    for _ in 0..5 {
        before.answer(Duration::from_millis(1), false, 0, false);
    }
    let after = Cell::default();
    after.answer(Duration::from_millis(1), false, 0, false);
    let d = after.read().since(&before.read());
    assert_eq!(d.requests(), 1);
    let more = before.read();
    before.answer(Duration::from_millis(1), true, 0, true);
    let d = before.read().since(&more);
    assert_eq!((d.requests(), d.failures, d.limited), (1, 1, 1));
}

#[test]
fn failures_are_5xx_and_grpc_server_codes() {
    assert!(is_failure(500, None));
    assert!(is_failure(503, None));
    assert!(!is_failure(404, None));
    assert!(!is_failure(429, None));
    assert!(is_failure(200, Some(14)));
    assert!(is_failure(200, Some(13)));
    assert!(!is_failure(200, Some(0)));
    assert!(!is_failure(200, Some(5)));
    assert!(!is_failure(200, Some(8)));
    assert!(is_limited(Some("rate_limited")));
    assert!(!is_limited(Some("no_route")));
    assert!(!is_limited(None));
}

#[test]
fn queries_parse_and_name_the_bad_parameter() {
    let q = Query::parse(Some("window=5m&by=model&series=1")).unwrap();
    assert_eq!((q.window, q.by, q.series), (300, By::Model, true));
    let q = Query::parse(None).unwrap();
    assert_eq!((q.window, q.by, q.series), (30, By::Route, false));
    assert_eq!(Query::parse(Some("window=1.5s")).unwrap().window, 2);
    for (query, parameter) in [
        ("by=pod", "by"),
        ("window=6m", "window"),
        ("window=30", "window"),
        ("window=0s", "window"),
        ("series=maybe", "series"),
        ("windw=30s", "windw"),
    ] {
        let e = Query::parse(Some(query)).unwrap_err();
        assert_eq!(e.parameter, parameter, "{query}: {e}");
    }
}
