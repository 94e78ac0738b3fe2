"""A config model's keys as ``radix-evict show`` prints them: :func:`describe_model`.

Read from the model's JSON Schema (what a config file is checked against),
so type, default and constraint text say what validation enforces.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel
from pydantic_core import PydanticUndefined

__all__ = ["ConfigKey", "describe_model"]


@dataclass(frozen=True)
class ConfigKey:
    """One config key as ``radix-evict show`` prints it."""

    key: str
    type: str
    required: bool
    default: Any
    constraint: str
    description: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "type": self.type,
            "required": self.required,
            "default": self.default,
            "constraint": self.constraint,
            "description": self.description,
        }


_JSON_TYPES = {"integer": "integer", "number": "number", "boolean": "boolean", "string": "string"}
_CONSTRAINT_WORDS = (
    ("minimum", ">= {}"),
    ("exclusiveMinimum", "> {}"),
    ("maximum", "<= {}"),
    ("exclusiveMaximum", "< {}"),
    ("multipleOf", "multiple of {}"),
    ("minLength", "at least {} characters"),
    ("maxLength", "at most {} characters"),
    ("pattern", "matches {}"),
    ("minItems", "at least {} items"),
    ("maxItems", "at most {} items"),
)


def _resolve(schema: Mapping[str, Any], defs: Mapping[str, Any]) -> Mapping[str, Any]:
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        return defs.get(ref.rsplit("/", 1)[-1], schema)
    return schema


def _type_text(schema: Mapping[str, Any], defs: Mapping[str, Any]) -> str:
    s = _resolve(schema, defs)
    if "enum" in s:
        return "one of " + ", ".join(json.dumps(v) for v in s["enum"])
    if "const" in s:
        return json.dumps(s["const"])
    for combo in ("anyOf", "oneOf"):
        if combo in s:
            return " | ".join(_type_text(x, defs) for x in s[combo])
    t = s.get("type")
    if t == "array":
        items = s.get("items")
        return f"list of {_type_text(items, defs)}" if isinstance(items, Mapping) else "list"
    if t == "object":
        return "object" if "title" not in s else f"object ({s['title']})"
    if t == "null":
        return "null"
    return _JSON_TYPES.get(str(t), str(t) if t else "any")


def _constraint_text(schema: Mapping[str, Any], defs: Mapping[str, Any]) -> str:
    s = _resolve(schema, defs)
    parts = [fmt.format(s[k]) for k, fmt in _CONSTRAINT_WORDS if k in s]
    for combo in ("anyOf", "oneOf"):
        for sub in s.get(combo, ()):
            text = _constraint_text(sub, defs)
            if text:
                parts.append(text)
    return ", ".join(parts)


def describe_model(model: type[BaseModel]) -> list[ConfigKey]:
    """Every key of ``model`` (nested ones dotted) with type, default and constraint."""
    schema = model.model_json_schema()
    defs = schema.get("$defs", {})
    out: list[ConfigKey] = []

    def walk(s: Mapping[str, Any], prefix: str, defaults: Mapping[str, Any] | None) -> None:
        s = _resolve(s, defs)
        required = set(s.get("required", ()))
        for key, sub in s.get("properties", {}).items():
            if defaults is not None and key in defaults:
                default = defaults[key]
            else:
                default = sub.get("default")
            resolved = _resolve(sub, defs)
            out.append(
                ConfigKey(
                    key=prefix + key,
                    type=_type_text(sub, defs),
                    required=key in required,
                    default=None if key in required else default,
                    constraint=_constraint_text(sub, defs),
                    description=str(sub.get("description") or resolved.get("description") or ""),
                )
            )
            if resolved.get("type") == "object" and "properties" in resolved:
                walk(resolved, f"{prefix}{key}.", None)

    top_defaults: dict[str, Any] = {}
    for name, field in model.model_fields.items():
        value = field.get_default(call_default_factory=True) if not field.is_required() else None
        if value is PydanticUndefined:
            continue
        if isinstance(value, BaseModel):
            value = value.model_dump(mode="json")
        top_defaults[field.alias or name] = value
    walk(schema, "", top_defaults)
    return out
