"""Architecture rules that code review alone would let slip."""

from __future__ import annotations

import ast
import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests._exports import assert_all_lists_the_public_names
from tests._layout import IMPORT_TABLE
from tests._layout import layout_dot

ROOT = Path(__file__).resolve().parent.parent


def _imported_in(code: str) -> set[str]:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return set(json.loads(out.stdout))


# Third-party imports of the two bottom packages: what a runtime must install to
# write a trace, and what the specification may lean on.
THIRD_PARTY = {
    # ahocorasick_rs: the credential scan's one pass over a long record for
    # every name at once (metis_trace/_credentials/; a core dependency).
    "metis_trace": {"attrs", "pydantic", "ahocorasick_rs"},
    "metis_model": {"attrs", "pydantic"},
}


def _top_level_packages() -> set[str]:
    return {
        p.name
        for p in ROOT.iterdir()
        if p.is_dir() and p.name.startswith("metis") and (p / "__init__.py").exists()
    }


def test_the_import_table_names_every_package() -> None:
    assert _top_level_packages() == set(IMPORT_TABLE)


@pytest.mark.parametrize("package", sorted(IMPORT_TABLE))
def test_package_imports_only_what_the_table_allows(package: str) -> None:
    allowed = IMPORT_TABLE[package] | {package}
    for path in (ROOT / package).rglob("*.py"):
        for name in _imports(path):
            top = name.split(".")[0]
            if top.startswith("metis"):
                assert top in allowed, f"{path.relative_to(ROOT)}: imports {name}"
            elif package in THIRD_PARTY and top not in sys.stdlib_module_names:
                assert top in THIRD_PARTY[package], f"{path.relative_to(ROOT)}: imports {name}"


def test_the_drawing_shows_the_import_table() -> None:
    assert (ROOT / "specs" / "layout.dot").read_text(encoding="utf-8") == layout_dot(), (
        "specs/layout.dot is stale: run `make layout`"
    )
    assert (ROOT / "specs" / "layout.svg").stat().st_mtime > 0


def test_import_table_has_arrows_only_downwards() -> None:
    import networkx as nx

    graph = nx.DiGraph([(a, b) for a, bs in IMPORT_TABLE.items() for b in bs])
    assert nx.is_directed_acyclic_graph(graph)


def test_model_core_is_pure() -> None:
    mods = _imported_in(
        "import json, sys; import metis_model, metis_model.context, metis_model.plan, metis_trace; "
        "print(json.dumps(sorted(sys.modules)))"
    )
    for banned in (
        "asyncio",
        "z3",
        "networkx",
        "graphviz",
        "httpx",
        "metis_runtime",
        "metis_check",
    ):
        assert not any(m == banned or m.startswith(banned + ".") for m in mods), banned


IMPURE_MODULES = {
    "asyncio",
    "time",
    "os",
    "pathlib",
    "subprocess",
    "socket",
    "threading",
    "io",
    "shutil",
}


def test_model_core_has_no_clock_io_or_global_randomness() -> None:
    for path in [*(ROOT / "metis_model").rglob("*.py")]:
        rel = path.relative_to(ROOT / "metis_model")
        if path.name == "_moved.py":  # resolves moved names with importlib, by name
            continue
        tree = ast.parse(path.read_text(), filename=str(path))
        for name in _imports(path):
            assert name.split(".")[0] not in IMPURE_MODULES, f"{rel}: imports {name}"
        for node in ast.walk(tree):
            # Only seeded `random.Random(seed)` instances; never the global generator.
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id == "random"
            ):
                assert node.attr == "Random", f"{rel}:{node.lineno}: random.{node.attr}"
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                assert node.func.id != "open", f"{rel}:{node.lineno}: file I/O in the model"


def _imports(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module)
    return names


def test_z3_lives_only_in_the_proofs_package() -> None:
    for package in IMPORT_TABLE:
        if package in ("metis_proofs", "metis_cli", "metis_studies"):
            continue
        for path in (ROOT / package).rglob("*.py"):
            assert not [n for n in _imports(path) if n.split(".")[0] == "z3"], path


def test_graph_libraries_only_where_graphs_are_built() -> None:
    for package in ("metis_trace", "metis_model"):
        for path in (ROOT / package).rglob("*.py"):
            bad = [n for n in _imports(path) if n.split(".")[0] in ("networkx", "graphviz")]
            assert not bad, path


def test_studies_use_the_public_surfaces_only() -> None:
    """metis_studies imports the model and the runtime through their public
    names (no `_private` module), never the CLI; neither imports the studies."""
    for path in (ROOT / "metis_studies").rglob("*.py"):
        for name in _imports(path):
            parts = name.split(".")
            assert parts[0] != "metis_cli", f"{path}: imports {name}"
            if parts[0] in ("metis_model", "metis_runtime", "metis_check", "metis_trace"):
                assert not any(p.startswith("_") for p in parts), f"{path}: imports {name}"
    for package in ("metis_model", "metis_runtime"):
        for path in (ROOT / package).rglob("*.py"):
            assert not [n for n in _imports(path) if n.split(".")[0] == "metis_studies"], path


