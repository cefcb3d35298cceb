//! `ferry top` in a real terminal (tmux): the routes after traffic, sorted by load, the failed
//! recent requests, and `q` ending the process.

use ferry_integration::tmux::Tmux;
use ferry_integration::{eventually, workspace};

use crate::support::{PATIENCE, Scene};

#[tokio::test]
async fn top_shows_the_routes_by_load_and_quits_on_q() -> anyhow::Result<()> {
    let scene = Scene::start().await?;
    scene.known_traffic().await?;
    let bin = workspace::ferry_bin().await?;
    let bin = bin.to_str().expect("a UTF-8 path");
    let admin = scene.ferry.admin().to_string();
    let command = [bin, "top", "--admin", &admin, "--window", "1m"];
    let tmux = Tmux::start(&command, 200, 50).await?;
    let screen = eventually(PATIENCE, || async {
        let screen = tmux.capture().await?;
        for needle in ["ROUTE", "chat", "embed", "grpc", "82.35%", "llama", "503"] {
            anyhow::ensure!(screen.contains(needle), "no {needle:?} on\n{screen}");
        }
        Ok(screen)
    })
    .await?;
    // Rows by load: chat (17 answers in the window), grpc (7), embed (5).
    let first = |name: &str| {
        screen
            .lines()
            .position(|l| l.starts_with(name))
            .unwrap_or(usize::MAX)
    };
    assert!(
        first("chat") < first("grpc") && first("grpc") < first("embed"),
        "not by load:\n{screen}"
    );
    assert!(
        screen.contains("slowest") && screen.contains("failed"),
        "{screen}"
    );
    tmux.send_keys("q").await?;
    let status = eventually(PATIENCE, || async {
        tmux.exit_status()
            .await?
            .ok_or_else(|| anyhow::anyhow!("ferry top still runs after q"))
    })
    .await?;
    assert_eq!(status, 0);
    Ok(())
}
