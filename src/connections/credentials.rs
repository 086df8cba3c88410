//! An external connection's spec plus the Secrets and ConfigMaps it names,
//! fetched, into the [`ExternalConfig`] of one of its URLs. Pure: the caller
//! fetches; nothing here logs or shows a secret value.

use std::collections::BTreeMap;
use std::time::Duration;

use super::ResolveError;
use super::rules::{Connection, Source, SourceKind, source_namespace};
use crate::crd::ExternalRegistrySpec;
use crate::registry::external::{ExternalAuth, ExternalConfig, PemText};

/// A Secret's or ConfigMap's data as read, with its `resourceVersion`
/// (part of a cached client's key: a changed Secret rebuilds the client).
#[derive(Clone, PartialEq, Eq, Default)]
pub struct Fetched {
    /// `metadata.resourceVersion`.
    pub resource_version: String,
    /// The data, decoded: a Secret's `data` (and `stringData`), a ConfigMap's `data` and `binaryData`.
    pub data: BTreeMap<String, Vec<u8>>,
}

impl std::fmt::Debug for Fetched {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fetched")
            .field("resource_version", &self.resource_version)
            .field("keys", &self.data.keys().collect::<Vec<_>>())
            .finish()
    }
}

/// The key of a `kubernetes.io/tls` Secret holding the certificate chain.
pub const TLS_CERT_KEY: &str = "tls.crt";
/// The key of a `kubernetes.io/tls` Secret holding the private key.
pub const TLS_KEY_KEY: &str = "tls.key";

/// The configuration of the external `connection` for all of `spec.urls`:
/// the first, then the others as fallbacks (each with the context applied),
/// with the credentials and TLS material taken from `fetched`.
///
/// # Errors
/// As [`external_config`].
pub fn failover_config(
    connection: &Connection,
    spec: &ExternalRegistrySpec,
    fetched: &BTreeMap<Source, Fetched>,
) -> Result<ExternalConfig, ResolveError> {
    let mut urls = spec.urls.iter();
    let first = urls.next().ok_or_else(|| ResolveError::InvalidConnection {
        reference: connection.reference.clone(),
        problem: "spec.external.urls is empty".to_owned(),
    })?;
    let mut config = external_config(connection, spec, first, fetched)?;
    for url in urls {
        config
            .fallback_urls
            .push(external_config(connection, spec, url, fetched)?.url);
    }
    Ok(config)
}

