//! The Argo CD health scripts in `charts/schemaops/argocd/` (issue 8, item 5): each sample object
//! in `testdata/` gets the health it expects when `lua5.1` (Argo CD runs gopher-lua, Lua 5.1
//! semantics) runs the script through `tests/lua/argocd_health.lua` with dkjson, which decodes
//! JSON `null` to `nil` as Argo CD does. The `argocd-cm` snippet is generated from the same Lua
//! files (`UPDATE_EXPECT=1` rewrites it), so there is one source of truth.

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn argocd_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("charts/schemaops/argocd")
}

/// The kinds with a health script: (kind, script file). Schema and SubjectConfig report the same
/// conditions, so one script serves both; a SchemaPolicy has only Ready, with its own script.
const SCRIPTS: [(&str, &str); 3] = [
    ("Schema", "health.lua"),
    ("SubjectConfig", "health.lua"),
    ("SchemaPolicy", "schemapolicy-health.lua"),
];

/// `lua5.1` with dkjson, or why it cannot be used.
fn lua() -> Result<&'static str, String> {
    let probe = Command::new("lua5.1").args(["-e", "require('dkjson')"]).output();
    match probe {
        Ok(output) if output.status.success() => Ok("lua5.1"),
        Ok(output) => Err(format!(
            "lua5.1 cannot load dkjson: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        )),
        Err(error) => Err(format!("lua5.1 cannot be run: {error}")),
    }
}

/// The `argocd-cm` snippet, built from the Lua files.
fn snippet() -> String {
    let mut text = String::from(
        "# Generated from the .lua scripts beside it by tests/argocd_health.rs\n\
         # (UPDATE_EXPECT=1 cargo test --test argocd_health); edit those, not this one.\n\
         # Merge these keys into the data of Argo CD's argocd-cm ConfigMap, e.g.\n\
         #   kubectl -n argocd patch configmap argocd-cm --type merge --patch-file argocd-cm-snippet.yaml\n\
         data:\n",
    );
    for (kind, file) in SCRIPTS {
        let script = std::fs::read_to_string(argocd_dir().join(file)).unwrap();
        text.push_str(&format!("  resource.customizations.health.schemaops.dev_{kind}: |\n"));
        for line in script.lines() {
            if line.is_empty() {
                text.push('\n');
            } else {
                text.push_str(&format!("    {line}\n"));
            }
        }
    }
    text
}

#[test]
fn the_argocd_cm_snippet_is_generated_from_the_lua_scripts() {
    let path = argocd_dir().join("argocd-cm-snippet.yaml");
    let expected = snippet();
    if std::env::var("UPDATE_EXPECT").is_ok_and(|value| value == "1") {
        std::fs::write(&path, &expected).unwrap();
    }
    let actual = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        actual == expected,
        "{} is stale; run `UPDATE_EXPECT=1 cargo test --test argocd_health` and commit",
        path.display()
    );
    // Parsed as YAML, each key holds exactly the script's text.
    let parsed: Value = serde_saphyr::from_str(&actual).unwrap();
    for (kind, file) in SCRIPTS {
        let script = std::fs::read_to_string(argocd_dir().join(file)).unwrap();
        let key = format!("resource.customizations.health.schemaops.dev_{kind}");
        assert_eq!(parsed["data"][&key].as_str(), Some(script.as_str()), "{key}");
    }
}

#[test]
fn every_sample_object_gets_its_expected_health() {
    let lua = match lua() {
        Ok(lua) => lua,
        Err(reason) if !support::require_all() => {
            println!("skipped: {reason} (install with: apt-get install lua5.1 lua-dkjson)");
            return;
        }
        Err(reason) => panic!("SCHEMAOPS_REQUIRE_ALL=1 but {reason}"),
    };
    let harness = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/lua/argocd_health.lua");
    let mut cases: Vec<PathBuf> = std::fs::read_dir(argocd_dir().join("testdata"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|extension| extension == "json"))
        .collect();
    cases.sort();
    assert!(cases.len() >= 25, "only {} cases in testdata/", cases.len());

    let mut failures = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    for case in &cases {
        let name = case.file_stem().unwrap().to_string_lossy().into_owned();
        let data: Value = serde_json::from_str(&std::fs::read_to_string(case).unwrap()).unwrap();
        let kind = data["kind"].as_str().unwrap();
        let (_, script) = SCRIPTS
            .iter()
            .find(|(known, _)| *known == kind)
            .unwrap_or_else(|| panic!("{name}: no script for kind {kind}"));
        let output = Command::new(lua)
            .arg(&harness)
            .arg(argocd_dir().join(script))
            .arg(case)
            .output()
            .unwrap();
        if !output.status.success() {
            failures.push(format!("{name}: {}", String::from_utf8_lossy(&output.stderr).trim()));
            continue;
        }
        let health: Value = serde_json::from_slice(&output.stdout).unwrap();
        if health != data["expected"] {
            failures.push(format!("{name}: got {health}, expected {}", data["expected"]));
        }
        seen.insert((kind.to_owned(), data["expected"]["status"].as_str().unwrap().to_owned()));
    }
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
    for (kind, _) in SCRIPTS {
        for status in ["Healthy", "Progressing", "Degraded"] {
            assert!(
                seen.contains(&(kind.to_owned(), status.to_owned())),
                "no {kind} case expects {status}"
            );
        }
    }
}
