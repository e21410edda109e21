"""The compiler's string building uses f-strings only (a migration task's hidden tests).

Old-style formatting is a `%` whose left operand is a string literal, or `.format()`
called on a string literal; each function that builds code with formatted strings must
use f-strings and neither of the old forms."""

import ast
from pathlib import Path

import pytest

import jinja2.compiler

SOURCE = Path(jinja2.compiler.__file__).read_text(encoding="utf-8")
TREE = ast.parse(SOURCE)

FUNCTIONS = [
    '_make_binop',
    '_make_unop',
    'CodeGenerator.temporary_identifier',
    'CodeGenerator.buffer',
    'CodeGenerator.return_buffer_contents',
    'CodeGenerator.start_write',
    'CodeGenerator.signature',
    'CodeGenerator.pull_dependencies',
    'CodeGenerator.enter_frame',
    'CodeGenerator.leave_frame',
    'CodeGenerator.func',
    'CodeGenerator.macro_body',
    'CodeGenerator.position',
    'CodeGenerator.dump_local_context',
    'CodeGenerator.get_resolve_func',
    'CodeGenerator.derive_context',
    'CodeGenerator.pop_assign_tracking',
    'CodeGenerator.visit_Template',
    'CodeGenerator.visit_Block',
    'CodeGenerator.visit_Extends',
    'CodeGenerator.visit_Include',
    'CodeGenerator._import_common',
    'CodeGenerator.visit_Import',
    'CodeGenerator.visit_FromImport',
    'CodeGenerator.visit_For',
    'CodeGenerator.visit_Macro',
    'CodeGenerator._make_finalize',
    'CodeGenerator.visit_Output',
    'CodeGenerator.visit_Assign',
    'CodeGenerator.visit_AssignBlock',
    'CodeGenerator.visit_Name',
    'CodeGenerator.visit_NSRef',
    'CodeGenerator.visit_TemplateData',
    'CodeGenerator.visit_Concat',
    'CodeGenerator.visit_Operand',
    'CodeGenerator.visit_Getattr',
    'CodeGenerator._filter_test_common',
    'CodeGenerator.visit_Filter',
    'CodeGenerator.visit_ExtensionAttribute',
    'CodeGenerator.visit_OverlayScope',
    'CodeGenerator.visit_EvalContextModifier',
    'CodeGenerator.visit_ScopedEvalContextModifier',
]


def is_text(node):
    return isinstance(node, ast.JoinedStr) or (
        isinstance(node, ast.Constant) and isinstance(node.value, str)
    )


def old_style(node):
    """Old-style formatting expressions under `node`, as `line: code`."""
    found = []
    for child in ast.walk(node):
        percent = isinstance(child, ast.BinOp) and isinstance(child.op, ast.Mod)
        if percent and is_text(child.left):
            found.append(child)
        call = isinstance(child, ast.Call) and isinstance(child.func, ast.Attribute)
        if call and child.func.attr == "format" and is_text(child.func.value):
            found.append(child)
    return [f"{n.lineno}: {ast.get_source_segment(SOURCE, n)}" for n in found]


def function(qualified):
    body = TREE.body
    *owners, name = qualified.split(".")
    for owner in owners:
        body = next(n for n in body if isinstance(n, ast.ClassDef) and n.name == owner).body
    return next(
        n for n in body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == name
    )


@pytest.mark.parametrize("qualified", FUNCTIONS)
def test_function_builds_strings_with_f_strings(qualified):
    node = function(qualified)
    assert old_style(node) == []
    assert any(isinstance(child, ast.JoinedStr) for child in ast.walk(node))


def test_module_has_no_old_style_formatting():
    assert old_style(TREE) == []


def test_module_uses_f_strings_throughout():
    count = sum(isinstance(node, ast.JoinedStr) for node in ast.walk(TREE))
    assert count >= 110
