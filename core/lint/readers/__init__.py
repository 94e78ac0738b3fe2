"""Lint's readers: each config shape into positioned trees or argument words.

YAML (:mod:`.yaml_tree`), JSON (:mod:`.json_tree`), TOML (:mod:`.toml_tree`)
into :class:`.nodes.Node` trees; shell text into words (:mod:`.shell`);
Dockerfiles (:mod:`.dockerfile`); SGLang launches found in any of them
(:mod:`.sources`); a target file read within bounds (:mod:`.files`).
"""

from __future__ import annotations

__all__: list[str] = []
