//! `routes[].mirror` with `compare: oip`: a candidate whose answer differs in one element by
//! 1e-2 is a mismatch naming the tensor and the index, an identical one a match, over REST
//! JSON, REST with the binary extension, and gRPC; on a translating route the candidate gets
//! the translated request.

use std::collections::HashSet;

use ferry_filters::translate::pb::model_infer_request::InferInputTensor;
use ferry_filters::translate::pb::{InferTensorContents, ModelInferRequest, ModelInferResponse};
use ferry_integration::client::{body_full, request};
use ferry_integration::{Admin, HttpClient, eventually};
use http::Method;
use prost::Message;
use serde_json::{Value, json};

use crate::mirror::{INFER, h2_cluster, json_body, route};
use crate::oip_model::OipModel;
use crate::support::{LISTENER, PATIENCE, config, start};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_are_compared_over_rest_json_rest_binary_and_grpc() -> anyhow::Result<()> {
    let primary = OipModel::start(0.0).await?;
    let same = OipModel::start(0.0).await?;
    let off = OipModel::start(1e-2).await?;
    let cfg = config(
        route(json!([
            { "cluster": "same", "fraction": 1, "compare": "oip" },
            { "cluster": "off", "fraction": 1, "compare": "oip", "tolerance": { "abs": 1e-4, "rel": 1e-3 } },
        ])),
        json!([
            h2_cluster("primary", primary.addr()),
            h2_cluster("same", same.addr()),
            h2_cluster("off", off.addr()),
        ]),
    );
    let ferry = start(&cfg).await?;
    let addr = ferry.listener(LISTENER)?;
    let client = HttpClient::http1();
    // REST JSON.
    let req = request(
        Method::POST,
        addr,
        INFER,
        &[("x-request-id", "rest-json")],
        body_full(json_body()),
    )?;
    let reply = client.call(req).await?;
    assert_eq!(reply.status, 200);
    assert_eq!(
        reply.json::<Value>()?["outputs"][0]["data"],
        json!([0.1f32, 0.7f32, 0.2f32])
    );
    // REST with the binary extension.
    let header = json!({ "inputs": [{ "name": "x", "datatype": "FP32", "shape": [1, 2],
                                      "parameters": { "binary_data_size": 8 } }] })
    .to_string();
    let mut body = header.clone().into_bytes();
    body.extend(1.0f32.to_le_bytes().into_iter().chain(2.0f32.to_le_bytes()));
    let len = header.len().to_string();
    let req = request(
        Method::POST,
        addr,
        INFER,
        &[
            ("x-request-id", "rest-binary"),
            ("inference-header-content-length", &len),
        ],
        body_full(body),
    )?;
    let reply = client.call(req).await?;
    assert_eq!(reply.status, 200);
    assert!(reply.header("inference-header-content-length").is_some());
    // gRPC (unary, h2c), its message framed by hand.
    let msg = ModelInferRequest {
        model_name: "m".into(),
        inputs: vec![InferInputTensor {
            name: "x".into(),
            datatype: "FP32".into(),
            shape: vec![1, 2],
            contents: Some(InferTensorContents {
                fp32_contents: vec![1.0, 2.0],
                ..Default::default()
            }),
            ..Default::default()
        }],
        ..Default::default()
    }
    .encode_to_vec();
    let mut framed = vec![0];
    framed.extend_from_slice(&(msg.len() as u32).to_be_bytes());
    framed.extend_from_slice(&msg);
    let req = request(
        Method::POST,
        addr,
        "/inference.GRPCInferenceService/ModelInfer",
        &[
            ("x-request-id", "grpc"),
            ("content-type", "application/grpc"),
            ("te", "trailers"),
        ],
        body_full(framed),
    )?;
    let reply = HttpClient::h2c().call(req).await?;
    assert_eq!(reply.status, 200);
    let answer = ModelInferResponse::decode(reply.body.slice(5..))?;
    assert_eq!(
        answer.outputs[0].contents.as_ref().unwrap().fp32_contents,
        [0.1, 0.7, 0.2]
    );
    // Three comparisons each: the identical candidate matches, the moved one does not.
    let counts = eventually(PATIENCE, || async {
        let m = Admin::new(ferry.admin()).metrics().await?;
        let get = |c, r| {
            m.sum(
                "ferry_mirror_compare_total",
                &[("cluster", c), ("result", r)],
            )
        };
        let counts = (
            get("same", "match"),
            get("off", "mismatch"),
            get("same", "mismatch"),
            get("off", "match"),
        );
        anyhow::ensure!(
            counts.0 + counts.2 == 3.0 && counts.1 + counts.3 == 3.0,
            "{counts:?}"
        );
        Ok(counts)
    })
    .await?;
    assert_eq!(counts, (3.0, 3.0, 0.0, 0.0));
    let m = Admin::new(ferry.admin()).metrics().await?;
    assert_eq!(
        m.sum(
            "ferry_mirror_argmax_total",
            &[("cluster", "off"), ("result", "agree")]
        ),
        3.0
    );
    assert_eq!(
        m.sum("ferry_mirror_max_abs_diff_count", &[("cluster", "off")]),
        3.0
    );
    // The mismatches name the tensor and the element, with both values and the request id.
    let samples = Admin::new(ferry.admin())
        .get("/mirror")
        .await?
        .json::<Value>()?;
    let list = samples["mismatches"].as_array().unwrap();
    let ids: HashSet<&str> = list
        .iter()
        .map(|s| s["request_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, HashSet::from(["rest-json", "rest-binary", "grpc"]));
    for s in list {
        assert_eq!(
            (
                s["cluster"].as_str(),
                s["tensor"].as_str(),
                s["index"].as_u64()
            ),
            (Some("off"), Some("probs"), Some(1)),
            "{s}"
        );
        let value = |k: &str| s[k].as_str().unwrap().parse::<f64>().unwrap();
        assert!((value("primary") - 0.7).abs() < 1e-6, "{s}");
        assert!((value("candidate") - 0.71).abs() < 1e-6, "{s}");
    }
    assert!(
        ferry
            .logs()
            .contains("mirror answer differs from the primary's")
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_translated_route_mirrors_the_translated_request() -> anyhow::Result<()> {
    let primary = OipModel::start(0.0).await?;
    let off = OipModel::start(1e-2).await?;
    let cfg = config(
        json!([{ "name": "infer", "to": "primary",
                 "translate": { "from": "rest", "to": "grpc" },
                 "mirror": [{ "cluster": "off", "fraction": 1, "compare": "oip" }] }]),
        json!([
            h2_cluster("primary", primary.addr()),
            h2_cluster("off", off.addr())
        ]),
    );
    let ferry = start(&cfg).await?;
    let addr = ferry.listener(LISTENER)?;
    let req = request(
        Method::POST,
        addr,
        INFER,
        &[
            ("x-request-id", "translated"),
            ("content-type", "application/json"),
        ],
        body_full(json_body()),
    )?;
    let reply = HttpClient::http1().call(req).await?;
    assert_eq!(reply.status, 200, "{}", reply.text());
    // The caller gets REST JSON back from the gRPC primary.
    assert_eq!(reply.json::<Value>()?["outputs"][0]["datatype"], "FP32");
    eventually(PATIENCE, || async {
        let m = Admin::new(ferry.admin()).metrics().await?;
        let n = m.sum(
            "ferry_mirror_compare_total",
            &[("cluster", "off"), ("result", "mismatch")],
        );
        anyhow::ensure!(n == 1.0, "{n} mismatches");
        Ok(())
    })
    .await?;
    // Both upstreams got the gRPC request: the candidate gets what the primary gets.
    let seen = off.seen();
    assert_eq!(seen.len(), 1);
    assert!(seen[0].grpc, "{seen:?}");
    assert!(primary.seen()[0].grpc);
    let samples = Admin::new(ferry.admin())
        .get("/mirror")
        .await?
        .json::<Value>()?;
    let first = &samples["mismatches"][0];
    assert_eq!(
        (first["tensor"].as_str(), first["index"].as_u64()),
        (Some("probs"), Some(1))
    );
    Ok(())
}
