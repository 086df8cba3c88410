"""Renders the Helm chart with helm-python-sdk (Helm's own engine through its C ABI) for
tests/helm_chart.rs, which does the checking.

Usage: python render_chart.py CHART_DIR < request.json > answer.json
The request: {"render": {scenario: {"values": ..., "release": NAME, "namespace": NS}},
              "invalid": {case: values}}
The answer:  {"helm": version, "lint": {"messages": [...], "errors": [...]},
              "crds": {file: text}, "rendered": {scenario: {template: text}},
              "invalid": {case: error message or null when the values were accepted}}
"""

import json
import sys

import helm_python as helm


def main() -> None:
    chart_dir = sys.argv[1]
    request = json.load(sys.stdin)
    answer = {"helm": helm.helm_sdk_version(), "rendered": {}, "invalid": {}}
    answer["lint"] = helm.lint(chart_dir, strict=True)
    with helm.Chart.load(chart_dir) as chart:
        answer["crds"] = {crd["name"]: crd["data"] for crd in chart.crds}
        for scenario, job in request["render"].items():
            answer["rendered"][scenario] = chart.render(
                job["values"], name=job["release"], namespace=job["namespace"]
            )
        for case, values in request["invalid"].items():
            try:
                chart.validate_schema(values)
                chart.render(values, name="invalid", namespace="invalid")
                answer["invalid"][case] = None
            except helm.HelmError as error:
                answer["invalid"][case] = str(error)
    json.dump(answer, sys.stdout)


if __name__ == "__main__":
    main()
