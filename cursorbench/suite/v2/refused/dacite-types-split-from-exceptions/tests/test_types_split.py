"""Written by the task factory: `dacite.types` holds its own code again, split out of `dacite.exceptions`,
and `dacite.exceptions` still offers the names it offered."""

import ast
import importlib
import inspect
import os
import subprocess
import sys
from pathlib import Path

SUB, HOST = "dacite.types", "dacite.exceptions"
DEFINITIONS = ['extract_origin_collection', 'is_optional', 'extract_optional', 'is_generic', 'is_union', 'is_tuple', 'is_literal', 'is_new_type', 'extract_new_type', 'is_init_var', 'extract_init_var', 'is_generic_collection', 'extract_generic', 'is_subclass', 'is_type_generic', 'is_generic_dataclass', 'is_instance']
OFFERED = ['is_union']


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


def test_extract_origin_collection_is_defined_in_the_new_module():
    module = importlib.import_module(SUB)
    path = Path(_file_of(getattr(module, "extract_origin_collection")))
    assert path.resolve() == Path(inspect.getsourcefile(module)).resolve()


def test_extract_origin_collection_is_gone_from_the_host():
    # anywhere in the host: a definition tucked under an `if` is still the host's code
    assert "extract_origin_collection" not in _defined_anywhere(importlib.import_module(HOST))


def test_is_optional_is_defined_in_the_new_module():
    module = importlib.import_module(SUB)
    path = Path(_file_of(getattr(module, "is_optional")))
    assert path.resolve() == Path(inspect.getsourcefile(module)).resolve()


def test_is_optional_is_gone_from_the_host():
    # anywhere in the host: a definition tucked under an `if` is still the host's code
    assert "is_optional" not in _defined_anywhere(importlib.import_module(HOST))


def test_extract_optional_is_defined_in_the_new_module():
    module = importlib.import_module(SUB)
    path = Path(_file_of(getattr(module, "extract_optional")))
    assert path.resolve() == Path(inspect.getsourcefile(module)).resolve()


def test_extract_optional_is_gone_from_the_host():
    # anywhere in the host: a definition tucked under an `if` is still the host's code
    assert "extract_optional" not in _defined_anywhere(importlib.import_module(HOST))


def test_is_generic_is_defined_in_the_new_module():
    module = importlib.import_module(SUB)
    path = Path(_file_of(getattr(module, "is_generic")))
    assert path.resolve() == Path(inspect.getsourcefile(module)).resolve()


def test_is_generic_is_gone_from_the_host():
    # anywhere in the host: a definition tucked under an `if` is still the host's code
    assert "is_generic" not in _defined_anywhere(importlib.import_module(HOST))


def test_is_union_is_defined_in_the_new_module():
    module = importlib.import_module(SUB)
    path = Path(_file_of(getattr(module, "is_union")))
    assert path.resolve() == Path(inspect.getsourcefile(module)).resolve()


def test_is_union_is_gone_from_the_host():
    # anywhere in the host: a definition tucked under an `if` is still the host's code
    assert "is_union" not in _defined_anywhere(importlib.import_module(HOST))


def test_is_tuple_is_defined_in_the_new_module():
    module = importlib.import_module(SUB)
    path = Path(_file_of(getattr(module, "is_tuple")))
    assert path.resolve() == Path(inspect.getsourcefile(module)).resolve()


def test_is_tuple_is_gone_from_the_host():
    # anywhere in the host: a definition tucked under an `if` is still the host's code
    assert "is_tuple" not in _defined_anywhere(importlib.import_module(HOST))


def test_is_literal_is_defined_in_the_new_module():
    module = importlib.import_module(SUB)
    path = Path(_file_of(getattr(module, "is_literal")))
    assert path.resolve() == Path(inspect.getsourcefile(module)).resolve()


def test_is_literal_is_gone_from_the_host():
    # anywhere in the host: a definition tucked under an `if` is still the host's code
    assert "is_literal" not in _defined_anywhere(importlib.import_module(HOST))


def test_is_new_type_is_defined_in_the_new_module():
    module = importlib.import_module(SUB)
    path = Path(_file_of(getattr(module, "is_new_type")))
    assert path.resolve() == Path(inspect.getsourcefile(module)).resolve()


