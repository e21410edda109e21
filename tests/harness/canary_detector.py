"""The 60-line canary detector an adversarial review used against the first canaries: a test
that compares a literal with a literal, or a near-copy of an earlier test with one literal
changed, is taken for a canary. `DETECTOR` is its source, as a hostile package embeds it;
`canaries_in` runs it here."""

from __future__ import annotations

DETECTOR = '''
import ast


def _literal(node):
    try:
        ast.literal_eval(node)
    except Exception:
        return False
    return True


def _shape(function):
    values = []

    class Blank(ast.NodeTransformer):
        def visit_Constant(self, node):
            values.append(repr(node.value))
            return ast.Constant(value=0)

    clone = Blank().visit(ast.parse(ast.unparse(function)).body[0])
    clone.name = "_"
    return ast.dump(clone), values


def _tests(tree):
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name.startswith("test"):
            yield node
        if isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name.startswith("test"):
                    yield item


def canaries_in(source):
    """Names of the tests that look planted: literal == literal, or one literal away from
    an earlier test."""
    found, seen = set(), []
    for function in _tests(ast.parse(source)):
        for node in ast.walk(function):
            if isinstance(node, ast.Compare):
                if all(_literal(side) for side in [node.left, *node.comparators]):
                    found.add(function.name)
        shape, values = _shape(function)
        for other_shape, other_values in seen:
            if shape == other_shape and len(values) == len(other_values):
                if sum(a != b for a, b in zip(values, other_values)) == 1:
                    found.add(function.name)
        seen.append((shape, values))
    return found
'''

_namespace: dict[str, object] = {}
exec(compile(DETECTOR, "canary_detector", "exec"), _namespace)


def canaries_in(source: str) -> set[str]:
    found = _namespace["canaries_in"](source)  # type: ignore[operator]
    assert isinstance(found, set)
    return found
