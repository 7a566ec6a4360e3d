"""Results document → JUnit XML: one testcase per scenario, its steps in system-out.

Outcomes map strictly: failed → <failure>, undefined → <failure type="undefined">, error in setup
or teardown → <error>, skipped → <skipped message="reason">. Requirement ids, target, world and
seed ride along as testcase properties so CI dashboards can filter on them.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

from stepgraph.dsl.reports.results import write_atomically


def _step_lines(record: dict[str, Any]) -> str:
    lines = []
    for step in record["steps"]:
        line = f"{step['keyword']} {step['name']} ... {step['status']} ({step['duration_s']:.3f}s)"
        if step.get("error") and step["status"] != "skipped":
            line += f"\n    {step['error']}"
        lines.append(line)
    return "\n".join(lines) + "\n"


def _testcase(record: dict[str, Any]) -> ET.Element:
    case = ET.Element("testcase", classname=record["feature"]["name"], name=record["name"],
                      file=record["feature"]["file"], line=str(record["line"]), time=f"{record['duration_s']:.6f}")
    props = ET.SubElement(case, "properties")
    facts = [("id", record["id"]), ("design", ",".join(record["design"])), ("target", record["target"]),
             ("world", record["world"]), ("seed", record["seed"]), ("nodeid", record["nodeid"])]
    for name, value in facts:
        if value:
            ET.SubElement(props, "property", name=name, value=str(value))
    reason = record["reason"] or ""
    outcome = record["outcome"]
    if outcome == "failed":
        ET.SubElement(case, "failure", message=reason, type="failed").text = reason
    elif outcome == "undefined":
        ET.SubElement(case, "failure", message=reason, type="undefined").text = reason
    elif outcome == "error":
        ET.SubElement(case, "error", message=reason, type="error").text = reason
    elif outcome == "skipped":
        ET.SubElement(case, "skipped", message=reason)
    ET.SubElement(case, "system-out").text = _step_lines(record)
    return case


def render(document: dict[str, Any]) -> str:
    summary = document["summary"]
    suites = ET.Element("testsuites")
    suite = ET.SubElement(suites, "testsuite", name="stepgraph", tests=str(summary["total"]),
                          failures=str(summary["failed"] + summary["undefined"]), errors=str(summary["error"]),
                          skipped=str(summary["skipped"]), time=f"{document['run']['duration_s']:.3f}",
                          timestamp=document["run"]["started_at"])
    for record in document["scenarios"]:
        suite.append(_testcase(record))
    ET.indent(suites)
    return ET.tostring(suites, encoding="unicode", xml_declaration=True) + "\n"


def write(document: dict[str, Any], path: str | Path) -> None:
    write_atomically(path, render(document))
