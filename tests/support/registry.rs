//! `schemaops registry` started as a child process on a free loopback port.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// A running registry; killed when dropped.
pub struct RegistryProcess {
    child: Child,
    /// `http://127.0.0.1:PORT`.
    pub url: String,
}

impl RegistryProcess {
    /// Starts the registry on `data` and waits until it listens.
    pub async fn start(data: &Path) -> Self {
        Self::start_with(data, &[]).await
    }

    /// Starts the registry with extra arguments.
    pub async fn start_with(data: &Path, extra: &[&str]) -> Self {
        Self::spawn(
            Command::new(env!("CARGO_BIN_EXE_schemaops")),
            data,
            extra,
            Stdio::inherit(),
        )
        .await
    }

    /// As [`RegistryProcess::start_with`], with the process's address space
    /// limited to `kib` KiB (`ulimit -v`, set on the child alone): a check
    /// that runs away fails inside it instead of taking the machine down.
    pub async fn start_limited(data: &Path, extra: &[&str], kib: u64) -> Self {
        let mut command = Command::new("sh");
        command
            .arg("-c")
            .arg(format!("ulimit -v {kib} && exec \"$0\" \"$@\""))
            .arg(env!("CARGO_BIN_EXE_schemaops"));
        Self::spawn(command, data, extra, Stdio::inherit()).await
    }

    /// Starts the registry with its log (stderr) written to the file `log`,
    /// for tests that read what the process logged.
    pub async fn start_logging_to(data: &Path, extra: &[&str], log: &Path) -> Self {
        let file = std::fs::File::create(log).expect("the log file can be created");
        Self::spawn(
            Command::new(env!("CARGO_BIN_EXE_schemaops")),
            data,
            extra,
            Stdio::from(file),
        )
        .await
    }

    async fn spawn(mut command: Command, data: &Path, extra: &[&str], stderr: Stdio) -> Self {
        let mut child = command
            .args(["registry", "--listen", "127.0.0.1:0", "--data"])
            .arg(data)
            .args(extra)
            .env("RUST_LOG", "warn")
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .expect("the schemaops binary starts");
        let stdout = child.stdout.take().expect("stdout is piped");
        let line = tokio::task::spawn_blocking(move || {
            let mut line = String::new();
            BufReader::new(stdout).read_line(&mut line).map(|_| line)
        });
        let line = tokio::time::timeout(Duration::from_secs(30), line)
            .await
            .expect("the registry starts within 30 s")
            .expect("the reader thread runs")
            .expect("stdout is readable");
        let address = line
            .trim()
            .strip_prefix("listening on ")
            .unwrap_or_else(|| panic!("the registry prints its address, got {line:?}"))
            .to_owned();
        Self {
            child,
            url: format!("http://{address}"),
        }
    }

    /// The process ID.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Sends SIGKILL and waits for the process to end.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Sends SIGTERM and waits up to `timeout` for a clean exit; returns the exit code.
    pub fn terminate(&mut self, timeout: Duration) -> Option<i32> {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let deadline = std::time::Instant::now() + timeout;
        while std::time::Instant::now() < deadline {
            if let Ok(Some(status)) = self.child.try_wait() {
                return status.code();
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    }
}

impl Drop for RegistryProcess {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Runs `schemaops registry --listen 127.0.0.1:0 --data TEMP` with `extra`
/// and `env`, which must make it refuse to start: returns its stderr once it
/// exits with status 2 without having printed its address (it is killed,
/// and the test fails, after `patience`).
pub fn refusing_to_start(extra: &[&str], env: &[(&str, &str)], patience: Duration) -> String {
    let data = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_schemaops"))
        .args(["registry", "--listen", "127.0.0.1:0", "--data"])
        .arg(data.path())
        .args(extra)
        .envs(env.iter().copied())
        .env("RUST_LOG", "warn")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the schemaops binary starts");
    let deadline = std::time::Instant::now() + patience;
    while child.try_wait().unwrap().is_none() {
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!("the registry kept running with {extra:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let output = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert_eq!(output.status.code(), Some(2), "stdout: {stdout}\nstderr: {stderr}");
    assert!(!stdout.contains("listening on"), "{stdout}");
    stderr
}
