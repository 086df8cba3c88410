//! The release path (issue 35, item 1): `.github/workflows/release.yml` cannot run here, so this
//! file reads it beside the chart and the Dockerfile. The image it pushes must be the one the
//! chart pulls by default (`image.repository`, tag `image.tag` or else the chart's appVersion),
//! the chart's versions must be the crate's, and both image stages of the Dockerfile must run
//! `schemaops` as user 65532. The workflow's version step runs for real, in bash, on this checkout.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn repository_file(relative: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(relative)
}

fn read(relative: &str) -> String {
    std::fs::read_to_string(repository_file(relative)).unwrap_or_else(|error| panic!("{relative}: {error}"))
}

fn yaml(relative: &str) -> Value {
    serde_saphyr::from_str(&read(relative)).unwrap_or_else(|error| panic!("{relative} is not YAML: {error}"))
}

fn workflow() -> Value {
    yaml(".github/workflows/release.yml")
}

/// The workflow's steps, in order.
fn steps(workflow: &Value) -> &Vec<Value> {
    workflow["jobs"]["release"]["steps"]
        .as_array()
        .expect("release.yml has a job `release` with steps")
}

/// The one step that `uses` an action whose name starts with `action` (`owner/name@`).
fn step_using<'a>(workflow: &'a Value, action: &str) -> &'a Value {
    let matching: Vec<&Value> = steps(workflow)
        .iter()
        .filter(|step| {
            step["uses"]
                .as_str()
                .is_some_and(|uses| uses.starts_with(&format!("{action}@")))
        })
        .collect();
    assert_eq!(matching.len(), 1, "release.yml should use {action} exactly once");
    matching[0]
}

/// Replaces `${{ env.NAME }}` with the workflow-level `env` value.
fn expand_env(workflow: &Value, text: &str) -> String {
    let mut expanded = text.to_owned();
    for (name, value) in workflow["env"].as_object().into_iter().flatten() {
        let value = value.as_str().expect("workflow env values are strings");
        expanded = expanded.replace(&format!("${{{{ env.{name} }}}}", name = name), value);
    }
    expanded
}

/// The expression a workflow step writes the released version to.
const VERSION_OUTPUT: &str = "${{ steps.version.outputs.version }}";

/// The image references the build-push step pushes, split at the last `:` into (repository, tag).
fn pushed_images(workflow: &Value) -> Vec<(String, String)> {
    let build = &step_using(workflow, "docker/build-push-action")["with"];
    assert_eq!(build["push"], Value::Bool(true), "the image step should push");
    expand_env(workflow, build["tags"].as_str().expect("build-push-action has tags"))
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty())
        .map(|reference| {
            let (repository, tag) = reference
                .rsplit_once(':')
                .unwrap_or_else(|| panic!("image reference `{reference}` has no tag"));
            (repository.to_owned(), tag.to_owned())
        })
        .collect()
}

/// Runs the workflow's `version` step in bash on this checkout as if `tag` had been pushed:
/// Ok(what it wrote to GITHUB_OUTPUT) or Err(what it printed) when it fails.
fn run_version_step(tag: &str) -> Result<String, String> {
    let workflow = workflow();
    let step = steps(&workflow)
        .iter()
        .find(|step| step["id"] == "version")
        .expect("release.yml has a step with id `version`");
    let script = step["run"].as_str().expect("the version step runs a script");
    let output_file = tempfile::NamedTempFile::new().unwrap();
    let output = Command::new("bash")
        .args(["-euo", "pipefail", "-c", script])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("GITHUB_REF_NAME", tag)
        .env("GITHUB_OUTPUT", output_file.path())
        .output()
        .expect("bash runs");
    if output.status.success() {
        Ok(std::fs::read_to_string(output_file.path()).unwrap())
    } else {
        Err(String::from_utf8_lossy(&output.stdout).into_owned())
    }
}

#[test]
fn workflow_releases_on_version_tags_for_amd64_and_arm64() {
    let workflow = workflow();
    assert_eq!(workflow["on"]["push"]["tags"], serde_json::json!(["v*"]));
    let build = &step_using(&workflow, "docker/build-push-action")["with"];
    assert_eq!(build["context"], ".");
    assert_eq!(build["platforms"], "linux/amd64,linux/arm64");
    // No `target`: the Dockerfile's last stage (the full build) is what users pull.
    assert!(
        build.get("target").is_none(),
        "the release should build the Dockerfile's last stage"
    );
    assert_eq!(build["build-args"], format!("VERSION={VERSION_OUTPUT}"));
    step_using(&workflow, "docker/setup-buildx-action");
    assert_eq!(
        step_using(&workflow, "docker/login-action")["with"]["registry"],
        "ghcr.io"
    );
}

