"""Written by the task factory: `dotenv.parser` holds its own code again, split out of `dotenv.main`,
and `dotenv.main` still offers the names it offered."""

import ast
import importlib
import inspect
import os
import subprocess
import sys
from pathlib import Path

SUB, HOST = "dotenv.parser", "dotenv.main"
DEFINITIONS = ['make_regex', 'Original', 'Binding', 'Position', 'Error', 'Reader', 'decode_escapes', 'parse_key', 'parse_unquoted_value', 'parse_value', 'parse_binding', 'parse_stream']
OFFERED = ['Binding', 'parse_stream']


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


def test_make_regex_is_defined_in_the_new_module():
    module = importlib.import_module(SUB)
    path = Path(_file_of(getattr(module, "make_regex")))
    assert path.resolve() == Path(inspect.getsourcefile(module)).resolve()


def test_make_regex_is_gone_from_the_host():
    # anywhere in the host: a definition tucked under an `if` is still the host's code
    assert "make_regex" not in _defined_anywhere(importlib.import_module(HOST))


def test_Original_is_defined_in_the_new_module():
    module = importlib.import_module(SUB)
    path = Path(_file_of(getattr(module, "Original")))
    assert path.resolve() == Path(inspect.getsourcefile(module)).resolve()


def test_Original_is_gone_from_the_host():
    # anywhere in the host: a definition tucked under an `if` is still the host's code
    assert "Original" not in _defined_anywhere(importlib.import_module(HOST))


def test_Binding_is_defined_in_the_new_module():
    module = importlib.import_module(SUB)
    path = Path(_file_of(getattr(module, "Binding")))
    assert path.resolve() == Path(inspect.getsourcefile(module)).resolve()


def test_Binding_is_gone_from_the_host():
    # anywhere in the host: a definition tucked under an `if` is still the host's code
    assert "Binding" not in _defined_anywhere(importlib.import_module(HOST))


def test_Position_is_defined_in_the_new_module():
    module = importlib.import_module(SUB)
    path = Path(_file_of(getattr(module, "Position")))
    assert path.resolve() == Path(inspect.getsourcefile(module)).resolve()


def test_Position_is_gone_from_the_host():
    # anywhere in the host: a definition tucked under an `if` is still the host's code
    assert "Position" not in _defined_anywhere(importlib.import_module(HOST))


def test_Error_is_defined_in_the_new_module():
    module = importlib.import_module(SUB)
    path = Path(_file_of(getattr(module, "Error")))
    assert path.resolve() == Path(inspect.getsourcefile(module)).resolve()


def test_Error_is_gone_from_the_host():
    # anywhere in the host: a definition tucked under an `if` is still the host's code
    assert "Error" not in _defined_anywhere(importlib.import_module(HOST))


def test_Reader_is_defined_in_the_new_module():
    module = importlib.import_module(SUB)
    path = Path(_file_of(getattr(module, "Reader")))
    assert path.resolve() == Path(inspect.getsourcefile(module)).resolve()


def test_Reader_is_gone_from_the_host():
    # anywhere in the host: a definition tucked under an `if` is still the host's code
    assert "Reader" not in _defined_anywhere(importlib.import_module(HOST))


def test_decode_escapes_is_defined_in_the_new_module():
    module = importlib.import_module(SUB)
    path = Path(_file_of(getattr(module, "decode_escapes")))
    assert path.resolve() == Path(inspect.getsourcefile(module)).resolve()


def test_decode_escapes_is_gone_from_the_host():
    # anywhere in the host: a definition tucked under an `if` is still the host's code
    assert "decode_escapes" not in _defined_anywhere(importlib.import_module(HOST))


def test_parse_key_is_defined_in_the_new_module():
    module = importlib.import_module(SUB)
    path = Path(_file_of(getattr(module, "parse_key")))
    assert path.resolve() == Path(inspect.getsourcefile(module)).resolve()


def test_parse_key_is_gone_from_the_host():
    # anywhere in the host: a definition tucked under an `if` is still the host's code
    assert "parse_key" not in _defined_anywhere(importlib.import_module(HOST))


def test_parse_unquoted_value_is_defined_in_the_new_module():
    module = importlib.import_module(SUB)
    path = Path(_file_of(getattr(module, "parse_unquoted_value")))
    assert path.resolve() == Path(inspect.getsourcefile(module)).resolve()


def test_parse_unquoted_value_is_gone_from_the_host():
    # anywhere in the host: a definition tucked under an `if` is still the host's code
    assert "parse_unquoted_value" not in _defined_anywhere(importlib.import_module(HOST))


def test_parse_value_is_defined_in_the_new_module():
    module = importlib.import_module(SUB)
    path = Path(_file_of(getattr(module, "parse_value")))
    assert path.resolve() == Path(inspect.getsourcefile(module)).resolve()


def test_parse_value_is_gone_from_the_host():
    # anywhere in the host: a definition tucked under an `if` is still the host's code
    assert "parse_value" not in _defined_anywhere(importlib.import_module(HOST))


def test_parse_binding_is_defined_in_the_new_module():
    module = importlib.import_module(SUB)
    path = Path(_file_of(getattr(module, "parse_binding")))
    assert path.resolve() == Path(inspect.getsourcefile(module)).resolve()


def test_parse_binding_is_gone_from_the_host():
    # anywhere in the host: a definition tucked under an `if` is still the host's code
    assert "parse_binding" not in _defined_anywhere(importlib.import_module(HOST))


def test_parse_stream_is_defined_in_the_new_module():
    module = importlib.import_module(SUB)
    path = Path(_file_of(getattr(module, "parse_stream")))
    assert path.resolve() == Path(inspect.getsourcefile(module)).resolve()


def test_parse_stream_is_gone_from_the_host():
    # anywhere in the host: a definition tucked under an `if` is still the host's code
    assert "parse_stream" not in _defined_anywhere(importlib.import_module(HOST))
