//! SASL authentication to the brokers: PLAIN (RFC 4616) and SCRAM-SHA-256 /
//! SCRAM-SHA-512 (RFC 5802, RFC 7677), the mechanisms Kafka's `SASL_PLAINTEXT`
//! and `SASL_SSL` listeners offer for passwords.
//!
//! Pure: this module builds and checks the messages; [`super::client`] carries
//! them in SaslHandshake and SaslAuthenticate requests.
//!
//! The SCRAM client is ours, on the RustCrypto `hmac` and `sha2` crates the
//! tree already has: the `scram` crate speaks SHA-256 only and pulls an old
//! `ring` and `rand`; `rsasl` is a whole SASL framework for three messages.

use std::fmt;
use std::str::FromStr;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use hmac::{EagerHash, Hmac, KeyInit, Mac};
use sha2::{Digest, Sha256, Sha512};

/// The fewest PBKDF2 iterations accepted from a broker (Kafka's own floor):
/// fewer would make a captured exchange cheap to attack.
const MIN_ITERATIONS: u32 = 4096;

/// The most PBKDF2 iterations accepted, so that a broker cannot keep us busy.
const MAX_ITERATIONS: u32 = 1_000_000;

/// A SASL mechanism the store can authenticate with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SaslMechanism {
    /// User name and password in the clear (use it over TLS only).
    Plain,
    /// SCRAM with SHA-256.
    ScramSha256,
    /// SCRAM with SHA-512.
    ScramSha512,
}

impl SaslMechanism {
    /// Every mechanism, for messages.
    pub const ALL: [Self; 3] = [Self::Plain, Self::ScramSha256, Self::ScramSha512];

    /// Its name on the wire and in Kafka's `sasl.mechanism`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Plain => "PLAIN",
            Self::ScramSha256 => "SCRAM-SHA-256",
            Self::ScramSha512 => "SCRAM-SHA-512",
        }
    }
}

impl fmt::Display for SaslMechanism {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(self.name())
    }
}

impl FromStr for SaslMechanism {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|mechanism| mechanism.name().eq_ignore_ascii_case(text))
            .ok_or_else(|| {
                let names: Vec<_> = Self::ALL.iter().map(|mechanism| mechanism.name()).collect();
                format!(
                    "`{text}` is not a SASL mechanism schemaops speaks ({})",
                    names.join(", ")
                )
            })
    }
}

/// Who the store authenticates as. `Debug` never shows the password.
#[derive(Clone, PartialEq, Eq)]
pub struct SaslCredentials {
    /// The mechanism.
    pub mechanism: SaslMechanism,
    /// The user name.
    pub username: String,
    /// The password.
    pub password: String,
}

impl fmt::Debug for SaslCredentials {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter
            .debug_struct("SaslCredentials")
            .field("mechanism", &self.mechanism)
            .field("username", &self.username)
            .field("password", &"<hidden>")
            .finish()
    }
}

/// Why an exchange cannot go on; the text is for the operator.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SaslError(pub String);

/// One client side of a SASL exchange: the messages to send, in turn, given
/// the broker's answers.
pub enum SaslExchange {
    /// PLAIN: one message, nothing to check.
    Plain {
        /// The message, sent once.
        message: Option<Vec<u8>>,
    },
    /// SCRAM: client-first, client-final, then the server's signature checked.
    Scram(ScramClient),
}

impl SaslExchange {
    /// Starts an exchange for `credentials`.
    pub fn start(credentials: &SaslCredentials) -> Self {
        match credentials.mechanism {
            SaslMechanism::Plain => {
                // authzid (empty), NUL, authcid, NUL, password.
                let mut message = Vec::with_capacity(credentials.username.len() + credentials.password.len() + 2);
                message.push(0);
                message.extend_from_slice(credentials.username.as_bytes());
                message.push(0);
                message.extend_from_slice(credentials.password.as_bytes());
                Self::Plain { message: Some(message) }
            }
            SaslMechanism::ScramSha256 | SaslMechanism::ScramSha512 => {
                Self::Scram(ScramClient::new(credentials, &random_nonce()))
            }
        }
    }

    /// The first message to send.
    pub fn first(&mut self) -> Vec<u8> {
        match self {
            Self::Plain { message } => message.take().unwrap_or_default(),
            Self::Scram(client) => client.client_first(),
        }
    }

