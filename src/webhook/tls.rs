//! The webhook's certificate: read from PEM files (for example mounted by
//! cert-manager), or generated at start-up with its own CA, and turned into
//! a rustls server configuration on the ring provider.
//!
//! Knows nothing of admission or HTTP.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use base64::Engine as _;
use rustls_pki_types::pem::PemObject as _;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use sha2::{Digest as _, Sha256};

/// Why the certificate could not be prepared.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A PEM file could not be read or holds nothing usable.
    #[error("failed to read {what} from {path}")]
    ReadPem {
        /// `certificates` or `private key`.
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// The parser's error.
        #[source]
        source: rustls_pki_types::pem::Error,
    },
    /// The certificate file holds no certificate.
    #[error("{path} holds no certificate")]
    NoCertificate {
        /// The file.
        path: PathBuf,
    },
    /// Generating the certificate failed.
    #[error("failed to generate the {what} certificate")]
    Generate {
        /// `CA` or `serving`.
        what: &'static str,
        /// rcgen's error.
        #[source]
        source: rcgen::Error,
    },
    /// rustls refused the certificate and key.
    #[error("the certificate and key cannot serve TLS")]
    ServerConfig(#[source] rustls::Error),
}

/// A serving certificate chain, its key, and the CA that clients should trust.
#[derive(Debug)]
pub struct Identity {
    /// The serving certificate first, then any intermediates.
    pub chain: Vec<CertificateDer<'static>>,
    /// The serving certificate's key.
    pub key: PrivateKeyDer<'static>,
    /// The PEM text clients trust: the generated CA, or the certificate file's
    /// content when the certificate came from files.
    pub ca_pem: String,
}

impl Identity {
    /// A new CA and a serving certificate it signs for `names` (DNS names or
    /// IP addresses), valid from now for rcgen's default period.
    ///
    /// # Errors
    /// [`Error::Generate`] when rcgen fails.
    pub fn generate(names: &[String]) -> Result<Self, Error> {
        let generate = |what| move |source| Error::Generate { what, source };
        let ca_key = rcgen::KeyPair::generate().map_err(generate("CA"))?;
        let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).map_err(generate("CA"))?;
        ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Constrained(0));
        ca_params.key_usages = vec![rcgen::KeyUsagePurpose::KeyCertSign, rcgen::KeyUsagePurpose::CrlSign];
        ca_params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "schemaops webhook CA");
        let ca = rcgen::CertifiedIssuer::self_signed(ca_params, ca_key).map_err(generate("CA"))?;

        let key = rcgen::KeyPair::generate().map_err(generate("serving"))?;
        let mut params = rcgen::CertificateParams::new(names.to_vec()).map_err(generate("serving"))?;
        params.distinguished_name.push(
            rcgen::DnType::CommonName,
            names.first().map_or("schemaops-webhook", String::as_str),
        );
        params.key_usages = vec![
            rcgen::KeyUsagePurpose::DigitalSignature,
            rcgen::KeyUsagePurpose::KeyEncipherment,
        ];
        params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ServerAuth];
        let certificate = params.signed_by(&key, &ca).map_err(generate("serving"))?;
        Ok(Self {
            chain: vec![certificate.der().clone()],
            key: PrivateKeyDer::Pkcs8(key.serialize_der().into()),
            ca_pem: ca.pem(),
        })
    }

    /// The chain and key from PEM files.
    ///
    /// # Errors
    /// [`Error::ReadPem`] or [`Error::NoCertificate`] naming the file.
    pub fn from_files(certificate: &Path, key: &Path) -> Result<Self, Error> {
        fn read(what: &'static str, path: &Path) -> impl Fn(rustls_pki_types::pem::Error) -> Error {
            let path = path.to_owned();
            move |source| Error::ReadPem {
                what,
                path: path.clone(),
                source,
            }
        }
        let chain = CertificateDer::pem_file_iter(certificate)
            .map_err(read("certificates", certificate))?
            .collect::<Result<Vec<_>, _>>()
            .map_err(read("certificates", certificate))?;
        if chain.is_empty() {
            return Err(Error::NoCertificate {
                path: certificate.to_owned(),
            });
        }
        let key_der = PrivateKeyDer::from_pem_file(key).map_err(read("private key", key))?;
        let ca_pem = std::fs::read_to_string(certificate).map_err(|source| Error::ReadPem {
            what: "certificates",
            path: certificate.to_owned(),
            source: rustls_pki_types::pem::Error::Io(source),
        })?;
        Ok(Self {
            chain,
            key: key_der,
            ca_pem,
        })
    }

    /// SHA-256 of the serving certificate (DER), as colon-separated hex.
    pub fn fingerprint(&self) -> String {
        let digest = Sha256::digest(self.chain[0].as_ref());
        digest
            .iter()
            .map(|byte| format!("{byte:02X}"))
            .collect::<Vec<_>>()
            .join(":")
    }

    /// The CA bundle as a `ValidatingWebhookConfiguration`'s `caBundle` wants
    /// it: the PEM text, base64-encoded.
    pub fn ca_bundle(&self) -> String {
        base64::engine::general_purpose::STANDARD.encode(self.ca_pem.as_bytes())
    }

    /// A rustls server configuration on the ring provider, HTTP/1.1 only.
    ///
    /// # Errors
    /// [`Error::ServerConfig`] when the key does not match or is unsupported.
    pub fn server_config(&self) -> Result<Arc<rustls::ServerConfig>, Error> {
        let mut config =
            rustls::ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
                .with_safe_default_protocol_versions()
                .map_err(Error::ServerConfig)?
                .with_no_client_auth()
                .with_single_cert(self.chain.clone(), self.key.clone_key())
                .map_err(Error::ServerConfig)?;
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(Arc::new(config))
    }
}
