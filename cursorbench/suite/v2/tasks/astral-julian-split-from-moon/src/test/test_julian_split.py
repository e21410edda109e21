"""Written by the task factory: `astral.julian` holds its own code again, split out of `astral.moon`,
and `astral.moon` still offers the names it offered."""

import ast
import importlib
import inspect
import os
import subprocess
import sys
from pathlib import Path

SUB, HOST = "astral.julian", "astral.moon"
DEFINITIONS = ['Calendar', 'day_fraction_to_time', 'julianday', 'julianday_modified', 'julianday_to_datetime', 'julianday_to_juliancentury', 'juliancentury_to_julianday', 'julianday_2000']
OFFERED = ['julianday', 'julianday_2000']


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


def test_Calendar_is_defined_in_the_new_module():
    module = importlib.import_module(SUB)
    path = Path(_file_of(getattr(module, "Calendar")))
    assert path.resolve() == Path(inspect.getsourcefile(module)).resolve()


def test_Calendar_is_gone_from_the_host():
    # anywhere in the host: a definition tucked under an `if` is still the host's code
    assert "Calendar" not in _defined_anywhere(importlib.import_module(HOST))


def test_day_fraction_to_time_is_defined_in_the_new_module():
    module = importlib.import_module(SUB)
    path = Path(_file_of(getattr(module, "day_fraction_to_time")))
    assert path.resolve() == Path(inspect.getsourcefile(module)).resolve()


def test_day_fraction_to_time_is_gone_from_the_host():
    # anywhere in the host: a definition tucked under an `if` is still the host's code
    assert "day_fraction_to_time" not in _defined_anywhere(importlib.import_module(HOST))


def test_julianday_is_defined_in_the_new_module():
    module = importlib.import_module(SUB)
    path = Path(_file_of(getattr(module, "julianday")))
    assert path.resolve() == Path(inspect.getsourcefile(module)).resolve()


def test_julianday_is_gone_from_the_host():
    # anywhere in the host: a definition tucked under an `if` is still the host's code
    assert "julianday" not in _defined_anywhere(importlib.import_module(HOST))


def test_julianday_modified_is_defined_in_the_new_module():
    module = importlib.import_module(SUB)
    path = Path(_file_of(getattr(module, "julianday_modified")))
    assert path.resolve() == Path(inspect.getsourcefile(module)).resolve()


def test_julianday_modified_is_gone_from_the_host():
    # anywhere in the host: a definition tucked under an `if` is still the host's code
    assert "julianday_modified" not in _defined_anywhere(importlib.import_module(HOST))


def test_julianday_to_datetime_is_defined_in_the_new_module():
    module = importlib.import_module(SUB)
    path = Path(_file_of(getattr(module, "julianday_to_datetime")))
    assert path.resolve() == Path(inspect.getsourcefile(module)).resolve()


def test_julianday_to_datetime_is_gone_from_the_host():
    # anywhere in the host: a definition tucked under an `if` is still the host's code
    assert "julianday_to_datetime" not in _defined_anywhere(importlib.import_module(HOST))


def test_julianday_to_juliancentury_is_defined_in_the_new_module():
    module = importlib.import_module(SUB)
    path = Path(_file_of(getattr(module, "julianday_to_juliancentury")))
    assert path.resolve() == Path(inspect.getsourcefile(module)).resolve()


def test_julianday_to_juliancentury_is_gone_from_the_host():
    # anywhere in the host: a definition tucked under an `if` is still the host's code
    assert "julianday_to_juliancentury" not in _defined_anywhere(importlib.import_module(HOST))


def test_juliancentury_to_julianday_is_defined_in_the_new_module():
    module = importlib.import_module(SUB)
    path = Path(_file_of(getattr(module, "juliancentury_to_julianday")))
    assert path.resolve() == Path(inspect.getsourcefile(module)).resolve()


def test_juliancentury_to_julianday_is_gone_from_the_host():
    # anywhere in the host: a definition tucked under an `if` is still the host's code
    assert "juliancentury_to_julianday" not in _defined_anywhere(importlib.import_module(HOST))


def test_julianday_2000_is_defined_in_the_new_module():
    module = importlib.import_module(SUB)
    path = Path(_file_of(getattr(module, "julianday_2000")))
    assert path.resolve() == Path(inspect.getsourcefile(module)).resolve()


def test_julianday_2000_is_gone_from_the_host():
    # anywhere in the host: a definition tucked under an `if` is still the host's code
    assert "julianday_2000" not in _defined_anywhere(importlib.import_module(HOST))
