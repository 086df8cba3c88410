//! How to connect to Kafka brokers securely: TLS and SASL flags, declared
//! once and stamped out with a flag prefix for each place that reaches
//! brokers (`--store-…` for the Kafka store, `--from-kafka-…` for
//! `import --from-kafka`), then checked into [`KafkaTls`] and
//! [`SaslCredentials`] by one function.

use std::path::PathBuf;

use crate::registry::embedded::kafka::sasl::{SaslCredentials, SaslMechanism};
use crate::registry::embedded::kafka::topic_store::KafkaTls;

/// Declares a clap struct `$name` of TLS and SASL flags named
/// `--$flag-tls`, `--$flag-sasl-mechanism`, … with environment variables
/// `$env_TLS`, …; the SASL password comes from `$env_SASL_PASSWORD` or
/// `--$flag-sasl-password-file`, never from a flag (it would show in `ps`).
macro_rules! kafka_security_args {
    ($(#[doc = $doc:literal])* $name:ident, $heading:literal, $flag:literal, $env:literal) => {
        $(#[doc = $doc])*
        #[derive(Debug, Default, clap::Args)]
        #[command(next_help_heading = $heading)]
        pub struct $name {
            /// Connect to the brokers over TLS (their listeners' `SSL` or
            /// `SASL_SSL` protocol); their certificates must be valid for the
            /// host names given and chain to the system's CAs or the CA file's.
            #[arg(id = concat!($flag, "-tls"), long = concat!($flag, "-tls"), env = concat!($env, "_TLS"))]
            pub tls: bool,

            /// PEM file of CA certificates trusted for the server's
            /// certificate, besides the system's (needs TLS).
            #[arg(
                id = concat!($flag, "-ca-file"),
                long = concat!($flag, "-ca-file"),
                env = concat!($env, "_CA_FILE"),
                value_name = "FILE"
            )]
            pub ca_file: Option<PathBuf>,

            /// PEM certificate chain presented to servers that authenticate
            /// clients by certificate (needs TLS and the client key).
            #[arg(
                id = concat!($flag, "-client-cert"),
                long = concat!($flag, "-client-cert"),
                env = concat!($env, "_CLIENT_CERT"),
                value_name = "FILE"
            )]
            pub client_cert: Option<PathBuf>,

            /// PEM private key of the client certificate.
            #[arg(
                id = concat!($flag, "-client-key"),
                long = concat!($flag, "-client-key"),
                env = concat!($env, "_CLIENT_KEY"),
                value_name = "FILE"
            )]
            pub client_key: Option<PathBuf>,

            /// Kafka: authenticate to the brokers with SASL: `PLAIN`,
            /// `SCRAM-SHA-256` or `SCRAM-SHA-512` (Kafka's `sasl.mechanism`;
            /// after TLS when both are set). Needs the user name and a
            /// password: the environment variable
            #[doc = concat!("`", $env, "_SASL_PASSWORD`")]
            /// or the password file.
            #[arg(
                id = concat!($flag, "-sasl-mechanism"),
                long = concat!($flag, "-sasl-mechanism"),
                env = concat!($env, "_SASL_MECHANISM"),
                value_name = "MECHANISM"
            )]
            pub sasl_mechanism: Option<SaslMechanism>,

            /// Kafka: the SASL user name.
            #[arg(
                id = concat!($flag, "-sasl-username"),
                long = concat!($flag, "-sasl-username"),
                env = concat!($env, "_SASL_USERNAME"),
                value_name = "USER"
            )]
            pub sasl_username: Option<String>,

            /// Kafka: a file holding the SASL password (trailing newline
            /// ignored); or set
            #[doc = concat!("`", $env, "_SASL_PASSWORD`.")]
            #[arg(
                id = concat!($flag, "-sasl-password-file"),
                long = concat!($flag, "-sasl-password-file"),
                env = concat!($env, "_SASL_PASSWORD_FILE"),
                value_name = "FILE"
            )]
            pub sasl_password_file: Option<PathBuf>,

            /// The SASL password from the environment, read when the flags are.
            #[arg(skip = std::env::var(concat!($env, "_SASL_PASSWORD")).ok())]
            pub sasl_password: Option<String>,
        }

        impl $name {
            /// The flags as given, with the prefix of their names.
            pub fn security(&self) -> KafkaSecurity {
                KafkaSecurity {
                    flag: concat!("--", $flag),
                    password_env: concat!($env, "_SASL_PASSWORD"),
                    tls: self.tls,
                    ca_file: self.ca_file.clone(),
                    client_cert: self.client_cert.clone(),
                    client_key: self.client_key.clone(),
                    sasl_mechanism: self.sasl_mechanism,
                    sasl_username: self.sasl_username.clone(),
                    sasl_password: self.sasl_password.clone(),
                    sasl_password_file: self.sasl_password_file.clone(),
                }
            }
        }
    };
}

