"""The reference pages generated from the code: the policy registry and the typer app.

docs/reference/policies.md shows only radix-evict's own (built-in) policies,
whatever plugin packages are installed; docs/reference/cli.md shows every
command and option of ``radix_evict.cli.app``.
"""

from __future__ import annotations

import inspect
import json
import textwrap
from collections.abc import Sequence
from typing import Any

from .common import DOCS, HEADER, PROG, as_json, code, md_cell

POLICIES_PAGE = DOCS / "reference" / "policies.md"
CLI_PAGE = DOCS / "reference" / "cli.md"
CHOICES_TEXT = "the `--policy` choices (`radix-evict list` shows them)"
HIDDEN_TEXT = "the ones `radix-evict list --all` marks"


# --------------------------------------------------------------------------- policies page


def builtin_registry() -> Any:
    """A private registry holding only radix-evict's own policies (no third-party plugin)."""
    from radix_evict.policies.plugins import ENV_VAR
    from radix_evict.policies.registry import Registry

    return Registry(environ={ENV_VAR: ""})


def _is_builtin(spec: Any) -> bool:
    from radix_evict.policies.plugins import CORE_DISTRIBUTION, normalize_dist_name

    return normalize_dist_name(spec.distribution or "") == CORE_DISTRIBUTION


def _first_paragraph(doc: str | None) -> str:
    text = inspect.cleandoc(doc or "")
    return " ".join(text.split("\n\n", 1)[0].split())


def _defaults_line(spec: Any) -> str:
    """What the cache does with no config at all: the defaults, or the startup error."""
    from radix_evict.policies.config import validate_config

    cfg, problems = validate_config(spec.name, spec.config_model, None)
    if problems:
        msgs = "; ".join(p.msg for p in problems)
        return f"**Without a config:** rejected at startup ({msgs}), so a config is required."
    keys = cfg.model_dump(mode="json") if cfg is not None else {}
    return f"**Without a config:** runs with {code(as_json(keys))}." if keys else ""


def _score_source(policy: type[Any]) -> str:
    """The policy's own ``__init__`` (where it reads its config) and ``score``."""
    parts = []
    if "__init__" in vars(policy):
        parts.append(textwrap.dedent(inspect.getsource(vars(policy)["__init__"])).rstrip())
    parts.append(textwrap.dedent(inspect.getsource(policy.score)).rstrip())
    return "\n\n".join(parts)


def render_policy(reg: Any, spec: Any) -> str:
    """One policy's section: what it evicts first, its keys, defaults, schema and score."""
    lines = [f"## `{spec.name}`", ""]
    status = (
        "a `--policy` choice" if not spec.hidden
        else "hidden: registered, but not a `--policy` choice unless an installed package "
             "extends the choice list with it (see [Writing a policy package]"
             "(../writing-a-policy.md#4-extend-the-choice-list))"
    )
    lines += [
        spec.summary,
        "",
        f"- **Evicts first:** {_first_paragraph(spec.policy.__doc__)}",
        f"- **Status:** {status}.",
        f"- **Class:** `{spec.policy.__module__}.{spec.policy.__qualname__}`, config model "
        f"`{spec.config_model.__name__}`, entry point `{spec.entry_point}` of "
        f"`{spec.distribution}`.",
        "",
    ]
    keys = reg.describe_config(spec.name)
    if keys:
        lines += [
            "| key | type | default | constraint | meaning |",
            "|---|---|---|---|---|",
        ]
        for k in keys:
            default = "(required)" if k.required else code(as_json(k.default))
            lines.append(
                f"| {code(k.key)} | {md_cell(k.type)} | {default} | "
                f"{md_cell(k.constraint) or '-'} | {md_cell(k.description) or '-'} |"
            )
        lines.append("")
    else:
        lines += ["Config keys: none. Any key is an error.", ""]
    defaults = _defaults_line(spec)
    if defaults:
        lines += [defaults, ""]
    lines += [
        '??? note "Score (lowest evicted first; ties by `last_access_time`)"',
        "",
        "    ```python",
        *("    " + x if x else "" for x in _score_source(spec.policy).splitlines()),
        "    ```",
        "",
        '??? note "JSON Schema of the config"',
        "",
        "    ```json",
        *("    " + x for x in json.dumps(reg.json_schema(spec.name), indent=2).splitlines()),
        "    ```",
        "",
    ]
    return "\n".join(lines)


