"""The YAML of a settings file, parsed safely: PyYAML's `SafeLoader` (reading a config runs
no code) refusing a key given twice, its errors in one line. Kept apart from `config` so
that PyYAML is imported only when a file is read (`config.load_yaml`)."""

from __future__ import annotations

from typing import Any

import yaml


class YamlTextError(ValueError):
    """Text that does not read as YAML; the message says why and where, in one line."""


class _UniqueKeys(yaml.SafeLoader):
    """`yaml.safe_load`'s loader, refusing a key given twice in one mapping: PyYAML keeps
    the last one silently, so a setting written twice (a line added below the old one) took
    the value further down without a word."""


def _unique_mapping(loader: _UniqueKeys, node: yaml.MappingNode) -> dict[Any, Any]:
    lines: dict[Any, int] = {}
    for key_node, _ in node.value:
        key = loader.construct_object(key_node)
        try:
            first = lines.setdefault(key, key_node.start_mark.line + 1)
        except TypeError:  # an unhashable key: construct_mapping says so
            continue
        if first != key_node.start_mark.line + 1:
            raise yaml.constructor.ConstructorError(
                None,
                None,
                f"{key!r} is given twice (lines {first} and {key_node.start_mark.line + 1})",
                key_node.start_mark,
            )
    return loader.construct_mapping(node)


_UniqueKeys.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _unique_mapping)


def parse_yaml(text: str) -> Any:
    """The document of `text`, or `YamlTextError` saying what is wrong where."""
    try:
        return yaml.load(text, Loader=_UniqueKeys)  # a SafeLoader: reading runs no code
    except yaml.MarkedYAMLError as exc:
        # PyYAML's own text runs over several lines and places the error in "<unicode
        # string>": one line, placed in the file, as every other config error is.
        mark = exc.problem_mark or exc.context_mark
        at = "" if mark is None else f"line {mark.line + 1}, column {mark.column + 1}: "
        context = f" ({exc.context})" if exc.context and exc.problem else ""
        raise YamlTextError(f"{at}{exc.problem or exc.context}{context}") from None
    except yaml.YAMLError as exc:
        raise YamlTextError(str(exc)) from None
    except RecursionError:
        raise YamlTextError("nested too deeply to read") from None
    except ValueError as exc:
        # A value PyYAML parsed but Python cannot build: an integer of more than 4300
        # digits, a date of month 13. PyYAML lets these through as they are.
        raise YamlTextError(str(exc)) from None