@pytest.mark.parametrize(
    "package",
    [
        "metis_studies",
        "metis_studies.explore",
        "metis_studies.faults",
        "metis_studies.oracle",
        "metis_studies.dispatch",
        "metis_studies.read_marker",
        "metis_studies.report",
        "metis_model",
        "metis_trace",
        "metis_model.context",
        "metis_check",
        "metis_check.transcripts",
        "metis_proofs",
        "metis_witness",
        "metis_model.plan",
        "metis_runtime.assemble",
        "metis_cli",
    ],
)
def test_public_names_equal_all(package: str) -> None:
    module = __import__(package, fromlist=["__all__"])
    for name in module.__all__:  # a lazy package (PEP 562) binds names on first use
        getattr(module, name)
    assert_all_lists_the_public_names(module)
    for name in module.__all__:
        assert getattr(module, name) is not None


@pytest.mark.parametrize(
    "package",
    ["metis_model", "metis_trace", "metis_check", "metis_runtime", "metis_runtime.permissions"],
)
def test_lazy_exports_are_the_type_checking_imports(package: str) -> None:
    """A lazy package names each export once, as an explicit re-export
    (`X as X`, so mypy exports it) under `TYPE_CHECKING`; `__all__` and the
    PEP 562 lookup are read from those imports, and each resolves to the
    object its submodule holds without loading any submodule eagerly."""
    path = ROOT / package.replace(".", "/") / "__init__.py"
    imports = _typed_imports(ast.parse(path.read_text()))
    typed: dict[str, object] = {}
    for where, stmt in imports:
        for alias in stmt.names:
            assert alias.asname == alias.name, f"{path}: {ast.unparse(stmt)} (write `X as X`)"
            typed[alias.name] = getattr(importlib.import_module(where, package), alias.name)
    module = importlib.import_module(package)
    assert module.__all__ == sorted(typed)
    assert {name: getattr(module, name) for name in module.__all__} == typed
    code = f"import json, sys, {package}; print(json.dumps(sorted(sys.modules)))"
    loaded = set(_imported_in(code))
    eager = sorted({importlib.util.resolve_name(where, package) for where, _ in imports} & loaded)
    assert not eager, f"exports load eagerly: {eager}"


def _typed_imports(tree: ast.Module) -> list[tuple[str, ast.ImportFrom]]:
    """Each statement under a top-level `if TYPE_CHECKING:`, with the module
    it imports from (only `from ... import` may stand there)."""
    found: list[tuple[str, ast.ImportFrom]] = []
    for node in tree.body:
        if isinstance(node, ast.If) and ast.unparse(node.test).endswith("TYPE_CHECKING"):
            for stmt in node.body:
                assert isinstance(stmt, ast.ImportFrom), ast.unparse(stmt)
                found.append(("." * stmt.level + (stmt.module or ""), stmt))
    return found


def test_type_checking_imports_are_read_from_the_source() -> None:
    from metis_trace._lazy import type_checking_imports

    assert type_checking_imports("import os\nx = 1\n") == {}
    found = type_checking_imports(
        "import typing\nif typing.TYPE_CHECKING:\n    from ._a import f as g\n"
    )
    assert found == {"g": ("._a", "f")}
    with pytest.raises(ImportError, match="line 3"):
        type_checking_imports("import typing\nif typing.TYPE_CHECKING:\n    import os\n")


def test_checked_in_trace_schema_has_not_drifted() -> None:
    from metis_trace import trace_json_schema

    checked_in = json.loads((ROOT / "specs" / "trace-schema.json").read_text())
    assert checked_in == trace_json_schema(), "run `make schema` and commit specs/trace-schema.json"


def test_every_invariant_is_stated_in_its_spec_page() -> None:
    from metis_model import INVARIANTS

    for inv in INVARIANTS:
        page = (ROOT / "specs" / inv.spec).read_text()
        assert f"- **{inv.id}** — {inv.statement}" in page, (
            f"{inv.id} missing from specs/{inv.spec}"
        )


def test_readme_shows_the_two_commands_and_links_the_specs() -> None:
    readme = (ROOT / "README.md").read_text()
    assert "make demo" in readme and "make test" in readme
    for page in ("loop", "permissions", "scheduler", "closure", "children", "trace-format"):
        assert f"specs/{page}.md" in readme


