//! A throwaway PostgreSQL server for tests: a fresh cluster in a temp folder,
//! started with Debian's binaries on a free loopback port, one database per
//! test.
//!
//! PostgreSQL refuses to run as root, so as root the cluster belongs to the
//! `postgres` user (the Debian package creates it) and every server command
//! runs through `runuser -u postgres`. A watchdog shell stops the server and
//! removes the folder when the test process ends, however it ends: the
//! server shared by a test binary lives in a static, which is never dropped.
//!
//! [`shared_tls`] is a second kind of cluster: `ssl = on` with a certificate
//! from a throwaway CA (for `localhost` and 127.0.0.1), and a pg_hba.conf
//! that trusts TLS connections and rejects plain ones over TCP, so a
//! connection that works proves TLS was used; the user `certified` must also
//! show a client certificate. Its databases are created over
//! the Unix socket.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The superuser the cluster is created with (trust authentication on loopback).
const USER: &str = "schemaops";

/// On TLS clusters, a superuser that must log in with a client certificate
/// (`cert` authentication: the certificate's common name is the user).
pub const CERTIFIED_USER: &str = "certified";

/// A running PostgreSQL server; stopped and removed on drop.
pub struct PostgresServer {
    bin: PathBuf,
    folder: PathBuf,
    as_postgres: bool,
    /// The PEM file of the CA that signed the server's certificate, when TLS is on.
    ca_file: Option<PathBuf>,
    /// The PEM files of [`CERTIFIED_USER`]'s certificate and key, when TLS is on.
    client_identity: Option<(PathBuf, PathBuf)>,
    /// The TCP port on 127.0.0.1.
    pub port: u16,
}

/// The server shared by the tests of one binary, started on first use; `None`
/// (after saying why) when PostgreSQL is not installed, unless every test is
/// required to run (`SCHEMAOPS_REQUIRE_ALL=1`), which panics instead.
pub fn shared() -> Option<&'static PostgresServer> {
    static SERVER: OnceLock<Option<PostgresServer>> = OnceLock::new();
    SERVER.get_or_init(PostgresServer::start).as_ref()
}

/// Like [`shared`], a server that accepts only TLS connections over TCP.
pub fn shared_tls() -> Option<&'static PostgresServer> {
    static SERVER: OnceLock<Option<PostgresServer>> = OnceLock::new();
    SERVER.get_or_init(PostgresServer::start_tls).as_ref()
}

/// The directory holding `initdb` and `pg_ctl`, newest version first.
fn binaries() -> Option<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(|entry| entry.ok().map(|entry| entry.path().join("bin")))
        .filter(|bin| bin.join("initdb").is_file() && bin.join("pg_ctl").is_file())
        .collect();
    found.sort_by_key(|bin| {
        bin.parent()
            .and_then(|version| version.file_name()?.to_str()?.parse::<u32>().ok())
            .unwrap_or(0)
    });
    found.pop()
}

fn running_as_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|output| String::from_utf8_lossy(&output.stdout).trim() == "0")
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free loopback port")
        .port()
}

impl PostgresServer {
    /// Creates and starts a cluster; `None` when PostgreSQL is not installed.
    pub fn start() -> Option<Self> {
        Self::start_with(false, false)
    }

    /// As [`Self::start`], with `fsync` on, as a production server runs:
    /// for benchmarks that compare durable writes with SQLite's.
    pub fn start_durable() -> Option<Self> {
        Self::start_with(false, true)
    }

    /// Creates and starts a cluster that takes only TLS over TCP (see the
    /// module docs); `None` when PostgreSQL is not installed.
    pub fn start_tls() -> Option<Self> {
        Self::start_with(true, false)
    }

