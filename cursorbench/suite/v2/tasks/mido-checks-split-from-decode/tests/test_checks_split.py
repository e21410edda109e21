"""Written by the task factory: `mido.messages.checks` holds its own code again, split out of `mido.messages.decode`,
and `mido.messages.decode` still offers the names it offered."""

import ast
import importlib
import inspect
import os
import subprocess
import sys
from pathlib import Path

SUB, HOST = "mido.messages.checks", "mido.messages.decode"
DEFINITIONS = ['check_type', 'check_channel', 'check_pos', 'check_pitch', 'check_data', 'check_frame_type', 'check_frame_value', 'check_data_byte', 'check_time', 'check_value', 'check_msgdict']
OFFERED = ['check_data']


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


def test_check_type_is_defined_in_the_new_module():
    module = importlib.import_module(SUB)
    path = Path(_file_of(getattr(module, "check_type")))
    assert path.resolve() == Path(inspect.getsourcefile(module)).resolve()


def test_check_type_is_gone_from_the_host():
    # anywhere in the host: a definition tucked under an `if` is still the host's code
    assert "check_type" not in _defined_anywhere(importlib.import_module(HOST))


def test_check_channel_is_defined_in_the_new_module():
    module = importlib.import_module(SUB)
    path = Path(_file_of(getattr(module, "check_channel")))
    assert path.resolve() == Path(inspect.getsourcefile(module)).resolve()


def test_check_channel_is_gone_from_the_host():
    # anywhere in the host: a definition tucked under an `if` is still the host's code
    assert "check_channel" not in _defined_anywhere(importlib.import_module(HOST))


def test_check_pos_is_defined_in_the_new_module():
    module = importlib.import_module(SUB)
    path = Path(_file_of(getattr(module, "check_pos")))
    assert path.resolve() == Path(inspect.getsourcefile(module)).resolve()


def test_check_pos_is_gone_from_the_host():
    # anywhere in the host: a definition tucked under an `if` is still the host's code
    assert "check_pos" not in _defined_anywhere(importlib.import_module(HOST))


def test_check_pitch_is_defined_in_the_new_module():
    module = importlib.import_module(SUB)
    path = Path(_file_of(getattr(module, "check_pitch")))
    assert path.resolve() == Path(inspect.getsourcefile(module)).resolve()


def test_check_pitch_is_gone_from_the_host():
    # anywhere in the host: a definition tucked under an `if` is still the host's code
    assert "check_pitch" not in _defined_anywhere(importlib.import_module(HOST))


def test_check_data_is_defined_in_the_new_module():
    module = importlib.import_module(SUB)
    path = Path(_file_of(getattr(module, "check_data")))
    assert path.resolve() == Path(inspect.getsourcefile(module)).resolve()


def test_check_data_is_gone_from_the_host():
    # anywhere in the host: a definition tucked under an `if` is still the host's code
    assert "check_data" not in _defined_anywhere(importlib.import_module(HOST))


def test_check_frame_type_is_defined_in_the_new_module():
    module = importlib.import_module(SUB)
    path = Path(_file_of(getattr(module, "check_frame_type")))
    assert path.resolve() == Path(inspect.getsourcefile(module)).resolve()


def test_check_frame_type_is_gone_from_the_host():
    # anywhere in the host: a definition tucked under an `if` is still the host's code
    assert "check_frame_type" not in _defined_anywhere(importlib.import_module(HOST))


def test_check_frame_value_is_defined_in_the_new_module():
    module = importlib.import_module(SUB)
    path = Path(_file_of(getattr(module, "check_frame_value")))
    assert path.resolve() == Path(inspect.getsourcefile(module)).resolve()


def test_check_frame_value_is_gone_from_the_host():
    # anywhere in the host: a definition tucked under an `if` is still the host's code
    assert "check_frame_value" not in _defined_anywhere(importlib.import_module(HOST))


def test_check_data_byte_is_defined_in_the_new_module():
    module = importlib.import_module(SUB)
    path = Path(_file_of(getattr(module, "check_data_byte")))
    assert path.resolve() == Path(inspect.getsourcefile(module)).resolve()


def test_check_data_byte_is_gone_from_the_host():
    # anywhere in the host: a definition tucked under an `if` is still the host's code
    assert "check_data_byte" not in _defined_anywhere(importlib.import_module(HOST))


def test_check_time_is_defined_in_the_new_module():
    module = importlib.import_module(SUB)
    path = Path(_file_of(getattr(module, "check_time")))
    assert path.resolve() == Path(inspect.getsourcefile(module)).resolve()


def test_check_time_is_gone_from_the_host():
    # anywhere in the host: a definition tucked under an `if` is still the host's code
    assert "check_time" not in _defined_anywhere(importlib.import_module(HOST))


def test_check_value_is_defined_in_the_new_module():
    module = importlib.import_module(SUB)
    path = Path(_file_of(getattr(module, "check_value")))
    assert path.resolve() == Path(inspect.getsourcefile(module)).resolve()


def test_check_value_is_gone_from_the_host():
    # anywhere in the host: a definition tucked under an `if` is still the host's code
    assert "check_value" not in _defined_anywhere(importlib.import_module(HOST))


def test_check_msgdict_is_defined_in_the_new_module():
    module = importlib.import_module(SUB)
    path = Path(_file_of(getattr(module, "check_msgdict")))
    assert path.resolve() == Path(inspect.getsourcefile(module)).resolve()


def test_check_msgdict_is_gone_from_the_host():
    # anywhere in the host: a definition tucked under an `if` is still the host's code
    assert "check_msgdict" not in _defined_anywhere(importlib.import_module(HOST))
