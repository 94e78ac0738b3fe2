"""Whether a config model is strict enough to be registered: :func:`config_model_problems`.

A serving config must mean exactly what it says, so the registry refuses a
policy whose config model (or any model nested in it) lets an unknown key
through, coerces a value, accepts NaN, or types a field as ``Any``. Each
problem names the field.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from pydantic import BaseModel
from pydantic.types import Strict

from radix_evict.policies.config import models_in
from radix_evict.policies.contract import PolicyConfig

__all__ = ["config_model_problems", "lax_schema_spots"]


def lax_schema_spots(node: Any, path: str = "") -> Iterator[str]:
    """JSON Schema paths where an object accepts keys nobody declared."""
    if isinstance(node, list):
        for i, item in enumerate(node):
            yield from lax_schema_spots(item, f"{path}/{i}")
        return
    if not isinstance(node, dict):
        return
    is_object = node.get("type") == "object" or "properties" in node
    if is_object and node.get("additionalProperties") is not False:
        yield f"{path or '/'} accepts unknown keys (additionalProperties is not false)"
    for key, sub in node.get("properties", {}).items():
        if isinstance(sub, dict) and not (set(sub) & _CONSTRAINING):
            yield f"{path}/properties/{key} accepts any value (no type)"
    for key, sub in node.items():
        if key in ("properties",):
            for pk, pv in sub.items():
                yield from lax_schema_spots(pv, f"{path}/properties/{pk}")
        elif key in ("default", "examples", "const", "enum"):
            continue
        elif isinstance(sub, (dict, list)):
            yield from lax_schema_spots(sub, f"{path}/{key}")


_CONSTRAINING = {"type", "$ref", "anyOf", "oneOf", "allOf", "enum", "const", "not"}


def _nested_models(
    model: type[BaseModel], seen: set[type[BaseModel]], path: str = ""
) -> Iterator[tuple[str, type[BaseModel]]]:
    """(dotted field path, model) of every model nested in ``model``'s fields, once each."""
    for name, field in model.model_fields.items():
        here = f"{path}{field.alias or name}"
        for nested in models_in(field.annotation):
            if nested not in seen:
                seen.add(nested)
                yield here, nested
                yield from _nested_models(nested, seen, f"{here}.")


def _lax_annotation(annotation: Any) -> str | None:
    """Why a field's type lets a value through unchecked or coerced (None: it does not).

    ``Any`` (or ``object``) anywhere in it, ``list[Any]`` included, accepts
    whatever the config holds; ``Strict(False)`` in an ``Annotated`` type turns
    coercion back on for that part even inside a strict model.
    """
    if annotation is Any or annotation is object:
        return "accepts any value (Any)"
    for meta in getattr(annotation, "__metadata__", ()) or ():
        if isinstance(meta, Strict) and not meta.strict:
            return "coerces values (Strict(False) in its type)"
    for arg in getattr(annotation, "__args__", ()) or ():
        if arg is Ellipsis:
            continue
        why = _lax_annotation(arg)
        if why is not None:
            return f"{why} in {_type_name(annotation)}"
    return None


def _type_name(annotation: Any) -> str:
    return str(annotation).replace("typing.", "")


def _field_problems(model: type[BaseModel], path: str = "") -> Iterator[str]:
    """Fields of ``model`` (not nested models) that coerce or accept anything."""
    for name, field in model.model_fields.items():
        where = f"field {path}{field.alias or name!s} of {model.__name__}"
        if any(isinstance(m, Strict) and not m.strict for m in field.metadata):
            yield f"{where} coerces values (Field(strict=False)); remove strict=False"
        why = _lax_annotation(field.annotation)
        if why is not None:
            yield f"{where} {why}; give it a concrete type"


def _model_rule_problems(model: type[BaseModel], what: str) -> Iterator[str]:
    """The model_config rules every config model, nested ones too, must follow."""
    cfg = model.model_config
    if cfg.get("extra") != "forbid":
        yield f"{what} lets unknown keys through (extra={cfg.get('extra')!r}; need 'forbid')"
    if cfg.get("frozen") is not True:
        yield f"{what} is not frozen (need frozen=True)"
    if cfg.get("strict") is not True:
        yield f"{what} coerces values (need strict=True)"
    if cfg.get("allow_inf_nan") is not False:
        yield f"{what} accepts NaN and infinities (need allow_inf_nan=False)"


def config_model_problems(model: Any) -> list[str]:
    """Why ``model`` may not be a policy's config model (empty list: it may).

    A config model must be a frozen :class:`PolicyConfig` that refuses
    coercion and NaN all the way down: no nested model may be laxer than the
    top one (pydantic applies a model's ``strict`` to its own fields only, so
    a nested model that is not strict would coerce ``"4"`` to 4), no field
    may opt out with ``Field(strict=False)``, no type may be ``Any`` (``list[Any]``
    takes ``[{"typo_key": 2}]``), and no part (dict fields included) may let an
    unknown key through: a typo in a serving config must fail at startup, not
    be ignored or coerced. Each problem names the field.
    """
    if not (isinstance(model, type) and issubclass(model, PolicyConfig)):
        return [f"{model!r} is not a subclass of radix_evict.PolicyConfig"]
    cls: type[PolicyConfig] = model
    name = cls.__name__
    out = [*_model_rule_problems(cls, name), *_field_problems(cls)]
    for path, nested in _nested_models(cls, {cls}):
        out.extend(_model_rule_problems(nested, f"nested model {nested.__name__} (field {path})"))
        out.extend(_field_problems(nested, f"{path}."))
    try:
        schema = cls.model_json_schema()
    except Exception as e:  # a field type with no JSON form cannot come from a config file
        out.append(f"{name} has no JSON Schema: {type(e).__name__}: {e}")
        return out
    out.extend(f"{name}: schema {spot}" for spot in lax_schema_spots(schema))
    return list(dict.fromkeys(out))
