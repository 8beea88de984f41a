"""The type stubs name what the extension module has, and the module has docstrings."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import counterhal
from counterhal import _counterhal


def stubbed() -> dict:
    """The stubs' top-level names, each class with its members."""
    stubs = Path(_counterhal.__file__).with_name("_counterhal.pyi")
    tree = ast.parse(stubs.read_text())
    names = {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            members = set()
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    members.add(item.name)
                elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                    members.add(item.target.id)
            names[node.name] = members
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            names[node.name] = None
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names[node.target.id] = None
    return names


def test_the_stubs_name_what_the_module_has():
    """Oracle: the extension module itself (its names and its classes' members)."""
    stubs = stubbed()
    public = {name for name in dir(_counterhal) if not name.startswith("_")}
    stubbed_public = {name for name in stubs if not name.startswith("_")}
    aliases = {"EventNames", "TargetLike"}  # the stubs' own type aliases
    assert public == stubbed_public - aliases
    for name, members in stubs.items():
        if members is None or name in aliases:
            continue
        actual = {m for m in dir(getattr(_counterhal, name)) if not m.startswith("_")}
        declared = {m for m in members if not m.startswith("_")}
        assert actual == declared, name
    assert set(counterhal.__all__) >= public


def test_everything_public_has_a_docstring():
    """Oracle: Python's own help (inspect.getdoc)."""
    for name in dir(_counterhal):
        if name.startswith("_"):
            continue
        item = getattr(_counterhal, name)
        assert inspect.getdoc(item), name
        if inspect.isclass(item):
            for member, value in vars(item).items():
                if not member.startswith("_"):
                    assert inspect.getdoc(value), f"{name}.{member}"
