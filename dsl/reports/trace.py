"""Design docs + results files (+ lock, expectations, baseline) → the trace: a plain, JSON-ready dict.

requirement → linked scenarios → last result per (target, world); coverage; uncovered requirements;
orphan scenarios (claiming ids no document defines); suspect links (requirement text changed since
the link was reviewed); expected-outcome accounting; a diff against a baseline. Renderers (md, html,
json) only format this dict.
"""

from __future__ import annotations

import fnmatch
from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import Any

from stepgraph.dsl.reports.design import DesignDoc
from stepgraph.dsl.reports.expectations import Expectation, check_expectations

FAILING = {"failed", "error", "undefined"}
TRACE_SCHEMA = "stepgraph-trace/1"


@dataclass(frozen=True)
class Inputs:
    docs: list[DesignDoc]
    runs: list[dict[str, Any]]  # results documents, any order
    lock: dict[str, dict[str, dict[str, str]]] | None = None  # doc path → scenario key → {id: reviewed hash}
    expectations: list[Expectation] | None = None
    baseline: list[dict[str, Any]] | None = None
    only: list[str] | None = None  # glob patterns limiting the requirements counted


def scenario_key(record: dict[str, Any]) -> str:
    """A scenario's stable name across runs: its @id tag, else its pytest node id."""
    return record["id"] or record["nodeid"]


def latest(runs: list[dict[str, Any]]) -> dict[tuple[str, str, str], dict[str, Any]]:
    """(scenario, target, world) → the record from the most recent run that has it."""
    last: dict[tuple[str, str, str], dict[str, Any]] = {}
    for run in sorted(runs, key=lambda r: r["run"]["started_at"]):
        for record in run["scenarios"]:
            last[(scenario_key(record), record["target"] or "-", record["world"] or "-")] = record
    return last


def build_trace(inputs: Inputs) -> dict[str, Any]:
    current = latest(inputs.runs)
    scenarios = _scenarios(current)
    known = {rid for doc in inputs.docs for rid in doc.requirements}
    lock = inputs.lock or {}
    documents = [_document(doc, scenarios, lock.get(doc.path, {}), inputs.only) for doc in inputs.docs]
    orphans = [
        {"scenario": key, "name": s["name"], "where": s["where"], "ids": missing}
        for key, s in scenarios.items() if (missing := [rid for rid in s["design"] if rid not in known])
    ]
    records = list(current.values())
    return {
        "schema": TRACE_SCHEMA,
        "runs": [{"started_at": r["run"]["started_at"], "summary": r["summary"],
                  "environments": r["run"]["environments"],
                  "collection_errors": r["run"].get("collection_errors", [])}
                 for r in sorted(inputs.runs, key=lambda r: r["run"]["started_at"])],
        "columns": sorted({col for s in scenarios.values() for col in s["results"]}),
        "documents": documents,
        "totals": _totals(documents),
        "orphans": orphans,
        "unlinked": sorted(key for key, s in scenarios.items() if not s["design"]),
        "expectations": check_expectations(inputs.expectations or [], records),
        "diff": diff(inputs.baseline, inputs.runs) if inputs.baseline is not None else None,
    }


def _scenarios(current: dict[tuple[str, str, str], dict[str, Any]]) -> dict[str, dict[str, Any]]:
    scenarios: dict[str, dict[str, Any]] = {}
    for (key, target, world), record in current.items():
        entry = scenarios.setdefault(key, {
            "name": record["name"], "where": f"{record['feature']['file']}:{record['line']}",
            "design": record["design"], "results": {},
        })
        result = {"outcome": record["outcome"], "reason": record["reason"]}
        if record["outcome"] in FAILING:  # step detail where someone will look for it; passing runs stay small
            result["steps"] = [{k: step[k] for k in ("keyword", "name", "line", "status", "error") if k in step}
                               for step in record["steps"]]
            result["where"] = _first_bad_step(record)
        entry["results"][f"{target} / {world}"] = result
    return scenarios


def _first_bad_step(record: dict[str, Any]) -> str:
    """`file:line` of the step that failed or is undefined, else of the scenario (setup/teardown errors)."""
    line = next((step["line"] for step in record["steps"] if step["status"] in ("failed", "undefined")), record["line"])
    return f"{record['feature']['file']}:{line}"


def _rollup(outcomes: list[str]) -> str:
    if not outcomes:
        return "uncovered"
    if any(o in FAILING for o in outcomes):
        return "failing"
    if "passed" in outcomes:
        return "passed"
    return "skipped"


