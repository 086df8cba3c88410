//! The act step: carries out a [`Plan`] through the registry, idempotently.

use crate::controller::level::LevelWrite;
use crate::crd::conditions::Reason;
use crate::registry::{Error, RegisterOptions, Registered, Registry, VersionSelector};

use super::decide::{Held, Plan};

/// What acting on a plan did.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// Nothing to write.
    Nothing,
    /// The registry stored (or already held) the schema, and what it holds of it.
    Registered(Registered, Held),
    /// The registry refused what the plan judged acceptable.
    Refused {
        /// The condition reason.
        reason: Reason,
        /// The registry's own message.
        message: String,
    },
}

/// Carries out `plan`: for [`Plan::Register`], first the level write (so the
/// registry judges under the level the schema was judged under), then the
/// registration. Every other plan writes nothing.
///
/// # Errors
/// The registry's error when it fails transiently; a refusal is an
/// [`Outcome::Refused`], not an error.
pub async fn act(plan: &Plan, registry: &dyn Registry) -> Result<Outcome, Error> {
    let Plan::Register {
        subject,
        schema,
        level_write,
        ..
    } = plan
    else {
        return Ok(Outcome::Nothing);
    };
    let written = match level_write {
        Some(LevelWrite::Set(level)) => registry.set_compatibility(Some(subject), *level).await.map(|_| ()),
        Some(LevelWrite::Clear) => match registry.delete_compatibility(Some(subject)).await {
            Err(Error::SubjectCompatibilityNotConfigured { .. }) => Ok(()),
            other => other.map(|_| ()),
        },
        None => Ok(()),
    };
    if let Err(error) = written {
        return refusal(error);
    }
    let registered = match registry.register(subject, schema, RegisterOptions::default()).await {
        Ok(registered) => registered,
        Err(error) => return refusal(error),
    };
    // Read back what was stored: its GUID and merged metadata for the
    // status, and whether the registry kept the contract at all.
    let held = match registry
        .version(subject, VersionSelector::Exact(registered.version), false)
        .await
    {
        Ok(stored) => Held::of(&schema.contract, &stored),
        Err(error) if error.is_transient() => return Err(error),
        Err(_) => Held::default(),
    };
    Ok(Outcome::Registered(registered, held))
}

/// A transient error stays an error; anything else is the registry's refusal.
fn refusal(error: Error) -> Result<Outcome, Error> {
    if error.is_transient() {
        return Err(error);
    }
    let reason = match error {
        Error::NotPermitted { .. } => Reason::SubjectReadOnly,
        _ => Reason::RegistryRejected,
    };
    Ok(Outcome::Refused {
        reason,
        message: format!("the registry refused the schema: {error} (error code {})", error.code()),
    })
}