def test_is_new_type_is_gone_from_the_host():
    # anywhere in the host: a definition tucked under an `if` is still the host's code
    assert "is_new_type" not in _defined_anywhere(importlib.import_module(HOST))


def test_extract_new_type_is_defined_in_the_new_module():
    module = importlib.import_module(SUB)
    path = Path(_file_of(getattr(module, "extract_new_type")))
    assert path.resolve() == Path(inspect.getsourcefile(module)).resolve()


def test_extract_new_type_is_gone_from_the_host():
    # anywhere in the host: a definition tucked under an `if` is still the host's code
    assert "extract_new_type" not in _defined_anywhere(importlib.import_module(HOST))


def test_is_init_var_is_defined_in_the_new_module():
    module = importlib.import_module(SUB)
    path = Path(_file_of(getattr(module, "is_init_var")))
    assert path.resolve() == Path(inspect.getsourcefile(module)).resolve()


def test_is_init_var_is_gone_from_the_host():
    # anywhere in the host: a definition tucked under an `if` is still the host's code
    assert "is_init_var" not in _defined_anywhere(importlib.import_module(HOST))


def test_extract_init_var_is_defined_in_the_new_module():
    module = importlib.import_module(SUB)
    path = Path(_file_of(getattr(module, "extract_init_var")))
    assert path.resolve() == Path(inspect.getsourcefile(module)).resolve()


def test_extract_init_var_is_gone_from_the_host():
    # anywhere in the host: a definition tucked under an `if` is still the host's code
    assert "extract_init_var" not in _defined_anywhere(importlib.import_module(HOST))


def test_is_generic_collection_is_defined_in_the_new_module():
    module = importlib.import_module(SUB)
    path = Path(_file_of(getattr(module, "is_generic_collection")))
    assert path.resolve() == Path(inspect.getsourcefile(module)).resolve()


def test_is_generic_collection_is_gone_from_the_host():
    # anywhere in the host: a definition tucked under an `if` is still the host's code
    assert "is_generic_collection" not in _defined_anywhere(importlib.import_module(HOST))


def test_extract_generic_is_defined_in_the_new_module():
    module = importlib.import_module(SUB)
    path = Path(_file_of(getattr(module, "extract_generic")))
    assert path.resolve() == Path(inspect.getsourcefile(module)).resolve()


def test_extract_generic_is_gone_from_the_host():
    # anywhere in the host: a definition tucked under an `if` is still the host's code
    assert "extract_generic" not in _defined_anywhere(importlib.import_module(HOST))


def test_is_subclass_is_defined_in_the_new_module():
    module = importlib.import_module(SUB)
    path = Path(_file_of(getattr(module, "is_subclass")))
    assert path.resolve() == Path(inspect.getsourcefile(module)).resolve()


def test_is_subclass_is_gone_from_the_host():
    # anywhere in the host: a definition tucked under an `if` is still the host's code
    assert "is_subclass" not in _defined_anywhere(importlib.import_module(HOST))


def test_is_type_generic_is_defined_in_the_new_module():
    module = importlib.import_module(SUB)
    path = Path(_file_of(getattr(module, "is_type_generic")))
    assert path.resolve() == Path(inspect.getsourcefile(module)).resolve()


def test_is_type_generic_is_gone_from_the_host():
    # anywhere in the host: a definition tucked under an `if` is still the host's code
    assert "is_type_generic" not in _defined_anywhere(importlib.import_module(HOST))


def test_is_generic_dataclass_is_defined_in_the_new_module():
    module = importlib.import_module(SUB)
    path = Path(_file_of(getattr(module, "is_generic_dataclass")))
    assert path.resolve() == Path(inspect.getsourcefile(module)).resolve()


def test_is_generic_dataclass_is_gone_from_the_host():
    # anywhere in the host: a definition tucked under an `if` is still the host's code
    assert "is_generic_dataclass" not in _defined_anywhere(importlib.import_module(HOST))


def test_is_instance_is_defined_in_the_new_module():
    module = importlib.import_module(SUB)
    path = Path(_file_of(getattr(module, "is_instance")))
    assert path.resolve() == Path(inspect.getsourcefile(module)).resolve()


def test_is_instance_is_gone_from_the_host():
    # anywhere in the host: a definition tucked under an `if` is still the host's code
    assert "is_instance" not in _defined_anywhere(importlib.import_module(HOST))
