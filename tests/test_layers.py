"""The package layering (``setup.cfg``'s import-linter contract): every package imports only
from the layers below it, packages import each other without cycles, and no private name
crosses a package."""
from __future__ import annotations

import ast
import os
import pathlib
import shutil
import subprocess
import sys

import grimp
import pytest

REPO = pathlib.Path(__file__).resolve().parent.parent


def _lint(root: pathlib.Path) -> subprocess.CompletedProcess:
    """``lint-imports`` on the ``mechjax`` found first on ``root`` (the repository or a copy)."""
    env = dict(os.environ, PYTHONPATH=str(root))
    return subprocess.run([sys.executable, "-c", "import sys; from importlinter.cli import "
                           "lint_imports_command; sys.exit(lint_imports_command())",
                           "--config", str(REPO / "setup.cfg"), "--no-cache"],
                          cwd=root, env=env, capture_output=True, text=True, timeout=120)


def test_layers_contract_is_kept():
    out = _lint(REPO)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "1 kept, 0 broken" in out.stdout


def test_layers_contract_fails_on_a_back_arrow(tmp_path):
    # A model importing the sweep engine runs up three layers: the contract must name it.
    shutil.copytree(REPO / "mechjax", tmp_path / "mechjax",
                    ignore=shutil.ignore_patterns("__pycache__"))
    target = tmp_path / "mechjax" / "models" / "transformer.py"
    target.write_text(target.read_text() + "\nfrom mechjax.sweeps import runs  # noqa\n")
    out = _lint(tmp_path)
    assert out.returncode != 0
    assert "BROKEN" in out.stdout and "mechjax.models.transformer -> mechjax.sweeps" in out.stdout


def _package(module: str) -> str:
    parts = module.split(".")
    return ".".join(parts[:2])


def test_packages_import_each_other_without_cycles():
    graph = grimp.build_graph("mechjax")
    edges: dict[str, set[str]] = {}
    for module in graph.modules:
        for imported in graph.find_modules_directly_imported_by(module):
            a, b = _package(module), _package(imported)
            if a != b and b != "mechjax":
                edges.setdefault(a, set()).add(b)
    state: dict[str, int] = {}

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(edges.get(node, ())):
            assert state.get(nxt) != 1, f"import cycle: {' -> '.join(path + [node, nxt])}"
            if nxt not in state:
                visit(nxt, path + [node])
        state[node] = 2

    for node in sorted(edges):
        if node not in state:
            visit(node, [])


def _private_imports(path: pathlib.Path) -> list[str]:
    here = ".".join(path.relative_to(REPO).with_suffix("").parts[:2])
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("mechjax"):
            if _package(node.module) == here:
                continue
            found += [f"{path.relative_to(REPO)}:{node.lineno} {node.module}.{a.name}"
                      for a in node.names if a.name.startswith("_")]
    return found


@pytest.mark.parametrize("folder", ["mechjax", "experiments", "docs/examples"])
def test_no_private_name_crosses_a_package(folder):
    found = [f for p in sorted((REPO / folder).rglob("*.py")) for f in _private_imports(p)]
    assert not found, "\n".join(found)
