"""Renders the Helm chart with helm-python-sdk (Helm's own engine through its C ABI) and validates
what it renders against Kubernetes' OpenAPI schemas with kubernetes-validate (offline, strict:
unknown fields are errors), for tests/helm_chart.rs, which does the checking.

Usage: python render_chart.py CHART_DIR < request.json > answer.json
The request: {"render": {scenario: {"values": ..., "release": NAME, "namespace": NS}},
              "invalid": {case: values},
              "unchecked": {case: values},
              "kubernetes": [version, ...], "custom_kinds": [kind, ...],
              "canary": a manifest the schemas must refuse}
The answer:  {"helm": version, "lint": {"messages": [...], "errors": [...]},
              "crds": {file: text}, "rendered": {scenario: {template: text}},
              "invalid": {case: error message or null when the values were accepted},
              "unchecked": {case: the same, rendered with values.schema.json removed, so that
                            only the templates' own checks can refuse},
              "validated": {scenario, "crds" or "canary": {"checked": ["Kind/name", ...],
                                                 "skipped": ["Kind/name", ...],
                                                 "errors": ["...", ...]}}}
"""

import functools
import json
import os
import shutil
import sys
import tempfile

import helm_python as helm
import kubernetes_validate.utils as kubernetes_validate
import yaml

# kubernetes-validate reads a 1.8 MB definitions file for every object it checks; the files never
# change during a run, so read each once.
kubernetes_validate.schema_contents = functools.lru_cache(maxsize=None)(
    kubernetes_validate.schema_contents
)


def validate(texts, versions, custom_kinds):
    """Validates every document of the YAML texts against each Kubernetes version's schemas.
    Kinds in custom_kinds come from CRDs (ours, cert-manager's, Prometheus Operator's), which
    have no built-in schema: they are skipped, and reported as skipped."""
    report = {"checked": [], "skipped": [], "errors": []}
    for text in texts:
        for document in yaml.safe_load_all(text):
            if not document:
                continue
            name = f"{document.get('kind')}/{document.get('metadata', {}).get('name')}"
            if document.get("kind") in custom_kinds:
                report["skipped"].append(name)
                continue
            for version in versions:
                try:
                    kubernetes_validate.validate(document, version, strict=True)
                except kubernetes_validate.ValidationError as error:
                    path = ".".join(str(item) for item in error.path)
                    report["errors"].append(f"{name} against {version}: {path}: {error.message}")
                except kubernetes_validate.SchemaNotFoundError as error:
                    report["errors"].append(f"{name}: {error.message}")
            report["checked"].append(name)
    return report


def refusal(chart, values):
    """The error that refuses these values, or None when the chart renders them."""
    try:
        chart.validate_schema(values)
        chart.render(values, name="invalid", namespace="invalid")
        return None
    except helm.HelmError as error:
        return str(error)


def main() -> None:
    chart_dir = sys.argv[1]
    request = json.load(sys.stdin)
    versions = request["kubernetes"]
    custom_kinds = set(request["custom_kinds"])
    answer = {"helm": helm.helm_sdk_version(), "rendered": {}, "invalid": {}, "unchecked": {}, "validated": {}}
    answer["lint"] = helm.lint(chart_dir, strict=True)
    with helm.Chart.load(chart_dir) as chart:
        answer["crds"] = {crd["name"]: crd["data"] for crd in chart.crds}
        for scenario, job in request["render"].items():
            answer["rendered"][scenario] = chart.render(
                job["values"], name=job["release"], namespace=job["namespace"]
            )
        for case, values in request["invalid"].items():
            answer["invalid"][case] = refusal(chart, values)
    answer["validated"]["crds"] = validate(answer["crds"].values(), versions, custom_kinds)
    answer["validated"]["canary"] = validate([request["canary"]], versions, custom_kinds)
    for scenario, templates in answer["rendered"].items():
        texts = [text for template, text in templates.items() if not template.endswith("NOTES.txt")]
        answer["validated"][scenario] = validate(texts, versions, custom_kinds)
    # As `helm install --skip-schema-validation` would: a copy of the chart without its schema.
    with tempfile.TemporaryDirectory() as folder:
        unchecked_dir = os.path.join(folder, "schemaops")
        shutil.copytree(chart_dir, unchecked_dir)
        os.remove(os.path.join(unchecked_dir, "values.schema.json"))
        with helm.Chart.load(unchecked_dir) as chart:
            for case, values in request["unchecked"].items():
                answer["unchecked"][case] = refusal(chart, values)
    json.dump(answer, sys.stdout)


if __name__ == "__main__":
    main()
