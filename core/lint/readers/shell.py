"""Split shell command text into commands and words as ``sh`` does, keeping positions.

Quotes, backslash escapes and line continuations are removed the way the
shell removes them; ``$VAR``, ``${VAR}``, ``$(...)`` (also Kubernetes'
``$(VAR)``) and backticks stay in the word verbatim, as opaque text that is
only known at deploy time. ``;``, ``&``, ``|``, ``&&``, ``||``, parentheses
and newlines end a command; redirections and their targets are dropped,
here-documents skipped, comments ignored. Each word is a :class:`Text`, so a
problem inside it points at the character in the file.
"""

from __future__ import annotations

import re

from ..text import Text

OPERATORS = frozenset(";&|()")
BLANKS = frozenset(" \t\r")
ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")
# Shell and Kubernetes expansions, and Helm/Jinja template tags.
OPAQUE = re.compile(r"\$[{(]|\$[A-Za-z_0-9@*#?$!-]|`|\{\{|\{%")


def is_opaque(word: str) -> bool:
    """Whether the word holds an expansion or template only the deploy can fill in."""
    return OPAQUE.search(word) is not None


def _closing(s: str, i: int, open_: str, close: str) -> int:
    """Index just past the ``close`` that balances ``s[i] == open_``, skipping quotes."""
    depth = 0
    n = len(s)
    while i < n:
        c = s[i]
        if c == "\\":
            i += 2
            continue
        if c == "'" and open_ == "(":
            end = s.find("'", i + 1)
            i = n if end < 0 else end + 1
            continue
        if c == '"' and open_ == "(":
            i = _dquote_end(s, i + 1)
            continue
        if c == open_:
            depth += 1
        elif c == close:
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return n


def _dquote_end(s: str, i: int) -> int:
    """Index just past the ``"`` that closes a double-quoted string opened before ``i``."""
    n = len(s)
    while i < n:
        c = s[i]
        if c == "\\":
            i += 2
        elif c == '"':
            return i + 1
        elif s.startswith("$(", i):
            i = _closing(s, i + 1, "(", ")")
        else:
            i += 1
    return n


class _Splitter:
    def __init__(self, script: Text) -> None:
        self.script = script
        self.s = script.text
        self.commands: list[list[Text]] = []
        self.words: list[Text] = []
        self.parts: list[tuple[int, int]] = []
        self.in_word = False
        self.drop_next = False
        self.heredocs: list[str] = []

    def end_word(self) -> None:
        if self.in_word:
            word = self.script.join(self.parts) if self.parts else self.script.slice(0, 0)
            if self.drop_next:
                self.drop_next = False
            else:
                self.words.append(word)
        self.parts = []
        self.in_word = False

    def end_command(self) -> None:
        self.end_word()
        if self.words:
            self.commands.append(self.words)
        self.words = []

    def add(self, start: int, end: int) -> None:
        self.in_word = True
        if self.parts and self.parts[-1][1] == start:
            self.parts[-1] = (self.parts[-1][0], end)
        else:
            self.parts.append((start, end))

    def skip_heredocs(self, i: int) -> int:
        """``i`` is just past a newline: skip each pending here-document's lines."""
        s = self.s
        for delim in self.heredocs:
            while i < len(s):
                end = s.find("\n", i)
                end = len(s) if end < 0 else end
                line = s[i:end]
                i = end + 1
                if line.strip() == delim:
                    break
        self.heredocs = []
        return i

    def run(self) -> list[list[Text]]:
        s = self.s
        n = len(s)
        i = 0
        heredoc_next = False
        while i < n:
            c = s[i]
            if c in BLANKS:
                self.end_word()
                i += 1
            elif c == "\n":
                self.end_command()
                i = self.skip_heredocs(i + 1) if self.heredocs else i + 1
            elif c == "#" and not self.in_word:
                end = s.find("\n", i)
                i = n if end < 0 else end
            elif c == "\\":
                if i + 1 < n and s[i + 1] == "\n":
                    i += 2  # line continuation
                elif i + 1 < n:
                    self.add(i + 1, i + 2)
                    i += 2
                else:
                    i += 1
            elif c == "'":
                end = s.find("'", i + 1)
                end = n if end < 0 else end
                self.in_word = True
                self.add(i + 1, end)
                i = end + 1
            elif c == '"':
                i = self.double_quoted(i + 1)
            elif c == "$" and i + 1 < n and s[i + 1] in "({":
                end = _closing(s, i + 1, s[i + 1], ")" if s[i + 1] == "(" else "}")
                self.add(i, end)
                i = end
            elif c == "`":
                end = s.find("`", i + 1)
                end = n if end < 0 else end + 1
                self.add(i, end)
                i = end
            elif c in OPERATORS:
                self.end_command()
                i += 1
            elif c in "<>":
                word = s[self.parts[0][0]:i] if len(self.parts) == 1 else ""
                if self.in_word and word.isdigit():
                    self.parts, self.in_word = [], False  # "2>": the fd number is no word
                self.end_word()
                if s.startswith("<<", i):
                    heredoc_next = True
                j = i
                while j < n and s[j] in "<>&|-":
                    j += 1
                if s[j - 1] == "&" and j < n and (s[j].isdigit() or s[j] == "-"):
                    while j < n and (s[j].isdigit() or s[j] == "-"):
                        j += 1  # >&2: a descriptor, not a file name
                else:
                    self.drop_next = True
                i = j
                if heredoc_next:
                    heredoc_next = False
                    m = re.match(r"[ \t]*(['\"]?)([^\s'\";&|<>]+)\1", s[i:])
                    if m:
                        self.heredocs.append(m.group(2))
                        i += m.end()
                        self.drop_next = False
            else:
                j = i + 1
                while j < n and s[j] not in " \t\r\n'\"\\$`;&|()<>":
                    j += 1
                self.add(i, j)
                i = j
        self.end_command()
        return self.commands

    def double_quoted(self, i: int) -> int:
        s = self.s
        n = len(s)
        self.in_word = True
        start = i
        while i < n:
            c = s[i]
            if c == "\\" and i + 1 < n and s[i + 1] in '$`"\\\n':
                self.add(start, i)
                if s[i + 1] != "\n":
                    self.add(i + 1, i + 2)
                i += 2
                start = i
            elif c == '"':
                self.add(start, i)
                return i + 1
            elif s.startswith("$(", i):
                i = _closing(s, i + 1, "(", ")")
            elif c == "`":
                end = s.find("`", i + 1)
                i = n if end < 0 else end + 1
            else:
                i += 1
        self.add(start, n)
        return n


def split_commands(script: Text) -> list[list[Text]]:
    """The simple commands of a shell script, each as its list of words."""
    return _Splitter(script).run()
