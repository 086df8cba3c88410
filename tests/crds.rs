//! The CRDs generated from the Rust types must equal `crds/*.yaml` and the Helm
//! chart's copy in `charts/schemaops/crds/`, so the checked-in files never drift.
//! `UPDATE_EXPECT=1 cargo test --test crds` rewrites both. Also checks the parts
//! kubectl, kstatus and Argo CD rely on.

use std::path::PathBuf;

use schemaops::crd::render;
use serde_json::Value;

/// Every folder that holds the CRD files: `crds/` and the Helm chart's.
fn crd_dirs() -> [PathBuf; 2] {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    [root.join("crds"), root.join("charts/schemaops/crds")]
}

#[test]
fn checked_in_crds_match_the_rust_types() {
    let update = std::env::var("UPDATE_EXPECT").is_ok_and(|value| value == "1");
    let mut stale = Vec::new();
    for (file, definition) in render::definitions() {
        let expected = render::to_yaml(&definition).expect("the CRD renders");
        for folder in crd_dirs() {
            let path = folder.join(file);
            if update {
                std::fs::create_dir_all(&folder).unwrap();
                std::fs::write(&path, &expected).unwrap();
                continue;
            }
            let actual = std::fs::read_to_string(&path).unwrap_or_default();
            if actual != expected {
                stale.push(path.display().to_string());
            }
        }
    }
    assert!(
        stale.is_empty(),
        "{stale:?} differ from the Rust types; run `UPDATE_EXPECT=1 cargo test --test crds` and commit"
    );
}

#[test]
fn the_crd_files_parse_back_to_the_same_definitions() {
    for (file, definition) in render::definitions() {
        for folder in crd_dirs() {
            let text = std::fs::read_to_string(folder.join(file)).unwrap();
            let parsed: Value = serde_saphyr::from_str(&text).unwrap();
            assert_eq!(
                parsed,
                serde_json::to_value(&definition).unwrap(),
                "{}",
                folder.join(file).display()
            );
        }
    }
}

#[test]
fn conditions_are_a_list_map_keyed_by_type_and_the_subject_is_immutable() {
    for (file, definition) in render::definitions() {
        let value = serde_json::to_value(&definition).unwrap();
        let schema = &value["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"];
        let conditions = &schema["status"]["properties"]["conditions"];
        assert_eq!(conditions["x-kubernetes-list-type"], "map", "{file}");
        assert_eq!(
            conditions["x-kubernetes-list-map-keys"],
            serde_json::json!(["type"]),
            "{file}"
        );
        let subject_rules = schema["spec"]["properties"]["subject"]["x-kubernetes-validations"].to_string();
        assert!(subject_rules.contains("self == oldSelf"), "{file}: {subject_rules}");
        assert_eq!(
            value["spec"]["versions"][0]["subresources"]["status"],
            serde_json::json!({}),
            "{file}"
        );
    }
}

#[test]
fn a_schema_needs_exactly_one_source_and_has_the_printer_columns() {
    let (_, schema) = &render::definitions()[0];
    let value = serde_json::to_value(schema).unwrap();
    let version = &value["spec"]["versions"][0];
    let rules = version["schema"]["openAPIV3Schema"]["properties"]["spec"]["x-kubernetes-validations"].to_string();
    assert!(rules.contains("has(self.schema) != has(self.schemaFrom)"), "{rules}");
    let columns: Vec<&str> = version["additionalPrinterColumns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|column| column["name"].as_str().unwrap())
        .collect();
    assert_eq!(columns, ["Subject", "Type", "Version", "ID", "Ready", "Reason", "Age"]);
}
