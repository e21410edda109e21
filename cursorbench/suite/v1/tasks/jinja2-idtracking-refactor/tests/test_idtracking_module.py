"""Symbol tracking lives in its own module (a refactor task's hidden tests)."""

import ast
import subprocess
import sys
from pathlib import Path

import jinja2
from jinja2 import DictLoader, Environment

PACKAGE = Path(jinja2.__file__).parent
MOVED = ("Symbols", "RootVisitor", "FrameSymbolVisitor", "find_symbols", "symbols_for_node")
CONSTANTS = {
    "VAR_LOAD_PARAMETER": "param",
    "VAR_LOAD_RESOLVE": "resolve",
    "VAR_LOAD_ALIAS": "alias",
    "VAR_LOAD_UNDEFINED": "undefined",
}


def top_level_names(path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.ClassDef, ast.FunctionDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
    return names


def test_idtracking_defines_the_symbol_tracking():
    from jinja2 import idtracking

    for name in MOVED:
        assert getattr(idtracking, name).__module__ == "jinja2.idtracking", name


def test_idtracking_holds_the_load_constants():
    from jinja2 import idtracking

    for name, value in CONSTANTS.items():
        assert getattr(idtracking, name) == value


def test_compiler_no_longer_defines_them():
    defined = top_level_names(PACKAGE / "compiler.py")
    assert defined.isdisjoint(MOVED)
    assert defined.isdisjoint(CONSTANTS)
    assert {"CodeGenerator", "Frame", "generate"} <= defined


def test_compiler_uses_the_module():
    from jinja2 import compiler, idtracking

    assert compiler.Symbols is idtracking.Symbols
    frame = compiler.Frame(compiler.EvalContext(Environment()))
    assert isinstance(frame.symbols, idtracking.Symbols)


def test_idtracking_imports_first_in_a_fresh_interpreter():
    code = "import jinja2.idtracking as i; import jinja2; print(i.Symbols.__name__)"
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=PACKAGE.parent, capture_output=True, text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "Symbols"


def test_idtracking_does_not_import_the_compiler():
    tree = ast.parse((PACKAGE / "idtracking.py").read_text(encoding="utf-8"))
    imported = [ast.unparse(n) for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
    assert not any("compiler" in line for line in imported)


def test_templates_with_scopes_still_render():
    env = Environment(
        loader=DictLoader(
            {
                "base.html": "{% block body %}{% endblock %}",
                "page.html": (
                    "{% extends 'base.html' %}{% block body %}"
                    "{% macro item(x) %}<{{ x }}>{% endmacro %}"
                    "{% set ns = namespace(total=0) %}"
                    "{% for x in items %}{{ item(x) }}{% set ns.total = ns.total + x %}"
                    "{% endfor %}={{ ns.total }}{% endblock %}"
                ),
            }
        )
    )
    assert env.get_template("page.html").render(items=[1, 2, 3]) == "<1><2><3>=6"
