"""Written by the task factory: `tinycss2.parser` holds its own code again, split out of `tinycss2.bytes`,
and `tinycss2.bytes` still offers the names it offered."""

import ast
import importlib
import inspect
import os
import subprocess
import sys
from pathlib import Path

SUB, HOST = "tinycss2.parser", "tinycss2.bytes"
DEFINITIONS = ['_to_token_iterator', '_next_significant', 'parse_one_component_value', 'parse_one_declaration', '_consume_remnants', '_parse_declaration', '_consume_blocks_content', '_consume_declaration_in_list', 'parse_blocks_contents', 'parse_declaration_list', 'parse_one_rule', 'parse_rule_list', 'parse_stylesheet', '_consume_rule', '_consume_at_rule', '_rule_error', '_consume_qualified_rule']
OFFERED = ['parse_stylesheet']


def _defined_at_top(module):
    source = Path(inspect.getsourcefile(module)).read_text(encoding="utf-8")
    return {
        node.name for node in ast.parse(source).body
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
    }


def _defined_anywhere(module):
    source = Path(inspect.getsourcefile(module)).read_text(encoding="utf-8")
    return {
        node.name for node in ast.walk(ast.parse(source))
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
    }


def _file_of(value):
    code = getattr(value, "__code__", None)
    if code is not None:
        return code.co_filename
    methods = [v for v in vars(value).values() if hasattr(v, "__code__")]
    return methods[0].__code__.co_filename if methods else inspect.getsourcefile(value)


def test_the_module_defines_its_code_again():
    module = importlib.import_module(SUB)
    own = _defined_at_top(module)
    missing = [name for name in DEFINITIONS if name not in own]
    assert not missing, f"{SUB} does not define {missing}"


def test_the_module_imports_on_its_own():
    path = os.pathsep.join(entry for entry in sys.path if entry)
    code = f"import {SUB}"
    env = dict(os.environ, PYTHONPATH=path)
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]


def test_the_host_still_offers_its_names():
    module, host = importlib.import_module(SUB), importlib.import_module(HOST)
    for name in OFFERED:
        assert getattr(host, name) is getattr(module, name), name


def test_parse_one_component_value_is_defined_in_the_new_module():
    module = importlib.import_module(SUB)
    path = Path(_file_of(getattr(module, "parse_one_component_value")))
    assert path.resolve() == Path(inspect.getsourcefile(module)).resolve()


def test_parse_one_component_value_is_gone_from_the_host():
    # anywhere in the host: a definition tucked under an `if` is still the host's code
    assert "parse_one_component_value" not in _defined_anywhere(importlib.import_module(HOST))


def test_parse_one_declaration_is_defined_in_the_new_module():
    module = importlib.import_module(SUB)
    path = Path(_file_of(getattr(module, "parse_one_declaration")))
    assert path.resolve() == Path(inspect.getsourcefile(module)).resolve()


def test_parse_one_declaration_is_gone_from_the_host():
    # anywhere in the host: a definition tucked under an `if` is still the host's code
    assert "parse_one_declaration" not in _defined_anywhere(importlib.import_module(HOST))


def test_parse_blocks_contents_is_defined_in_the_new_module():
    module = importlib.import_module(SUB)
    path = Path(_file_of(getattr(module, "parse_blocks_contents")))
    assert path.resolve() == Path(inspect.getsourcefile(module)).resolve()


def test_parse_blocks_contents_is_gone_from_the_host():
    # anywhere in the host: a definition tucked under an `if` is still the host's code
    assert "parse_blocks_contents" not in _defined_anywhere(importlib.import_module(HOST))


def test_parse_declaration_list_is_defined_in_the_new_module():
    module = importlib.import_module(SUB)
    path = Path(_file_of(getattr(module, "parse_declaration_list")))
    assert path.resolve() == Path(inspect.getsourcefile(module)).resolve()


def test_parse_declaration_list_is_gone_from_the_host():
    # anywhere in the host: a definition tucked under an `if` is still the host's code
    assert "parse_declaration_list" not in _defined_anywhere(importlib.import_module(HOST))


def test_parse_one_rule_is_defined_in_the_new_module():
    module = importlib.import_module(SUB)
    path = Path(_file_of(getattr(module, "parse_one_rule")))
    assert path.resolve() == Path(inspect.getsourcefile(module)).resolve()


def test_parse_one_rule_is_gone_from_the_host():
    # anywhere in the host: a definition tucked under an `if` is still the host's code
    assert "parse_one_rule" not in _defined_anywhere(importlib.import_module(HOST))


def test_parse_rule_list_is_defined_in_the_new_module():
    module = importlib.import_module(SUB)
    path = Path(_file_of(getattr(module, "parse_rule_list")))
    assert path.resolve() == Path(inspect.getsourcefile(module)).resolve()


def test_parse_rule_list_is_gone_from_the_host():
    # anywhere in the host: a definition tucked under an `if` is still the host's code
    assert "parse_rule_list" not in _defined_anywhere(importlib.import_module(HOST))


def test_parse_stylesheet_is_defined_in_the_new_module():
    module = importlib.import_module(SUB)
    path = Path(_file_of(getattr(module, "parse_stylesheet")))
    assert path.resolve() == Path(inspect.getsourcefile(module)).resolve()


def test_parse_stylesheet_is_gone_from_the_host():
    # anywhere in the host: a definition tucked under an `if` is still the host's code
    assert "parse_stylesheet" not in _defined_anywhere(importlib.import_module(HOST))
