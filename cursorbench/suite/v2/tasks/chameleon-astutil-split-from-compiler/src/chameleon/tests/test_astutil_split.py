"""Written by the task factory: `chameleon.astutil` holds its own code again, split out of `chameleon.compiler`,
and `chameleon.compiler` still offers the names it offered."""

import ast
import importlib
import inspect
import os
import subprocess
import sys
from pathlib import Path

SUB, HOST = "chameleon.astutil", "chameleon.compiler"
DEFINITIONS = ['parse', 'load', 'store', 'param', 'subscript', 'Node', 'Builtin', 'Symbol', 'Static', 'Comment', 'TokenRef', 'NodeTransformerBase', 'NameLookupRewriteVisitor', 'ItemLookupOnAttributeErrorVisitor']
OFFERED = ['Builtin', 'Comment', 'NameLookupRewriteVisitor', 'Node', 'Static', 'Symbol', 'TokenRef', 'load', 'param', 'store', 'subscript']


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


def test_parse_is_defined_in_the_new_module():
    module = importlib.import_module(SUB)
    path = Path(_file_of(getattr(module, "parse")))
    assert path.resolve() == Path(inspect.getsourcefile(module)).resolve()


def test_parse_is_gone_from_the_host():
    # anywhere in the host: a definition tucked under an `if` is still the host's code
    assert "parse" not in _defined_anywhere(importlib.import_module(HOST))


def test_load_is_defined_in_the_new_module():
    module = importlib.import_module(SUB)
    path = Path(_file_of(getattr(module, "load")))
    assert path.resolve() == Path(inspect.getsourcefile(module)).resolve()


def test_load_is_gone_from_the_host():
    # anywhere in the host: a definition tucked under an `if` is still the host's code
    assert "load" not in _defined_anywhere(importlib.import_module(HOST))


def test_store_is_defined_in_the_new_module():
    module = importlib.import_module(SUB)
    path = Path(_file_of(getattr(module, "store")))
    assert path.resolve() == Path(inspect.getsourcefile(module)).resolve()


def test_store_is_gone_from_the_host():
    # anywhere in the host: a definition tucked under an `if` is still the host's code
    assert "store" not in _defined_anywhere(importlib.import_module(HOST))


def test_param_is_defined_in_the_new_module():
    module = importlib.import_module(SUB)
    path = Path(_file_of(getattr(module, "param")))
    assert path.resolve() == Path(inspect.getsourcefile(module)).resolve()


def test_param_is_gone_from_the_host():
    # anywhere in the host: a definition tucked under an `if` is still the host's code
    assert "param" not in _defined_anywhere(importlib.import_module(HOST))


def test_subscript_is_defined_in_the_new_module():
    module = importlib.import_module(SUB)
    path = Path(_file_of(getattr(module, "subscript")))
    assert path.resolve() == Path(inspect.getsourcefile(module)).resolve()


def test_subscript_is_gone_from_the_host():
    # anywhere in the host: a definition tucked under an `if` is still the host's code
    assert "subscript" not in _defined_anywhere(importlib.import_module(HOST))


def test_Node_is_defined_in_the_new_module():
    module = importlib.import_module(SUB)
    path = Path(_file_of(getattr(module, "Node")))
    assert path.resolve() == Path(inspect.getsourcefile(module)).resolve()


def test_Node_is_gone_from_the_host():
    # anywhere in the host: a definition tucked under an `if` is still the host's code
    assert "Node" not in _defined_anywhere(importlib.import_module(HOST))


def test_Builtin_is_defined_in_the_new_module():
    module = importlib.import_module(SUB)
    path = Path(_file_of(getattr(module, "Builtin")))
    assert path.resolve() == Path(inspect.getsourcefile(module)).resolve()


def test_Builtin_is_gone_from_the_host():
    # anywhere in the host: a definition tucked under an `if` is still the host's code
    assert "Builtin" not in _defined_anywhere(importlib.import_module(HOST))


def test_Symbol_is_defined_in_the_new_module():
    module = importlib.import_module(SUB)
    path = Path(_file_of(getattr(module, "Symbol")))
    assert path.resolve() == Path(inspect.getsourcefile(module)).resolve()


def test_Symbol_is_gone_from_the_host():
    # anywhere in the host: a definition tucked under an `if` is still the host's code
    assert "Symbol" not in _defined_anywhere(importlib.import_module(HOST))


def test_Static_is_defined_in_the_new_module():
    module = importlib.import_module(SUB)
    path = Path(_file_of(getattr(module, "Static")))
    assert path.resolve() == Path(inspect.getsourcefile(module)).resolve()


def test_Static_is_gone_from_the_host():
    # anywhere in the host: a definition tucked under an `if` is still the host's code
    assert "Static" not in _defined_anywhere(importlib.import_module(HOST))


def test_Comment_is_defined_in_the_new_module():
    module = importlib.import_module(SUB)
    path = Path(_file_of(getattr(module, "Comment")))
    assert path.resolve() == Path(inspect.getsourcefile(module)).resolve()


def test_Comment_is_gone_from_the_host():
    # anywhere in the host: a definition tucked under an `if` is still the host's code
    assert "Comment" not in _defined_anywhere(importlib.import_module(HOST))


def test_TokenRef_is_defined_in_the_new_module():
    module = importlib.import_module(SUB)
    path = Path(_file_of(getattr(module, "TokenRef")))
    assert path.resolve() == Path(inspect.getsourcefile(module)).resolve()


def test_TokenRef_is_gone_from_the_host():
    # anywhere in the host: a definition tucked under an `if` is still the host's code
    assert "TokenRef" not in _defined_anywhere(importlib.import_module(HOST))


def test_NodeTransformerBase_is_defined_in_the_new_module():
    module = importlib.import_module(SUB)
    path = Path(_file_of(getattr(module, "NodeTransformerBase")))
    assert path.resolve() == Path(inspect.getsourcefile(module)).resolve()


def test_NodeTransformerBase_is_gone_from_the_host():
    # anywhere in the host: a definition tucked under an `if` is still the host's code
    assert "NodeTransformerBase" not in _defined_anywhere(importlib.import_module(HOST))


def test_NameLookupRewriteVisitor_is_defined_in_the_new_module():
    module = importlib.import_module(SUB)
    path = Path(_file_of(getattr(module, "NameLookupRewriteVisitor")))
    assert path.resolve() == Path(inspect.getsourcefile(module)).resolve()


def test_NameLookupRewriteVisitor_is_gone_from_the_host():
    # anywhere in the host: a definition tucked under an `if` is still the host's code
    assert "NameLookupRewriteVisitor" not in _defined_anywhere(importlib.import_module(HOST))


def test_ItemLookupOnAttributeErrorVisitor_is_defined_in_the_new_module():
    module = importlib.import_module(SUB)
    path = Path(_file_of(getattr(module, "ItemLookupOnAttributeErrorVisitor")))
    assert path.resolve() == Path(inspect.getsourcefile(module)).resolve()


def test_ItemLookupOnAttributeErrorVisitor_is_gone_from_the_host():
    # anywhere in the host: a definition tucked under an `if` is still the host's code
    assert "ItemLookupOnAttributeErrorVisitor" not in _defined_anywhere(importlib.import_module(HOST))
