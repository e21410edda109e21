"""Written by the task factory: `sqlparse.utils` holds its own code again, split out of `sqlparse.lexer`,
and `sqlparse.lexer` still offers the names it offered."""

import ast
import importlib
import inspect
import os
import subprocess
import sys
from pathlib import Path

SUB, HOST = "sqlparse.utils", "sqlparse.lexer"
DEFINITIONS = ['split_unquoted_newlines', 'remove_quotes', 'recurse', 'imt', 'consume', 'offset', 'indent']
OFFERED = ['consume']


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


def test_split_unquoted_newlines_is_defined_in_the_new_module():
    module = importlib.import_module(SUB)
    path = Path(_file_of(getattr(module, "split_unquoted_newlines")))
    assert path.resolve() == Path(inspect.getsourcefile(module)).resolve()


def test_split_unquoted_newlines_is_gone_from_the_host():
    # anywhere in the host: a definition tucked under an `if` is still the host's code
    assert "split_unquoted_newlines" not in _defined_anywhere(importlib.import_module(HOST))


def test_remove_quotes_is_defined_in_the_new_module():
    module = importlib.import_module(SUB)
    path = Path(_file_of(getattr(module, "remove_quotes")))
    assert path.resolve() == Path(inspect.getsourcefile(module)).resolve()


def test_remove_quotes_is_gone_from_the_host():
    # anywhere in the host: a definition tucked under an `if` is still the host's code
    assert "remove_quotes" not in _defined_anywhere(importlib.import_module(HOST))


def test_recurse_is_defined_in_the_new_module():
    module = importlib.import_module(SUB)
    path = Path(_file_of(getattr(module, "recurse")))
    assert path.resolve() == Path(inspect.getsourcefile(module)).resolve()


def test_recurse_is_gone_from_the_host():
    # anywhere in the host: a definition tucked under an `if` is still the host's code
    assert "recurse" not in _defined_anywhere(importlib.import_module(HOST))


def test_imt_is_defined_in_the_new_module():
    module = importlib.import_module(SUB)
    path = Path(_file_of(getattr(module, "imt")))
    assert path.resolve() == Path(inspect.getsourcefile(module)).resolve()


def test_imt_is_gone_from_the_host():
    # anywhere in the host: a definition tucked under an `if` is still the host's code
    assert "imt" not in _defined_anywhere(importlib.import_module(HOST))


def test_consume_is_defined_in_the_new_module():
    module = importlib.import_module(SUB)
    path = Path(_file_of(getattr(module, "consume")))
    assert path.resolve() == Path(inspect.getsourcefile(module)).resolve()


def test_consume_is_gone_from_the_host():
    # anywhere in the host: a definition tucked under an `if` is still the host's code
    assert "consume" not in _defined_anywhere(importlib.import_module(HOST))


def test_offset_is_defined_in_the_new_module():
    module = importlib.import_module(SUB)
    path = Path(_file_of(getattr(module, "offset")))
    assert path.resolve() == Path(inspect.getsourcefile(module)).resolve()


def test_offset_is_gone_from_the_host():
    # anywhere in the host: a definition tucked under an `if` is still the host's code
    assert "offset" not in _defined_anywhere(importlib.import_module(HOST))


def test_indent_is_defined_in_the_new_module():
    module = importlib.import_module(SUB)
    path = Path(_file_of(getattr(module, "indent")))
    assert path.resolve() == Path(inspect.getsourcefile(module)).resolve()


def test_indent_is_gone_from_the_host():
    # anywhere in the host: a definition tucked under an `if` is still the host's code
    assert "indent" not in _defined_anywhere(importlib.import_module(HOST))
