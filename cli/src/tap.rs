//! `ferry tap`: prints the access records of live requests from ferry's admin `GET /tap`, as
//! they finish, until interrupted (like `linkerd viz tap`). The filtering is ferry's: only
//! admitted records cross the socket.

use std::process::ExitCode;

use anyhow::Context as _;
use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper_util::rt::TokioIo;
use tokio::io::AsyncWriteExt as _;

/// Flags of `ferry tap`.
#[derive(Debug, clap::Args)]
pub struct TapArgs {
    /// ferry's admin address.
    #[arg(long, default_value = "127.0.0.1:15000")]
    admin: String,
    /// Only requests matched by this route (repeat for any of several).
    #[arg(long)]
    route: Vec<String>,
    /// Only requests naming this model (repeat for any of several).
    #[arg(long)]
    model: Vec<String>,
    /// Only answers with these statuses: `503`, `5xx`, `500-504`, or a comma-separated list.
    #[arg(long)]
    status: Vec<String>,
    /// Only requests to this `:authority`/`Host` (repeat for any of several).
    #[arg(long)]
    authority: Vec<String>,
    /// Line format: the access log's JSON object or its text line.
    #[arg(short = 'o', long = "output", value_enum, default_value = "json")]
    output: Output,
}

/// `-o` values.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum Output {
    /// One JSON object a line (the access log's `format: json`).
    Json,
    /// The access log's `format: text` line.
    Text,
}

/// Runs `ferry tap` until the stream ends or stdout closes.
pub async fn run(args: TapArgs) -> anyhow::Result<ExitCode> {
    let path = path(&args);
    let stream = tokio::net::TcpStream::connect(&args.admin)
        .await
        .with_context(|| format!("connecting to ferry's admin at {}", args.admin))?;
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .context("HTTP handshake with the admin endpoint")?;
    tokio::spawn(conn);
    let req = http::Request::get(&path)
        .header(http::header::HOST, &args.admin)
        .body(Empty::<Bytes>::new())?;
    let resp = sender.send_request(req).await.context("GET /tap")?;
    let status = resp.status();
    if status != http::StatusCode::OK {
        // A refusal is small JSON; read no more than a screenful of anything else.
        let body = http_body_util::Limited::new(resp.into_body(), 64 * 1024)
            .collect()
            .await
            .map(|b| b.to_bytes())
            .unwrap_or_default();
        eprintln!(
            "ferry tap: {status}: {}",
            String::from_utf8_lossy(&body).trim_end()
        );
        // 64 = EX_USAGE: the filter was refused.
        return Ok(if status == http::StatusCode::BAD_REQUEST {
            ExitCode::from(64)
        } else {
            ExitCode::FAILURE
        });
    }
    eprintln!("ferry tap: tapping http://{}{path}", args.admin);
    let mut body = resp.into_body();
    let mut stdout = tokio::io::stdout();
    while let Some(frame) = body.frame().await {
        let frame = frame.context("reading the tap stream")?;
        let Ok(data) = frame.into_data() else {
            continue;
        };
        // stdout closed (e.g. `| head`): the reader has what it wanted.
        if stdout.write_all(&data).await.is_err() || stdout.flush().await.is_err() {
            return Ok(ExitCode::SUCCESS);
        }
    }
    eprintln!("ferry tap: the admin endpoint ended the stream");
    Ok(ExitCode::FAILURE)
}

/// `/tap?route=…&format=…`, values percent-encoded.
fn path(args: &TapArgs) -> String {
    let mut path = String::from("/tap?format=");
    path.push_str(match args.output {
        Output::Json => "json",
        Output::Text => "text",
    });
    let pairs = [
        ("route", &args.route),
        ("model", &args.model),
        ("status", &args.status),
        ("authority", &args.authority),
    ];
    for (key, values) in pairs {
        for value in values {
            path.push('&');
            path.push_str(key);
            path.push('=');
            encode(&mut path, value);
        }
    }
    path
}

/// Percent-encodes everything but RFC 3986's unreserved characters.
fn encode(out: &mut String, value: &str) {
    for b in value.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_query_carries_every_filter_encoded() {
        let args = TapArgs {
            admin: "127.0.0.1:15000".into(),
            route: vec!["a b".into(), "c".into()],
            model: vec!["llama/3".into()],
            status: vec!["5xx,429".into()],
            authority: vec![],
            output: Output::Text,
        };
        assert_eq!(
            path(&args),
            "/tap?format=text&route=a%20b&route=c&model=llama%2F3&status=5xx%2C429"
        );
    }
}
