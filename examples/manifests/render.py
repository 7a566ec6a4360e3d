"""Manifest templates → one folder of ready-to-apply manifests per environment variant.

The live test ran in two environments that differ only in a few values (contract §0): the
`target` variant (namespace dynamo-power-test, node label power-test/node=target) and the `kaim`
variant (kaim-dynamo-system, power-test/node=kaim). We write each manifest once, under
`templates/`, and render `target/` and `kaim/` from it; a test keeps the rendered folders in step.

    python examples/manifests/render.py          # rewrite target/ and kaim/
"""

from __future__ import annotations

import sys
from pathlib import Path
from string import Template

HERE = Path(__file__).resolve().parent

VARIANTS: dict[str, dict[str, str]] = {
    "target": {
        "namespace": "dynamo-power-test",
        "node_label": "target",
        "state_path": "/var/lib/dynamo-power-agent-test",
        "agent_image_nvml": "ttl.sh/dynamo-pa-4c3c606:24h",
        "agent_image_dcgm": "ttl.sh/dynamo-pa-dcgm45-v2:24h",
        "hostengine_image": "ttl.sh/dynamo-dcgm45:24h",
    },
    "kaim": {
        "namespace": "kaim-dynamo-system",
        "node_label": "kaim",
        "state_path": "/var/lib/dynamo-power-agent-kaim-test",
        "agent_image_nvml": "ttl.sh/dynamo-pa-kaim-4c3c606:24h",
        "agent_image_dcgm": "ttl.sh/dynamo-pa-kaim-dcgm45-v2:24h",
        "hostengine_image": "ttl.sh/dynamo-dcgm45-kaim:24h",
    },
}
COMMON = {
    "worker_image": "nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.1.1",
    "planner_image": "nvcr.io/nvidia/ai-dynamo/dynamo-planner:1.1.1",
}
HEADER = "# Rendered from templates/{name} for the {variant} variant by render.py — edit the template.\n"


def render(variant: str) -> dict[str, str]:
    """{file name: rendered text} for one variant; an unknown placeholder is a KeyError."""
    values = {**COMMON, **VARIANTS[variant]}
    return {
        path.name: HEADER.format(name=path.name, variant=variant)
        + Template(path.read_text(encoding="utf-8")).substitute(values)
        for path in sorted((HERE / "templates").glob("*.yaml"))
    }


def main() -> int:
    for variant in VARIANTS:
        out = HERE / variant
        out.mkdir(exist_ok=True)
        for stale in out.glob("*.yaml"):
            stale.unlink()
        for name, text in render(variant).items():
            (out / name).write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
