//! `schemaops operator` started as a child process against a kubeconfig,
//! with its registry API and health endpoints on free loopback ports.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running operator; killed when dropped.
pub struct OperatorProcess {
    child: Child,
    /// The registry's REST API, `http://127.0.0.1:PORT`.
    pub registry_url: String,
    /// The health endpoints, `http://127.0.0.1:PORT`.
    pub health_url: String,
    /// The admission webhook, `https://127.0.0.1:PORT`, when `--webhook-listen` was given.
    pub webhook_url: Option<String>,
}

impl OperatorProcess {
    /// Starts the operator on `data` against `kubeconfig` and waits until it listens.
    pub fn start(kubeconfig: &Path, data: &Path, extra: &[&str]) -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_schemaops"))
            .args([
                "operator",
                "--registry-listen",
                "127.0.0.1:0",
                "--health-listen",
                "127.0.0.1:0",
            ])
            .arg("--kubeconfig")
            .arg(kubeconfig)
            .arg("--data")
            .arg(data)
            .args(extra)
            .env(
                "RUST_LOG",
                std::env::var("SCHEMAOPS_OPERATOR_LOG").unwrap_or_else(|_| "warn".to_owned()),
            )
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("the schemaops binary starts");
        let stdout = child.stdout.take().expect("stdout is piped");
        let (sender, receiver) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if sender.send(line).is_err() {
                    break;
                }
            }
        });
        let next_line = |what: &str| {
            receiver
                .recv_timeout(Duration::from_secs(30))
                .unwrap_or_else(|_| panic!("the operator prints `{what}` within 30 s"))
        };
        let address = |line: String, prefix: &str, scheme: &str| {
            let address = line
                .strip_prefix(prefix)
                .unwrap_or_else(|| panic!("expected `{prefix} ADDRESS`, got {line:?}"))
                .trim()
                .to_owned();
            format!("{scheme}://{address}")
        };
        // The embedded registry's address, or the external registry's URL.
        let line = next_line("registry listening on ADDRESS");
        let registry_url = match line.strip_prefix("registry external at ") {
            Some(url) => url.trim().to_owned(),
            None => address(line, "registry listening on", "http"),
        };
        let health_url = address(next_line("health listening on ADDRESS"), "health listening on", "http");
        let webhook_url = extra.contains(&"--webhook-listen").then(|| {
            address(
                next_line("webhook listening on ADDRESS"),
                "webhook listening on",
                "https",
            )
        });
        Self {
            child,
            registry_url,
            health_url,
            webhook_url,
        }
    }

    /// Waits until `/readyz` answers 200 (the controllers' caches are filled).
    pub async fn wait_ready(&self, timeout: Duration) {
        let deadline = Instant::now() + timeout;
        let client = super::http::http_client();
        loop {
            let ready = client
                .get(format!("{}/readyz", self.health_url))
                .send()
                .await
                .is_ok_and(|response| response.status().is_success());
            if ready {
                return;
            }
            assert!(Instant::now() < deadline, "the operator is not ready after {timeout:?}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// The process ID, for measurements.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Sends SIGKILL and waits for the process to end.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Sends SIGTERM and waits up to `timeout` for the exit; returns the exit code.
    pub fn terminate(&mut self, timeout: Duration) -> Option<i32> {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            if let Ok(Some(status)) = self.child.try_wait() {
                return status.code();
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    }
}

impl Drop for OperatorProcess {
    fn drop(&mut self) {
        self.kill();
    }
}
