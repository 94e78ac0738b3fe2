"""Policy config: parse (dict or JSON string), validate strictly, explain every problem.

SGLang hands the JSON to the strategy's constructor as keyword arguments and
fails with a raw ``TypeError``; here each policy's config is a pydantic model
(:class:`radix_evict.PolicyConfig`) and every failure becomes a
:class:`~radix_evict.errors.ConfigProblem` that names the policy, the key,
what is wrong, the valid keys and, for a near miss, the likely key.

This module also decides whether a config model is strict enough to be
registered (:func:`config_model_problems`) and describes a model's keys for
``radix-evict show`` (:func:`describe_model`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias

from pydantic import BaseModel, ValidationError
from pydantic.types import Strict
from pydantic_core import PydanticUndefined

from radix_evict.errors import ConfigProblem, ProblemType
from radix_evict.inputs import InputError, load_json
from radix_evict.policies.contract import PolicyConfig
from radix_evict.suggest import did_you_mean

ConfigInput: TypeAlias = "Mapping[str, Any] | str | PolicyConfig | None"


# --------------------------------------------------------------------------- parsing


class _DuplicateKeyError(ValueError):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise _DuplicateKeyError(k)
        out[k] = v
    return out


def _json_excerpt(text: str, lineno: int, colno: int) -> str:
    """The offending line with a caret under the column where parsing stopped."""
    lines = text.splitlines() or [""]
    line = lines[min(lineno, len(lines)) - 1]
    start = max(0, colno - 1 - 40)
    shown = line[start : start + 80]
    caret = " " * (colno - 1 - start) + "^"
    return f"{shown}\n      {caret}"


def parse_json_config(policy: str, text: str) -> tuple[Any, list[ConfigProblem]]:
    """Decode a JSON config string; malformed JSON says where it broke.

    ``NaN``/``Infinity`` decode (validation then rejects them by key) but a
    key given twice is an error: JSON libraries keep the last one silently.
    Read through :func:`radix_evict.inputs.load_json`, so deep nesting, huge
    numbers and huge documents are refused as ``input_limit`` problems.
    """
    try:
        return load_json(text, what="the config", object_pairs_hook=_no_duplicates), []
    except InputError as e:  # nested too deeply, a number too long, too large: refused unread
        problem = ConfigProblem(policy=policy, key=None, type=ProblemType.INPUT_LIMIT,
                                msg=str(e))
        return None, [problem]
    except _DuplicateKeyError as e:
        problem = ConfigProblem(
            policy=policy,
            key=e.key,
            loc=(e.key,),
            type="duplicate_key",
            msg="given twice in the JSON object; which value was meant is ambiguous",
        )
        return None, [problem]
    except json.JSONDecodeError as e:
        if not text.strip():
            msg = "empty string is not JSON (pass '{}' or omit the config)"
            return None, [ConfigProblem(policy=policy, key=None, type="json_invalid", msg=msg)]
        msg = f"malformed JSON at line {e.lineno}, column {e.colno} (char {e.pos}): {e.msg}"
        excerpt = _json_excerpt(text, e.lineno, e.colno)
        problem = ConfigProblem(
            policy=policy, key=None, type="json_invalid", msg=msg, hint="near:\n      " + excerpt
        )
        return None, [problem]


_SHOWN_INT_BITS = 200  # about 60 digits: longer integers are described by their length


def _describe_value(value: Any) -> str:
    """How a value reads in JSON terms, for messages (``the string '4'``)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"the boolean {'true' if value else 'false'}"
    if isinstance(value, int):
        if value.bit_length() > _SHOWN_INT_BITS:  # str() of a 4,300-digit int raises
            return f"an integer of about {int(value.bit_length() * math.log10(2)) + 1} digits"
        return f"the integer {value}"
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "Infinity" if value > 0 else "-Infinity"
        return f"the number {value!r}"
    if isinstance(value, str):
        return f"the string {value!r}"
    if isinstance(value, Mapping):
        return "an object"
    if isinstance(value, (list, tuple)):
        return "a list"
    return f"a {type(value).__name__}"


Loc = tuple[str | int, ...]


def _non_finite(value: Any, loc: Loc = ()) -> Iterator[tuple[Loc, float]]:
    """Locations of NaN and infinities anywhere in a decoded config."""
    if isinstance(value, float) and not math.isfinite(value):
        yield loc, value
    elif isinstance(value, Mapping):
        for k, v in value.items():
            yield from _non_finite(v, (*loc, k))
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            yield from _non_finite(v, (*loc, i))


# --------------------------------------------------------------------------- validation


def model_keys(model: type[BaseModel]) -> tuple[str, ...]:
    """The keys a config model accepts (aliases where set), in declaration order."""
    return tuple(f.alias or name for name, f in model.model_fields.items())


def _model_at(model: type[BaseModel], loc: Sequence[str | int]) -> type[BaseModel] | None:
    """The nested model that holds the last element of ``loc`` (None if not a model)."""
    current: type[BaseModel] = model
    for part in loc[:-1]:
        if isinstance(part, int):
            continue
        field = current.model_fields.get(str(part))
        if field is None:
            return None
        nested = next(_models_in(field.annotation), None)
        if nested is None:
            return None
        current = nested
    return current


