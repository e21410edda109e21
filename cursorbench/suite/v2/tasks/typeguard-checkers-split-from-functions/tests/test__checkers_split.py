"""Written by the task factory: `typeguard._checkers` holds its own code again, split out of `typeguard._functions`,
and `typeguard._functions` still offers the names it offered."""

import ast
import importlib
import inspect
import os
import subprocess
import sys
from pathlib import Path

SUB, HOST = "typeguard._checkers", "typeguard._functions"
DEFINITIONS = ['check_callable', 'check_mapping', 'check_typed_dict', 'check_list', 'check_sequence', 'check_set', 'check_tuple', 'check_union', 'check_uniontype', 'check_class', 'check_newtype', 'check_instance', 'check_typevar', '_is_literal_type', 'check_literal', 'check_literal_string', 'check_typeguard', 'check_none', 'check_sentinel', 'check_number', 'check_io', 'check_signature_compatible', 'check_protocol', 'check_byteslike', 'check_self', 'check_paramspec', 'check_type_internal', 'builtin_checker_lookup', 'load_plugins']
OFFERED = ['BINARY_MAGIC_METHODS', 'check_type_internal']


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


def test_check_callable_is_defined_in_the_new_module():
    module = importlib.import_module(SUB)
    path = Path(_file_of(getattr(module, "check_callable")))
    assert path.resolve() == Path(inspect.getsourcefile(module)).resolve()


def test_check_callable_is_gone_from_the_host():
    # anywhere in the host: a definition tucked under an `if` is still the host's code
    assert "check_callable" not in _defined_anywhere(importlib.import_module(HOST))


def test_check_mapping_is_defined_in_the_new_module():
    module = importlib.import_module(SUB)
    path = Path(_file_of(getattr(module, "check_mapping")))
    assert path.resolve() == Path(inspect.getsourcefile(module)).resolve()


def test_check_mapping_is_gone_from_the_host():
    # anywhere in the host: a definition tucked under an `if` is still the host's code
    assert "check_mapping" not in _defined_anywhere(importlib.import_module(HOST))


def test_check_typed_dict_is_defined_in_the_new_module():
    module = importlib.import_module(SUB)
    path = Path(_file_of(getattr(module, "check_typed_dict")))
    assert path.resolve() == Path(inspect.getsourcefile(module)).resolve()


def test_check_typed_dict_is_gone_from_the_host():
    # anywhere in the host: a definition tucked under an `if` is still the host's code
    assert "check_typed_dict" not in _defined_anywhere(importlib.import_module(HOST))


def test_check_list_is_defined_in_the_new_module():
    module = importlib.import_module(SUB)
    path = Path(_file_of(getattr(module, "check_list")))
    assert path.resolve() == Path(inspect.getsourcefile(module)).resolve()


def test_check_list_is_gone_from_the_host():
    # anywhere in the host: a definition tucked under an `if` is still the host's code
    assert "check_list" not in _defined_anywhere(importlib.import_module(HOST))


def test_check_sequence_is_defined_in_the_new_module():
    module = importlib.import_module(SUB)
    path = Path(_file_of(getattr(module, "check_sequence")))
    assert path.resolve() == Path(inspect.getsourcefile(module)).resolve()


def test_check_sequence_is_gone_from_the_host():
    # anywhere in the host: a definition tucked under an `if` is still the host's code
    assert "check_sequence" not in _defined_anywhere(importlib.import_module(HOST))


def test_check_set_is_defined_in_the_new_module():
    module = importlib.import_module(SUB)
    path = Path(_file_of(getattr(module, "check_set")))
    assert path.resolve() == Path(inspect.getsourcefile(module)).resolve()


def test_check_set_is_gone_from_the_host():
    # anywhere in the host: a definition tucked under an `if` is still the host's code
    assert "check_set" not in _defined_anywhere(importlib.import_module(HOST))


def test_check_tuple_is_defined_in_the_new_module():
    module = importlib.import_module(SUB)
    path = Path(_file_of(getattr(module, "check_tuple")))
    assert path.resolve() == Path(inspect.getsourcefile(module)).resolve()


def test_check_tuple_is_gone_from_the_host():
    # anywhere in the host: a definition tucked under an `if` is still the host's code
    assert "check_tuple" not in _defined_anywhere(importlib.import_module(HOST))


def test_check_union_is_defined_in_the_new_module():
    module = importlib.import_module(SUB)
    path = Path(_file_of(getattr(module, "check_union")))
    assert path.resolve() == Path(inspect.getsourcefile(module)).resolve()


