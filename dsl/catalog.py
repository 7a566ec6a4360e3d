"""The registry → a Markdown catalog of steps (what `stepgraph steps` prints)."""

from __future__ import annotations

from .registry import Registry


def steps_markdown(registry: Registry) -> str:
    lines = ["# Step catalog", "", f"{len(registry)} steps. Gherkin phrase, YAML key, parameters, needs and effects.", ""]
    for library in sorted({d.id.split(".")[0] for d in registry}):
        lines += [f"## {library}", ""]
        for decl in (d for d in registry if d.id.split(".")[0] == library):
            lines.append(f"### `{decl.id}` — {decl.keyword}")
            lines.append("")
            lines.append(
                f"- Gherkin: `{decl.keyword.capitalize()} {decl.phrase.text}`"
                + (" (a check: may be wrapped in `within <duration>`)" if decl.is_check else "")
            )
            params = ", ".join(
                f"{name}: {_type(info.annotation)}" + ("" if info.is_required() else " (optional)")
                for name, info in decl.params.model_fields.items()
            )
            yaml_params = ", ".join(f"{name}: …" for name in decl.params.model_fields)
            if decl.produces:
                yaml_params += (", " if yaml_params else "") + "as: name"
            lines.append(f"- YAML: `{decl.key}: {{{yaml_params}}}`" if yaml_params else f"- YAML: `{decl.key}`")
            if params:
                lines.append(f"- parameters: {params}")
            if decl.produces:
                lines.append(f"- binds: {decl.produces}")
            if decl.needs:
                lines.append(f"- needs: {', '.join(sorted(decl.needs))}")
            if decl.effects:
                undo = "compensated" if decl.compensation else "NOT compensated"
                lines.append(f"- effects: {', '.join(sorted(decl.effects))} ({undo})")
            if decl.doc:
                lines += ["", decl.doc]
            lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def _type(annotation: object) -> str:
    name = getattr(annotation, "__name__", None)
    return name if name and not str(annotation).startswith(("typing.", "list[", "dict[")) else str(annotation).replace("typing.", "")
