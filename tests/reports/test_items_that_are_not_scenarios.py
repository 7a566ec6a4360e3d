"""Items that are not functions (doctests, a plugin's own items) run beside scenarios untouched by the reports."""

from __future__ import annotations

import json

import pytest


def test_a_doctest_item_is_left_out_of_the_results(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(helpers='def double(x):\n    """\n    >>> double(2)\n    4\n    """\n    return 2 * x\n')
    result = pytester.runpytest("-p", "no:cacheprovider", "--doctest-modules", "--stepgraph-results=out/results.json")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    assert json.loads((pytester.path / "out" / "results.json").read_text())["scenarios"] == []