#[test]
fn workflow_pushes_the_image_the_chart_pulls_by_default() {
    let workflow = workflow();
    let values = yaml("charts/schemaops/values.yaml");
    let chart_repository = values["image"]["repository"]
        .as_str()
        .expect("values.yaml has image.repository");
    let pushed = pushed_images(&workflow);
    assert_eq!(
        pushed,
        vec![
            (chart_repository.to_owned(), VERSION_OUTPUT.to_owned()),
            (chart_repository.to_owned(), "latest".to_owned()),
        ],
        "release.yml should push {chart_repository}:<version> and :latest, what the chart pulls"
    );
}

#[test]
fn chart_default_tag_is_the_version_the_workflow_derives_from_the_tag() {
    let chart = yaml("charts/schemaops/Chart.yaml");
    let values = yaml("charts/schemaops/values.yaml");
    let app_version = chart["appVersion"].as_str().expect("Chart.yaml has appVersion");
    // The chart's tag is image.tag, or the appVersion when image.tag is empty.
    assert_eq!(values["image"]["tag"], "", "values.yaml should leave image.tag empty");
    let deployment = read("charts/schemaops/templates/deployment.yaml");
    assert!(
        deployment.contains("{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}"),
        "the deployment should pull image.repository:(image.tag or appVersion)"
    );
    // Tag v<appVersion> releases the image tag <appVersion>: the chart's default.
    let written = run_version_step(&format!("v{app_version}")).unwrap_or_else(|printed| {
        panic!("the version step refused v{app_version}: {printed}");
    });
    assert_eq!(written.trim(), format!("version={app_version}"));
}

#[test]
fn version_step_refuses_a_tag_the_chart_and_crate_do_not_carry() {
    let printed = run_version_step("v999.0.0").expect_err("a tag ahead of Cargo.toml and Chart.yaml should fail");
    assert!(printed.contains("::error::tag v999.0.0"), "{printed}");
}

#[test]
fn chart_versions_are_the_crate_version() {
    let chart = yaml("charts/schemaops/Chart.yaml");
    let crate_version = env!("CARGO_PKG_VERSION");
    assert_eq!(chart["version"], crate_version, "Chart.yaml version");
    assert_eq!(chart["appVersion"], crate_version, "Chart.yaml appVersion");
    // `helm package` names the archive <name>-<version>.tgz; the workflow pushes that file.
    assert_eq!(chart["name"], "schemaops");
    let workflow = workflow();
    let chart_step = steps(&workflow)
        .iter()
        .find(|step| step["name"] == "Chart")
        .expect("release.yml has a step named Chart");
    let script = chart_step["run"].as_str().unwrap();
    assert!(
        script.contains("helm package charts/schemaops --destination dist"),
        "{script}"
    );
    assert!(
        script.contains(&format!(
            "helm push \"dist/schemaops-{VERSION_OUTPUT}.tgz\" \"$CHART_REPOSITORY\""
        )),
        "{script}"
    );
    assert_eq!(workflow["env"]["CHART_REPOSITORY"], "oci://ghcr.io/schemaops/charts");
}

/// One stage of a Dockerfile: its FROM line and its instructions, continuation lines joined.
struct Stage {
    from: String,
    instructions: Vec<String>,
}

fn dockerfile_stages() -> Vec<Stage> {
    let text = read("Dockerfile").replace("\\\n", " ");
    let mut stages: Vec<Stage> = Vec::new();
    for line in text
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
    {
        if line.starts_with("FROM ") {
            stages.push(Stage {
                from: line.to_owned(),
                instructions: Vec::new(),
            });
        } else if let Some(stage) = stages.last_mut() {
            stage.instructions.push(line.to_owned());
        }
    }
    stages
}

#[test]
fn dockerfile_image_stages_run_schemaops_as_user_65532() {
    let stages = dockerfile_stages();
    let image_stages: Vec<&Stage> = stages
        .iter()
        .filter(|stage| stage.from.starts_with("FROM scratch"))
        .collect();
    assert_eq!(
        image_stages.iter().map(|stage| stage.from.as_str()).collect::<Vec<_>>(),
        ["FROM scratch AS prebuilt", "FROM scratch AS runtime"],
        "the Dockerfile's image stages"
    );
    assert_eq!(
        stages.last().unwrap().from,
        "FROM scratch AS runtime",
        "the last stage is the image users pull"
    );
    for stage in image_stages {
        let last = |keyword: &str| {
            stage
                .instructions
                .iter()
                .rfind(|instruction| instruction.starts_with(keyword))
                .unwrap_or_else(|| panic!("`{}` has no {keyword}", stage.from))
                .clone()
        };
        assert_eq!(last("USER "), "USER 65532:65532", "{}", stage.from);
        assert_eq!(last("ENTRYPOINT "), r#"ENTRYPOINT ["schemaops"]"#, "{}", stage.from);
        assert!(
            !stage
                .instructions
                .iter()
                .any(|instruction| instruction.starts_with("CMD ")),
            "`{}` sets a CMD",
            stage.from
        );
    }
}