def test_check_union_is_gone_from_the_host():
    # anywhere in the host: a definition tucked under an `if` is still the host's code
    assert "check_union" not in _defined_anywhere(importlib.import_module(HOST))


def test_check_uniontype_is_defined_in_the_new_module():
    module = importlib.import_module(SUB)
    path = Path(_file_of(getattr(module, "check_uniontype")))
    assert path.resolve() == Path(inspect.getsourcefile(module)).resolve()


def test_check_uniontype_is_gone_from_the_host():
    # anywhere in the host: a definition tucked under an `if` is still the host's code
    assert "check_uniontype" not in _defined_anywhere(importlib.import_module(HOST))


def test_check_class_is_defined_in_the_new_module():
    module = importlib.import_module(SUB)
    path = Path(_file_of(getattr(module, "check_class")))
    assert path.resolve() == Path(inspect.getsourcefile(module)).resolve()


def test_check_class_is_gone_from_the_host():
    # anywhere in the host: a definition tucked under an `if` is still the host's code
    assert "check_class" not in _defined_anywhere(importlib.import_module(HOST))


def test_check_newtype_is_defined_in_the_new_module():
    module = importlib.import_module(SUB)
    path = Path(_file_of(getattr(module, "check_newtype")))
    assert path.resolve() == Path(inspect.getsourcefile(module)).resolve()


def test_check_newtype_is_gone_from_the_host():
    # anywhere in the host: a definition tucked under an `if` is still the host's code
    assert "check_newtype" not in _defined_anywhere(importlib.import_module(HOST))


def test_check_instance_is_defined_in_the_new_module():
    module = importlib.import_module(SUB)
    path = Path(_file_of(getattr(module, "check_instance")))
    assert path.resolve() == Path(inspect.getsourcefile(module)).resolve()


def test_check_instance_is_gone_from_the_host():
    # anywhere in the host: a definition tucked under an `if` is still the host's code
    assert "check_instance" not in _defined_anywhere(importlib.import_module(HOST))


def test_check_typevar_is_defined_in_the_new_module():
    module = importlib.import_module(SUB)
    path = Path(_file_of(getattr(module, "check_typevar")))
    assert path.resolve() == Path(inspect.getsourcefile(module)).resolve()


def test_check_typevar_is_gone_from_the_host():
    # anywhere in the host: a definition tucked under an `if` is still the host's code
    assert "check_typevar" not in _defined_anywhere(importlib.import_module(HOST))


def test_check_literal_is_defined_in_the_new_module():
    module = importlib.import_module(SUB)
    path = Path(_file_of(getattr(module, "check_literal")))
    assert path.resolve() == Path(inspect.getsourcefile(module)).resolve()


def test_check_literal_is_gone_from_the_host():
    # anywhere in the host: a definition tucked under an `if` is still the host's code
    assert "check_literal" not in _defined_anywhere(importlib.import_module(HOST))


def test_check_literal_string_is_defined_in_the_new_module():
    module = importlib.import_module(SUB)
    path = Path(_file_of(getattr(module, "check_literal_string")))
    assert path.resolve() == Path(inspect.getsourcefile(module)).resolve()


def test_check_literal_string_is_gone_from_the_host():
    # anywhere in the host: a definition tucked under an `if` is still the host's code
    assert "check_literal_string" not in _defined_anywhere(importlib.import_module(HOST))


def test_check_typeguard_is_defined_in_the_new_module():
    module = importlib.import_module(SUB)
    path = Path(_file_of(getattr(module, "check_typeguard")))
    assert path.resolve() == Path(inspect.getsourcefile(module)).resolve()


def test_check_typeguard_is_gone_from_the_host():
    # anywhere in the host: a definition tucked under an `if` is still the host's code
    assert "check_typeguard" not in _defined_anywhere(importlib.import_module(HOST))


def test_check_none_is_defined_in_the_new_module():
    module = importlib.import_module(SUB)
    path = Path(_file_of(getattr(module, "check_none")))
    assert path.resolve() == Path(inspect.getsourcefile(module)).resolve()


def test_check_none_is_gone_from_the_host():
    # anywhere in the host: a definition tucked under an `if` is still the host's code
    assert "check_none" not in _defined_anywhere(importlib.import_module(HOST))


def test_check_sentinel_is_defined_in_the_new_module():
    module = importlib.import_module(SUB)
    path = Path(_file_of(getattr(module, "check_sentinel")))
    assert path.resolve() == Path(inspect.getsourcefile(module)).resolve()


def test_check_sentinel_is_gone_from_the_host():
    # anywhere in the host: a definition tucked under an `if` is still the host's code
    assert "check_sentinel" not in _defined_anywhere(importlib.import_module(HOST))


