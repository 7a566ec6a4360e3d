"""pytest rewrites no module of stepgraph, as with the wheel: an editable install marks them too."""

from __future__ import annotations

import importlib
import sys

import pytest

# Imported while pytest's marks still stand (the package, and the module taking the marks back):
# loaded by its hook, each opting out of the rewriting in its docstring.
FIRST = {"stepgraph.dsl", "stepgraph.dsl.assert_rewriting"}

# Asked of every rewriting hook in this process (a meta-path finder): would it load the module?
WOULD_REWRITE = '''
import sys

import stepgraph.dsl, stepgraph.steps, stepgraph.targets

def test_no_rewriting_hook_would_load_a_module_of_stepgraph():
    hooks = [f for f in sys.meta_path if type(f).__name__ == "AssertionRewritingHook"]
    assert hooks
    for name in ("stepgraph.dsl.load_yaml", "stepgraph.targets.twin", "stepgraph.steps.nvml"):
        package = sys.modules[name.rpartition(".")[0]]
        assert [f for f in hooks if f.find_spec(name, package.__path__) is not None] == [], name
'''


def test_this_pytest_run_loaded_no_module_of_stepgraph_through_the_rewriting_hook_but_the_first_two() -> None:
    for plugin in ("stepgraph.dsl.plugin", "stepgraph.targets.pytest_options"):
        importlib.import_module(plugin)  # loaded already: this run loads both as pytest11 entry points
    hooked = {name for name, module in list(sys.modules.items())
              if name.startswith("stepgraph.") and type(getattr(module, "__loader__", None)).__name__ == "AssertionRewritingHook"}
    assert hooked <= FIRST, sorted(hooked - FIRST)
    assert all("PYTEST_DONT_REWRITE" in (sys.modules[name].__doc__ or "") for name in hooked)


def test_no_rewriting_hook_would_load_one_in_this_run_or_in_a_later_run_in_the_same_process(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_hooks=WOULD_REWRITE)
    namespace: dict[str, object] = {}
    exec(compile(WOULD_REWRITE, "test_hooks.py", "exec"), namespace)
    namespace["test_no_rewriting_hook_would_load_a_module_of_stepgraph"]()  # type: ignore[operator]
    pytester.runpytest_inprocess("-p", "no:cacheprovider").assert_outcomes(passed=1)
