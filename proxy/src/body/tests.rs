use http_body_util::{BodyExt, StreamBody};

use super::*;

fn chunked(parts: &[&'static str]) -> ProxyBody {
    let frames: Vec<Result<Frame<Bytes>, BoxError>> = parts
        .iter()
        .map(|p| Ok(Frame::data(Bytes::from_static(p.as_bytes()))))
        .collect();
    StreamBody::new(futures_util::stream::iter(frames)).boxed_unsync()
}

#[tokio::test]
async fn peek_keeps_every_byte() {
    let mut p = Peeked::read(chunked(&["ab", "cd", "ef"]), 1024, |_, len| len >= 3)
        .await
        .unwrap();
    assert_eq!(p.len, 4);
    assert!(!p.is_complete());
    assert_eq!(&p.head(3)[..], b"abc");
    let all = p.replay().collect().await.unwrap().to_bytes();
    assert_eq!(&all[..], b"abcdef");
}

#[tokio::test]
async fn small_body_is_replayable() {
    let mut p = Peeked::read_small(full("hello"), 64).await.unwrap();
    assert!(p.is_complete());
    for _ in 0..2 {
        let all = p.replay().collect().await.unwrap().to_bytes();
        assert_eq!(&all[..], b"hello");
    }
    let big = Peeked::read_small(full(vec![0u8; 100]), 64).await.unwrap();
    assert!(!big.is_complete());
}
