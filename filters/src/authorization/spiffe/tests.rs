use proptest::prelude::*;

use super::*;
use crate::authorization::IdentityMatch;

#[test]
fn parses_workload_and_trust_domain_ids() {
    let id = SpiffeId::parse("spiffe://cluster.local/ns/prep/sa/client").unwrap();
    assert_eq!(id.trust_domain(), "cluster.local");
    assert_eq!(id.path(), "/ns/prep/sa/client");
    assert_eq!(id.to_string(), "spiffe://cluster.local/ns/prep/sa/client");
    let td = SpiffeId::parse("spiffe://my_td-1.example").unwrap();
    assert_eq!(td.trust_domain(), "my_td-1.example");
    assert_eq!(td.path(), "");
    // Path segments may hold uppercase letters; only the trust domain is lowercase.
    assert!(SpiffeId::parse("spiffe://td/Ns/A.b-c_d").is_ok());
}

#[test]
fn rejects_what_the_spec_rejects() {
    let cases = [
        ("http://cluster.local/ns/a", SpiffeIdError::Scheme),
        ("SPIFFE://cluster.local/ns/a", SpiffeIdError::Scheme),
        ("cluster.local/ns/a", SpiffeIdError::Scheme),
        ("spiffe://", SpiffeIdError::EmptyTrustDomain),
        ("spiffe:///ns/a", SpiffeIdError::EmptyTrustDomain),
        (
            "spiffe://Cluster.local/ns/a",
            SpiffeIdError::TrustDomainChar('C'),
        ),
        ("spiffe://td:443/ns/a", SpiffeIdError::TrustDomainChar(':')),
        ("spiffe://user@td/ns/a", SpiffeIdError::TrustDomainChar('@')),
        ("spiffe://td//ns/a", SpiffeIdError::EmptySegment),
        ("spiffe://td/ns//a", SpiffeIdError::EmptySegment),
        ("spiffe://td/ns/a/", SpiffeIdError::EmptySegment),
        ("spiffe://td/", SpiffeIdError::EmptySegment),
        ("spiffe://td/ns/../a", SpiffeIdError::DotSegment),
        ("spiffe://td/ns/./a", SpiffeIdError::DotSegment),
        ("spiffe://td/ns/a?x=1", SpiffeIdError::QueryOrFragment),
        ("spiffe://td/ns/a#frag", SpiffeIdError::QueryOrFragment),
        ("spiffe://td/ns/a%2Fb", SpiffeIdError::PathChar('%')),
        ("spiffe://td/ns/a b", SpiffeIdError::PathChar(' ')),
    ];
    for (text, expected) in cases {
        assert_eq!(SpiffeId::parse(text), Err(expected), "{text}");
    }
    let long = format!("spiffe://td/{}", "a".repeat(2048));
    assert!(matches!(
        SpiffeId::parse(&long),
        Err(SpiffeIdError::TooLong(_))
    ));
}

#[test]
fn trust_domains_are_validated_alone() {
    assert_eq!(
        TrustDomain::parse("cluster.local").unwrap().as_str(),
        "cluster.local"
    );
    assert_eq!(
        TrustDomain::parse("spiffe://cluster.local"),
        Err(SpiffeIdError::TrustDomainChar(':'))
    );
    assert_eq!(TrustDomain::parse(""), Err(SpiffeIdError::EmptyTrustDomain));
    assert_eq!(
        TrustDomain::parse("Cluster.local"),
        Err(SpiffeIdError::TrustDomainChar('C'))
    );
}

fn segment() -> impl Strategy<Value = String> {
    "[a-zA-Z0-9_-][a-zA-Z0-9._-]{0,6}"
}

fn path() -> impl Strategy<Value = String> {
    proptest::collection::vec(segment(), 0..4)
        .prop_map(|s| s.iter().map(|seg| format!("/{seg}")).collect::<String>())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    /// A prefix never accepts an ID whose trust domain merely starts with the prefix's:
    /// `spiffe://cluster.local` must not accept `spiffe://cluster.local.evil/...`.
    #[test]
    fn a_prefix_never_crosses_trust_domains(
        td in "[a-z0-9][a-z0-9.-]{0,12}",
        suffix in "[a-z0-9._-]{1,8}",
        prefix_path in path(),
        rest in path(),
        trailing_slash in any::<bool>(),
    ) {
        let slash = if trailing_slash { "/" } else { "" };
        let prefix = IdentityMatch::prefix(&format!("spiffe://{td}{prefix_path}{slash}")).unwrap();
        let evil = SpiffeId::parse(&format!("spiffe://{td}{suffix}{prefix_path}{rest}")).unwrap();
        prop_assert!(!prefix.matches(&evil));
        // The same path in the prefix's own trust domain does match.
        let good = SpiffeId::parse(&format!("spiffe://{td}{prefix_path}{rest}")).unwrap();
        prop_assert!(prefix.matches(&good));
    }
}
