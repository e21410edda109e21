"""Written by the task factory: `parsel.selector` holds its own code again, split out of `parsel.xpathfuncs`,
and `parsel.xpathfuncs` still offers the names it offered."""

import ast
import importlib
import inspect
import os
import subprocess
import sys
from pathlib import Path

SUB, HOST = "parsel.selector", "parsel.xpathfuncs"
DEFINITIONS = ['CannotRemoveElementWithoutRoot', 'CannotRemoveElementWithoutParent', 'CannotDropElementWithoutParent', 'SafeXMLParser', 'CTGroupValue', '_xml_or_html', '_has_encoding_error', '_root_from_decoded_body', '_detect_xml_or_html', 'create_root_node', 'SelectorList', '_get_root_from_text', '_get_root_and_type_from_bytes', '_get_root_and_type_from_text', '_compile_xpath', '_get_xpath_evaluator', '_get_root_type', '_is_json_document', '_load_json_or_none', 'Selector']
OFFERED = ['_compile_xpath']


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


def test_CannotRemoveElementWithoutRoot_is_defined_in_the_new_module():
    module = importlib.import_module(SUB)
    path = Path(_file_of(getattr(module, "CannotRemoveElementWithoutRoot")))
    assert path.resolve() == Path(inspect.getsourcefile(module)).resolve()


def test_CannotRemoveElementWithoutRoot_is_gone_from_the_host():
    # anywhere in the host: a definition tucked under an `if` is still the host's code
    assert "CannotRemoveElementWithoutRoot" not in _defined_anywhere(importlib.import_module(HOST))


def test_CannotRemoveElementWithoutParent_is_defined_in_the_new_module():
    module = importlib.import_module(SUB)
    path = Path(_file_of(getattr(module, "CannotRemoveElementWithoutParent")))
    assert path.resolve() == Path(inspect.getsourcefile(module)).resolve()


def test_CannotRemoveElementWithoutParent_is_gone_from_the_host():
    # anywhere in the host: a definition tucked under an `if` is still the host's code
    assert "CannotRemoveElementWithoutParent" not in _defined_anywhere(importlib.import_module(HOST))


def test_CannotDropElementWithoutParent_is_defined_in_the_new_module():
    module = importlib.import_module(SUB)
    path = Path(_file_of(getattr(module, "CannotDropElementWithoutParent")))
    assert path.resolve() == Path(inspect.getsourcefile(module)).resolve()


def test_CannotDropElementWithoutParent_is_gone_from_the_host():
    # anywhere in the host: a definition tucked under an `if` is still the host's code
    assert "CannotDropElementWithoutParent" not in _defined_anywhere(importlib.import_module(HOST))


def test_SafeXMLParser_is_defined_in_the_new_module():
    module = importlib.import_module(SUB)
    path = Path(_file_of(getattr(module, "SafeXMLParser")))
    assert path.resolve() == Path(inspect.getsourcefile(module)).resolve()


def test_SafeXMLParser_is_gone_from_the_host():
    # anywhere in the host: a definition tucked under an `if` is still the host's code
    assert "SafeXMLParser" not in _defined_anywhere(importlib.import_module(HOST))


def test_CTGroupValue_is_defined_in_the_new_module():
    module = importlib.import_module(SUB)
    path = Path(_file_of(getattr(module, "CTGroupValue")))
    assert path.resolve() == Path(inspect.getsourcefile(module)).resolve()


def test_CTGroupValue_is_gone_from_the_host():
    # anywhere in the host: a definition tucked under an `if` is still the host's code
    assert "CTGroupValue" not in _defined_anywhere(importlib.import_module(HOST))


def test_create_root_node_is_defined_in_the_new_module():
    module = importlib.import_module(SUB)
    path = Path(_file_of(getattr(module, "create_root_node")))
    assert path.resolve() == Path(inspect.getsourcefile(module)).resolve()


def test_create_root_node_is_gone_from_the_host():
    # anywhere in the host: a definition tucked under an `if` is still the host's code
    assert "create_root_node" not in _defined_anywhere(importlib.import_module(HOST))


def test_SelectorList_is_defined_in_the_new_module():
    module = importlib.import_module(SUB)
    path = Path(_file_of(getattr(module, "SelectorList")))
    assert path.resolve() == Path(inspect.getsourcefile(module)).resolve()


def test_SelectorList_is_gone_from_the_host():
    # anywhere in the host: a definition tucked under an `if` is still the host's code
    assert "SelectorList" not in _defined_anywhere(importlib.import_module(HOST))


def test_Selector_is_defined_in_the_new_module():
    module = importlib.import_module(SUB)
    path = Path(_file_of(getattr(module, "Selector")))
    assert path.resolve() == Path(inspect.getsourcefile(module)).resolve()


def test_Selector_is_gone_from_the_host():
    # anywhere in the host: a definition tucked under an `if` is still the host's code
    assert "Selector" not in _defined_anywhere(importlib.import_module(HOST))