    /// Reads the broker's answer to the last message: `Some` message to send
    /// next, or `None` when the exchange is complete and checked.
    ///
    /// # Errors
    /// [`SaslError`] when the answer is malformed or the broker's proof is wrong.
    pub fn next(&mut self, answer: &[u8]) -> Result<Option<Vec<u8>>, SaslError> {
        match self {
            Self::Plain { .. } => Ok(None),
            Self::Scram(client) => client.next(answer),
        }
    }
}

/// Where a SCRAM exchange is.
enum ScramStep {
    /// client-first sent; waiting for server-first.
    First,
    /// client-final sent; waiting for server-final, whose signature must be this.
    Final { server_signature: Vec<u8> },
    /// Done and checked.
    Done,
}

/// The client side of SCRAM-SHA-256 or -512 (RFC 5802), without channel
/// binding (`n,,`), as Kafka clients speak it.
pub struct ScramClient {
    mechanism: SaslMechanism,
    password: String,
    client_first_bare: String,
    nonce: String,
    step: ScramStep,
}

impl ScramClient {
    /// A client for `credentials` with the client nonce `nonce` (printable,
    /// no comma; random in use, fixed in tests).
    pub fn new(credentials: &SaslCredentials, nonce: &str) -> Self {
        // saslname: `=` and `,` are escaped; Kafka's clients apply no SASLprep.
        let name = credentials.username.replace('=', "=3D").replace(',', "=2C");
        Self {
            mechanism: credentials.mechanism,
            password: credentials.password.clone(),
            client_first_bare: format!("n={name},r={nonce}"),
            nonce: nonce.to_owned(),
            step: ScramStep::First,
        }
    }

    /// client-first-message: the GS2 header (no channel binding, no authzid)
    /// and the bare part.
    pub fn client_first(&self) -> Vec<u8> {
        format!("n,,{}", self.client_first_bare).into_bytes()
    }

    /// Reads server-first (answering client-final) or server-final
    /// (answering `None` when its signature is right).
    ///
    /// # Errors
    /// [`SaslError`] naming what is wrong.
    pub fn next(&mut self, answer: &[u8]) -> Result<Option<Vec<u8>>, SaslError> {
        let answer =
            std::str::from_utf8(answer).map_err(|_| SaslError("the broker's SCRAM message is not UTF-8".to_owned()))?;
        match std::mem::replace(&mut self.step, ScramStep::Done) {
            ScramStep::First => self.client_final(answer).map(Some),
            ScramStep::Final { server_signature } => {
                if let Some(error) = attribute(answer, 'e') {
                    return Err(SaslError(format!("the broker refused the proof: {error}")));
                }
                let given = attribute(answer, 'v')
                    .and_then(|value| BASE64.decode(value).ok())
                    .ok_or_else(|| SaslError(format!("malformed server-final message `{answer}`")))?;
                if given != server_signature {
                    return Err(SaslError(
                        "the broker's SCRAM server signature is wrong: it does not know the password \
                         (or is not the broker it claims to be)"
                            .to_owned(),
                    ));
                }
                Ok(None)
            }
            ScramStep::Done => Err(SaslError("the broker sent a SCRAM message after the last".to_owned())),
        }
    }

    fn client_final(&mut self, server_first: &str) -> Result<Vec<u8>, SaslError> {
        let malformed = || SaslError(format!("malformed server-first message `{server_first}`"));
        if let Some(error) = attribute(server_first, 'e') {
            return Err(SaslError(format!("the broker refused: {error}")));
        }
        let nonce = attribute(server_first, 'r').ok_or_else(malformed)?;
        if !nonce.starts_with(&self.nonce) || nonce.len() == self.nonce.len() {
            return Err(SaslError("the broker's SCRAM nonce does not extend ours".to_owned()));
        }
        let salt = attribute(server_first, 's')
            .and_then(|salt| BASE64.decode(salt).ok())
            .ok_or_else(malformed)?;
        let iterations: u32 = attribute(server_first, 'i')
            .and_then(|count| count.parse().ok())
            .ok_or_else(malformed)?;
        if !(MIN_ITERATIONS..=MAX_ITERATIONS).contains(&iterations) {
            return Err(SaslError(format!(
                "the broker asks for {iterations} SCRAM iterations; schemaops accepts \
                 {MIN_ITERATIONS} to {MAX_ITERATIONS}"
            )));
        }
        // `biws` is base64 of the GS2 header `n,,`.
        let without_proof = format!("c=biws,r={nonce}");
        let auth_message = format!("{},{server_first},{without_proof}", self.client_first_bare);
        let (proof, server_signature) = match self.mechanism {
            SaslMechanism::ScramSha512 => {
                proof_and_signature::<Sha512>(&self.password, &salt, iterations, &auth_message)
            }
            _ => proof_and_signature::<Sha256>(&self.password, &salt, iterations, &auth_message),
        };
        self.step = ScramStep::Final { server_signature };
        Ok(format!("{without_proof},p={}", BASE64.encode(proof)).into_bytes())
    }
}

