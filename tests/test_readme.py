"""The README's Python example runs as written, at test size (fewer steps and seeds, a temporary
workdir), and reads back what it trained."""
from __future__ import annotations

import os
import re

from conftest import REPO


def readme_example() -> str:
    text = open(os.path.join(REPO, "README.md")).read()
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert blocks, "the README has no Python example"
    return blocks[0]


def test_readme_example_trains_reads_back_and_caches(tmp_path):
    code = readme_example()
    small = {"steps=3000": "steps=20", "eval_every=50": "eval_every=10",
             "range(8)": "range(2)", "seed=3": "seed=1",
             '"runs/mine"': repr(str(tmp_path / "mine"))}
    for old, new in small.items():
        assert old in code, f"the README example no longer has {old!r}: update this test"
        code = code.replace(old, new)
    scope: dict = {}
    exec(compile(code, "README.md", "exec"), scope)
    assert scope["result"].traces == 1  # seeds x grid as one program
    assert scope["run"].seeds == [0, 1]
    cache = scope["cache"]
    assert cache["blocks.0.hook_resid_post"].shape == (31 * 31, 2, 64)
