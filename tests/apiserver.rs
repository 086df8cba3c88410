//! Tests of the in-memory API server (`tests/support/apiserver/`) with real kubectl and kube-rs.

#[path = "support/apiserver/mod.rs"]
mod apiserver;
mod support;

use apiserver::TestApiServer;

#[test]
fn server_starts() {
    let server = TestApiServer::start();
    assert!(server.url().starts_with("http://127.0.0.1:"));
}