/// The value of attribute `name` (`name=value`) in a SCRAM message.
fn attribute(message: &str, name: char) -> Option<&str> {
    message.split(',').find_map(|part| {
        let mut chars = part.chars();
        (chars.next() == Some(name) && chars.next() == Some('=')).then(|| &part[2..])
    })
}

/// ClientProof and ServerSignature of RFC 5802 §3 for hash `D`.
fn proof_and_signature<D: EagerHash + Digest>(
    password: &str,
    salt: &[u8],
    iterations: u32,
    auth_message: &str,
) -> (Vec<u8>, Vec<u8>)
where
    Hmac<D>: KeyInit + Mac,
{
    let salted = salted_password::<D>(password.as_bytes(), salt, iterations);
    let client_key = hmac::<D>(&salted, b"Client Key");
    let stored_key = D::digest(&client_key).to_vec();
    let client_signature = hmac::<D>(&stored_key, auth_message.as_bytes());
    let proof = client_key
        .iter()
        .zip(&client_signature)
        .map(|(key, signature)| key ^ signature)
        .collect();
    let server_key = hmac::<D>(&salted, b"Server Key");
    (proof, hmac::<D>(&server_key, auth_message.as_bytes()))
}

/// `Hi()` of RFC 5802: PBKDF2 with HMAC-`D`, one block of output.
fn salted_password<D: EagerHash>(password: &[u8], salt: &[u8], iterations: u32) -> Vec<u8>
where
    Hmac<D>: KeyInit + Mac,
{
    let mut first = salt.to_vec();
    first.extend_from_slice(&1_u32.to_be_bytes());
    let mut previous = hmac::<D>(password, &first);
    let mut result = previous.clone();
    for _ in 1..iterations {
        previous = hmac::<D>(password, &previous);
        for (byte, next) in result.iter_mut().zip(&previous) {
            *byte ^= next;
        }
    }
    result
}

fn hmac<D: EagerHash>(key: &[u8], data: &[u8]) -> Vec<u8>
where
    Hmac<D>: KeyInit + Mac,
{
    // HMAC takes a key of any length.
    let mut mac = <Hmac<D> as KeyInit>::new_from_slice(key).unwrap_or_else(|_| unreachable!());
    mac.update(data);
    mac.finalize().into_bytes().to_vec()
}

