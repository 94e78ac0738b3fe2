"""JSON Schema of policy configs: one policy's, or every registered policy's in one document.

Every object in them has ``additionalProperties: false`` (the registry refuses
a config model whose schema would accept unknown keys).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from radix_evict.policies.spec import PolicySpec

__all__ = ["SCHEMA_DIALECT", "combined_schema", "policy_schema"]

SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"


def policy_schema(spec: PolicySpec) -> dict[str, Any]:
    """The JSON Schema of ``spec``'s config, titled after the policy."""
    schema = spec.config_model.model_json_schema()
    schema.setdefault("description", spec.summary)
    return {"$schema": SCHEMA_DIALECT, "title": f"{spec.name} config", **_without_title(schema)}


def combined_schema(specs: Iterable[PolicySpec]) -> dict[str, Any]:
    """One document keyed by policy name; each policy's ``$defs`` are prefixed with its name."""
    properties: dict[str, Any] = {}
    defs: dict[str, Any] = {}
    for spec in specs:
        schema = spec.config_model.model_json_schema()
        local = schema.pop("$defs", {})
        prefix = f"{spec.name}__"
        for def_name, def_schema in local.items():
            defs[prefix + def_name] = _rewrite_refs(def_schema, prefix)
        body = _rewrite_refs(_without_title(schema), prefix)
        body["title"] = f"{spec.name} config"
        if spec.summary:
            body.setdefault("description", spec.summary)
        properties[spec.name] = body
    out: dict[str, Any] = {
        "$schema": SCHEMA_DIALECT,
        "title": "radix-evict policy configs",
        "description": "One key per registered policy; its value is that policy's config.",
        "type": "object",
        "properties": properties,
        "additionalProperties": False,
    }
    if defs:
        out["$defs"] = defs
    return out


def _without_title(schema: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in schema.items() if k != "title"}


def _rewrite_refs(node: Any, prefix: str) -> Any:
    """Point ``#/$defs/X`` at ``#/$defs/<prefix>X``: several policies' defs share one document."""
    if isinstance(node, dict):
        out = {}
        for k, v in node.items():
            if k == "$ref" and isinstance(v, str) and v.startswith("#/$defs/"):
                out[k] = "#/$defs/" + prefix + v[len("#/$defs/"):]
            else:
                out[k] = _rewrite_refs(v, prefix)
        return out
    if isinstance(node, list):
        return [_rewrite_refs(x, prefix) for x in node]
    return node
