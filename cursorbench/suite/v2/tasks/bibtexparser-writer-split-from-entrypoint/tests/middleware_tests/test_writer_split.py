"""Written by the task factory: `bibtexparser.writer` holds its own code again, split out of `bibtexparser.entrypoint`,
and `bibtexparser.entrypoint` still offers the names it offered."""

import ast
import importlib
import inspect
import os
import subprocess
import sys
from pathlib import Path

SUB, HOST = "bibtexparser.writer", "bibtexparser.entrypoint"
DEFINITIONS = ['_treat_entry', '_val_indent_string', '_treat_string', '_treat_preamble', '_treat_impl_comment', '_treat_expl_comment', '_treat_failed_block', '_failed_blocks_without_raw_error', '_raise_on_unwritable_blocks', '_calculate_auto_value_align', 'write', '_treat_block', 'BibtexFormat']
OFFERED = ['BibtexFormat', 'write']


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


def test_write_is_defined_in_the_new_module():
    module = importlib.import_module(SUB)
    path = Path(_file_of(getattr(module, "write")))
    assert path.resolve() == Path(inspect.getsourcefile(module)).resolve()


def test_write_is_gone_from_the_host():
    # anywhere in the host: a definition tucked under an `if` is still the host's code
    assert "write" not in _defined_anywhere(importlib.import_module(HOST))


def test_BibtexFormat_is_defined_in_the_new_module():
    module = importlib.import_module(SUB)
    path = Path(_file_of(getattr(module, "BibtexFormat")))
    assert path.resolve() == Path(inspect.getsourcefile(module)).resolve()


def test_BibtexFormat_is_gone_from_the_host():
    # anywhere in the host: a definition tucked under an `if` is still the host's code
    assert "BibtexFormat" not in _defined_anywhere(importlib.import_module(HOST))
