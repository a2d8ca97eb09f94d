"""YAML held to JSON's data model and the same limits as strict JSON.

Scenarios, cassettes and agent definitions are YAML. `yaml.safe_load` alone
lets through what strict JSON refuses: `.nan` and `.inf`, integers of any
size (5,000 digits raise a bare `ValueError`), timestamps and sets that are
no JSON value, non-string keys, and aliases that expand a small file into
billions of values (the "billion laughs"). Here the composed node graph is
checked first, with every problem named by its line, and only then
constructed.
"""

from __future__ import annotations

from typing import Any

import yaml

from metis_trace import InputError
from metis_trace import JsonLimits

from ._input import input_json_limits

_Loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # the C loader is ~10x faster

# Values after expanding aliases: a reused anchor is fine, an exponential one is not.
MAX_EXPANDED_NODES = 1_000_000

_TAG = "tag:yaml.org,2002:"
_JSON_SCALARS = {_TAG + t for t in ("str", "int", "float", "bool", "null")}


def load_yaml(
    text: str, *, source: str, first_line: int = 1, limits: JsonLimits | None = None
) -> Any:
    """One YAML document as JSON-like data. `first_line` is the line `text`
    starts on in its file (front matter starts on line 2)."""
    bound = limits or input_json_limits()
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _check(node, loader, bound, source, first_line)
        return loader.construct_document(node)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = first_line + mark.line if mark is not None else None
        problem = " ".join(str(exc.problem or exc.context or "invalid").split())
        raise InputError(line, f"not valid YAML: {problem}", source) from exc
    except yaml.YAMLError as exc:
        raise InputError(None, f"not valid YAML: {' '.join(str(exc).split())}", source) from exc
    except RecursionError as exc:  # the pure-Python composer on deep nesting
        raise InputError(None, f"nested deeper than {bound.max_depth} levels", source) from exc
    finally:
        loader.dispose()


def _check(root: Any, loader: Any, limits: JsonLimits, source: str, first_line: int) -> None:
    """Depth, alias expansion, cycles and JSON-only scalars, each at its line.

    A depth-first walk over the node graph: each node is checked once however
    many aliases reach it, while its height and expanded size are computed
    over the graph, so a shared anchor costs nothing and an exponential one is
    caught without expanding it."""
    height: dict[int, int] = {}
    size: dict[int, int] = {}
    open_nodes: set[int] = set()
    stack: list[tuple[Any, str, bool]] = [(root, "", False)]
    while stack:
        node, path, children_done = stack.pop()
        key = id(node)
        line = first_line + node.start_mark.line
        if children_done:
            kids = _children(node)
            open_nodes.discard(key)
            height[key] = 1 + max((height[id(c)] for c, _ in kids), default=0)
            size[key] = min(MAX_EXPANDED_NODES + 1, 1 + sum(size[id(c)] for c, _ in kids))
            if height[key] > limits.max_depth:
                raise _fail(f"nested deeper than {limits.max_depth} levels", path, line, source)
            if size[key] > MAX_EXPANDED_NODES:
                problem = f"aliases expand to more than {MAX_EXPANDED_NODES} values"
                raise _fail(problem, path, line, source)
            continue
        if key in open_nodes:
            raise _fail("an alias refers to a value that contains it", path, line, source)
        if key in size:
            continue  # an alias to a value checked already
        if isinstance(node, yaml.ScalarNode):
            _check_scalar(node, loader, limits, path, line, source)
            height[key], size[key] = 0, 1
            continue
        expected = _TAG + ("seq" if isinstance(node, yaml.SequenceNode) else "map")
        if node.tag != expected:
            raise _fail(f"{node.tag} is not a JSON value", path, line, source)
        open_nodes.add(key)
        stack.append((node, path, True))
        for child, part in reversed(_children(node, path, first_line, source)):
            stack.append((child, part, False))


def _children(
    node: Any, path: str = "", first_line: int = 1, source: str = ""
) -> list[tuple[Any, str]]:
    if isinstance(node, yaml.SequenceNode):
        return [(item, f"{path}[{i}]") for i, item in enumerate(node.value)]
    found: list[tuple[Any, str]] = []
    for key, value in node.value:
        if not isinstance(key, yaml.ScalarNode) or key.tag != _TAG + "str":
            where = first_line + key.start_mark.line
            raise _fail("a key must be a string", path, where, source)
        found.append((value, f"{path}.{key.value}" if path else key.value))
    return found


def _fail(problem: str, path: str, line: int, source: str) -> InputError:
    shown = path if len(path) <= 80 else path[:72] + "..."
    return InputError(line, f"{shown}: {problem}" if shown else problem, source)


def _check_scalar(
    node: Any, loader: Any, limits: JsonLimits, path: str, line: int, source: str
) -> None:
    problem = ""
    if node.tag not in _JSON_SCALARS:
        name = node.tag.removeprefix(_TAG)
        problem = f"a YAML {name} is not a JSON value (quote it to make it a string)"
    elif node.tag == _TAG + "int":
        digits = sum(c.isalnum() for c in node.value)
        value = None if digits > 40 else loader.construct_yaml_int(node)
        if value is None or abs(value) > limits.max_int:
            problem = f"integer beyond the limit of {limits.max_int}"
    elif node.tag == _TAG + "float":
        number = loader.construct_yaml_float(node)
        if number != number or number in (float("inf"), float("-inf")):
            problem = f"{node.value} is not a JSON number"
    if problem:
        raise _fail(problem, path, line, source)
