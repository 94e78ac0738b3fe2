"""Lint's report as data: text lines, a JSON object, GitHub workflow annotations, SARIF 2.1.0.

Nothing here prints; the CLI (or any caller) decides where each piece goes.
"""

from __future__ import annotations

import os
import re
from typing import Any
from urllib.parse import quote

from .model import ERROR, WARNING, LintProblem, LintReport

FORMATS = ("text", "json", "github", "sarif")
SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
RULES = {
    "unknown_policy": "a policy SGLang's --radix-eviction-policy does not offer",
    "hidden_policy": "an SGLang strategy that is not on --radix-eviction-policy's choices",
    "json_invalid": "a --radix-eviction-policy-config that is not JSON",
    "extra_forbidden": "a config key the policy does not take",
}


def summary(report: LintReport) -> str:
    problems = report.unique()
    errors = sum(1 for p in problems if report.failing(p))
    others = len(problems) - errors
    files = f"{report.files} file{'s' if report.files != 1 else ''}"
    rest = f"{others} warning{'s' if others != 1 else ''} or note{'s' if others != 1 else ''}"
    if not errors:
        return f"OK: {files} checked" + (f" ({rest})" if others else "")
    return f"{errors} problem{'s' if errors != 1 else ''} in {files}" + (
        f" (and {rest})" if others else "")


def text_lines(report: LintReport) -> list[str]:
    """One ``file:line:column: severity: ...`` line per problem (continuations indented)."""
    return [str(p) for p in report.unique()]


def json_report(report: LintReport) -> dict[str, Any]:
    """What ``--format json`` prints: status, files, errors and warnings."""
    return report.to_dict()


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def github_lines(report: LintReport) -> list[str]:
    """``::error file=F,line=L,col=C,title=T::message`` workflow commands."""
    out = []
    for p in report.unique():
        level = "error" if report.failing(p) else ("warning" if p.severity == WARNING else "notice")
        props = [f"file={_escape_property(p.file)}"]
        if p.line is not None:
            props.append(f"line={p.line}")
            props.append(f"col={p.column or 1}")
        props.append(f"title={_escape_property('radix-evict lint: ' + p.type)}")
        msg = f"{p.loc}: {p.msg}" if p.loc else p.msg
        if p.hint:
            msg += f" ({p.hint})"
        out.append(f"::{level} {','.join(props)}::{_escape_data(msg)}")
    return out


def _sarif_level(report: LintReport, p: LintProblem) -> str:
    if report.failing(p):
        return "error"
    return "warning" if p.severity == WARNING else "note"


_DRIVE = re.compile(r"^[A-Za-z]:/")


def artifact_uri(path: str) -> str:
    """A file name as SARIF's ``artifactLocation.uri``: an RFC 3986 URI reference.

    Every character outside the unreserved set and ``/`` is percent-encoded as
    UTF-8 (``,`` ``:`` ``%`` ``é``, a newline), so a relative path stays a
    relative reference (a ``:`` in its first segment cannot pass for a scheme)
    and decodes back to the name (a backslash too, except on Windows, where it is the
    separator); a Windows drive path becomes a ``file:`` URI.
    """
    posix = path.replace(os.sep, "/") if os.sep != "/" else path
    if os.sep != "/" and _DRIVE.match(posix):
        return "file:///" + posix[:2] + quote(posix[2:], safe="/")
    return quote(posix, safe="/")


def sarif(report: LintReport, version: str) -> dict[str, Any]:
    """A SARIF 2.1.0 log: one run, one rule per problem type, one result per problem."""
    problems = report.unique()
    types = sorted({p.type for p in problems})
    rules = [{"id": t, "name": t,
              "shortDescription": {"text": RULES.get(t, t.replace("_", " "))}} for t in types]
    results = []
    for p in problems:
        region: dict[str, Any] = {}
        if p.line is not None:
            region = {"startLine": p.line, "startColumn": p.column or 1}
        location: dict[str, Any] = {"physicalLocation": {
            "artifactLocation": {"uri": artifact_uri(p.file)}}}
        if region:
            location["physicalLocation"]["region"] = region
        if p.loc:
            location["logicalLocations"] = [{"name": p.loc}]
        text = f"{p.msg} ({p.hint})" if p.hint else p.msg
        results.append({"ruleId": p.type, "ruleIndex": types.index(p.type),
                        "level": _sarif_level(report, p), "message": {"text": text},
                        "locations": [location]})
    return {"$schema": SARIF_SCHEMA, "version": "2.1.0", "runs": [{
        "tool": {"driver": {"name": "radix-evict lint", "version": version, "rules": rules}},
        "results": results}]}


__all__ = ["ERROR", "FORMATS", "artifact_uri", "github_lines", "json_report", "sarif", "summary",
           "text_lines"]
