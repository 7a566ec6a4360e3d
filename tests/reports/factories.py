"""Hand-made results documents for trace tests (the plugin tests prove real runs produce this shape)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from stepgraph.dsl.reports import results

DOC = """\
# Plan

## 1 Agent

| ID | Assertion |
|---|---|
| B1 | pods are listed |
| B2 | eight caps land |

### 8.5 Live pass

1. **Annotations land** on every worker.
2. **Zero counters** after a clean reconcile.
"""


def record(sid: str, outcome: str = "passed", design: list[str] | None = None, *, target: str = "twin",
           world: str = "stub-workers", tags: list[str] | None = None, line: int = 3) -> dict[str, Any]:
    design = [sid] if design is None else design
    reason = None if outcome == "passed" else f"{outcome} because"
    return {
        "nodeid": f"test_x.py::test_{sid}", "id": sid, "design": design, "name": f"Scenario {sid}", "keyword": "Scenario",
        "line": line, "tags": [f"id:{sid}", *(f"design:{d}" for d in design), *(tags or [])],
        "feature": {"name": "F", "file": "features/f.feature", "line": 1, "keyword": "Feature", "tags": []},
        "outcome": outcome, "reason": reason, "duration_s": 0.01,
        "phases": {"call": {"outcome": "passed" if outcome == "passed" else "failed", "duration_s": 0.01}},
        "steps": [{"keyword": "Given", "name": "x", "line": line + 1,
                   "status": "passed" if outcome == "passed" else "failed", "duration_s": 0.01}],
        "target": target, "world": world, "seed": "1", "fingerprint": {"twin": "0.1.0"}, "worker": None,
    }


def write_results(path: Path, records: list[dict[str, Any]], started: str = "2026-11-30T05:00:00") -> Path:
    document = results.assemble(records, started_at=datetime.fromisoformat(started).replace(tzinfo=UTC),
                                duration_s=1.0, args=[], collection_errors=[])
    path.write_text(json.dumps(document, indent=1))
    return path
