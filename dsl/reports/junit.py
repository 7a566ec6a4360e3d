"""Results document → JUnit XML: one testsuite per feature file, one testcase per scenario.

The shape is the one Jenkins' xunit plugin validates (its junit-10.xsd), the strictest common
reader: a testcase has only name, classname and time, and properties belong to the testsuite. So
the target, world and seed of a suite are its properties (a suite is one feature file on one
target, world and seed), and a scenario's own facts (where it is, its requirement and design ids)
head its system-out, above one line per step.

Outcomes map strictly: failed → <failure>, undefined → <failure type="undefined">, error in setup
or teardown → <error>, skipped → <skipped message="reason">.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

from stepgraph.dsl.reports.results import write_atomically

SUITE_FACTS = ("target", "world", "seed")


def _system_out(record: dict[str, Any]) -> str:
    lines = [f"{record['feature']['file']}:{record['line']}  {record['nodeid']}"]
    if record["id"] or record["design"]:
        lines.append(f"requirement {record['id'] or '-'}; design {', '.join(record['design']) or '-'}")
    for step in record["steps"]:
        line = f"{step['keyword']} {step['name']} ... {step['status']} ({step['duration_s']:.3f}s)"
        if step.get("error") and step["status"] != "skipped":
            line += f"\n    {step['error']}"
        lines.append(line)
    return "\n".join(lines) + "\n"


def _testcase(record: dict[str, Any]) -> ET.Element:
    case = ET.Element("testcase", classname=record["feature"]["name"], name=record["name"],
                      time=f"{record['duration_s']:.6f}")
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
    ET.SubElement(case, "system-out").text = _system_out(record)
    return case


def _count(records: list[dict[str, Any]], *outcomes: str) -> str:
    return str(sum(r["outcome"] in outcomes for r in records))


def _suite(records: list[dict[str, Any]], timestamp: str) -> ET.Element:
    first = records[0]
    suite = ET.Element("testsuite", name=first["feature"]["name"], tests=str(len(records)),
                       failures=_count(records, "failed", "undefined"), errors=_count(records, "error"),
                       skipped=_count(records, "skipped"), time=f"{sum(r['duration_s'] for r in records):.3f}",
                       timestamp=timestamp, file=first["feature"]["file"])
    props = ET.SubElement(suite, "properties")
    for name in SUITE_FACTS:
        if first[name]:
            ET.SubElement(props, "property", name=name, value=str(first[name]))
    for record in records:
        suite.append(_testcase(record))
    return suite


def render(document: dict[str, Any]) -> str:
    summary = document["summary"]
    groups: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for record in document["scenarios"]:
        key = (record["feature"]["file"], *(str(record[name]) for name in SUITE_FACTS))
        groups.setdefault(key, []).append(record)
    suites = ET.Element("testsuites", name="stepgraph", tests=str(summary["total"]),
                        failures=str(summary["failed"] + summary["undefined"]), errors=str(summary["error"]),
                        time=f"{document['run']['duration_s']:.3f}")
    for records in groups.values():
        suites.append(_suite(records, document["run"]["started_at"]))
    ET.indent(suites)
    return ET.tostring(suites, encoding="unicode", xml_declaration=True) + "\n"


def write(document: dict[str, Any], path: str | Path) -> None:
    write_atomically(path, render(document))