    /// Tests run with `fsync=off` (nothing to survive a crash of the
    /// machine); `durable` leaves it on.
    fn start_with(tls: bool, durable: bool) -> Option<Self> {
        let Some(bin) = binaries() else {
            let reason = "PostgreSQL is not installed (no /usr/lib/postgresql/*/bin/initdb); \
                          `apt-get install postgresql` (as .ci/run does)";
            assert!(!super::require_all(), "{reason}");
            eprintln!("skipping: {reason}");
            return None;
        };
        static COUNT: AtomicUsize = AtomicUsize::new(0);
        let folder = std::env::temp_dir().join(format!(
            "schemaops-pg-{}-{}",
            std::process::id(),
            COUNT.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&folder).expect("the cluster folder is created");
        let as_postgres = running_as_root();
        if as_postgres {
            let status = Command::new("chown")
                .args(["postgres:postgres"])
                .arg(&folder)
                .status()
                .expect("chown runs");
            assert!(status.success(), "the cluster folder can be given to the postgres user");
        }
        let mut server = Self {
            bin,
            folder,
            as_postgres,
            ca_file: None,
            client_identity: None,
            port: free_port(),
        };
        server.run(
            "initdb",
            &[
                "--pgdata",
                &server.data().display().to_string(),
                "--username",
                USER,
                "--auth",
                "trust",
                "--encoding",
                "UTF8",
                "--locale",
                "C",
                "--no-sync",
            ],
        );
        server.watch_this_process();
        let mut options = format!(
            "-p {} -k {} -c listen_addresses=127.0.0.1 -c max_connections=200 -c fsync={}",
            server.port,
            server.folder.display(),
            if durable { "on" } else { "off" }
        );
        if tls {
            options.push_str(&server.turn_tls_on());
        }
        server.run(
            "pg_ctl",
            &[
                "--pgdata",
                &server.data().display().to_string(),
                "--log",
                &server.folder.join("server.log").display().to_string(),
                "--wait",
                "--options",
                &options,
                "start",
            ],
        );
        if tls {
            let role = format!("CREATE ROLE {CERTIFIED_USER} LOGIN SUPERUSER");
            let (socket, port) = (server.folder.display().to_string(), server.port.to_string());
            server.run(
                "psql",
                &["-h", &socket, "-p", &port, "-U", USER, "-d", "postgres", "-c", &role],
            );
        }
        Some(server)
    }

    fn data(&self) -> PathBuf {
        self.folder.join("data")
    }

    /// Writes a CA, the server's certificate and key (the postgres user's,
    /// mode 0600 as the server demands) and a pg_hba.conf that rejects plain
    /// TCP; returns the server options that turn TLS on.
    fn turn_tls_on(&mut self) -> String {
        use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};
        let ca_key = KeyPair::generate().unwrap();
        let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca_params
            .distinguished_name
            .push(DnType::CommonName, "schemaops test PostgreSQL CA");
        let ca = ca_params.self_signed(&ca_key).unwrap();
        let issuer = Issuer::new(ca_params, &ca_key);
        let key = KeyPair::generate().unwrap();
        // rcgen makes "127.0.0.1" an IP address SAN and "localhost" a DNS one.
        let certificate = CertificateParams::new(vec!["localhost".to_owned(), "127.0.0.1".to_owned()])
            .unwrap()
            .signed_by(&key, &issuer)
            .unwrap();
        let client_key = KeyPair::generate().unwrap();
        let mut client_params = CertificateParams::new(Vec::<String>::new()).unwrap();
        client_params
            .distinguished_name
            .push(DnType::CommonName, CERTIFIED_USER);
        client_params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ClientAuth];
        let client_certificate = client_params.signed_by(&client_key, &issuer).unwrap();
        let client_cert_file = self.folder.join("client.crt");
        let client_key_file = self.folder.join("client.key");
        std::fs::write(&client_cert_file, client_certificate.pem()).unwrap();
        std::fs::write(&client_key_file, client_key.serialize_pem()).unwrap();
        self.client_identity = Some((client_cert_file, client_key_file));
        let ca_file = self.folder.join("ca.pem");
        std::fs::write(&ca_file, ca.pem()).unwrap();
        let cert_file = self.folder.join("server.crt");
        let key_file = self.folder.join("server.key");
        std::fs::write(&cert_file, certificate.pem()).unwrap();
        std::fs::write(&key_file, key.serialize_pem()).unwrap();
        std::fs::set_permissions(&key_file, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
        if self.as_postgres {
            let status = Command::new("chown")
                .arg("postgres:postgres")
                .args([&cert_file, &key_file])
                .status()
                .expect("chown runs");
            assert!(status.success(), "the server's key can be given to the postgres user");
        }
        // Unix sockets stay open for creating databases; TCP takes TLS only,
        // and the certified user must show its certificate.
        std::fs::write(
            self.data().join("pg_hba.conf"),
            format!(
                "local     all all              trust\n\
                 hostssl   all {CERTIFIED_USER} 127.0.0.1/32 cert\n\
                 hostssl   all all 127.0.0.1/32 trust\n\
                 hostnossl all all 127.0.0.1/32 reject\n"
            ),
        )
        .unwrap();
        self.ca_file = Some(ca_file);
        format!(
            " -c ssl=on -c ssl_cert_file={} -c ssl_key_file={} -c ssl_ca_file={}",
            cert_file.display(),
            key_file.display(),
            self.folder.join("ca.pem").display()
        )
    }

