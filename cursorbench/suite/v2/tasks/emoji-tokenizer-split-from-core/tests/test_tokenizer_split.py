"""Written by the task factory: `emoji.tokenizer` holds its own code again, split out of `emoji.core`,
and `emoji.core` still offers the names it offered."""

import ast
import importlib
import inspect
import os
import subprocess
import sys
from pathlib import Path

SUB, HOST = "emoji.tokenizer", "emoji.core"
DEFINITIONS = ['EmojiMatch', 'EmojiMatchZWJ', 'EmojiMatchZWJNonRGI', 'Token', 'tokenize', 'filter_tokens', 'get_search_tree']
OFFERED = ['Token', 'EmojiMatch', 'EmojiMatchZWJ', 'EmojiMatchZWJNonRGI', 'tokenize', 'filter_tokens']


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


def test_EmojiMatch_is_defined_in_the_new_module():
    module = importlib.import_module(SUB)
    path = Path(_file_of(getattr(module, "EmojiMatch")))
    assert path.resolve() == Path(inspect.getsourcefile(module)).resolve()


def test_EmojiMatch_is_gone_from_the_host():
    # anywhere in the host: a definition tucked under an `if` is still the host's code
    assert "EmojiMatch" not in _defined_anywhere(importlib.import_module(HOST))


def test_EmojiMatchZWJ_is_defined_in_the_new_module():
    module = importlib.import_module(SUB)
    path = Path(_file_of(getattr(module, "EmojiMatchZWJ")))
    assert path.resolve() == Path(inspect.getsourcefile(module)).resolve()


def test_EmojiMatchZWJ_is_gone_from_the_host():
    # anywhere in the host: a definition tucked under an `if` is still the host's code
    assert "EmojiMatchZWJ" not in _defined_anywhere(importlib.import_module(HOST))


def test_EmojiMatchZWJNonRGI_is_defined_in_the_new_module():
    module = importlib.import_module(SUB)
    path = Path(_file_of(getattr(module, "EmojiMatchZWJNonRGI")))
    assert path.resolve() == Path(inspect.getsourcefile(module)).resolve()


def test_EmojiMatchZWJNonRGI_is_gone_from_the_host():
    # anywhere in the host: a definition tucked under an `if` is still the host's code
    assert "EmojiMatchZWJNonRGI" not in _defined_anywhere(importlib.import_module(HOST))


def test_Token_is_defined_in_the_new_module():
    module = importlib.import_module(SUB)
    path = Path(_file_of(getattr(module, "Token")))
    assert path.resolve() == Path(inspect.getsourcefile(module)).resolve()


def test_Token_is_gone_from_the_host():
    # anywhere in the host: a definition tucked under an `if` is still the host's code
    assert "Token" not in _defined_anywhere(importlib.import_module(HOST))


def test_tokenize_is_defined_in_the_new_module():
    module = importlib.import_module(SUB)
    path = Path(_file_of(getattr(module, "tokenize")))
    assert path.resolve() == Path(inspect.getsourcefile(module)).resolve()


def test_tokenize_is_gone_from_the_host():
    # anywhere in the host: a definition tucked under an `if` is still the host's code
    assert "tokenize" not in _defined_anywhere(importlib.import_module(HOST))


def test_filter_tokens_is_defined_in_the_new_module():
    module = importlib.import_module(SUB)
    path = Path(_file_of(getattr(module, "filter_tokens")))
    assert path.resolve() == Path(inspect.getsourcefile(module)).resolve()


def test_filter_tokens_is_gone_from_the_host():
    # anywhere in the host: a definition tucked under an `if` is still the host's code
    assert "filter_tokens" not in _defined_anywhere(importlib.import_module(HOST))


def test_get_search_tree_is_defined_in_the_new_module():
    module = importlib.import_module(SUB)
    path = Path(_file_of(getattr(module, "get_search_tree")))
    assert path.resolve() == Path(inspect.getsourcefile(module)).resolve()


def test_get_search_tree_is_gone_from_the_host():
    # anywhere in the host: a definition tucked under an `if` is still the host's code
    assert "get_search_tree" not in _defined_anywhere(importlib.import_module(HOST))
