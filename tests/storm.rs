//! SIGKILL storms on both stores (issue 14): 64 concurrent writers (one
//! schema shared by many, distinct schemas, soft deletes), ten SIGKILLs at
//! random moments with a restart after each, and after every restart each
//! acknowledged write is present with its ID and version, no ID is given
//! twice, versions are gapless; SQLite's file passes `integrity_check`.

mod support;

use std::path::Path;

use support::registry::RegistryProcess;
use support::storm::{self, Ledger, Moments};

const KILLS: usize = 10;

async fn storm_with(data: &Path, extra: &[&str]) -> Ledger {
    let mut moments = Moments::from_clock();
    let mut ledger = Ledger::default();
    for round in 0..KILLS {
        let mut registry = RegistryProcess::start_with(data, extra).await;
        storm::round(&mut registry, round, moments.next(), &mut ledger).await;
        let registry = RegistryProcess::start_with(data, extra).await;
        storm::assert_ledger_kept(&registry.url, &ledger).await;
    }
    assert!(ledger.len() > 20, "the writers got through ({} writes)", ledger.len());
    ledger
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sqlite_keeps_every_acknowledged_write_through_ten_sigkills() {
    let data = tempfile::tempdir().unwrap();
    let ledger = storm_with(data.path(), &[]).await;
    println!("{} acknowledged writes kept through {KILLS} SIGKILLs", ledger.len());
    let connection = rusqlite::Connection::open(data.path().join("registry.db")).unwrap();
    let verdict: String = connection
        .query_row("PRAGMA integrity_check", [], |row| row.get(0))
        .unwrap();
    assert_eq!(verdict, "ok");
    let mut broken = connection.prepare("PRAGMA foreign_key_check").unwrap();
    assert!(
        broken.query([]).unwrap().next().unwrap().is_none(),
        "no dangling references"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn postgres_keeps_every_acknowledged_write_through_ten_sigkills() {
    let Some(server) = support::postgres::shared() else {
        return;
    };
    let dsn = server.database().await;
    let data = tempfile::tempdir().unwrap();
    let ledger = storm_with(data.path(), &["--store", &dsn]).await;
    println!("{} acknowledged writes kept through {KILLS} SIGKILLs", ledger.len());
}