/// 24 random bytes as base64: printable and without commas.
fn random_nonce() -> String {
    let mut bytes = [0_u8; 24];
    // The OS's generator fails only where nothing could run anyway.
    getrandom::fill(&mut bytes).unwrap_or_else(|error| panic!("no random bytes for a SCRAM nonce: {error}"));
    BASE64.encode(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn credentials(mechanism: SaslMechanism, username: &str, password: &str) -> SaslCredentials {
        SaslCredentials {
            mechanism,
            username: username.to_owned(),
            password: password.to_owned(),
        }
    }

    /// The SCRAM-SHA-256 exchange published in RFC 7677 §3.
    #[test]
    fn scram_sha_256_matches_the_rfc_7677_example() {
        let mut client = ScramClient::new(
            &credentials(SaslMechanism::ScramSha256, "user", "pencil"),
            "rOprNGfwEbeRWgbNEkqO",
        );
        assert_eq!(client.client_first(), b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO");
        let client_final = client
            .next(b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096")
            .unwrap()
            .unwrap();
        assert_eq!(
            String::from_utf8(client_final).unwrap(),
            "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,\
             p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
        );
        assert_eq!(
            client.next(b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=").unwrap(),
            None
        );
    }

    #[test]
    fn a_wrong_server_signature_is_refused() {
        let mut client = ScramClient::new(
            &credentials(SaslMechanism::ScramSha256, "user", "pencil"),
            "rOprNGfwEbeRWgbNEkqO",
        );
        client
            .next(b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096")
            .unwrap();
        let error = client
            .next(b"v=AAAATRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=")
            .unwrap_err();
        assert!(error.0.contains("server signature is wrong"), "{error:?}");
    }

    #[test]
    fn the_server_nonce_must_extend_ours_and_iterations_must_be_enough() {
        let server_first =
            |nonce: &str, iterations: u32| format!("r={nonce},s=W22ZaJ0SNY7soEsUEjb6gQ==,i={iterations}");
        let mut client = ScramClient::new(&credentials(SaslMechanism::ScramSha512, "u", "p"), "abc");
        assert!(client.next(server_first("xyz123", 4096).as_bytes()).is_err());
        let mut client = ScramClient::new(&credentials(SaslMechanism::ScramSha512, "u", "p"), "abc");
        assert!(client.next(server_first("abc123", 1024).as_bytes()).is_err());
        let mut client = ScramClient::new(&credentials(SaslMechanism::ScramSha512, "u", "p"), "abc");
        let error = client.next(b"e=unknown-user").unwrap_err();
        assert!(error.0.contains("unknown-user"), "{error:?}");
    }

    /// SHA-512 proofs: a client whose password is right produces the proof a
    /// server computes from its stored key (RFC 5802's check, done here by hand).
    #[test]
    fn scram_sha_512_proof_verifies_against_the_stored_key() {
        let salt = b"0123456789abcdef";
        let mut client = ScramClient::new(&credentials(SaslMechanism::ScramSha512, "bob", "secret"), "nonce");
        let server_first = format!("r=nonceSERVER,s={},i=4096", BASE64.encode(salt));
        let client_final = String::from_utf8(client.next(server_first.as_bytes()).unwrap().unwrap()).unwrap();
        let (without_proof, proof) = client_final.rsplit_once(",p=").unwrap();
        let proof = BASE64.decode(proof).unwrap();
        // The server's side: StoredKey = H(ClientKey); ClientKey = proof XOR ClientSignature.
        let salted = salted_password::<Sha512>(b"secret", salt, 4096);
        let stored_key = Sha512::digest(hmac::<Sha512>(&salted, b"Client Key")).to_vec();
        let auth_message = format!("n=bob,r=nonce,{server_first},{without_proof}");
        let signature = hmac::<Sha512>(&stored_key, auth_message.as_bytes());
        let client_key: Vec<u8> = proof.iter().zip(&signature).map(|(p, s)| p ^ s).collect();
        assert_eq!(Sha512::digest(&client_key).to_vec(), stored_key);
        let server_signature = hmac::<Sha512>(&hmac::<Sha512>(&salted, b"Server Key"), auth_message.as_bytes());
        let server_final = format!("v={}", BASE64.encode(server_signature));
        assert_eq!(client.next(server_final.as_bytes()).unwrap(), None);
    }

    #[test]
    fn user_names_are_escaped_and_plain_is_one_message() {
        let client = ScramClient::new(&credentials(SaslMechanism::ScramSha256, "a=b,c", "p"), "n");
        assert_eq!(client.client_first(), b"n,,n=a=3Db=2Cc,r=n");
        let mut plain = SaslExchange::start(&credentials(SaslMechanism::Plain, "alice", "pw"));
        assert_eq!(plain.first(), b"\0alice\0pw");
        assert_eq!(plain.next(b"").unwrap(), None);
    }

    #[test]
    fn mechanisms_parse_by_kafka_name_and_debug_hides_the_password() {
        assert_eq!("scram-sha-512".parse(), Ok(SaslMechanism::ScramSha512));
        assert!(
            "GSSAPI"
                .parse::<SaslMechanism>()
                .unwrap_err()
                .contains("PLAIN, SCRAM-SHA-256")
        );
        let shown = format!("{:?}", credentials(SaslMechanism::Plain, "alice", "hunter2"));
        assert!(!shown.contains("hunter2"), "{shown}");
    }

    #[test]
    fn pbkdf2_matches_a_published_vector() {
        // PBKDF2-HMAC-SHA256, P="password", S="salt", c=4096, first 32 bytes.
        let derived = salted_password::<Sha256>(b"password", b"salt", 4096);
        let hex: String = derived.iter().map(|byte| format!("{byte:02x}")).collect();
        assert_eq!(hex, "c5e478d59288c841aa530db6845c4c8d962893a001ce4e11a4963873aa98134a");
    }
}
