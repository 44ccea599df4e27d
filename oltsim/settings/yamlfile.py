"""YAML as oltsim reads its files: PyYAML's safe loader, refusing duplicate keys, and one ConfigError per file that
cannot be read or parsed (naming the file, and the line and column of a syntax error)."""
from __future__ import annotations

from typing import Any

import yaml

from oltsim.settings.errors import ConfigError


def load_yaml_file(path: str, where: str) -> Any:
    """The document of the YAML file at ``path`` (``where`` names it in an error); ConfigError if it cannot be read
    or parsed."""
    try:
        with open(path, encoding="utf-8") as stream:
            text = stream.read()
    except FileNotFoundError:
        raise ConfigError(f"{where} does not exist") from None
    except IsADirectoryError:
        raise ConfigError(f"{where} is a directory, not a file") from None
    except UnicodeDecodeError as error:
        raise ConfigError(f"{where} is not UTF-8 text ({error.reason} at byte {error.start})") from None
    except OSError as error:
        raise ConfigError(f"{where} cannot be read: {error.strerror or error}") from None
    return parse_yaml(text, where)


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that refuses duplicate mapping keys, which plain PyYAML resolves silently to the last one."""


def _construct_unique_mapping(loader: _StrictLoader, node: yaml.MappingNode, deep: bool = False) -> dict:
    loader.flatten_mapping(node)
    seen: set = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        try:
            duplicate = key in seen
            seen.add(key)
        except TypeError:  # unhashable key: let construct_mapping report it
            continue
        if duplicate:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r}", key_node.start_mark)
    return loader.construct_mapping(node, deep=deep)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_unique_mapping)


def parse_yaml(text: str, where: str) -> Any:
    """The document of YAML ``text`` (``where`` names it in an error); ConfigError if it does not parse."""
    try:
        return yaml.load(text, Loader=_StrictLoader)  # noqa: S506 - _StrictLoader is a SafeLoader
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        position = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = error.problem or error.context or "syntax error"
        raise ConfigError(f"{where}: invalid YAML{position}: {problem}") from None
    except yaml.YAMLError as error:
        raise ConfigError(f"{where}: invalid YAML: {error}") from None


def kind_of(value: object) -> str:
    """What a YAML value is, as an error message says it: ``a mapping``, ``a list``, ``a string``, ``nothing``."""
    return {dict: "a mapping", list: "a list", str: "a string", type(None): "nothing"}.get(
        type(value), type(value).__name__)