def _models_in(annotation: Any) -> Iterator[type[BaseModel]]:
    """BaseModel classes mentioned anywhere in a type annotation."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        yield annotation
        return
    for arg in getattr(annotation, "__args__", ()) or ():
        yield from _models_in(arg)
    for arg in getattr(annotation, "__metadata__", ()) or ():
        if isinstance(arg, type) and issubclass(arg, BaseModel):
            yield arg


def _dotted(loc: Sequence[str | int]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


_BOUND_WORDS = {
    "greater_than": ">",
    "greater_than_equal": ">=",
    "less_than": "<",
    "less_than_equal": "<=",
}
_TYPE_WORDS = {
    "int_type": "must be an integer",
    "int_parsing": "must be an integer",
    "int_from_float": "must be an integer",
    "float_type": "must be a number",
    "float_parsing": "must be a number",
    "bool_type": "must be true or false",
    "bool_parsing": "must be true or false",
    "string_type": "must be a string",
    "list_type": "must be a list",
    "dict_type": "must be an object",
    "model_type": "must be an object",
    "model_attributes_type": "must be an object",
    "finite_number": "must be a finite number",
}


def _problem_from_error(
    policy: str, model: type[BaseModel], err: Mapping[str, Any]
) -> ConfigProblem:
    loc: tuple[str | int, ...] = tuple(err.get("loc", ()))
    etype: str = err["type"]
    value = err.get("input")
    ctx: Mapping[str, Any] = err.get("ctx") or {}
    if not loc:
        # A model-level rule (e.g. tlru's threshold > next_prompt_estimate):
        # report it against the first key that its message names.
        msg = str(ctx.get("error", err.get("msg", ""))) if etype == "value_error" else err["msg"]
        first = next((k for k in model_keys(model) if k in msg), None)
        loc = (first,) if first is not None else ()
        value = None
    container = _model_at(model, loc) if loc else model
    valid = model_keys(container) if container is not None else ()
    key = _dotted(loc) if loc else None
    hint: str | None = None
    if etype == "extra_forbidden":
        msg = "unknown key"
        hint = did_you_mean(str(loc[-1]), valid)
        value = None
    elif etype == "missing":
        msg = "required key is missing"
        value = None
    elif etype in _BOUND_WORDS:
        bound = next(iter(ctx.values()), "?")
        msg = f"must be {_BOUND_WORDS[etype]} {bound}, got {_describe_value(value)}"
    elif etype in _TYPE_WORDS:
        msg = f"{_TYPE_WORDS[etype]}, got {_describe_value(value)}"
        numeric = isinstance(value, str) and value.strip().lstrip("-").isdigit()
        if etype.startswith("int") and numeric:
            hint = "write the number without quotes"
    elif etype == "value_error":
        msg = str(ctx.get("error", err.get("msg", "")))
    else:
        msg = f"{err.get('msg', etype)}, got {_describe_value(value)}"
    return ConfigProblem(
        policy=policy,
        key=key,
        loc=loc,
        type=etype,
        msg=msg,
        hint=hint,
        valid_keys=valid,
        input=value,
    )


def validate_config(
    policy: str, model: type[PolicyConfig], config: ConfigInput | Any
) -> tuple[PolicyConfig | None, list[ConfigProblem]]:
    """Parse and validate ``config`` for ``policy``; returns (config, []) or (None, problems).

    Accepts None (no keys), a mapping, a JSON string (``null`` means no keys)
    or an instance of the policy's own config model.
    """
    if isinstance(config, model):
        return config, []
    if isinstance(config, BaseModel):
        msg = (
            f"is a {type(config).__name__}, but policy {policy!r} takes a "
            f"{model.__name__} (or a dict / JSON string of its keys)"
        )
        return None, [ConfigProblem(policy=policy, key=None, type="config_type", msg=msg)]
    data: Any = config
    if isinstance(config, (str, bytes, bytearray)):
        text = config.decode() if isinstance(config, (bytes, bytearray)) else config
        data, problems = parse_json_config(policy, text)
        if problems:
            return None, problems
    if data is None:
        data = {}
    if not isinstance(data, Mapping):
        msg = f"the config must be a JSON object of keys, got {_describe_value(data)}"
        return None, [ConfigProblem(policy=policy, key=None, type="config_type", msg=msg)]
    valid = model_keys(model)
    problems = []
    for k in data:
        if not isinstance(k, str):
            msg = f"config keys must be strings, got {_describe_value(k)}"
            problems.append(
                ConfigProblem(policy=policy, key=str(k), type="key_type", msg=msg, valid_keys=valid)
            )
    if problems:
        return None, problems
    bad_numbers = {loc: v for loc, v in _non_finite(data)}
    for loc, v in bad_numbers.items():
        container = _model_at(model, loc)
        problems.append(
            ConfigProblem(
                policy=policy,
                key=_dotted(loc),
                loc=loc,
                type="finite_number",
                msg=f"must be a finite number, got {_describe_value(v)}",
                valid_keys=model_keys(container) if container is not None else valid,
                input=v,
            )
        )
    try:
        result = model.model_validate(dict(data))
    except ValidationError as e:
        for err in e.errors(include_url=False):
            if tuple(err.get("loc", ())) in bad_numbers:
                continue
            problems.append(_problem_from_error(policy, model, err))
        return None, problems
    if problems:
        return None, problems
    return result, []


# --------------------------------------------------------------------------- strictness


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
        for nested in _models_in(field.annotation):
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


# --------------------------------------------------------------------------- description


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