kafka_security_args!(
    /// TLS (for PostgreSQL and Kafka) and SASL (Kafka) to the store.
    StoreSecurityArgs,
    "Store",
    "store",
    "SCHEMAOPS_STORE"
);

kafka_security_args!(
    /// TLS and SASL to the brokers of `import --from-kafka`.
    FromKafkaSecurityArgs,
    "Kafka source",
    "from-kafka",
    "SCHEMAOPS_IMPORT_FROM_KAFKA"
);

/// TLS and SASL flags as given, before they are checked.
#[derive(Debug, Default)]
pub struct KafkaSecurity {
    /// The flags' prefix, `--store` or `--from-kafka`, for messages.
    pub flag: &'static str,
    /// The environment variable the password may come from, for messages.
    pub password_env: &'static str,
    /// `--…-tls`.
    pub tls: bool,
    /// `--…-ca-file`.
    pub ca_file: Option<PathBuf>,
    /// `--…-client-cert`.
    pub client_cert: Option<PathBuf>,
    /// `--…-client-key`.
    pub client_key: Option<PathBuf>,
    /// `--…-sasl-mechanism`.
    pub sasl_mechanism: Option<SaslMechanism>,
    /// `--…-sasl-username`.
    pub sasl_username: Option<String>,
    /// The password from the environment.
    pub sasl_password: Option<String>,
    /// `--…-sasl-password-file`.
    pub sasl_password_file: Option<PathBuf>,
}

impl KafkaSecurity {
    /// The first TLS or SASL flag given, if any.
    pub fn first_given(&self) -> Option<String> {
        let flag = self.flag;
        [
            ("tls", self.tls),
            ("sasl-mechanism", self.sasl_mechanism.is_some()),
            ("sasl-username", self.sasl_username.is_some()),
            ("sasl-password-file", self.sasl_password_file.is_some()),
        ]
        .iter()
        .find(|(_, given)| *given)
        .map(|(name, _)| format!("{flag}-{name}"))
    }

    /// The TLS settings and SASL credentials for Kafka brokers: the files
    /// must exist, SASL needs a user name and a password.
    ///
    /// # Errors
    /// A message naming the flag at fault; never the password.
    pub fn into_kafka(self) -> Result<(Option<KafkaTls>, Option<SaslCredentials>), String> {
        let flag = self.flag;
        let sasl = self.sasl()?;
        let tls_files = [
            ("ca-file", &self.ca_file),
            ("client-cert", &self.client_cert),
            ("client-key", &self.client_key),
        ];
        if !self.tls {
            if let Some((name, _)) = tls_files.iter().find(|(_, file)| file.is_some()) {
                return Err(format!("{flag}-{name} is used over TLS only: add {flag}-tls"));
            }
            return Ok((None, sasl));
        }
        for (name, file) in tls_files {
            if let Some(path) = file
                && !path.is_file()
            {
                return Err(format!("{flag}-{name} {} is not a readable file", path.display()));
            }
        }
        let client_identity = match (self.client_cert, self.client_key) {
            (Some(cert), Some(key)) => Some((cert, key)),
            (None, None) => None,
            (Some(_), None) => return Err(format!("{flag}-client-cert needs {flag}-client-key")),
            (None, Some(_)) => return Err(format!("{flag}-client-key needs {flag}-client-cert")),
        };
        Ok((
            Some(KafkaTls {
                ca_file: self.ca_file,
                client_identity,
            }),
            sasl,
        ))
    }

    fn sasl(&self) -> Result<Option<SaslCredentials>, String> {
        let flag = self.flag;
        let env = self.password_env;
        let Some(mechanism) = self.sasl_mechanism else {
            if let Some(name) = [
                ("sasl-username", self.sasl_username.is_some()),
                ("sasl-password-file", self.sasl_password_file.is_some()),
            ]
            .iter()
            .find_map(|(name, given)| given.then_some(name))
            {
                return Err(format!("{flag}-{name} needs {flag}-sasl-mechanism"));
            }
            return Ok(None);
        };
        let username = self
            .sasl_username
            .clone()
            .filter(|name| !name.is_empty())
            .ok_or_else(|| format!("{flag}-sasl-mechanism needs {flag}-sasl-username"))?;
        let password = match (&self.sasl_password_file, &self.sasl_password) {
            (Some(path), _) => super::connection::secret_file(&format!("{flag}-sasl-password-file"), path)?,
            (None, Some(password)) if !password.is_empty() => password.clone(),
            (None, _) => {
                return Err(format!(
                    "{flag}-sasl-mechanism needs a password: set {env} or give {flag}-sasl-password-file"
                ));
            }
        };
        Ok(Some(SaslCredentials {
            mechanism,
            username,
            password,
        }))
    }
}
