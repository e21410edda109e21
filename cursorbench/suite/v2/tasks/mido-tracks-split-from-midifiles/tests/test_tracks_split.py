"""Written by the task factory: `mido.midifiles.tracks` holds its own code again, split out of `mido.midifiles.midifiles`,
and `mido.midifiles.midifiles` still offers the names it offered."""

import ast
import importlib
import inspect
import os
import subprocess
import sys
from pathlib import Path

SUB, HOST = "mido.midifiles.tracks", "mido.midifiles.midifiles"
DEFINITIONS = ['MidiTrack', '_to_abstime', '_to_reltime', 'fix_end_of_track', 'merge_tracks']
OFFERED = ['MidiTrack', 'fix_end_of_track', 'merge_tracks']


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


def test_MidiTrack_is_defined_in_the_new_module():
    module = importlib.import_module(SUB)
    path = Path(_file_of(getattr(module, "MidiTrack")))
    assert path.resolve() == Path(inspect.getsourcefile(module)).resolve()


def test_MidiTrack_is_gone_from_the_host():
    # anywhere in the host: a definition tucked under an `if` is still the host's code
    assert "MidiTrack" not in _defined_anywhere(importlib.import_module(HOST))


def test_fix_end_of_track_is_defined_in_the_new_module():
    module = importlib.import_module(SUB)
    path = Path(_file_of(getattr(module, "fix_end_of_track")))
    assert path.resolve() == Path(inspect.getsourcefile(module)).resolve()


def test_fix_end_of_track_is_gone_from_the_host():
    # anywhere in the host: a definition tucked under an `if` is still the host's code
    assert "fix_end_of_track" not in _defined_anywhere(importlib.import_module(HOST))


def test_merge_tracks_is_defined_in_the_new_module():
    module = importlib.import_module(SUB)
    path = Path(_file_of(getattr(module, "merge_tracks")))
    assert path.resolve() == Path(inspect.getsourcefile(module)).resolve()


def test_merge_tracks_is_gone_from_the_host():
    # anywhere in the host: a definition tucked under an `if` is still the host's code
    assert "merge_tracks" not in _defined_anywhere(importlib.import_module(HOST))
