"""Written by the task factory: `dotenv.main` holds its own code again, split out of `dotenv.cli`,
and `dotenv.cli` still offers the names it offered."""

import ast
import importlib
import inspect
import os
import subprocess
import sys
from pathlib import Path

SUB, HOST = "dotenv.main", "dotenv.cli"
DEFINITIONS = ['with_warn_for_invalid_lines', 'DotEnv', 'get_key', 'rewrite', 'set_key', 'unset_key', 'resolve_variables', '_walk_to_root', 'find_dotenv', 'load_dotenv', 'dotenv_values']
OFFERED = ['dotenv_values', 'set_key', 'unset_key']


def _defined_at_top(module):
    source = Path(inspect.getsourcefile(module)).read_text(encoding="utf-8")
    return {
        node.name for node in ast.parse(source).body
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


def test_with_warn_for_invalid_lines_is_defined_in_the_new_module():
    module = importlib.import_module(SUB)
    path = Path(_file_of(getattr(module, "with_warn_for_invalid_lines")))
    assert path.resolve() == Path(inspect.getsourcefile(module)).resolve()


def test_with_warn_for_invalid_lines_is_gone_from_the_host():
    assert "with_warn_for_invalid_lines" not in _defined_at_top(importlib.import_module(HOST))


def test_DotEnv_is_defined_in_the_new_module():
    module = importlib.import_module(SUB)
    path = Path(_file_of(getattr(module, "DotEnv")))
    assert path.resolve() == Path(inspect.getsourcefile(module)).resolve()


def test_DotEnv_is_gone_from_the_host():
    assert "DotEnv" not in _defined_at_top(importlib.import_module(HOST))


def test_get_key_is_defined_in_the_new_module():
    module = importlib.import_module(SUB)
    path = Path(_file_of(getattr(module, "get_key")))
    assert path.resolve() == Path(inspect.getsourcefile(module)).resolve()


def test_get_key_is_gone_from_the_host():
    assert "get_key" not in _defined_at_top(importlib.import_module(HOST))


def test_rewrite_is_defined_in_the_new_module():
    module = importlib.import_module(SUB)
    path = Path(_file_of(getattr(module, "rewrite")))
    assert path.resolve() == Path(inspect.getsourcefile(module)).resolve()


def test_rewrite_is_gone_from_the_host():
    assert "rewrite" not in _defined_at_top(importlib.import_module(HOST))


def test_set_key_is_defined_in_the_new_module():
    module = importlib.import_module(SUB)
    path = Path(_file_of(getattr(module, "set_key")))
    assert path.resolve() == Path(inspect.getsourcefile(module)).resolve()


def test_set_key_is_gone_from_the_host():
    assert "set_key" not in _defined_at_top(importlib.import_module(HOST))


def test_unset_key_is_defined_in_the_new_module():
    module = importlib.import_module(SUB)
    path = Path(_file_of(getattr(module, "unset_key")))
    assert path.resolve() == Path(inspect.getsourcefile(module)).resolve()


def test_unset_key_is_gone_from_the_host():
    assert "unset_key" not in _defined_at_top(importlib.import_module(HOST))


def test_resolve_variables_is_defined_in_the_new_module():
    module = importlib.import_module(SUB)
    path = Path(_file_of(getattr(module, "resolve_variables")))
    assert path.resolve() == Path(inspect.getsourcefile(module)).resolve()


def test_resolve_variables_is_gone_from_the_host():
    assert "resolve_variables" not in _defined_at_top(importlib.import_module(HOST))


def test_find_dotenv_is_defined_in_the_new_module():
    module = importlib.import_module(SUB)
    path = Path(_file_of(getattr(module, "find_dotenv")))
    assert path.resolve() == Path(inspect.getsourcefile(module)).resolve()


def test_find_dotenv_is_gone_from_the_host():
    assert "find_dotenv" not in _defined_at_top(importlib.import_module(HOST))


def test_load_dotenv_is_defined_in_the_new_module():
    module = importlib.import_module(SUB)
    path = Path(_file_of(getattr(module, "load_dotenv")))
    assert path.resolve() == Path(inspect.getsourcefile(module)).resolve()


def test_load_dotenv_is_gone_from_the_host():
    assert "load_dotenv" not in _defined_at_top(importlib.import_module(HOST))


def test_dotenv_values_is_defined_in_the_new_module():
    module = importlib.import_module(SUB)
    path = Path(_file_of(getattr(module, "dotenv_values")))
    assert path.resolve() == Path(inspect.getsourcefile(module)).resolve()


def test_dotenv_values_is_gone_from_the_host():
    assert "dotenv_values" not in _defined_at_top(importlib.import_module(HOST))
