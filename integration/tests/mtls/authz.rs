//! Authorization by the caller's verified SPIFFE ID and the model the request names, at the
//! listener and at the route: a refused HTTP caller gets 403 `{"error":"permission denied"}`,
//! a gRPC caller PERMISSION_DENIED, and `ferry_authz_denied_total` counts it.

use std::net::SocketAddr;

use ferry_integration::client::grpc_channel;
use ferry_integration::pb::echo::EchoRequest;
use ferry_integration::pb::echo::echo_client::EchoClient;
use ferry_integration::pb::inference::ModelInferRequest;
use ferry_integration::pb::inference::grpc_inference_service_client::GrpcInferenceServiceClient;
use ferry_integration::{Echo, EchoReport, GrpcUpstream, Reply, TlsClient};
use serde_json::{Value, json};

use crate::support::{
    BATCH_ID, CLIENT_ID, Hop, INBOUND, Pki, cluster, config, counter, listener, start, strict,
};

/// A strict server sidecar in front of `app` with `routes` and the listener `authorization`,
/// and TLS clients for the prep client and the batch scorer.
async fn server(
    app: SocketAddr,
    authorization: Option<Value>,
    routes: Value,
) -> anyhow::Result<(Pki, ferry_integration::Ferry, TlsClient, TlsClient)> {
    let pki = Pki::new().await?;
    let server_cert = pki.server().await?;
    let mut inbound = listener(INBOUND, Some(strict()), routes);
    if let (Some(authz), Some(map)) = (authorization, inbound.as_object_mut()) {
        map.insert("authorization".into(), authz);
    }
    let ferry = start(&config(
        Some(pki.identity(&server_cert)),
        json!([inbound]),
        json!([cluster("app", app)]),
    ))
    .await?;
    let prep = pki.tls_client(&pki.client("prep", CLIENT_ID).await?)?;
    let batch = pki.tls_client(&pki.client("batch", BATCH_ID).await?)?;
    Ok((pki, ferry, prep, batch))
}

fn assert_denied(reply: &Reply, what: &str) -> anyhow::Result<()> {
    assert_eq!(reply.status, 403, "{what}: {}", reply.text());
    let body: Value = reply.json()?;
    assert_eq!(body, json!({ "error": "permission denied" }), "{what}");
    Ok(())
}

#[tokio::test]
async fn listener_policy_by_identity_and_model() -> anyhow::Result<()> {
    let echo = Echo::start("app").await?;
    let policy = json!({
        "default": "deny",
        "rules": [{
            "allow": [{ "prefix": "spiffe://cluster.local/ns/prep/" }],
            "models": [{ "prefix": "resnet" }],
        }],
    });
    let (_pki, ferry, prep, batch) = server(
        echo.addr(),
        Some(policy),
        json!([{ "name": "all", "to": "app" }]),
    )
    .await?;
    let addr = ferry.listener(INBOUND)?;

    let ok = prep.get(addr, "/v2/models/resnet50/infer", &[]).await?;
    assert_eq!(ok.status, 200, "{}", ok.text());
    let seen: EchoReport = ok.json()?;
    assert_eq!(seen.path, "/v2/models/resnet50/infer");

    // Right caller, wrong model; a rule with models admits no request without one; wrong caller.
    for (client, path, what) in [
        (&prep, "/v2/models/bert/infer", "prep calling bert"),
        (&prep, "/v2/health/ready", "prep without a model"),
        (
            &batch,
            "/v2/models/resnet50/infer",
            "batch calling resnet50",
        ),
    ] {
        assert_denied(&client.get(addr, path, &[]).await?, what)?;
    }
    assert_eq!(echo.requests(), 1, "a denied request reached the app");
    let denied = counter(&ferry, "ferry_authz_denied_total", &[("listener", INBOUND)]).await?;
    assert_eq!(denied, 3.0);
    // The listener's policy runs once routing knows the route, which labels the denial.
    let labelled = [("listener", INBOUND), ("route", "all")];
    assert_eq!(
        counter(&ferry, "ferry_authz_denied_total", &labelled).await?,
        3.0
    );
    Ok(())
}