def render_policies(reg: Any | None = None) -> str:
    """docs/reference/policies.md: one section per built-in registered policy."""
    reg = builtin_registry() if reg is None else reg
    specs = [s for s in reg.specs() if _is_builtin(s)]
    order = {n: i for i, n in enumerate(reg.choices(extended=True))}
    specs.sort(key=lambda s: order.get(s.name, len(order)))
    public = [s.name for s in specs if not s.hidden]
    hidden = [s.name for s in specs if s.hidden]
    out = [
        HEADER.format(what="policies", source="the policy registry"),
        "# Policy reference",
        "",
        "The policies radix-evict registers itself, through its own entry point "
        "`builtin` in group `radix_evict.policies`, exactly as a third-party package "
        "would. Policies from installed plugin packages are not listed here: "
        "`radix-evict list --all` and `radix-evict show NAME` describe whatever is "
        "installed.",
        "",
        "Every policy orders evictable leaves by its score, lowest first, and breaks "
        "ties by `last_access_time` (least recently used first). A config is a JSON "
        "object validated strictly: an unknown key, a string for a number, a float "
        "for an integer, `true` for an integer, NaN or a value outside its "
        "constraint fails at startup with the key named.",
        "",
        "| policy | `--policy` choice | config keys | summary |",
        "|---|---|---|---|",
    ]
    for s in specs:
        keys = ", ".join(code(k) for k in s.keys) or "-"
        out.append(
            f"| [`{s.name}`](#{s.name}) | {'yes' if not s.hidden else 'hidden'} | {keys} | "
            f"{md_cell(s.summary)} |"
        )
    out += [
        "",
        f"Public choices: {', '.join(code(n) for n in public)}. "
        f"Hidden: {', '.join(code(n) for n in hidden) or 'none'}.",
        "",
    ]
    for s in specs:
        out.append(render_policy(reg, s))
    return "\n".join(out).rstrip() + "\n"


# --------------------------------------------------------------------------- CLI page


def cli_command() -> Any:
    """The click command tree of the typer app."""
    import typer

    from radix_evict.cli import app

    return typer.main.get_command(app)


def _context(cmd: Any, name: str, parent: Any = None) -> Any:
    ctx_cls = getattr(cmd, "context_class", None)
    if ctx_cls is None:  # pragma: no cover - every click command has one
        import click

        ctx_cls = click.Context
    settings = dict(getattr(cmd, "context_settings", None) or {})
    return ctx_cls(cmd, info_name=name, parent=parent, **settings)


def _help_text(cmd: Any) -> str:
    text = inspect.cleandoc(cmd.help or "")
    return text.replace("{choices}", CHOICES_TEXT).replace("{hidden}", HIDDEN_TEXT)


def _param_rows(cmd: Any, ctx: Any) -> list[tuple[str, str]]:
    rows = []
    for p in cmd.get_params(ctx):
        if getattr(p, "hidden", False):
            continue
        record = p.get_help_record(ctx)
        if record is None:
            opts = " / ".join([*p.opts, *p.secondary_opts])
            text = ""
        else:
            opts, text = record
        text = (text or "").replace("{choices}", CHOICES_TEXT).replace("{hidden}", HIDDEN_TEXT)
        rows.append((opts, text))
    return rows


def _usage(cmd: Any, ctx: Any, path: str) -> str:
    pieces = cmd.collect_usage_pieces(ctx)
    return " ".join([path, *pieces])


def _params_table(rows: Sequence[tuple[str, str]]) -> list[str]:
    if not rows:
        return []
    out = ["| option | description |", "|---|---|"]
    out += [f"| {code(o)} | {md_cell(t) or '-'} |" for o, t in rows]
    return [*out, ""]


def cli_commands(group: Any | None = None) -> list[str]:
    """Names of the app's (visible) commands, in the order the app lists them."""
    group = cli_command() if group is None else group
    ctx = _context(group, PROG)
    names = []
    for name in group.list_commands(ctx):
        cmd = group.get_command(ctx, name)
        if cmd is not None and not getattr(cmd, "hidden", False):
            names.append(name)
    return names


def render_cli(group: Any | None = None) -> str:
    """docs/reference/cli.md: usage, help and every option of every command."""
    group = cli_command() if group is None else group
    root = _context(group, PROG)
    out = [
        HEADER.format(what="cli", source="the typer app (`radix_evict.cli.app`)"),
        "# CLI reference",
        "",
        _help_text(group),
        "",
        "```text",
        _usage(group, root, PROG),
        "```",
        "",
    ]
    if group.epilog:
        out += [inspect.cleandoc(group.epilog), ""]
    out += [
        "The `--policy` choices depend on the installed policy packages: "
        "`radix-evict list` prints them. `RADIX_EVICT_PLUGINS` (comma-separated "
        "entry-point names; empty = none) limits which third-party packages load.",
        "",
        "## Global options",
        "",
        "Given before the command, e.g. `radix-evict -v simulate`.",
        "",
        *_params_table(_param_rows(group, root)),
        "## Commands",
        "",
        "| command | what it does |",
        "|---|---|",
    ]
    names = cli_commands(group)
    for name in names:
        cmd = group.get_command(root, name)
        short = _first_paragraph(_help_text(cmd))
        out.append(f"| [`{name}`](#{PROG}-{name}) | {md_cell(short)} |")
    out.append("")
    for name in names:
        cmd = group.get_command(root, name)
        ctx = _context(cmd, name, parent=root)
        out += _command_section(cmd, ctx, f"{PROG} {name}")
        if hasattr(cmd, "list_commands"):  # a command group (``sglang check``): each subcommand
            for sub in cli_commands(cmd):
                sub_cmd = cmd.get_command(ctx, sub)
                out += _command_section(
                    sub_cmd, _context(sub_cmd, sub, parent=ctx), f"{PROG} {name} {sub}"
                )
    return "\n".join(out).rstrip() + "\n"


def _command_section(cmd: Any, ctx: Any, path: str) -> list[str]:
    return [
        f"## `{path}`",
        "",
        _help_text(cmd),
        "",
        "```text",
        _usage(cmd, ctx, path),
        "```",
        "",
        *_params_table(_param_rows(cmd, ctx)),
    ]

