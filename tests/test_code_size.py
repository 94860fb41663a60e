"""Size discipline: no function over 80 lines in ``mechjax/`` and ``experiments/`` (modules are
split by concept, not by length). Pure ``ast`` over the source files, no imports of the code.

Run as a script to print the offenders: ``python tests/test_code_size.py``.
"""
from __future__ import annotations

import ast
import pathlib
import sys

REPO = pathlib.Path(__file__).resolve().parent.parent
PACKAGES = ("mechjax", "experiments")
MAX_FUNCTION_LINES = 80


def module_sizes(root: pathlib.Path = REPO) -> dict[str, int]:
    """``{relative path: line count}`` of every ``.py`` file under ``PACKAGES``."""
    return {str(p.relative_to(root)): len(p.read_text().splitlines())
            for pkg in PACKAGES for p in sorted((root / pkg).rglob("*.py"))}


def function_sizes(source: str) -> list[tuple[str, int, int]]:
    """``(qualified name, first line, length)`` of every function in ``source``, nested ones
    included (a length runs from the ``def`` line to the last line of the body)."""
    out: list[tuple[str, int, int]] = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = f"{prefix}{child.name}"
                if not isinstance(child, ast.ClassDef):
                    out.append((name, child.lineno, child.end_lineno - child.lineno + 1))
                visit(child, name + ".")
            else:
                visit(child, prefix)

    visit(ast.parse(source), "")
    return out


def offenders(root: pathlib.Path = REPO) -> list[str]:
    """One line per function over ``MAX_FUNCTION_LINES``, e.g. ``mechjax/x.py:10 f: 95 lines``."""
    lines = []
    for path in module_sizes(root):
        for name, first, length in function_sizes((root / path).read_text()):
            if length > MAX_FUNCTION_LINES:
                lines.append(f"{path}:{first} {name}: {length} lines "
                             f"(function, limit {MAX_FUNCTION_LINES})")
    return lines


def test_function_sizes_measure_def_to_end_nested_included():
    source = "def f():\n    def g():\n        return 1\n    return g\n\n\nclass C:\n" \
             "    def m(self):\n        pass\n"
    assert function_sizes(source) == [("f", 1, 4), ("f.g", 2, 2), ("C.m", 8, 2)]


def test_offenders_names_a_long_function_and_no_long_module(tmp_path):
    pkg = tmp_path / "mechjax"
    pkg.mkdir()
    (tmp_path / "experiments").mkdir()
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_FUNCTION_LINES))
    (pkg / "long_fn.py").write_text(f"def too_long():\n{body}\n")
    (pkg / "ok.py").write_text("def short():\n    return 1\n")
    (pkg / "long_module.py").write_text("x = 1\n" * 1000)
    found = offenders(tmp_path)
    assert found == [f"mechjax/long_fn.py:1 too_long: {MAX_FUNCTION_LINES + 1} lines "
                     f"(function, limit {MAX_FUNCTION_LINES})"]


def test_no_function_over_the_limit():
    found = offenders()
    assert not found, "over the function limit:\n" + "\n".join(found)


if __name__ == "__main__":
    found = offenders()
    print("\n".join(found) if found else "no function over the limit")
    sys.exit(1 if found else 0)