#[tokio::test]
async fn listener_policy_answers_403_before_404() -> anyhow::Result<()> {
    let echo = Echo::start("app").await?;
    let policy = json!({ "default": "deny", "rules": [{ "allow": [{ "exact": CLIENT_ID }] }] });
    let routes =
        json!([{ "name": "models", "match": { "path": { "prefix": "/v2/" } }, "to": "app" }]);
    let (_pki, ferry, prep, batch) = server(echo.addr(), Some(policy), routes).await?;
    let addr = ferry.listener(INBOUND)?;
    // A refused caller cannot learn which paths exist.
    assert_denied(&batch.get(addr, "/nowhere", &[]).await?, "batch, no route")?;
    assert_denied(
        &batch.get(addr, "/v2/health/ready", &[]).await?,
        "batch, route",
    )?;
    let missing = prep.get(addr, "/nowhere", &[]).await?;
    assert_eq!(missing.status, 404, "{}", missing.text());
    let ok = prep.get(addr, "/v2/health/ready", &[]).await?;
    assert_eq!(ok.status, 200, "{}", ok.text());
    assert_eq!(echo.requests(), 1);
    for route in ["", "models"] {
        let labels = [("listener", INBOUND), ("route", route)];
        let denied = counter(&ferry, "ferry_authz_denied_total", &labels).await?;
        assert_eq!(denied, 1.0, "denials with route={route:?}");
    }
    Ok(())
}

#[tokio::test]
async fn route_policy_by_identity() -> anyhow::Result<()> {
    let echo = Echo::start("app").await?;
    let routes = json!([
        {
            "name": "resnet",
            "match": { "model": { "name": "resnet50" } },
            "to": "app",
            "authorization": { "default": "deny", "rules": [{ "allow": [{ "exact": CLIENT_ID }] }] },
        },
        { "name": "open", "to": "app" },
    ]);
    let (_pki, ferry, prep, batch) = server(echo.addr(), None, routes).await?;
    let addr = ferry.listener(INBOUND)?;
    let ok = prep.get(addr, "/v2/models/resnet50/infer", &[]).await?;
    assert_eq!(ok.status, 200, "{}", ok.text());
    assert_denied(
        &batch.get(addr, "/v2/models/resnet50/infer", &[]).await?,
        "batch, resnet",
    )?;
    let open = batch.get(addr, "/v2/models/bert/infer", &[]).await?;
    assert_eq!(open.status, 200, "batch on the open route: {}", open.text());
    assert_eq!(echo.requests(), 2);
    let denied = counter(
        &ferry,
        "ferry_authz_denied_total",
        &[("listener", INBOUND), ("route", "resnet")],
    )
    .await?;
    assert_eq!(denied, 1.0);
    Ok(())
}

#[tokio::test]
async fn grpc_denial_is_permission_denied_by_identity_and_model() -> anyhow::Result<()> {
    let up = GrpcUpstream::start("g").await?;
    // The hop's client sidecar is CLIENT_ID: admitted for resnet models only.
    let policy = json!({
        "authorization": {
            "default": "deny",
            "rules": [{ "allow": [{ "exact": CLIENT_ID }], "models": [{ "prefix": "resnet" }] }],
        },
    });
    let hop = Hop::start(up.addr(), policy).await?;
    let channel = grpc_channel(hop.outbound()?).await?;
    let mut infer = GrpcInferenceServiceClient::new(channel.clone());
    let req = |model: &str| ModelInferRequest {
        model_name: model.into(),
        id: "1".into(),
        ..Default::default()
    };
    infer.model_infer(req("resnet50")).await?;
    let status = infer
        .model_infer(req("bert"))
        .await
        .expect_err("bert is not admitted");
    assert_eq!(status.code(), tonic::Code::PermissionDenied, "{status:?}");
    assert_eq!(status.message(), "permission denied");
    // Echo names no model, so the model rule cannot admit it.
    let status = EchoClient::new(channel)
        .unary(EchoRequest {
            message: "hi".into(),
            payload: Vec::new(),
            repeat: 0,
        })
        .await
        .expect_err("a call without a model is not admitted");
    assert_eq!(status.code(), tonic::Code::PermissionDenied, "{status:?}");
    assert_eq!(
        up.models_seen(),
        vec![("resnet50".to_owned(), String::new())]
    );
    let denied = counter(
        &hop.server,
        "ferry_authz_denied_total",
        &[("listener", INBOUND)],
    )
    .await?;
    assert_eq!(denied, 2.0);
    Ok(())
}
