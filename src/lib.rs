//! schemaops: Kafka schemas as Kubernetes custom resources, checked for
//! compatibility before they are registered.
//!
//! - [`compat`]: the pure compatibility engine (Avro today).
//! - [`registry`]: the Registry trait, the embedded registry and the REST API.
//! - [`connections`]: `spec.registryRef` resolved into the registry an object uses.
//! - [`cli`]: the command line and its typed configuration.
//! - [`commands`]: what each subcommand does.
//! - [`export`]: a registry turned into Schema and SubjectConfig manifests.
//! - [`http_server`]: serving a router with limits on slow and idle clients.

pub mod cli;
pub mod commands;
pub mod compat;
pub mod connections;
pub mod controller;
pub mod crd;
pub mod export;
pub mod http_server;
pub mod import;
pub mod local;
pub mod metrics;
pub mod policy;
pub mod registry;
pub mod telemetry;
pub mod ui;
pub mod webhook;
