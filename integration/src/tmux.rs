//! A real terminal for TUI tests: tmux (Debian's, installed by `peers/install-tmux.sh`) on a
//! socket of its own, so a test sees only its own session and stops only its own server.

use std::sync::atomic::{AtomicU32, Ordering};

use anyhow::Context as _;
use tokio::process::Command;
use tokio::sync::OnceCell;

use crate::{peers, workspace};

static INSTALLED: OnceCell<()> = OnceCell::const_new();
static NEXT: AtomicU32 = AtomicU32::new(0);

/// A tmux server with one detached session running a command.
#[derive(Debug)]
pub struct Tmux {
    socket: String,
    /// Holds `status`, which the wrapping shell writes when the command exits.
    dir: tempfile::TempDir,
}

/// Installs tmux once per test process; a missing peer fails the test.
pub async fn install() -> anyhow::Result<()> {
    INSTALLED
        .get_or_try_init(|| async {
            let script = workspace::crate_dir().join("peers").join("install-tmux.sh");
            peers::run_installer(&script, &workspace::peers_dir(), "tmux").await
        })
        .await
        .copied()
}

// === impl Tmux ===

impl Tmux {
    /// Starts `command` in a detached `width`×`height` session of a new server.
    pub async fn start(command: &[&str], width: u16, height: u16) -> anyhow::Result<Tmux> {
        install().await?;
        let socket = format!(
            "ferry-test-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let dir = tempfile::tempdir()?;
        let status = dir.path().join("status");
        let status = status
            .to_str()
            .context("a UTF-8 temporary path")?
            .to_owned();
        let tmux = Tmux { socket, dir };
        let (w, h) = (width.to_string(), height.to_string());
        // The command runs under a shell that waits for it and writes its exit status: tmux
        // 3.3a sometimes leaves its pane's exited process unreaped (a zombie, `pane_dead` set
        // and no `pane_dead_status`) for as long as the server lives, so its status cannot be
        // asked of tmux.
        let script = format!("\"$@\"; echo $? > '{status}.part' && mv '{status}.part' '{status}'");
        let mut args = vec![
            "new-session",
            "-d",
            "-x",
            &w,
            "-y",
            &h,
            "sh",
            "-c",
            &script,
            "sh",
        ];
        args.extend_from_slice(command);
        tmux.run(&args).await?;
        // Keep the pane once the command exits, so its last screen can still be read.
        tmux.run(&["set-option", "-g", "remain-on-exit", "on"])
            .await?;
        Ok(tmux)
    }

    /// The pane's screen as text.
    pub async fn capture(&self) -> anyhow::Result<String> {
        self.run(&["capture-pane", "-p"]).await
    }

    /// Types `keys` (tmux key names: `q`, `Enter`, `C-c`).
    pub async fn send_keys(&self, keys: &str) -> anyhow::Result<()> {
        self.run(&["send-keys", keys]).await.map(|_| ())
    }

    /// The exit status of the pane's command once it has exited, `None` while it runs.
    pub async fn exit_status(&self) -> anyhow::Result<Option<i32>> {
        match tokio::fs::read_to_string(self.dir.path().join("status")).await {
            Ok(text) => Ok(Some(text.trim().parse().with_context(|| {
                format!("the exit status {text:?} is not a number")
            })?)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    async fn run(&self, args: &[&str]) -> anyhow::Result<String> {
        let out = Command::new("tmux")
            .args(["-L", &self.socket])
            .args(args)
            .kill_on_drop(true)
            .output()
            .await
            .context("running tmux")?;
        anyhow::ensure!(
            out.status.success(),
            "tmux {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }
}

impl Drop for Tmux {
    /// Stops this test's tmux server (and the command in it); not waited for.
    fn drop(&mut self) {
        let _ = std::process::Command::new("tmux")
            .args(["-L", &self.socket, "kill-server"])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn();
    }
}