    /// The PEM file of the CA that signed the server's certificate (TLS clusters only).
    pub fn ca_file(&self) -> Option<&Path> {
        self.ca_file.as_deref()
    }

    /// The PEM files of [`CERTIFIED_USER`]'s client certificate and key (TLS clusters only).
    pub fn client_identity(&self) -> Option<(&Path, &Path)> {
        self.client_identity
            .as_ref()
            .map(|(cert, key)| (cert.as_path(), key.as_path()))
    }

    /// The command `program` of the server's binaries, as the postgres user when we are root.
    fn command(&self, program: &str) -> Command {
        let path = self.bin.join(program);
        if self.as_postgres {
            let mut command = Command::new("runuser");
            command.args(["-u", "postgres", "--"]).arg(path);
            command
        } else {
            Command::new(path)
        }
    }

    fn run(&self, program: &str, args: &[&str]) {
        let output = self
            .command(program)
            .args(args)
            .stdin(Stdio::null())
            .output()
            .unwrap_or_else(|error| panic!("{program} runs: {error}"));
        let log = std::fs::read_to_string(self.folder.join("server.log")).unwrap_or_default();
        assert!(
            output.status.success(),
            "{program} failed:\n{}\n{}\n{log}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
    }

    /// Stops the server and removes its folder once this test process ends.
    // The watchdog must outlive this process, so it is never waited for.
    #[allow(clippy::zombie_processes)]
    fn watch_this_process(&self) {
        let script = format!(
            "while kill -0 {pid} 2>/dev/null; do sleep 1; done; \
             {stop} '{pg_ctl}' --pgdata '{data}' --mode immediate stop >/dev/null 2>&1; \
             rm -rf '{folder}'",
            pid = std::process::id(),
            stop = if self.as_postgres { "runuser -u postgres --" } else { "" },
            pg_ctl = self.bin.join("pg_ctl").display(),
            data = self.data().display(),
            folder = self.folder.display(),
        );
        Command::new("sh")
            .args(["-c", &script])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("the watchdog starts");
    }

    /// The DSN of the maintenance database: over TCP, or over the Unix socket
    /// when TCP takes only TLS.
    fn admin_dsn(&self) -> String {
        match self.ca_file {
            None => format!("postgres://{USER}@127.0.0.1:{}/postgres", self.port),
            Some(_) => format!(
                "host={} port={} user={USER} dbname=postgres",
                self.folder.display(),
                self.port
            ),
        }
    }

    /// Creates an empty database and returns its DSN over TCP (without an
    /// `sslmode`).
    pub async fn database(&self) -> String {
        static COUNT: AtomicUsize = AtomicUsize::new(0);
        let name = format!("test_{}", COUNT.fetch_add(1, Ordering::Relaxed));
        let (client, connection) = tokio_postgres::connect(&self.admin_dsn(), tokio_postgres::NoTls)
            .await
            .expect("the test server accepts connections");
        let connection = tokio::spawn(connection);
        client
            .batch_execute(&format!("CREATE DATABASE {name}"))
            .await
            .expect("the test database is created");
        drop(client);
        let _ = connection.await;
        format!("postgres://{USER}@127.0.0.1:{}/{name}", self.port)
    }

    /// The folder holding the cluster.
    pub fn folder(&self) -> &Path {
        &self.folder
    }
}

impl Drop for PostgresServer {
    fn drop(&mut self) {
        let data = self.data().display().to_string();
        let _ = self
            .command("pg_ctl")
            .args(["--pgdata", &data, "--mode", "fast", "--wait", "stop"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        let _ = std::fs::remove_dir_all(&self.folder);
    }
}