def _document(doc: DesignDoc, scenarios: dict[str, dict[str, Any]], lock: dict[str, dict[str, str]],
              only: list[str] | None) -> dict[str, Any]:
    linked: dict[str, list[str]] = defaultdict(list)
    for key, s in scenarios.items():
        for rid in s["design"]:
            if rid in doc.requirements:
                linked[rid].append(key)
    rows: list[dict[str, Any]] = []
    for rid, req in doc.requirements.items():
        counted = req.counts_for_coverage and (not only or any(fnmatch.fnmatchcase(rid, p) for p in only))
        if not counted and rid not in linked:
            continue
        links = []
        for key in linked.get(rid, []):
            reviewed = lock.get(key, {}).get(rid)
            review = "unreviewed" if reviewed is None else ("reviewed" if reviewed == req.hash else "suspect")
            links.append({"scenario": key, "name": scenarios[key]["name"], "where": scenarios[key]["where"],
                          "results": scenarios[key]["results"], "review": review, "reviewed_hash": reviewed})
        outcomes = [r["outcome"] for link in links for r in link["results"].values()]
        rows.append({"id": rid, "title": req.title, "kind": req.kind, "line": req.line, "hash": req.hash,
                     "counted": counted, "status": _rollup(outcomes), "links": links})
    counted_rows = [r for r in rows if r["counted"]]
    covered = [r for r in counted_rows if r["links"]]
    return {
        "path": doc.path,
        "requirements": rows,
        "counted": len(counted_rows),
        "covered": len(covered),
        "passing": sum(r["status"] == "passed" for r in counted_rows),
        "coverage_pct": round(100 * len(covered) / len(counted_rows), 1) if counted_rows else 0.0,
        "uncovered": [r["id"] for r in counted_rows if not r["links"]],
        "failing": [r["id"] for r in counted_rows if r["status"] == "failing"],
        "suspect": [{"id": r["id"], "scenario": link["scenario"]} for r in rows for link in r["links"]
                    if link["review"] == "suspect"],
    }


def _totals(documents: list[dict[str, Any]]) -> dict[str, Any]:
    counted = sum(d["counted"] for d in documents)
    covered = sum(d["covered"] for d in documents)
    return {"requirements": counted, "covered": covered, "passing": sum(d["passing"] for d in documents),
            "coverage_pct": round(100 * covered / counted, 1) if counted else 0.0,
            "suspect": sum(len(d["suspect"]) for d in documents)}


def diff(baseline: list[dict[str, Any]], runs: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Against a baseline: new failures, fixed, still failing, flaky (both passed and failed in the current runs)."""
    before, after = latest(baseline), latest(runs)
    seen: dict[tuple[str, str, str], Counter[str]] = defaultdict(Counter)
    for run in runs:
        for record in run["scenarios"]:
            seen[(scenario_key(record), record["target"] or "-", record["world"] or "-")][record["outcome"]] += 1
    result: dict[str, list[dict[str, Any]]] = {"new_failures": [], "fixed": [], "still_failing": [], "flaky": [],
                                               "new": [], "gone": []}
    for key, record in sorted(after.items()):
        entry = {"scenario": key[0], "target": key[1], "world": key[2], "outcome": record["outcome"],
                 "was": before[key]["outcome"] if key in before else None, "reason": record["reason"]}
        failing_now = record["outcome"] in FAILING
        failing_before = entry["was"] in FAILING
        if key not in before:
            result["new"].append(entry)
        if failing_now and not failing_before:
            result["new_failures"].append(entry)
        elif failing_now and failing_before:
            result["still_failing"].append(entry)
        elif failing_before and record["outcome"] == "passed":
            result["fixed"].append(entry)
        if seen[key]["passed"] and any(seen[key][o] for o in FAILING):
            result["flaky"].append(entry | {"seen": dict(seen[key])})
    result["gone"] = [{"scenario": k[0], "target": k[1], "world": k[2], "was": r["outcome"]}
                      for k, r in sorted(before.items()) if k not in after]
    return result


def lock_entries(trace: dict[str, Any]) -> dict[str, dict[str, dict[str, str]]]:
    """The review lock that accepts every current link at its requirement's current wording, per document."""
    lock: dict[str, dict[str, dict[str, str]]] = {}
    for doc in trace["documents"]:
        links: dict[str, dict[str, str]] = defaultdict(dict)
        for row in doc["requirements"]:
            for link in row["links"]:
                links[link["scenario"]][row["id"]] = row["hash"]
        lock[doc["path"]] = {key: dict(sorted(ids.items())) for key, ids in sorted(links.items())}
    return lock
