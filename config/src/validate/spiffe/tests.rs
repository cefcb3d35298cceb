use super::*;

#[test]
fn exact_ids() {
    for ok in [
        "spiffe://cluster.local/ns/prep/sa/client",
        "spiffe://td/a",
        "spiffe://a-b_c.d9/A.b-C_9/x",
    ] {
        assert_eq!(exact(ok), Ok(()), "{ok}");
    }
    let cases = [
        ("resnet", "is not a spiffe:// URI"),
        ("", "is not a spiffe:// URI"),
        ("https://cluster.local/ns/a", "is not a spiffe:// URI"),
        ("SPIFFE://td/a", "the scheme must be lowercase"),
        ("spiffe://td", "no path"),
        ("spiffe://td/", "trailing \"/\""),
        ("spiffe://td/a/", "trailing \"/\""),
        ("spiffe://td//a", "empty path segment"),
        ("spiffe://td/a/../b", "\".\" or \"..\" path segment"),
        ("spiffe://td/./b", "\".\" or \"..\" path segment"),
        ("spiffe://td/a%20b", "'%' in the path"),
        ("spiffe://td/a b", "' ' in the path"),
        ("spiffe://td/a?x=1", "no query or fragment"),
        ("spiffe://td/a#f", "no query or fragment"),
        ("spiffe://user@td/a", "no user info"),
        ("spiffe://td:443/a", "no port"),
        ("spiffe:///a", "empty trust domain"),
        ("spiffe://Cluster.local/a", "'C' in the trust domain"),
    ];
    for (text, want) in cases {
        let err = exact(text).unwrap_err();
        assert!(err.contains(want), "{text}: {err}");
        assert!(err.contains("(expected "), "{text}: {err}");
    }
    let long = format!("spiffe://td/{}", "a".repeat(2048));
    assert!(exact(&long).unwrap_err().contains("over 2048"));
    let long_td = format!("spiffe://{}/a", "a".repeat(256));
    assert!(exact(&long_td).unwrap_err().contains("over 255"));
}

#[test]
fn prefixes() {
    for ok in [
        "spiffe://cluster.local/ns/prep/",
        "spiffe://cluster.local/ns/prep",
        "spiffe://cluster.local",
        "spiffe://cluster.local/",
    ] {
        assert_eq!(prefix(ok), Ok(()), "{ok}");
    }
    for (text, want) in [
        ("cluster.local", "is not a spiffe:// URI"),
        ("spiffe://td//", "empty path segment"),
        ("spiffe://td/a//", "empty path segment"),
        ("spiffe://td/../", "\".\" or \"..\" path segment"),
        ("spiffe://td:1/", "no port"),
    ] {
        let err = prefix(text).unwrap_err();
        assert!(err.contains(want), "{text}: {err}");
    }
}

#[test]
fn trust_domains() {
    for ok in ["cluster.local", "td", "a-b_c.9"] {
        assert_eq!(trust_domain(ok), Ok(()), "{ok}");
    }
    assert_eq!(
        trust_domain("spiffe://cluster.local").unwrap_err(),
        r#"trust domain "spiffe://cluster.local" is a URI (expected a bare name such as "cluster.local")"#
    );
    for (text, want) in [
        ("", "empty trust domain"),
        ("Cluster.local", "'C' in the trust domain"),
        ("td/ns", "'/' in the trust domain"),
        ("td:80", "no port"),
    ] {
        let err = trust_domain(text).unwrap_err();
        assert!(err.contains(want), "{text}: {err}");
    }
}
