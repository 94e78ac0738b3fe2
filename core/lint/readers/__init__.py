"""Lint's readers: each config shape into positioned trees or argument words.

YAML (:mod:`.yaml_tree`), JSON (:mod:`.json_tree`), TOML (:mod:`.toml_tree`)
into :class:`Node` trees whose nodes know their place; shell text into words
(:mod:`.shell`); Dockerfiles, continuation lines joined as Docker joins them
(:mod:`.dockerfile`); SGLang launches found in any of them (:mod:`.sources`);
a target file read within bounds (:mod:`.files`). The tree readers are named
here; the others import lint's model, so import them by module.
"""

from __future__ import annotations

from .json_tree import parse_json
from .nodes import LimitExceeded, Node, ParseFailure
from .shell import is_opaque, split_commands
from .toml_tree import toml_tree
from .yaml_tree import parse_yaml

__all__ = ["LimitExceeded", "Node", "ParseFailure", "is_opaque", "parse_json", "parse_yaml",
           "split_commands", "toml_tree"]
