"""Size discipline (issue 25): no module over 300 lines and no function over 80 lines in
``mechjax/`` and ``experiments/``. Pure ``ast`` over the source files, no imports of the code.

Run as a script to print the offenders: ``python tests/test_code_size.py``.
"""
from __future__ import annotations

import ast
import pathlib
import sys

REPO = pathlib.Path(__file__).resolve().parent.parent
PACKAGES = ("mechjax", "experiments")
MAX_MODULE_LINES = 300
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
    """One line per module over ``MAX_MODULE_LINES`` and per function over
    ``MAX_FUNCTION_LINES``, e.g. ``mechjax/x.py: 412 lines`` / ``mechjax/x.py:10 f: 95 lines``."""
    lines = []
    for path, n in module_sizes(root).items():
        if n > MAX_MODULE_LINES:
            lines.append(f"{path}: {n} lines (module, limit {MAX_MODULE_LINES})")
        for name, first, length in function_sizes((root / path).read_text()):
            if length > MAX_FUNCTION_LINES:
                lines.append(f"{path}:{first} {name}: {length} lines "
                             f"(function, limit {MAX_FUNCTION_LINES})")
    return lines


def test_function_sizes_measure_def_to_end_nested_included():
    source = "def f():\n    def g():\n        return 1\n    return g\n\n\nclass C:\n" \
             "    def m(self):\n        pass\n"
    assert function_sizes(source) == [("f", 1, 4), ("f.g", 2, 2), ("C.m", 8, 2)]


def test_offenders_names_a_long_module_and_a_long_function(tmp_path):
    pkg = tmp_path / "mechjax"
    pkg.mkdir()
    (tmp_path / "experiments").mkdir()
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_FUNCTION_LINES))
    (pkg / "long_fn.py").write_text(f"def too_long():\n{body}\n")
    (pkg / "ok.py").write_text("def short():\n    return 1\n")
    (pkg / "long_module.py").write_text("x = 1\n" * (MAX_MODULE_LINES + 1))
    found = offenders(tmp_path)
    assert found == [f"mechjax/long_fn.py:1 too_long: {MAX_FUNCTION_LINES + 1} lines "
                     f"(function, limit {MAX_FUNCTION_LINES})",
                     f"mechjax/long_module.py: {MAX_MODULE_LINES + 1} lines "
                     f"(module, limit {MAX_MODULE_LINES})"]


def test_no_module_or_function_over_the_limits():
    found = offenders()
    assert not found, "over the size limits:\n" + "\n".join(found)


if __name__ == "__main__":
    found = offenders()
    print("\n".join(found) if found else "no module or function over the limits")
    sys.exit(1 if found else 0)
