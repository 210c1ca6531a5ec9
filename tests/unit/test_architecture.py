"""The package's layering, read from the source: no import cycles, an engine with nothing above it.

Every import counts: at module level, inside functions, and under `if TYPE_CHECKING:`. An
import deferred into a function or hidden from the runtime still ties two modules together:
neither can be read, tested or moved without the other, which is what a cycle costs. (The
package has none of any kind, so the strict rule asks nothing that is not already true.)
Importing `a.b.c` also runs `a/__init__` and `a/b/__init__`; those implicit parent imports
are not counted, or every module would depend on the package root that re-exports them all.
`from a.b import c` counts as an import of the module `a.b.c` where that module exists, else
of `a.b`.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from collections.abc import Collection, Iterator, Mapping
from pathlib import Path

import pytest_autotune

PACKAGE = Path(pytest_autotune.__file__).parent
ENGINE = "pytest_autotune.tune"


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(
    module: str, is_package: bool, source: str, modules: Collection[str]
) -> Iterator[str]:
    """The modules among `modules` that `module` imports, wherever the import statement stands."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = module.split(".")
                parts = parts[: len(parts) - node.level + (1 if is_package else 0)]
                base = ".".join([*parts, base] if base else parts)
            names = [
                f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base
                for alias in node.names
            ]
        else:
            continue
        yield from (name for name in names if name in modules and name != module)


def import_graph(package: Path = PACKAGE) -> dict[str, set[str]]:
    """For each module of the package, the package's modules it imports."""
    paths = {module_name(path): path for path in package.rglob("*.py")}
    return {
        module: set(imported_modules(module, path.name == "__init__.py", path.read_text(), paths))
        for module, path in paths.items()
    }


def cycles(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module, each as a closed path."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_the_import_reader_sees_function_type_checking_and_relative_imports() -> None:
    source = """
from typing import TYPE_CHECKING
from . import b
from .c import helper
if TYPE_CHECKING:
    from pkg.d import Thing
def later():
    import pkg.e
"""
    modules = {"pkg", "pkg.a", "pkg.b", "pkg.c", "pkg.d", "pkg.e", "pkg.f"}

    seen = set(imported_modules("pkg.a", False, source, modules))

    assert seen == {"pkg.b", "pkg.c", "pkg.d", "pkg.e"}


def test_the_package_graph_holds_the_imports_it_is_known_to_make() -> None:
    graph = import_graph()

    assert "pytest_autotune.tune.cache" in graph["pytest_autotune.tune.tuner"]
    assert "pytest_autotune.tune.checks" in graph["pytest_autotune.tune.tuning_checks"]


def test_no_module_of_the_package_imports_itself_back_through_others() -> None:
    assert cycles(import_graph()) == []


def test_the_engine_imports_nothing_of_the_package_from_outside_tune() -> None:
    outside = {
        module: sorted(target for target in targets if not _in_engine(target))
        for module, targets in import_graph().items()
        if _in_engine(module)
    }

    assert {module: targets for module, targets in outside.items() if targets} == {}


def _in_engine(module: str) -> bool:
    return module == ENGINE or module.startswith(f"{ENGINE}.")


def test_every_module_imports_first_in_a_fresh_interpreter() -> None:
    """The graph above leaves out the implicit parent imports; the runtime does not. A
    module that `report/` imports while the gate loads (the gate formats its messages with
    `report.figures`, whose package imports the gate's verdicts) must be importable before
    the rest of the gate, whichever of the two a program imports first."""
    modules = sorted(import_graph())
    script = f"""
import importlib, sys
failed = []
for module in {modules!r}:
    for loaded in [name for name in sys.modules if name.split(".")[0] == "pytest_autotune"]:
        del sys.modules[loaded]
    try:
        importlib.import_module(module)
    except ImportError as error:
        failed.append(f"{{module}}: {{error}}")
print("\\n".join(failed))
"""
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    )

    assert done.stdout.strip() == ""


def test_the_gate_takes_only_the_shared_figures_from_the_reports() -> None:
    """The reports sit above the gate (they show its verdicts); the gate's messages format
    their numbers as the reports do, through `report.figures` alone, which itself stands on
    the engine only, so the two layers meet in one module without a circle."""
    graph = import_graph()
    from_gate = {
        target
        for module, targets in graph.items()
        if module.startswith("pytest_autotune.gate")
        for target in targets
        if target.startswith("pytest_autotune.report")
    }

    assert from_gate == {"pytest_autotune.report.figures"}
    assert {t for t in graph["pytest_autotune.report.figures"] if not _in_engine(t)} == set()


def test_the_readmes_layout_names_every_module_of_the_package() -> None:
    # The repository's README, beside `tests`: an installed wheel has none beside the package.
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    layout = readme.split("\n## Layout\n", 1)[1].split("\n```\n", 2)[1]
    named = set(re.findall(r"\w+", layout))
    modules = {path.stem for path in PACKAGE.rglob("*.py") if path.stem != "__init__"}

    assert sorted(modules - named) == []


def test_the_unit_tests_run_no_pytest_in_process() -> None:
    """`tests/unit` is the engine's, fast and without `pytester` (the design's layout): a test
    that runs pytest in-process with it belongs in `tests/plugin`, beside its harness."""
    unit = Path(__file__).parent
    with_pytester = [
        f"{path.name}::{node.name}"
        for path in sorted(unit.glob("test_*.py"))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.FunctionDef)
        and any(arg.arg == "pytester" for arg in node.args.args + node.args.kwonlyargs)
    ]

    assert with_pytester == []


def test_a_program_importing_the_runtime_loads_no_pytest_jinja2_nor_yaml() -> None:
    """A library built on `LocalTuner` is imported by programs that never run a test: the
    plugin's and the report's dependencies stay out of its import, and PyYAML, read only
    for a settings file, with them (10 ms of the package's import before)."""
    code = (
        "import sys, pytest_autotune\n"
        "from pytest_autotune import LocalTuner, TunableSet\n"
        "print(sorted(m for m in ('pytest', 'jinja2', 'yaml') if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_every_string_of_the_package_is_text_utf8_can_write() -> None:
    # A docstring that wrote "\udcc3" meaning the text (the escape of an undecoded byte)
    # held a lone surrogate: Python 3.13's compiler, which cleans docstrings, could not
    # encode it, and the package failed to import there while 3.10-3.12 took it.
    lone = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                try:
                    node.value.encode("utf-8")
                except UnicodeEncodeError:
                    lone.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    assert lone == []
