//! The CRDs generated from the Rust types must equal `crds/*.yaml` and the Helm
//! chart's copy in `charts/schemaops/crds/`, so the checked-in files never drift.
//! `UPDATE_EXPECT=1 cargo test --test crds` rewrites both. Also checks the parts
//! kubectl, kstatus and Argo CD rely on, that every schema is structural, and that the
//! SchemaPolicy schema (with its CEL rule) takes the policies it should and refuses the others.

use std::path::PathBuf;

use schemaops::crd::{SchemaPolicy, render};
use schemaops::policy::CompiledPolicy;
use serde_json::{Value, json};

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

/// The CRD kept under `file`, as JSON.
fn definition(file: &str) -> Value {
    let (_, definition) = render::definitions()
        .into_iter()
        .find(|(name, _)| *name == file)
        .unwrap_or_else(|| panic!("no CRD is kept as {file}"));
    serde_json::to_value(&definition).unwrap()
}

/// The names of a CRD version's printer columns, in order.
fn printer_columns(version: &Value) -> Vec<&str> {
    version["additionalPrinterColumns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|column| column["name"].as_str().unwrap())
        .collect()
}

#[test]
fn every_crd_has_a_status_subresource_and_conditions_keyed_by_type() {
    for (file, definition) in render::definitions() {
        let value = serde_json::to_value(&definition).unwrap();
        let version = &value["spec"]["versions"][0];
        let conditions = &version["schema"]["openAPIV3Schema"]["properties"]["status"]["properties"]["conditions"];
        assert_eq!(conditions["x-kubernetes-list-type"], "map", "{file}");
        assert_eq!(conditions["x-kubernetes-list-map-keys"], json!(["type"]), "{file}");
        assert_eq!(version["subresources"]["status"], json!({}), "{file}");
        // `kubectl get schemaops` lists every kind.
        assert_eq!(value["spec"]["names"]["categories"], json!(["schemaops"]), "{file}");
    }
}

#[test]
fn the_subject_of_a_schema_or_a_subject_config_is_immutable() {
    for file in ["schema.yaml", "subjectconfig.yaml"] {
        let value = definition(file);
        assert_eq!(value["spec"]["scope"], "Namespaced", "{file}");
        let spec = &value["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"];
        let subject_rules = spec["properties"]["subject"]["x-kubernetes-validations"].to_string();
        assert!(subject_rules.contains("self == oldSelf"), "{file}: {subject_rules}");
    }
}

#[test]
fn a_schema_needs_exactly_one_source_and_has_the_printer_columns() {
    let value = definition("schema.yaml");
    let version = &value["spec"]["versions"][0];
    let rules = version["schema"]["openAPIV3Schema"]["properties"]["spec"]["x-kubernetes-validations"].to_string();
    assert!(rules.contains("has(self.schema) != has(self.schemaFrom)"), "{rules}");
    assert_eq!(
        printer_columns(version),
        ["Subject", "Type", "Version", "ID", "Ready", "Reason", "Age"]
    );
}

#[test]
fn every_crd_has_a_written_root_description_for_kubectl_explain() {
    for (file, definition) in render::definitions() {
        let value = serde_json::to_value(&definition).unwrap();
        let description = value["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["description"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        assert!(
            description.len() > 80 && !description.contains("Auto-generated"),
            "{file}: `kubectl explain` would print {description:?}"
        );
    }
}

#[test]
fn a_subject_config_shows_its_mode_and_reason_and_defaults_are_in_the_schema() {
    let value = definition("subjectconfig.yaml");
    let version = &value["spec"]["versions"][0];
    assert_eq!(
        printer_columns(version),
        ["Subject", "Compatibility", "Mode", "Ready", "Reason", "Age"]
    );
    let spec = &version["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"];
    assert_eq!(spec["managementPolicy"]["default"], "Manage");
    let schema = definition("schema.yaml");
    let spec = &schema["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"];
    assert_eq!(spec["managementPolicy"]["default"], "Manage");
    assert_eq!(spec["deletionPolicy"]["default"], "Retain");
    assert_eq!(spec["schemaType"]["default"], "AVRO");
}

#[test]
fn a_schema_policy_is_cluster_scoped_with_its_names_and_printer_columns() {
    let value = definition("schemapolicy.yaml");
    assert_eq!(value["metadata"]["name"], "schemapolicies.schemaops.dev");
    assert_eq!(value["spec"]["scope"], "Cluster");
    let names = &value["spec"]["names"];
    assert_eq!(names["kind"], "SchemaPolicy");
    assert_eq!(names["plural"], "schemapolicies");
    assert_eq!(names["shortNames"], json!(["schpol"]));
    let version = &value["spec"]["versions"][0];
    assert_eq!(version["name"], "v1alpha1");
    assert_eq!(
        printer_columns(version),
        ["Actions", "Matched", "Violations", "Ready", "Age"]
    );
    let paths: Vec<&str> = version["additionalPrinterColumns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|column| column["jsonPath"].as_str().unwrap())
        .collect();
    assert_eq!(
        paths,
        [
            ".spec.validationActions",
            ".status.matched",
            ".status.violations",
            ".status.conditions[?(@.type==\"Ready\")].status",
            ".metadata.creationTimestamp",
        ]
    );
}

/// Where `node` breaks the rules of a structural schema, which `apiextensions.k8s.io/v1`
/// requires: every node has a type (unless it is int-or-string or keeps unknown fields); no
/// `$ref`, `definitions`, `dependencies`, `patternProperties`, `additionalItems` or `uniqueItems`;
/// not both `properties` and `additionalProperties`; and the junctors (`allOf`, `anyOf`, `oneOf`,
/// `not`) carry no type, default, description, nullable or additionalProperties.
fn structural_problems(node: &Value, path: &str, in_junctor: bool, problems: &mut Vec<String>) {
    let Some(fields) = node.as_object() else {
        problems.push(format!("{path}: not an object"));
        return;
    };
    for forbidden in [
        "$ref",
        "definitions",
        "dependencies",
        "patternProperties",
        "additionalItems",
    ] {
        if fields.contains_key(forbidden) {
            problems.push(format!("{path}: {forbidden}"));
        }
    }
    if fields.get("uniqueItems") == Some(&Value::Bool(true)) {
        problems.push(format!("{path}: uniqueItems"));
    }
    if in_junctor {
        for forbidden in ["type", "default", "description", "nullable", "additionalProperties"] {
            if fields.contains_key(forbidden) {
                problems.push(format!("{path}: {forbidden} inside a junctor"));
            }
        }
    } else {
        let untyped = ["x-kubernetes-int-or-string", "x-kubernetes-preserve-unknown-fields"]
            .iter()
            .any(|key| fields.get(*key) == Some(&Value::Bool(true)));
        let typed = fields
            .get("type")
            .and_then(Value::as_str)
            .is_some_and(|kind| !kind.is_empty());
        if !typed && !untyped {
            problems.push(format!("{path}: no type"));
        }
    }
    if fields.contains_key("properties") && fields.get("additionalProperties").is_some_and(Value::is_object) {
        problems.push(format!("{path}: properties with additionalProperties"));
    }
    for (name, child) in fields
        .get("properties")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
    {
        structural_problems(child, &format!("{path}.{name}"), in_junctor, problems);
    }
    for key in ["items", "additionalProperties"] {
        if let Some(child) = fields.get(key).filter(|child| child.is_object()) {
            structural_problems(child, &format!("{path}.{key}"), in_junctor, problems);
        }
    }
    for junctor in ["allOf", "anyOf", "oneOf"] {
        for (index, child) in fields
            .get(junctor)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
        {
            structural_problems(child, &format!("{path}.{junctor}[{index}]"), true, problems);
        }
    }
    if let Some(child) = fields.get("not") {
        structural_problems(child, &format!("{path}.not"), true, problems);
    }
}

#[test]
fn every_crd_schema_is_structural() {
    for (file, definition) in render::definitions() {
        let value = serde_json::to_value(&definition).unwrap();
        let mut problems = Vec::new();
        structural_problems(
            &value["spec"]["versions"][0]["schema"]["openAPIV3Schema"],
            "openAPIV3Schema",
            false,
            &mut problems,
        );
        assert!(problems.is_empty(), "{file}: {problems:#?}");
    }
}

/// The SchemaPolicy's OpenAPI schema as a JSON Schema validator (draft 4, which OpenAPI 3.0's
/// schema object extends; the `x-kubernetes-*` keys and the CEL rules are not checked by it).
fn schema_policy_validator() -> jsonschema::Validator {
    let value = definition("schemapolicy.yaml");
    jsonschema::draft4::new(&value["spec"]["versions"][0]["schema"]["openAPIV3Schema"]).unwrap()
}

/// The SchemaPolicy example of the policies guide, parsed.
fn guide_example() -> Value {
    let guide = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("docs/src/guides/policies.md");
    let guide = std::fs::read_to_string(guide).unwrap();
    let block = guide
        .split("```yaml\n")
        .skip(1)
        .map(|rest| rest.split("```").next().unwrap())
        .find(|block| block.contains("kind: SchemaPolicy"))
        .expect("the policies guide has a SchemaPolicy example");
    serde_saphyr::from_str(block).unwrap()
}

fn policy(spec: Value) -> Value {
    json!({"apiVersion": "schemaops.dev/v1alpha1", "kind": "SchemaPolicy", "metadata": {"name": "sample"}, "spec": spec})
}

#[test]
fn the_schema_policy_schema_takes_sample_policies_and_refuses_malformed_ones() {
    let validator = schema_policy_validator();
    let accepted = [
        ("the policies guide's example", guide_example()),
        ("an empty spec", policy(json!({}))),
        (
            "a Warn and Audit policy with every rule",
            policy(json!({
                "match": {
                    "namespaceSelector": {"matchExpressions": [{"key": "env", "operator": "In", "values": ["prod"]}]},
                    "namespaces": ["team-a"],
                    "subjects": ["team-a.*"],
                    "schemaTypes": ["AVRO", "PROTOBUF"],
                },
                "rules": {
                    "subjects": {"allowed": ["{namespace}.*", "shared-*"]},
                    "compatibility": {"allowed": ["BACKWARD", "FULL"], "minimum": "BACKWARD"},
                    "deletionPolicies": ["Retain"],
                    "modes": ["READWRITE"],
                    "schemaTypes": ["AVRO"],
                    "naming": {"avroNamespace": "com.acme.*", "protobufPackage": "acme.*", "jsonId": "https://acme.com/*"},
                    "requireFieldDocs": true,
                    "validations": [{"expression": "object.metadata.name.startsWith('orders')", "message": "orders only"}],
                },
                "validationActions": ["Warn", "Audit"],
            })),
        ),
    ];
    for (case, object) in accepted {
        let errors: Vec<String> = validator.iter_errors(&object).map(|error| error.to_string()).collect();
        assert!(errors.is_empty(), "{case}: {errors:?}");
        let parsed: SchemaPolicy = serde_json::from_value(object).unwrap();
        assert!(
            CompiledPolicy::compile("sample", &parsed.spec).is_ok(),
            "{case} does not compile"
        );
    }
    let refused = [
        ("an unknown action", json!({"validationActions": ["Block"]})),
        (
            "four actions",
            json!({"validationActions": ["Deny", "Audit", "Audit", "Audit"]}),
        ),
        (
            "an unknown level",
            json!({"rules": {"compatibility": {"minimum": "STRICT"}}}),
        ),
        ("a lowercase mode", json!({"rules": {"modes": ["readwrite"]}})),
        (
            "an unknown deletion policy",
            json!({"rules": {"deletionPolicies": ["Purge"]}}),
        ),
        ("subjects without allowed", json!({"rules": {"subjects": {}}})),
        ("namespaces as a string", json!({"match": {"namespaces": "team-a"}})),
        (
            "a validation without an expression",
            json!({"rules": {"validations": [{"message": "no"}]}}),
        ),
    ];
    for (case, spec) in refused {
        assert!(!validator.is_valid(&policy(spec)), "{case} is accepted");
    }
    assert!(
        !validator.is_valid(&json!({"metadata": {"name": "no-spec"}})),
        "no spec is accepted"
    );
}

/// The CEL rules on `spec.validationActions`, evaluated on `actions` as the API server would.
fn action_rules_hold(actions: &[&str]) -> bool {
    let value = definition("schemapolicy.yaml");
    let field = &value["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["validationActions"];
    let rules = field["x-kubernetes-validations"]
        .as_array()
        .expect("CEL rules on validationActions");
    rules.iter().all(|rule| {
        let program = cel::Program::compile(rule["rule"].as_str().unwrap()).expect("the rule parses");
        let mut context = cel::Context::default();
        context.add_variable("self", actions).unwrap();
        match program.execute(&context) {
            Ok(cel::Value::Bool(holds)) => holds,
            other => panic!("{rule} on {actions:?} gives {other:?}"),
        }
    })
}

#[test]
fn the_crd_refuses_deny_with_warn_exactly_as_the_policy_compiler_does() {
    let all = ["Deny", "Warn", "Audit"];
    for mask in 1..(1 << all.len()) {
        let actions: Vec<&str> = all
            .iter()
            .enumerate()
            .filter(|(index, _)| mask & (1 << index) != 0)
            .map(|(_, action)| *action)
            .collect();
        let spec = serde_json::from_value(json!({"validationActions": actions})).unwrap();
        let compiles = CompiledPolicy::compile("sample", &spec).is_ok();
        let both = actions.contains(&"Deny") && actions.contains(&"Warn");
        assert_eq!(action_rules_hold(&actions), !both, "{actions:?}");
        assert_eq!(compiles, !both, "{actions:?}");
    }
}

/// Whether every CEL rule of the schema node `rules_at` holds for `value` (and `old`, for the
/// transition rules that read `oldSelf`; those are skipped on a create, as the API server does).
fn cel_rules_hold(rules_at: &Value, value: &Value, old: Option<&Value>) -> bool {
    let rules = rules_at["x-kubernetes-validations"]
        .as_array()
        .expect("CEL rules at this node");
    rules.iter().all(|rule| {
        let text = rule["rule"].as_str().unwrap();
        if text.contains("oldSelf") && old.is_none() {
            return true;
        }
        let program = cel::Program::compile(text).expect("the rule parses");
        let mut context = cel::Context::default();
        context.add_variable("self", value).unwrap();
        if let Some(old) = old {
            context.add_variable("oldSelf", old).unwrap();
        }
        match program.execute(&context) {
            Ok(cel::Value::Bool(holds)) => holds,
            other => panic!("{text} on {value} gives {other:?}"),
        }
    })
}

/// The `openAPIV3Schema` of the CRD kept under `file`.
fn open_api_schema(file: &str) -> Value {
    definition(file)["spec"]["versions"][0]["schema"]["openAPIV3Schema"].clone()
}

fn connection(kind: &str, spec: Value) -> Value {
    json!({"apiVersion": "schemaops.dev/v1alpha1", "kind": kind, "metadata": {"name": "sample"}, "spec": spec})
}

#[test]
fn the_connection_kinds_have_their_scope_names_and_printer_columns() {
    for (file, kind, plural, short, scope) in [
        (
            "schemaregistry.yaml",
            "SchemaRegistry",
            "schemaregistries",
            "sreg",
            "Namespaced",
        ),
        (
            "clusterschemaregistry.yaml",
            "ClusterSchemaRegistry",
            "clusterschemaregistries",
            "csreg",
            "Cluster",
        ),
    ] {
        let value = definition(file);
        assert_eq!(value["metadata"]["name"], format!("{plural}.schemaops.dev"), "{file}");
        assert_eq!(value["spec"]["scope"], scope, "{file}");
        assert_eq!(value["spec"]["names"]["kind"], kind, "{file}");
        assert_eq!(value["spec"]["names"]["shortNames"], json!([short]), "{file}");
        assert_eq!(
            printer_columns(&value["spec"]["versions"][0]),
            ["Endpoint", "Flavour", "Bound", "Ready", "Reason", "Age"],
            "{file}"
        );
    }
    let cluster = open_api_schema("clusterschemaregistry.yaml");
    assert!(cluster["properties"]["spec"]["properties"]["allowedNamespaces"].is_object());
    let namespaced = open_api_schema("schemaregistry.yaml");
    assert!(namespaced["properties"]["spec"]["properties"]["allowedNamespaces"].is_null());
}

#[test]
fn a_connection_takes_embedded_or_an_external_registry_with_one_kind_of_auth() {
    let external = json!({
        "urls": ["https://registry-a.example:8081", "https://registry-b.example:8081"],
        "context": ".team-a",
        "auth": {"basic": {"username": "alice", "passwordSecretRef": {"name": "registry", "key": "password"}}},
        "tls": {
            "clientCertificateSecretRef": {"name": "client-tls"},
            "ca": {"configMapKeyRef": {"name": "ca", "key": "ca.crt"}},
            "serverName": "registry.internal",
        },
        "timeouts": {"attemptSeconds": 5, "deadlineSeconds": 20},
    });
    for file in ["schemaregistry.yaml", "clusterschemaregistry.yaml"] {
        let schema = open_api_schema(file);
        let kind = schema["properties"]["kind"].clone();
        let validator = jsonschema::draft4::new(&schema).unwrap();
        let spec_node = &schema["properties"]["spec"];
        let kind_name = if file.starts_with("cluster") {
            "ClusterSchemaRegistry"
        } else {
            "SchemaRegistry"
        };
        let accepted = [
            ("embedded", json!({"embedded": {}})),
            (
                "external with basic auth",
                json!({"external": external, "readOnly": true}),
            ),
            (
                "external with a bearer token",
                json!({"external": {"urls": ["http://registry:8081"], "auth": {"bearer": {"tokenSecretRef": {"name": "t", "key": "token"}}}}}),
            ),
        ];
        for (case, spec) in accepted {
            let object = connection(kind_name, spec.clone());
            let errors: Vec<String> = validator.iter_errors(&object).map(|error| error.to_string()).collect();
            assert!(errors.is_empty(), "{file} {case}: {errors:?} ({kind})");
            assert!(
                cel_rules_hold(spec_node, &spec, None),
                "{file} {case}: a CEL rule refuses it"
            );
        }
        let refused_by_schema = [
            ("no URL", json!({"external": {"urls": []}})),
            (
                "a URL without a scheme",
                json!({"external": {"urls": ["registry:8081"]}}),
            ),
            (
                "a zero timeout",
                json!({"external": {"urls": ["http://r"], "timeouts": {"attemptSeconds": 0}}}),
            ),
            (
                "basic auth without a password",
                json!({"external": {"urls": ["http://r"], "auth": {"basic": {"username": "a"}}}}),
            ),
        ];
        for (case, spec) in refused_by_schema {
            assert!(
                !validator.is_valid(&connection(kind_name, spec)),
                "{file}: {case} is accepted"
            );
        }
        // The CEL rules: exactly one registry, one kind of auth, one CA source.
        assert!(!cel_rules_hold(spec_node, &json!({}), None), "{file}: neither registry");
        assert!(
            !cel_rules_hold(
                spec_node,
                &json!({"embedded": {}, "external": {"urls": ["http://r"]}}),
                None
            ),
            "{file}: both registries"
        );
        let external_node = &spec_node["properties"]["external"]["properties"];
        let both_auth = json!({"basic": {"username": "a", "passwordSecretRef": {"name": "s", "key": "k"}}, "bearer": {"tokenSecretRef": {"name": "s", "key": "k"}}});
        assert!(
            !cel_rules_hold(&external_node["auth"], &both_auth, None),
            "{file}: both auths"
        );
        assert!(
            !cel_rules_hold(&external_node["auth"], &json!({}), None),
            "{file}: no auth kind"
        );
        let ca = &external_node["tls"]["properties"]["ca"];
        assert!(!cel_rules_hold(ca, &json!({}), None), "{file}: a CA from nowhere");
        assert!(
            cel_rules_hold(ca, &json!({"secretKeyRef": {"name": "s", "key": "ca.crt"}}), None),
            "{file}: a CA from a Secret"
        );
    }
}

#[test]
fn the_registry_ref_of_a_schema_or_a_subject_config_is_fixed_at_creation() {
    for file in ["schema.yaml", "subjectconfig.yaml"] {
        let schema = open_api_schema(file);
        let spec_node = &schema["properties"]["spec"];
        let reference = &spec_node["properties"]["registryRef"];
        assert_eq!(
            reference["properties"]["kind"]["enum"],
            json!(["SchemaRegistry", "ClusterSchemaRegistry"]),
            "{file}"
        );
        assert_eq!(reference["required"], json!(["kind", "name"]), "{file}");
        let plain = if file == "schema.yaml" {
            json!({"subject": "s", "schema": "\"string\""})
        } else {
            json!({"subject": "s"})
        };
        let with_ref = |name: &str| {
            let mut spec = plain.clone();
            spec["registryRef"] = json!({"kind": "SchemaRegistry", "name": name});
            spec
        };
        // A manifest without a ref keeps working, on create and on update.
        assert!(cel_rules_hold(spec_node, &plain, None), "{file}");
        assert!(cel_rules_hold(spec_node, &plain, Some(&plain)), "{file}");
        assert!(cel_rules_hold(spec_node, &with_ref("a"), None), "{file}");
        assert!(
            cel_rules_hold(spec_node, &with_ref("a"), Some(&with_ref("a"))),
            "{file}"
        );
        assert!(
            !cel_rules_hold(spec_node, &with_ref("a"), Some(&plain)),
            "{file}: added"
        );
        assert!(
            !cel_rules_hold(spec_node, &plain, Some(&with_ref("a"))),
            "{file}: removed"
        );
        let (before, after) = (
            with_ref("a")["registryRef"].clone(),
            with_ref("b")["registryRef"].clone(),
        );
        assert!(!cel_rules_hold(reference, &after, Some(&before)), "{file}: changed");
        assert!(cel_rules_hold(reference, &before, Some(&before)), "{file}");
    }
}
