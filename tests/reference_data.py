"""The reference data the tests read: `shared/reference/external/` beside the repo root.

CI lays `shared/` beside its clone; a git worktree finds it beside an ancestor folder. Tests that
need it skip with a reason when it is absent. (Importable from every test folder through the ini
option `pythonpath = ["tests"]`.)
"""

from __future__ import annotations

from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
OUR_PLAN = REPO_ROOT / "docs" / "design" / "multi-tenant-test-plan.md"

EXTERNAL = next(
    (p / "shared" / "reference" / "external" for p in REPO_ROOT.parents if (p / "shared" / "reference" / "external").is_dir()),
    REPO_ROOT.parent / "shared" / "reference" / "external",
)
LIVE_MANIFESTS = EXTERNAL / "multi-dgd-live-test"  # the live test's real manifests
DYNAMO_PLAN = EXTERNAL / "dynamo-multi-tenant-test.md"  # Dynamo's multi-tenant test plan
LIVE_MANIFESTS_ABSENT = f"the live test's manifests are not at {LIVE_MANIFESTS} (shared/ is not beside the repo root)"
