"""Written by the task factory: `bibtexparser.middlewares.names` holds its own code again, split out of `bibtexparser.middlewares.latex_encoding`,
and `bibtexparser.middlewares.latex_encoding` still offers the names it offered."""

import ast
import importlib
import inspect
import os
import subprocess
import sys
from pathlib import Path

SUB, HOST = "bibtexparser.middlewares.names", "bibtexparser.middlewares.latex_encoding"
DEFINITIONS = ['InvalidNameError', '_NameTransformerMiddleware', 'SeparateCoAuthors', 'MergeCoAuthors', 'NameParts', 'SplitNameParts', 'MergeNameParts', 'parse_single_name_into_parts', 'split_multiple_persons_names']
OFFERED = ['NameParts']


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


def test_InvalidNameError_is_defined_in_the_new_module():
    module = importlib.import_module(SUB)
    path = Path(_file_of(getattr(module, "InvalidNameError")))
    assert path.resolve() == Path(inspect.getsourcefile(module)).resolve()


def test_InvalidNameError_is_gone_from_the_host():
    # anywhere in the host: a definition tucked under an `if` is still the host's code
    assert "InvalidNameError" not in _defined_anywhere(importlib.import_module(HOST))


def test_SeparateCoAuthors_is_defined_in_the_new_module():
    module = importlib.import_module(SUB)
    path = Path(_file_of(getattr(module, "SeparateCoAuthors")))
    assert path.resolve() == Path(inspect.getsourcefile(module)).resolve()


def test_SeparateCoAuthors_is_gone_from_the_host():
    # anywhere in the host: a definition tucked under an `if` is still the host's code
    assert "SeparateCoAuthors" not in _defined_anywhere(importlib.import_module(HOST))


def test_MergeCoAuthors_is_defined_in_the_new_module():
    module = importlib.import_module(SUB)
    path = Path(_file_of(getattr(module, "MergeCoAuthors")))
    assert path.resolve() == Path(inspect.getsourcefile(module)).resolve()


def test_MergeCoAuthors_is_gone_from_the_host():
    # anywhere in the host: a definition tucked under an `if` is still the host's code
    assert "MergeCoAuthors" not in _defined_anywhere(importlib.import_module(HOST))


def test_NameParts_is_defined_in_the_new_module():
    module = importlib.import_module(SUB)
    path = Path(_file_of(getattr(module, "NameParts")))
    assert path.resolve() == Path(inspect.getsourcefile(module)).resolve()


def test_NameParts_is_gone_from_the_host():
    # anywhere in the host: a definition tucked under an `if` is still the host's code
    assert "NameParts" not in _defined_anywhere(importlib.import_module(HOST))


def test_SplitNameParts_is_defined_in_the_new_module():
    module = importlib.import_module(SUB)
    path = Path(_file_of(getattr(module, "SplitNameParts")))
    assert path.resolve() == Path(inspect.getsourcefile(module)).resolve()


def test_SplitNameParts_is_gone_from_the_host():
    # anywhere in the host: a definition tucked under an `if` is still the host's code
    assert "SplitNameParts" not in _defined_anywhere(importlib.import_module(HOST))


def test_MergeNameParts_is_defined_in_the_new_module():
    module = importlib.import_module(SUB)
    path = Path(_file_of(getattr(module, "MergeNameParts")))
    assert path.resolve() == Path(inspect.getsourcefile(module)).resolve()


def test_MergeNameParts_is_gone_from_the_host():
    # anywhere in the host: a definition tucked under an `if` is still the host's code
    assert "MergeNameParts" not in _defined_anywhere(importlib.import_module(HOST))


def test_parse_single_name_into_parts_is_defined_in_the_new_module():
    module = importlib.import_module(SUB)
    path = Path(_file_of(getattr(module, "parse_single_name_into_parts")))
    assert path.resolve() == Path(inspect.getsourcefile(module)).resolve()


def test_parse_single_name_into_parts_is_gone_from_the_host():
    # anywhere in the host: a definition tucked under an `if` is still the host's code
    assert "parse_single_name_into_parts" not in _defined_anywhere(importlib.import_module(HOST))


def test_split_multiple_persons_names_is_defined_in_the_new_module():
    module = importlib.import_module(SUB)
    path = Path(_file_of(getattr(module, "split_multiple_persons_names")))
    assert path.resolve() == Path(inspect.getsourcefile(module)).resolve()


def test_split_multiple_persons_names_is_gone_from_the_host():
    # anywhere in the host: a definition tucked under an `if` is still the host's code
    assert "split_multiple_persons_names" not in _defined_anywhere(importlib.import_module(HOST))
