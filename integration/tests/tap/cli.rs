//! `ferry tap`, the real CLI process, against a real ferry and upstream.

use ferry_integration::{Echo, HttpClient};
use http::Method;

use crate::support::{LISTENER, TapCli, send, start_ferry};

/// Admitted by every tap of the first test: route `models`, model `bert`, authority
/// `models.example`, status 503.
const EVERY_FILTER: &str = "/v2/models/bert/infer";
const EVERY_HEADER: [(&str, &str); 2] = [("host", "models.example"), ("x-test-status", "503")];

#[tokio::test]
async fn ferry_tap_prints_the_records_its_filter_admits_of_requests_sent_while_it_listens()
-> anyhow::Result<()> {
    let echo = Echo::start("up").await?;
    let ferry = start_ferry(echo.addr()).await?;
    let (admin, addr) = (ferry.admin(), ferry.listener(LISTENER)?);
    let client = HttpClient::http1();
    // Before anyone listens: every filter below would admit it, no tap may show it.
    let status = send(
        &client,
        addr,
        Method::POST,
        EVERY_FILTER,
        "before",
        &EVERY_HEADER,
    );
    assert_eq!(status.await?, 503);

    let by_route = TapCli::start(admin, &["--route", "models"]).await?;
    let by_status = TapCli::start(admin, &["--status", "4xx,503"]).await?;
    let by_model = TapCli::start(admin, &["--model", "bert", "-o", "text"]).await?;
    let by_authority = TapCli::start(admin, &["--authority", "models.example"]).await?;

    assert_eq!(
        send(&client, addr, Method::GET, "/echo/1?k=v", "e-1", &[]).await?,
        200
    );
    let failing = [("x-test-status", "503")];
    assert_eq!(
        send(&client, addr, Method::GET, "/echo/2", "e-2", &failing).await?,
        503
    );
    let infer = "/v2/models/resnet/infer";
    assert_eq!(
        send(&client, addr, Method::POST, infer, "m-1", &[]).await?,
        200
    );
    let host = [("host", "models.example")];
    assert_eq!(
        send(&client, addr, Method::POST, infer, "m-2", &host).await?,
        200
    );
    assert_eq!(
        send(&client, addr, Method::GET, "/nowhere", "u-1", &[]).await?,
        404
    );
    // Last, admitted by every tap: records reach a tap in the order they finish, so once a
    // tap has printed this one it has printed everything its filter admitted before, and the
    // absence of the rest is its filter's doing.
    let status = send(
        &client,
        addr,
        Method::POST,
        EVERY_FILTER,
        "marker",
        &EVERY_HEADER,
    );
    assert_eq!(status.await?, 503);

    assert_eq!(by_route.wait_for("marker").await?, ["m-1", "m-2", "marker"]);
    assert_eq!(
        by_status.wait_for("marker").await?,
        ["e-2", "u-1", "marker"]
    );
    assert_eq!(by_authority.wait_for("marker").await?, ["m-2", "marker"]);
    let lines = by_model.wait_for_line("marker").await?;
    assert_eq!(lines.len(), 1, "only the bert request: {lines:#?}");
    assert!(
        lines[0].contains(&format!(
            " {LISTENER} models \"POST {EVERY_FILTER} HTTP/1.1\" 503 "
        )) && lines[0].contains(" bert "),
        "not the access log's text line of the marker: {}",
        lines[0]
    );

    // The records are the access log's JSON: the documented fields, the query left out.
    let records = by_status.records()?;
    let first = &records[0];
    assert_eq!(first["listener"], LISTENER);
    assert_eq!(first["route"], "echo");
    assert_eq!(first["path"], "/echo/2");
    assert_eq!(first["status"], 503);
    assert_eq!(first["cluster"], "up");
    assert_eq!(first["endpoint"], echo.addr().to_string());
    assert!(first["duration_ms"].is_number() && first["ts"].is_string());
    let unrouted = &records[1];
    assert!(
        unrouted.get("route").is_none(),
        "no route invented: {unrouted}"
    );
    assert_eq!(unrouted["status"], 404);
    let models = by_route.records()?;
    assert_eq!(models[0]["model"], "resnet");
    assert_eq!(models[1]["authority"], "models.example");
    Ok(())
}

#[tokio::test]
async fn ferry_tap_with_a_bad_filter_exits_64_naming_it() -> anyhow::Result<()> {
    let echo = Echo::start("up").await?;
    let ferry = start_ferry(echo.addr()).await?;
    let (code, stderr) = TapCli::run_to_exit(ferry.admin(), &["--status", "6xx"]).await?;
    assert_eq!(code, 64, "{stderr}");
    assert!(
        stderr.contains("400 Bad Request") && stderr.contains("\"parameter\":\"status\""),
        "{stderr}"
    );
    Ok(())
}
