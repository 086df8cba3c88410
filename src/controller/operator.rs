//! `schemaops operator`: the controllers wired to the Kubernetes API.
