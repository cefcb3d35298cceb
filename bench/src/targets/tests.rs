use super::*;

#[test]
fn the_baseline_runs_right_after_ferry() {
    use Kind::*;
    assert_eq!(
        with_baseline(&[Direct, Ferry, Envoy]),
        [Direct, Ferry, FerryBase, Envoy]
    );
    // Named elsewhere: moved, not duplicated.
    assert_eq!(
        with_baseline(&[FerryBase, Direct, Ferry, Nginx]),
        [Direct, Ferry, FerryBase, Nginx]
    );
    assert_eq!(with_baseline(&[Direct]), [Direct, FerryBase]);
    assert!(!FerryBase.is_peer() && FerryBase.routes_http() && FerryBase.is_ferry());
    assert_eq!(Kind::parse("ferry-base"), Some(FerryBase));
}
