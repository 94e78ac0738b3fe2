"""Policy config: parse (dict or JSON string), validate strictly, explain every problem.

SGLang hands the JSON to the strategy's constructor as keyword arguments and
fails with a raw ``TypeError``; here each policy's config is a pydantic model
(:class:`radix_evict.PolicyConfig`) and every failure becomes a
:class:`~radix_evict.errors.ConfigProblem` that names the policy, the key,
what is wrong, the valid keys and, for a near miss, the likely key.

Whether a config model is strict enough to be registered is
:mod:`radix_evict.policies.strictness`; describing a model's keys for
``radix-evict show`` is :mod:`radix_evict.policies.describe`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, TypeAlias

from pydantic import BaseModel, ValidationError

from radix_evict.errors import ConfigProblem, ProblemType
from radix_evict.inputs import InputError, load_json
from radix_evict.policies.contract import PolicyConfig
from radix_evict.suggest import did_you_mean

__all__ = ["ConfigInput", "NamedFile", "model_keys", "models_in", "named_files",
           "parse_json_config", "validate_config"]

ConfigInput: TypeAlias = "Mapping[str, Any] | str | PolicyConfig | None"


class NamedFile:
    """Marks a config key whose value is the path of a file the policy reads (its weights).

    ``weights: Annotated[str | None, NamedFile()] = None``: a run's identity is
    then the file's content, not its name (a sweep's cell key holds its digest),
    and no output of the run may be written over it.
    """


def named_files(config: PolicyConfig | None) -> dict[str, str]:
    """The files ``config`` names, by key (only the keys marked :class:`NamedFile` and set)."""
    if config is None:
        return {}
    out: dict[str, str] = {}
    for key, field in type(config).model_fields.items():
        value = getattr(config, key)
        if isinstance(value, str) and any(isinstance(m, NamedFile) for m in field.metadata):
            out[field.alias or key] = value
    return out


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
            type=ProblemType.DUPLICATE_KEY,
            msg="given twice in the JSON object; which value was meant is ambiguous",
        )
        return None, [problem]
    except json.JSONDecodeError as e:
        if not text.strip():
            msg = "empty string is not JSON (pass '{}' or omit the config)"
            problem = ConfigProblem(policy=policy, key=None, type=ProblemType.JSON_INVALID,
                                    msg=msg)
            return None, [problem]
        msg = f"malformed JSON at line {e.lineno}, column {e.colno} (char {e.pos}): {e.msg}"
        excerpt = _json_excerpt(text, e.lineno, e.colno)
        problem = ConfigProblem(policy=policy, key=None, type=ProblemType.JSON_INVALID, msg=msg,
                                hint="near:\n      " + excerpt)
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
        nested = next(models_in(field.annotation), None)
        if nested is None:
            return None
        current = nested
    return current


def models_in(annotation: Any) -> Iterator[type[BaseModel]]:
    """BaseModel classes mentioned anywhere in a type annotation."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        yield annotation
        return
    for arg in getattr(annotation, "__args__", ()) or ():
        yield from models_in(arg)
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
        return None, [ConfigProblem(policy=policy, key=None, type=ProblemType.CONFIG_TYPE, msg=msg)]
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
        return None, [ConfigProblem(policy=policy, key=None, type=ProblemType.CONFIG_TYPE, msg=msg)]
    valid = model_keys(model)
    problems = []
    for k in data:
        if not isinstance(k, str):
            msg = f"config keys must be strings, got {_describe_value(k)}"
            problems.append(
                ConfigProblem(policy=policy, key=str(k), type=ProblemType.KEY_TYPE, msg=msg,
                              valid_keys=valid)
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
                type=ProblemType.FINITE_NUMBER,
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
