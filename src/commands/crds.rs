//! `schemaops crds`: every CRD as one YAML document stream.

use std::io::{self, Write};

use crate::crd::render;

/// Why the CRDs could not be printed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A CRD could not be serialized.
    #[error("failed to render the CRD {file}")]
    Render {
        /// The file the CRD is kept under.
        file: &'static str,
        /// Why.
        #[source]
        source: serde_saphyr::ser::Error,
    },
    /// Writing failed.
    #[error("failed to write the CRDs")]
    Write(#[source] io::Error),
}

/// Prints every CRD, separated by `---`.
///
/// # Errors
/// [`Error`] when rendering or writing fails.
pub fn run(out: &mut dyn Write) -> Result<(), Error> {
    for (file, definition) in render::definitions() {
        let yaml = render::to_yaml(&definition).map_err(|source| Error::Render { file, source })?;
        write!(out, "---\n{yaml}").map_err(Error::Write)?;
    }
    Ok(())
}
