"""Rules of the house a reviewer would otherwise check by eye (#19, #21): they fail with the place to fix."""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
LONGEST_FUNCTION = 60
WHY_LONGER = "# longer than 60 lines:"  # the comment that says why a function cannot be split


def test_no_function_in_the_shipped_code_is_over_60_lines_unless_it_says_why():
    long = []
    for path in sorted([*REPO.glob("gpu_assist/**/*.py"), *REPO.glob("slackbot/**/*.py")]):
        source = path.read_text(encoding="utf-8")
        lines = source.splitlines()
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno is not None:
                length = node.end_lineno - node.lineno + 1
                body = lines[node.lineno - 1:node.end_lineno]
                if length > LONGEST_FUNCTION and not any(WHY_LONGER in line for line in body):
                    long.append(f"{path.relative_to(REPO)}:{node.lineno} {node.name} ({length} lines)")
    assert long == []
