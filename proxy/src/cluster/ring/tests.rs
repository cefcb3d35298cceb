use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use ferry_config::OutlierDetection;

use super::{Bounds, Ring, cap};
use crate::cluster::Endpoint;

fn endpoints(ports: impl IntoIterator<Item = u16>) -> Vec<Arc<Endpoint>> {
    ports
        .into_iter()
        .map(|p| Arc::new(Endpoint::new(SocketAddr::from(([10, 0, 0, 1], p)))))
        .collect()
}

fn free() -> Bounds {
    Bounds {
        factor: None,
        in_flight: 0,
        avoid: None,
        ejections: true,
    }
}

/// Keys as a caller's session ids hash: spread over the whole u64 range.
fn keys(n: u64) -> impl Iterator<Item = u64> {
    (0..n).map(|i| xxhash_rust::xxh3::xxh3_64(format!("session-{i}").as_bytes()))
}

fn owners(ring: &Ring, n: u64) -> Vec<SocketAddr> {
    let now = Instant::now();
    keys(n)
        .map(|k| ring.pick(k, free(), || now).unwrap().addr)
        .collect()
}

fn moved(a: &[SocketAddr], b: &[SocketAddr]) -> f64 {
    let moved = a.iter().zip(b).filter(|(x, y)| x != y).count();
    moved as f64 / a.len() as f64
}

#[test]
fn the_same_key_lands_on_the_same_endpoint_in_every_ring_built_alike() {
    let a = Ring::new(&endpoints(1..=10));
    let b = Ring::new(&endpoints((1..=10).rev()));
    assert_eq!(owners(&a, 10_000), owners(&b, 10_000));
}

#[test]
fn keys_spread_evenly_over_ten_endpoints() {
    let ring = Ring::new(&endpoints(1..=10));
    let mut counts: HashMap<SocketAddr, usize> = HashMap::new();
    for o in owners(&ring, 100_000) {
        *counts.entry(o).or_default() += 1;
    }
    let max = *counts.values().max().unwrap() as f64 / 10_000.0;
    let min = *counts.values().min().unwrap() as f64 / 10_000.0;
    println!("spread over 10 endpoints: busiest {max:.3}x the mean, idlest {min:.3}x");
    assert_eq!(counts.len(), 10);
    assert!(max < 1.2 && min > 0.8, "max {max}, min {min}");
}

#[test]
fn adding_or_removing_one_of_ten_endpoints_moves_about_a_tenth_of_the_keys() {
    let ten = owners(&Ring::new(&endpoints(1..=10)), 100_000);
    let eleven = owners(&Ring::new(&endpoints(1..=11)), 100_000);
    let nine = owners(&Ring::new(&endpoints(1..=9)), 100_000);
    let (added, removed) = (moved(&ten, &eleven), moved(&ten, &nine));
    println!(
        "moved: {:.2} % adding an 11th endpoint, {:.2} % removing the 10th",
        added * 100.0,
        removed * 100.0
    );
    // The least possible: 1/11 and 1/10; the ring moves only those keys.
    assert!(added <= 0.15 && removed <= 0.15, "{added} {removed}");
    // Keys that moved on adding went to the new endpoint, and only the removed one's moved.
    let new = SocketAddr::from(([10, 0, 0, 1], 11));
    assert!(ten.iter().zip(&eleven).all(|(a, b)| a == b || *b == new));
    let gone = SocketAddr::from(([10, 0, 0, 1], 10));
    assert!(ten.iter().zip(&nine).all(|(a, b)| a == b || *a == gone));
}

#[test]
fn the_cap_is_the_ceiling_of_the_factor_times_the_mean_counting_the_request() {
    assert_eq!(cap(1.25, 0, 4), 1);
    assert_eq!(cap(1.25, 7, 4), 3); // 1.25 × 8 / 4 = 2.5
    assert_eq!(cap(1.25, 15, 4), 5); // 1.25 × 16 / 4 = 5
    assert_eq!(cap(2.0, 9, 10), 2);
}

#[test]
fn a_hot_key_spills_to_the_next_endpoints_and_none_passes_the_bound() {
    let members = endpoints(1..=5);
    let ring = Ring::new(&members);
    let now = Instant::now();
    let key = 42;
    let home = ring.pick(key, free(), || now).unwrap().addr;
    let mut held = Vec::new();
    let mut order = Vec::new();
    for _ in 0..100 {
        let total: usize = members.iter().map(|e| e.in_flight()).sum();
        let b = Bounds {
            factor: Some(1.25),
            in_flight: total,
            ..free()
        };
        let e = ring.pick(key, b, || now).unwrap().clone();
        let bound = cap(1.25, total, members.len());
        assert!(
            e.in_flight() < bound,
            "{} at {} of {bound}",
            e.addr,
            e.in_flight()
        );
        if !order.contains(&e.addr) {
            order.push(e.addr);
        }
        held.push(e.start_owned());
    }
    assert_eq!(order[0], home);
    // 100 in flight at 1.25 × the mean of 5 is 25 each: at least four endpoints take a share.
    assert!(order.len() >= 4, "the hot key spilled over: {order:?}");
    let loads: Vec<usize> = members.iter().map(|e| e.in_flight()).collect();
    assert!(loads.iter().all(|&l| l <= cap(1.25, 99, 5)), "{loads:?}");
    // Unbounded, every request goes home.
    drop(held);
    let e = ring.pick(key, free(), || now).unwrap();
    assert_eq!(e.addr, home);
}

#[test]
fn ejected_and_avoided_endpoints_are_passed_over_in_ring_order() {
    let members = endpoints(1..=4);
    let ring = Ring::new(&members);
    let now = Instant::now();
    let key = 7;
    let home = ring.pick(key, free(), || now).unwrap().clone();
    let avoided = ring
        .pick(
            key,
            Bounds {
                avoid: Some(home.addr),
                ..free()
            },
            || now,
        )
        .unwrap()
        .clone();
    assert_ne!(avoided.addr, home.addr);
    let outlier = OutlierDetection {
        consecutive_failures: 1,
        base_ejection: Duration::from_secs(30),
        max_ejection: Duration::from_secs(30),
        max_ejection_percent: 100,
    };
    assert!(home.failure(&outlier, true));
    let after = ring.pick(key, free(), Instant::now).unwrap();
    // The next endpoint clockwise, the same one a retry avoiding home gets.
    assert_eq!(after.addr, avoided.addr);
    // Without outlier detection ejections do not count.
    let b = Bounds {
        ejections: false,
        ..free()
    };
    assert_eq!(ring.pick(key, b, Instant::now).unwrap().addr, home.addr);
}

#[test]
fn an_empty_ring_picks_nothing() {
    assert!(Ring::new(&[]).pick(1, free(), Instant::now).is_none());
}

#[test]
fn the_index_finds_the_same_point_as_a_search_of_the_whole_ring() {
    for n in [1u16, 2, 3, 16, 256] {
        let ring = Ring::new(&endpoints(1..=n));
        for k in keys(5_000).chain([
            0,
            u64::MAX,
            ring.hashes[0],
            ring.hashes[ring.hashes.len() - 1],
        ]) {
            let whole = ring.hashes.partition_point(|&h| h < k);
            let whole = if whole == ring.hashes.len() { 0 } else { whole };
            assert_eq!(ring.locate(k), whole, "{n} endpoints, key {k}");
        }
    }
}