/// The configuration for `url` (one of `spec.urls`) of the external
/// connection `connection`, with the credentials and TLS material taken from
/// `fetched` (every [`super::rules::sources`] entry that exists).
///
/// # Errors
/// [`ResolveError::SourceNotFound`] / [`ResolveError::KeyMissing`] naming the
/// Secret or ConfigMap (and key), [`ResolveError::InvalidConnection`] for a
/// bad URL or context.
pub fn external_config(
    connection: &Connection,
    spec: &ExternalRegistrySpec,
    url: &str,
    fetched: &BTreeMap<Source, Fetched>,
) -> Result<ExternalConfig, ResolveError> {
    let invalid = |problem: String| ResolveError::InvalidConnection {
        reference: connection.reference.clone(),
        problem,
    };
    let mut base = reqwest::Url::parse(url).map_err(|error| invalid(format!("{url} is not a URL ({error})")))?;
    if let Some(context) = spec.context.as_deref() {
        let name = crate::registry::context::name(context);
        if name != crate::registry::context::DEFAULT_CONTEXT {
            // Confluent (and the embedded registry) serve a context under `/contexts/{ctx}/…`.
            let path = format!("{}/contexts/{name}", base.path().trim_end_matches('/'));
            base.set_path(&path);
        }
    }
    let mut config = ExternalConfig::new(base);
    let value = |kind: SourceKind, namespace: Option<&str>, name: &str, key: &str, field: &str| {
        let namespace = source_namespace(connection, namespace, field)?;
        let source = Source {
            kind,
            namespace: namespace.clone(),
            name: name.to_owned(),
        };
        let Some(found) = fetched.get(&source) else {
            return Err(ResolveError::SourceNotFound {
                reference: connection.reference.clone(),
                source_kind: kind.as_str(),
                namespace,
                name: name.to_owned(),
            });
        };
        found
            .data
            .get(key)
            .filter(|value| !value.is_empty())
            .map(|value| (value.clone(), format!("{} {namespace}/{name} key {key}", kind.as_str())))
            .ok_or_else(|| ResolveError::KeyMissing {
                reference: connection.reference.clone(),
                source_kind: kind.as_str(),
                namespace: namespace.clone(),
                name: name.to_owned(),
                key: key.to_owned(),
            })
    };
    let text = |bytes: Vec<u8>, kind: SourceKind, origin: &str| {
        String::from_utf8(bytes).map_err(|_| invalid(format!("{origin} ({}) is not UTF-8 text", kind.as_str())))
    };
    if let Some(auth) = &spec.auth {
        if let Some(basic) = &auth.basic {
            let secret = &basic.password_secret_ref;
            let (password, origin) = value(
                SourceKind::Secret,
                secret.namespace.as_deref(),
                &secret.name,
                &secret.key,
                "spec.external.auth.basic.passwordSecretRef",
            )?;
            config.auth = ExternalAuth::Basic {
                user: basic.username.clone(),
                password: text(password, SourceKind::Secret, &origin)?
                    .trim_end_matches(['\r', '\n'])
                    .to_owned(),
            };
        } else if let Some(bearer) = &auth.bearer {
            let secret = &bearer.token_secret_ref;
            let (token, origin) = value(
                SourceKind::Secret,
                secret.namespace.as_deref(),
                &secret.name,
                &secret.key,
                "spec.external.auth.bearer.tokenSecretRef",
            )?;
            config.auth = ExternalAuth::Bearer(text(token, SourceKind::Secret, &origin)?.trim().to_owned());
        }
    }
    if let Some(tls) = &spec.tls {
        if let Some(secret) = &tls.client_certificate_secret_ref {
            let field = "spec.external.tls.clientCertificateSecretRef";
            let namespace = secret.namespace.as_deref();
            let (cert, cert_origin) = value(SourceKind::Secret, namespace, &secret.name, TLS_CERT_KEY, field)?;
            let (key, key_origin) = value(SourceKind::Secret, namespace, &secret.name, TLS_KEY_KEY, field)?;
            config.client_identity_pem = Some((
                PemText {
                    origin: cert_origin,
                    pem: cert,
                },
                PemText {
                    origin: key_origin,
                    pem: key,
                },
            ));
        }
        if let Some(ca) = &tls.ca {
            let (pem, origin) = match (&ca.secret_key_ref, &ca.config_map_key_ref) {
                (Some(secret), _) => value(
                    SourceKind::Secret,
                    secret.namespace.as_deref(),
                    &secret.name,
                    &secret.key,
                    "spec.external.tls.ca.secretKeyRef",
                )?,
                (None, Some(config_map)) => value(
                    SourceKind::ConfigMap,
                    config_map.namespace.as_deref(),
                    &config_map.name,
                    &config_map.key,
                    "spec.external.tls.ca.configMapKeyRef",
                )?,
                (None, None) => {
                    return Err(invalid(
                        "spec.external.tls.ca names neither a Secret nor a ConfigMap".to_owned(),
                    ));
                }
            };
            config.ca_pem = Some(PemText { origin, pem });
        }
        config.server_name.clone_from(&tls.server_name);
    }
    if let Some(timeouts) = &spec.timeouts {
        if let Some(seconds) = timeouts.attempt_seconds {
            config.timeout = Duration::from_secs(u64::from(seconds));
        }
        if let Some(seconds) = timeouts.deadline_seconds {
            config.deadline = Duration::from_secs(u64::from(seconds));
        }
        config.deadline = config.deadline.max(config.timeout);
    }
    Ok(config)
}
