"""A small step vocabulary shaped like the catalog's, for the DSL tests (a uniquely named module,
so that importing it never picks up another folder's conftest)."""

from __future__ import annotations

from stepgraph.dsl import CheckFailed, Params, Power, Ref, Registry, StepContext
from stepgraph.dsl.compiler import CompiledFile


class Of(Params):
    of: str


class Manifest(Params):
    manifest: str


class Delta(Params):
    metric: str
    since: Ref
    at_least: int = 1


class Limit(Params):
    gpu: Ref
    equals: Power


class Thing(Params):
    x: str


class NamedThing(Params):
    what: str
    x: str


class Count(Params):
    count: int


class Counter(Params):
    metric: str
    count: int


class Ref_(Params):
    ref: Ref


def make_registry() -> Registry:
    reg = Registry()

    @reg.given("t.baseline", "a baseline of {of:word} as {as}", key="baseline", produces="snapshot")
    def baseline(ctx: StepContext, p: Of) -> dict[str, int]:
        return {}

    @reg.when(
        "t.apply",
        "the manifest {manifest} is applied as {as}",
        key="apply",
        produces="objects",
        needs={"k8s-write"},
        effects={"creates-objects"},
        compensation=lambda ctx, p, r: None,
    )
    def apply(ctx: StepContext, p: Manifest) -> list[str]:
        return [p.manifest]

    @reg.when("t.delete", "the objects {ref:ref} are deleted", key="delete", needs={"k8s-write"})
    def delete(ctx: StepContext, p: Ref_) -> None: ...

    @reg.when("t.scribble", "the GPU caps are scribbled on", key="scribble", needs={"nvml"}, effects={"writes-gpu-caps"})
    def scribble(ctx: StepContext, p: Params) -> None: ...

    @reg.then(
        "t.counter_delta",
        "the counter {metric} grew by at least {at_least:int} since {since:ref}",
        key="counter_delta",
        needs={"k8s"},
        min_within="1 tick",
    )
    def counter_delta(ctx: StepContext, p: Delta) -> None: ...

    @reg.then("t.power_limit", "the power limit of GPU {gpu:ref} is {equals:power}", key="power_limit", needs={"nvml"})
    def power_limit(ctx: StepContext, p: Limit) -> None: ...

    @reg.then("t.thing", "the thing {x} holds", key="thing")
    def thing(ctx: StepContext, p: Thing) -> None: ...

    @reg.then("t.named_thing", "the {what:word} {x} holds", key="named_thing")
    def named_thing(ctx: StepContext, p: NamedThing) -> None: ...

    @reg.then("t.count", "there are {count:int} pods", key="count")
    def count(ctx: StepContext, p: Count) -> None:
        raise CheckFailed("never", expected=p.count, observed=0)

    @reg.when("t.bump", "the agent counters are bumped", key="bump", effects={"increments-agent-counters"})
    def bump(ctx: StepContext, p: Params) -> None: ...

    @reg.then("t.counter_is", "the counter {metric} is {count:int}", key="counter_is", absolute={"agent-counters"})
    def counter_is(ctx: StepContext, p: Counter) -> None: ...

    return reg


def messages(compiled: CompiledFile) -> list[str]:
    return [str(d) for d in compiled.diagnostics]


class GpuLimit(Params):
    gpu: int
    limit: Power


class Limits(Params):
    rows: list[GpuLimit]


class Note(Params):
    text: str


def add_attachment_steps(reg: Registry) -> Registry:
    """Steps that take a data table and a doc string."""

    @reg.then("t.limits_table", "the GPUs have these limits: {rows:table}", key="limits")
    def limits(ctx: StepContext, p: Limits) -> None: ...

    @reg.then("t.note", "the note reads: {text:docstring}", key="note")
    def note(ctx: StepContext, p: Note) -> None: ...

    return reg
