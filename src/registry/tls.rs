//! rustls client configurations for the connections the registry opens (an
//! external registry over HTTPS, the PostgreSQL store): always the ring
//! provider and rustls's safe protocol versions, with roots from the
//! system's trust store, a CA file, or both.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::{VerifierBuilderError, WantsClientCert, WebPkiServerVerifier};
use rustls::{ClientConfig, ConfigBuilder, DigitallySignedStruct, RootCertStore, SignatureScheme};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};

/// A PEM file (or PEM text from elsewhere) that could not be read or holds nothing usable.
#[derive(Debug, thiserror::Error)]
#[error("failed to read {what} from {}", path.display())]
pub struct ReadPemError {
    /// Which file: "CA certificates", "client certificate", "client key".
    pub what: &'static str,
    /// The file, or where PEM text given in memory came from (`Secret team-a/tls key tls.crt`).
    pub path: PathBuf,
    /// Why.
    #[source]
    pub source: Box<dyn std::error::Error + Send + Sync>,
}

/// The certificates of a PEM file; an error naming the file when it cannot
/// be read or holds no certificate.
///
/// # Errors
/// [`ReadPemError`].
pub fn read_certificates(what: &'static str, path: &Path) -> Result<Vec<CertificateDer<'static>>, ReadPemError> {
    let failed = |source: Box<dyn std::error::Error + Send + Sync>| ReadPemError {
        what,
        path: path.to_owned(),
        source,
    };
    let certificates = CertificateDer::pem_file_iter(path)
        .map_err(|error| failed(Box::new(error)))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|error| failed(Box::new(error)))?;
    if certificates.is_empty() {
        return Err(failed("the file holds no PEM certificate".into()));
    }
    Ok(certificates)
}

/// PEM text given in memory (from a Kubernetes Secret or ConfigMap), with where it came from
/// for error messages. `Debug` shows only the origin.
#[derive(Clone, PartialEq, Eq)]
pub struct PemText {
    /// Where the text came from, e.g. `Secret team-a/registry-ca key ca.crt`.
    pub origin: String,
    /// The PEM text.
    pub pem: Vec<u8>,
}

impl std::fmt::Debug for PemText {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PemText({:?})", self.origin)
    }
}

/// The certificates of PEM text; an error naming its origin when it holds none.
///
/// # Errors
/// [`ReadPemError`].
pub fn parse_certificates(what: &'static str, text: &PemText) -> Result<Vec<CertificateDer<'static>>, ReadPemError> {
    let failed = |source: Box<dyn std::error::Error + Send + Sync>| ReadPemError {
        what,
        path: PathBuf::from(&text.origin),
        source,
    };
    let certificates = CertificateDer::pem_slice_iter(&text.pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|error| failed(Box::new(error)))?;
    if certificates.is_empty() {
        return Err(failed("it holds no PEM certificate".into()));
    }
    Ok(certificates)
}

/// A client certificate chain and its private key, from PEM text.
///
/// # Errors
/// [`ReadPemError`] naming the origin that holds no certificate or key.
pub fn parse_client_identity(
    cert: &PemText,
    key: &PemText,
) -> Result<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>), ReadPemError> {
    let chain = parse_certificates("client certificate", cert)?;
    let key = PrivateKeyDer::from_pem_slice(&key.pem).map_err(|error| ReadPemError {
        what: "client key",
        path: PathBuf::from(&key.origin),
        source: Box::new(error),
    })?;
    Ok((chain, key))
}

/// Adds every certificate of PEM `text` to `roots`.
///
/// # Errors
/// [`ReadPemError`] naming the origin when it holds no certificate or one is not a usable CA.
pub fn add_ca_pem(roots: &mut RootCertStore, text: &PemText) -> Result<(), ReadPemError> {
    for certificate in parse_certificates("CA certificates", text)? {
        roots.add(certificate).map_err(|error| ReadPemError {
            what: "CA certificates",
            path: PathBuf::from(&text.origin),
            source: Box::new(error),
        })?;
    }
    Ok(())
}

