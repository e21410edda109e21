"""One helper gives nodes their eval context (a refactor task's hidden tests)."""

import ast
from pathlib import Path

import pytest

from jinja2 import Environment, nodes

SOURCE = Path(nodes.__file__).read_text(encoding="utf-8")
TREE = ast.parse(SOURCE)
METHODS = [
    "BinExpr.as_const", "UnaryExpr.as_const", "TemplateData.as_const", "Tuple.as_const",
    "List.as_const", "Dict.as_const", "Pair.as_const", "Keyword.as_const",
    "CondExpr.as_const", "_FilterTestCommon.as_const", "Getitem.as_const",
    "Getattr.as_const", "Slice.as_const", "Concat.as_const", "Compare.as_const",
    "And.as_const", "Or.as_const", "MarkSafe.as_const", "MarkSafeIfAutoescape.as_const",
]


def method(qualified):
    owner, name = qualified.split(".")
    cls = next(n for n in TREE.body if isinstance(n, ast.ClassDef) and n.name == owner)
    return next(n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == name)


def checks_for_missing_context(node):
    """`if eval_ctx is None:` blocks written out in place."""
    return [
        child
        for child in ast.walk(node)
        if isinstance(child, ast.If)
        and isinstance(child.test, ast.Compare)
        and ast.unparse(child.test) == "eval_ctx is None"
    ]


def test_the_helper_returns_a_given_context():
    context = nodes.EvalContext(Environment())
    node = nodes.Const(1)
    assert nodes.get_eval_context(node, context) is context


def test_the_helper_builds_a_context_from_the_environment():
    env = Environment(autoescape=True)
    node = nodes.Const(1)
    node.set_environment(env)
    context = nodes.get_eval_context(node, None)
    assert isinstance(context, nodes.EvalContext)
    assert context.environment is env
    assert context.autoescape is True


def test_the_helper_refuses_a_node_without_environment():
    with pytest.raises(RuntimeError, match="attached environment"):
        nodes.get_eval_context(nodes.Const(1), None)


@pytest.mark.parametrize("qualified", METHODS)
def test_method_uses_the_helper(qualified):
    node = method(qualified)
    assert checks_for_missing_context(node) == []
    calls = [
        child
        for child in ast.walk(node)
        if isinstance(child, ast.Call) and ast.unparse(child.func).endswith("get_eval_context")
    ]
    assert calls


def test_constant_folding_still_needs_an_environment():
    expression = nodes.Add(nodes.Const(1), nodes.Const(2))
    with pytest.raises(RuntimeError, match="attached environment"):
        expression.as_const()
    expression.set_environment(Environment())
    assert expression.as_const() == 3
