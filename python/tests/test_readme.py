"""The README's Python blocks run verbatim (from the repository root, as the
README's paths assume), and every value a line's comment quotes as a Python
literal (`model.schemes()  # ['hamel_midpoint', ...]`) is what that line gives."""

import ast
import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def blocks():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    return re.findall(r"```python\n(.*?)```", text, re.S)


def quoted(line):
    """`(expression, literal)` when the line's comment quotes a literal value."""
    code, sep, comment = line.partition("#")
    if not sep or not code.strip() or "=" in code.split("(")[0]:
        return None
    try:
        return code.strip(), ast.literal_eval(comment.strip())
    except (ValueError, SyntaxError):
        return None


def test_the_readme_python_blocks_run_verbatim_and_say_what_they_give(monkeypatch):
    pytest.importorskip("matplotlib")
    monkeypatch.setenv("MPLBACKEND", "Agg")
    monkeypatch.chdir(ROOT)
    found = blocks()
    assert len(found) >= 2, "the README has lost its Python examples"
    checked = 0
    # One scope, as a reader runs them: later blocks use the first's imports.
    scope = {}
    for block in found:
        for line in block.splitlines():
            exec(compile(line, "README.md", "exec"), scope)  # noqa: S102 - the README's own code
            q = quoted(line)
            if q is not None:
                expr, want = q
                assert eval(expr, scope) == want, f"README: `{expr}` gives {eval(expr, scope)!r}, not {want!r}"  # noqa: S307
                checked += 1
    assert checked >= 3, checked