/// A client certificate chain and its private key, from two PEM files.
///
/// # Errors
/// [`ReadPemError`] naming the file that is unreadable or holds no
/// certificate or key.
pub fn read_client_identity(
    cert: &Path,
    key: &Path,
) -> Result<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>), ReadPemError> {
    let chain = read_certificates("client certificate", cert)?;
    let key = PrivateKeyDer::from_pem_file(key).map_err(|error| ReadPemError {
        what: "client key",
        path: key.to_owned(),
        source: Box::new(error),
    })?;
    Ok((chain, key))
}

/// Adds the system's trusted CA certificates to `roots`; unreadable ones are
/// logged and skipped.
pub fn add_system_roots(roots: &mut RootCertStore) {
    let found = rustls_native_certs::load_native_certs();
    for error in &found.errors {
        tracing::warn!(error = %error, "Could not read some of the system's CA certificates");
    }
    let (added, _ignored) = roots.add_parsable_certificates(found.certs);
    tracing::debug!(roots = added, "Trusting the system's CA certificates");
}

/// Adds every certificate of the PEM file `path` to `roots`.
///
/// # Errors
/// [`ReadPemError`] naming the file when it is unreadable, holds no
/// certificate, or one of them is not a usable CA certificate.
pub fn add_ca_file(roots: &mut RootCertStore, path: &Path) -> Result<(), ReadPemError> {
    for certificate in read_certificates("CA certificates", path)? {
        roots.add(certificate).map_err(|error| ReadPemError {
            what: "CA certificates",
            path: path.to_owned(),
            source: Box::new(error),
        })?;
    }
    Ok(())
}

/// Like [`client_builder`], but the server's certificate must be issued to
/// `name` rather than to the host the client connects to (a registry reached
/// by an address its certificate does not name). Everything else about the
/// certificate is checked as usual: chain to `roots`, validity, usage.
///
/// # Errors
/// When `roots` is empty, or the ring provider supports none of the safe
/// protocol versions.
pub fn client_builder_verifying_as(
    roots: RootCertStore,
    name: ServerName<'static>,
) -> Result<ConfigBuilder<ClientConfig, WantsClientCert>, VerifyAsError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let inner = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), Arc::clone(&provider)).build()?;
    let builder = ClientConfig::builder_with_provider(provider).with_safe_default_protocol_versions()?;
    Ok(builder
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(VerifyAs { inner, name })))
}

/// Why [`client_builder_verifying_as`] could not build a configuration.
#[derive(Debug, thiserror::Error)]
pub enum VerifyAsError {
    /// The certificate verifier refused the roots (e.g. there are none).
    #[error("failed to build the certificate verifier")]
    Verifier(#[from] VerifierBuilderError),
    /// rustls refused the configuration.
    #[error("failed to configure TLS")]
    Tls(#[from] rustls::Error),
}

/// WebPKI verification of the server's certificate against a fixed name.
#[derive(Debug)]
struct VerifyAs {
    inner: Arc<WebPkiServerVerifier>,
    name: ServerName<'static>,
}

impl ServerCertVerifier for VerifyAs {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        _connected_to: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        self.inner
            .verify_server_cert(end_entity, intermediates, &self.name, ocsp_response, now)
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        certificate: &CertificateDer<'_>,
        signature: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls12_signature(message, certificate, signature)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        certificate: &CertificateDer<'_>,
        signature: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls13_signature(message, certificate, signature)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.inner.supported_verify_schemes()
    }
}

/// A client configuration on the ring provider that trusts `roots`, still
/// to be told whether it presents a client certificate.
///
/// # Errors
/// When the ring provider supports none of the safe protocol versions (it
/// supports both TLS 1.2 and 1.3, so this does not happen in practice).
pub fn client_builder(roots: RootCertStore) -> Result<ConfigBuilder<ClientConfig, WantsClientCert>, rustls::Error> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    Ok(ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_root_certificates(roots))
}