def test_readme_line_counts_are_measured() -> None:
    """The README's line count of each package is within 10% of the tree's
    (`wc -l` of its .py files): measured, not estimated, and kept current."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = text.split("<!-- layout-counts:", 1)[1].split("\n\n", 1)[0]
    stated = {}
    for line in block.splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) > 2 and cells[0].startswith("`metis_") and cells[1]:
            stated[cells[0].strip("`/")] = int(cells[1].replace(",", ""))
    assert set(stated) == set(IMPORT_TABLE)
    for package, lines in stated.items():
        measured = sum(
            len(p.read_text(encoding="utf-8").splitlines()) for p in (ROOT / package).rglob("*.py")
        )
        assert abs(measured - lines) <= measured * 0.10, (package, lines, measured)


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _all_imports(tree: ast.AST) -> list[ast.Import | ast.ImportFrom]:
    """Every import statement, function-local ones included, less those under
    `if TYPE_CHECKING:` (never run: annotations only)."""
    found: list[ast.Import | ast.ImportFrom] = []
    todo = [tree]
    while todo:
        node = todo.pop()
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and ast.unparse(child.test).endswith("TYPE_CHECKING"):
                todo.append(ast.Module(body=child.orelse, type_ignores=[]))
            elif isinstance(child, (ast.Import, ast.ImportFrom)):
                found.append(child)
            else:
                todo.append(child)
    return found


def _module_graph() -> Any:
    """metis_* modules and the metis_* modules each imports. `from P import
    name` is an edge to the submodule `P.name` when there is one, else to `P`
    itself: a submodule that takes a name from its own package's `__init__`
    (which imports the submodule) counts as a cycle. Importing `P.sub` is an
    edge to `P.sub` alone: Python runs `P/__init__.py` first for every
    submodule, so counting that edge would make every package a cycle."""
    import networkx as nx

    modules = {
        _module_name(p): p for package in IMPORT_TABLE for p in (ROOT / package).rglob("*.py")
    }

    def known(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph = nx.DiGraph()
    graph.add_nodes_from(modules)
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in _all_imports(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [known(a.name) for a in node.names]
            else:
                base = node.module or ""
                if node.level:
                    up = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                    base = ".".join([*up, *([node.module] if node.module else [])])
                subs = [f"{base}.{a.name}" for a in node.names if f"{base}.{a.name}" in modules]
                targets = [*subs, known(base) if len(subs) < len(node.names) else None]
            graph.add_edges_from((name, t) for t in targets if t is not None and t != name)
    return graph


def test_no_import_cycles() -> None:
    """No module of a metis package imports, directly or through others, a
    module that imports it back (function-local imports included)."""
    import networkx as nx

    cycles = [sorted(c) for c in nx.strongly_connected_components(_module_graph()) if len(c) > 1]
    assert not cycles, "import cycles: " + "; ".join(" <-> ".join(c) for c in sorted(cycles))


def test_the_cycle_check_fires() -> None:
    """The graph sees function-local and relative imports, not `TYPE_CHECKING`
    ones, and a module that imports back is a cycle."""
    import networkx as nx

    code = (
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import a\nelse:\n    import b\n"
    )
    code += "def f():\n    import c\n"
    assert sorted(ast.unparse(n) for n in _all_imports(ast.parse(code))) == [
        "from typing import TYPE_CHECKING",
        "import b",
        "import c",
    ]
    graph = _module_graph()
    assert graph.has_edge("metis_cli._transcripts", "metis_cli._plan_conform")  # in a function
    assert graph.has_edge("metis_cli._plan_conform", "metis_cli._inputs")  # relative
    graph.add_edge("metis_cli._inputs", "metis_cli._transcripts")
    assert any(len(c) > 1 for c in nx.strongly_connected_components(graph))


@pytest.mark.parametrize(
    ("old", "name", "new"),
    [
        ("metis_model", "check_trace", "metis_check"),
        ("metis_model", "simulate", "metis_check"),
        ("metis_model.trace", "TraceEvent", "metis_trace"),
        ("metis_model.transcripts", "check_transcript", "metis_check.transcripts"),
        ("metis_model.smt", "prove_all", "metis_proofs"),
    ],
)
def test_a_moved_path_still_resolves_with_a_warning_naming_the_new_one(
    old: str, name: str, new: str
) -> None:
    # A fresh interpreter: a shim module warns once, when it is first imported.
    code = (
        "import importlib, warnings\n"
        "with warnings.catch_warnings(record=True) as seen:\n"
        "    warnings.simplefilter('always')\n"
        f"    value = getattr(importlib.import_module({old!r}), {name!r})\n"
        f"print(value is getattr(importlib.import_module({new!r}), {name!r}))\n"
        "print([str(w.message) for w in seen if w.category is DeprecationWarning])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    same, warned = out.stdout.splitlines()
    assert same == "True"
    assert f"has moved to {new}" in warned, warned