def test_check_number_is_defined_in_the_new_module():
    module = importlib.import_module(SUB)
    path = Path(_file_of(getattr(module, "check_number")))
    assert path.resolve() == Path(inspect.getsourcefile(module)).resolve()


def test_check_number_is_gone_from_the_host():
    # anywhere in the host: a definition tucked under an `if` is still the host's code
    assert "check_number" not in _defined_anywhere(importlib.import_module(HOST))


def test_check_io_is_defined_in_the_new_module():
    module = importlib.import_module(SUB)
    path = Path(_file_of(getattr(module, "check_io")))
    assert path.resolve() == Path(inspect.getsourcefile(module)).resolve()


def test_check_io_is_gone_from_the_host():
    # anywhere in the host: a definition tucked under an `if` is still the host's code
    assert "check_io" not in _defined_anywhere(importlib.import_module(HOST))


def test_check_signature_compatible_is_defined_in_the_new_module():
    module = importlib.import_module(SUB)
    path = Path(_file_of(getattr(module, "check_signature_compatible")))
    assert path.resolve() == Path(inspect.getsourcefile(module)).resolve()


def test_check_signature_compatible_is_gone_from_the_host():
    # anywhere in the host: a definition tucked under an `if` is still the host's code
    assert "check_signature_compatible" not in _defined_anywhere(importlib.import_module(HOST))


def test_check_protocol_is_defined_in_the_new_module():
    module = importlib.import_module(SUB)
    path = Path(_file_of(getattr(module, "check_protocol")))
    assert path.resolve() == Path(inspect.getsourcefile(module)).resolve()


def test_check_protocol_is_gone_from_the_host():
    # anywhere in the host: a definition tucked under an `if` is still the host's code
    assert "check_protocol" not in _defined_anywhere(importlib.import_module(HOST))


def test_check_byteslike_is_defined_in_the_new_module():
    module = importlib.import_module(SUB)
    path = Path(_file_of(getattr(module, "check_byteslike")))
    assert path.resolve() == Path(inspect.getsourcefile(module)).resolve()


def test_check_byteslike_is_gone_from_the_host():
    # anywhere in the host: a definition tucked under an `if` is still the host's code
    assert "check_byteslike" not in _defined_anywhere(importlib.import_module(HOST))


def test_check_self_is_defined_in_the_new_module():
    module = importlib.import_module(SUB)
    path = Path(_file_of(getattr(module, "check_self")))
    assert path.resolve() == Path(inspect.getsourcefile(module)).resolve()


def test_check_self_is_gone_from_the_host():
    # anywhere in the host: a definition tucked under an `if` is still the host's code
    assert "check_self" not in _defined_anywhere(importlib.import_module(HOST))


def test_check_paramspec_is_defined_in_the_new_module():
    module = importlib.import_module(SUB)
    path = Path(_file_of(getattr(module, "check_paramspec")))
    assert path.resolve() == Path(inspect.getsourcefile(module)).resolve()


def test_check_paramspec_is_gone_from_the_host():
    # anywhere in the host: a definition tucked under an `if` is still the host's code
    assert "check_paramspec" not in _defined_anywhere(importlib.import_module(HOST))


def test_check_type_internal_is_defined_in_the_new_module():
    module = importlib.import_module(SUB)
    path = Path(_file_of(getattr(module, "check_type_internal")))
    assert path.resolve() == Path(inspect.getsourcefile(module)).resolve()


def test_check_type_internal_is_gone_from_the_host():
    # anywhere in the host: a definition tucked under an `if` is still the host's code
    assert "check_type_internal" not in _defined_anywhere(importlib.import_module(HOST))


def test_builtin_checker_lookup_is_defined_in_the_new_module():
    module = importlib.import_module(SUB)
    path = Path(_file_of(getattr(module, "builtin_checker_lookup")))
    assert path.resolve() == Path(inspect.getsourcefile(module)).resolve()


def test_builtin_checker_lookup_is_gone_from_the_host():
    # anywhere in the host: a definition tucked under an `if` is still the host's code
    assert "builtin_checker_lookup" not in _defined_anywhere(importlib.import_module(HOST))


def test_load_plugins_is_defined_in_the_new_module():
    module = importlib.import_module(SUB)
    path = Path(_file_of(getattr(module, "load_plugins")))
    assert path.resolve() == Path(inspect.getsourcefile(module)).resolve()


def test_load_plugins_is_gone_from_the_host():
    # anywhere in the host: a definition tucked under an `if` is still the host's code
    assert "load_plugins" not in _defined_anywhere(importlib.import_module(HOST))
