"""JSON-shaped objects → independent copies, fast.

Everything the store keeps or hands out is a tree of dicts, lists, strings, numbers, booleans and
None. marshal copies such a tree in C, ~4× faster than `copy.deepcopy`, which looks up a copier
for every node and keeps a memo. marshal takes only those exact types (a subclass, or any other
object, is refused), so anything else falls back to `copy.deepcopy`: the copy is the same either
way, shared subtrees stay shared.
"""

from __future__ import annotations

import copy
import marshal
from typing import Any, TypeVar, cast

T = TypeVar("T")


_IMMUTABLE = (str, int, float, bool, type(None))


def copy_tree(tree: T) -> T:
    data: Any = tree
    if type(data) in _IMMUTABLE:  # nothing to copy (a patch's leaves mostly are)
        return tree
    try:
        return cast(T, marshal.loads(marshal.dumps(data)))
    except ValueError:
        return copy.deepcopy(tree)
