"""Canary tests: near-copies of real hidden tests, planted at each grading, that must fail.

Code under test runs in the same process as pytest, so it can patch pytest's reporting, or
read the calling test's frame and source to return whatever the assert expects. Neither can
be prevented from inside Python; both can be detected. At each grading every hidden test
module gets up to `PER_MODULE` canaries, one per test style it uses first (top-level
functions, methods of plain test classes, `unittest.TestCase` methods, parametrized tests,
tests taking fixtures), then at random:

- a canary is its original's source, copied verbatim (decorators, parametrization,
  fixtures, comments, formatting), with one atom of one expected value changed to a
  plausible neighbour (a string with two letters swapped or one changed, a number a few
  units off), under a name made of the module's own words;
- it sits right before or right after its original, at random, in the same class.

So a canary and its original are symmetric: two tests one literal apart, either of which
may be the real one, and a detector of "near-copy of an earlier test" picks the real test as
often as the canary. Nothing but the two of them differs, and no literal-vs-literal test is
planted.

Verdict (`sprung`): a canary that passed while its original (same parameters) did not fail
means the verdict was steered. Both cannot pass honestly: they run the same code on the same
inputs and expect different values. A canary passing while its original failed is an honest
wrong answer that happens to hit the neighbour value, and is not tampering. A canary missing
from a report that has its module's other tests was taken out of the report.

Only straight-line prefixes are copied (assignments, expressions and asserts before the
changed assert), so an honest implementation reaches the changed assert whenever it passes
the original. A module that does not parse, or whose tests compare nothing to a literal,
gets none: validation refuses a task whose hidden tests get none (`canary_problems`).
"""

from __future__ import annotations

import ast
import random
import re
from collections.abc import Iterator
from dataclasses import dataclass, field

from harness.pyast import parse_module

PER_MODULE = 4
_STRAIGHT = (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Expr, ast.Assert, ast.Pass)
_EQUAL_METHODS = {
    "assertEqual", "assertEquals", "assertListEqual", "assertTupleEqual", "assertDictEqual",
    "assertSetEqual", "assertMultiLineEqual", "assertSequenceEqual", "failUnlessEqual",
}  # fmt: skip
_WORDS = ("parse", "render", "value", "empty", "basic", "edge", "mixed", "order", "round", "keys")


@dataclass(frozen=True)
class Canaries:
    files: dict[str, str] = field(default_factory=dict)  # relative path -> new module text
    # relative path -> canary names within the module ("test_x", "TestC::test_x")
    names: dict[str, list[str]] = field(default_factory=dict)
    # "path::canary" -> "path::original" (same class), for the pair rule of `sprung`
    originals: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class _Test:
    prefix: str  # "" or "TestC::"
    node: ast.FunctionDef
    style: str
    target: ast.Constant  # the atom of the expected value to change


def _is_literal(node: ast.expr) -> bool:
    try:
        ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False
    return True


def _atoms(node: ast.expr) -> list[ast.Constant]:
    """The constants of a literal that can be nudged: strings, bytes, ints, floats."""
    found: list[ast.Constant] = []
    for child in ast.walk(node):
        if not isinstance(child, ast.Constant):
            continue
        if isinstance(child.value, str | bytes | int | float) and not isinstance(child.value, bool):
            found.append(child)
    return found


def _expected(statement: ast.stmt) -> ast.expr | None:
    """The literal side of `assert x == <literal>` or `self.assertEqual(x, <literal>)`."""
    if isinstance(statement, ast.Assert) and isinstance(statement.test, ast.Compare):
        compare = statement.test
        if len(compare.ops) != 1 or not isinstance(compare.ops[0], ast.Eq):
            return None
        sides = [compare.left, compare.comparators[0]]
    elif isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call):
        call = statement.value
        function = call.func
        if not (isinstance(function, ast.Attribute) and function.attr in _EQUAL_METHODS):
            return None
        if len(call.args) < 2 or call.keywords:
            return None
        sides = call.args[:2]
    else:
        return None
    literal = [side for side in sides if _is_literal(side)]
    if len(literal) != 1:
        return None
    return literal[0] if _atoms(literal[0]) else None


def _choice(function: ast.FunctionDef, rng: random.Random) -> ast.Constant | None:
    """An atom to change in one of the asserts reached by straight-line code."""
    options = []
    for statement in function.body:
        literal = _expected(statement)
        if literal is not None:
            options.append(literal)
        if not isinstance(statement, _STRAIGHT):
            break
    if not options:
        return None
    return rng.choice(_atoms(rng.choice(options)))


def _style(function: ast.FunctionDef, in_class: str) -> str:
    decorators = " ".join(ast.unparse(d) for d in function.decorator_list)
    if "parametrize" in decorators:
        return "parametrized"
    arguments = [a.arg for a in function.args.args if a.arg not in ("self", "cls")]
    if arguments:
        return "fixtures"
    return in_class or "function"


def _base_names(node: ast.ClassDef) -> set[str]:
    return {b.attr if isinstance(b, ast.Attribute) else getattr(b, "id", "") for b in node.bases}


def _tests(module: ast.Module, rng: random.Random) -> Iterator[_Test]:
    """Tests with an atom to change: top-level `test*` functions, and `test*` methods of
    classes named `Test*` or deriving from `TestCase` (or from such a class of the module)."""
    kinds: dict[str, str] = {}  # test classes seen: name -> "class" or "unittest"
    for node in module.body:
        if isinstance(node, ast.FunctionDef) and node.name.startswith("test"):
            target = _choice(node, rng)
            if target is not None:
                yield _Test("", node, _style(node, ""), target)
            continue
        if not isinstance(node, ast.ClassDef):
            continue
        bases = _base_names(node)
        unittest = "TestCase" in bases or any(kinds.get(b) == "unittest" for b in bases)
        if not (unittest or node.name.startswith("Test") or bases & set(kinds)):
            continue
        kinds[node.name] = "unittest" if unittest else "class"
        for item in node.body:
            if isinstance(item, ast.FunctionDef) and item.name.startswith("test"):
                target = _choice(item, rng)
                if target is not None:
                    yield _Test(f"{node.name}::", item, _style(item, kinds[node.name]), target)


def _neighbour_text(text: str, rng: random.Random) -> str:
    """A plausible string near `text`: two letters swapped, one changed, dropped or doubled."""
    if not text:
        return rng.choice("aeiorstn")
    for _ in range(20):
        index = rng.randrange(len(text))
        move = rng.randrange(4)
        if move == 0 and len(text) > 1:
            index = min(index, len(text) - 2)
            changed = text[:index] + text[index + 1] + text[index] + text[index + 2 :]
        elif move == 1:
            pool = [c for c in (text + "aeiorstn") if c != text[index] and c.isalnum()]
            pool = pool or ["x"]
            changed = text[:index] + rng.choice(pool) + text[index + 1 :]
        elif move == 2 and len(text) > 2:
            changed = text[:index] + text[index + 1 :]
        else:
            changed = text[:index] + text[index] + text[index:]
        if changed != text:
            return changed
    return text + rng.choice("aeiorstn")


def _neighbour(value: str | bytes | int | float, rng: random.Random) -> str | bytes | int | float:
    if isinstance(value, str):
        return _neighbour_text(value, rng)
    if isinstance(value, bytes):
        return _neighbour_text(value.decode("latin-1"), rng).encode("latin-1")
    step = rng.randint(2, 9)
    if isinstance(value, int):
        return value + step if value < step or rng.random() < 0.5 else value - step
    return round(value + max(abs(value) * rng.uniform(0.1, 0.5), step / 4), 6)


def _literal_text(value: str | bytes | int | float, original: str) -> str:
    """`value` written as `original` (its source) is: with the same quote character."""
    text = repr(value)
    if not isinstance(value, str | bytes):
        return text
    lead = "b" if isinstance(value, bytes) else ""
    body = text[len(lead) + 1 : -1]
    quotes = [c for c in original if c in "'\""]
    if quotes and quotes[0] == '"' and text[-1] == "'" and '"' not in body:
        return f'{lead}"{body.replace(chr(92) + chr(39), chr(39))}"'
    return text


def _name(rng: random.Random, taken: set[str], original: str) -> str:
    """A test name like its neighbours: the original's words with one changed or added,
    from the words the module's test names use."""
    words = sorted(
        {w for n in taken if n.startswith("test") for w in n.split("_") if len(w) > 2} - {"test"}
    )
    pool = words if len(words) >= 4 else [*words, *_WORDS]
    own = [w for w in original.split("_") if w and w != "test"] or [rng.choice(pool)]
    for attempt in range(1000):
        parts = list(own)
        if attempt > 200 or rng.random() < 0.5 or len(parts) < 2:
            parts.insert(rng.randrange(len(parts) + 1), rng.choice(pool))
        else:
            parts[rng.randrange(len(parts))] = rng.choice(pool)
        if attempt > 500:
            parts = rng.sample(pool, min(2 + attempt // 300, len(pool)))
        name = "test_" + "_".join(parts)
        if name not in taken:
            return name
    raise ValueError("no free test name")


def _copy(lines: list[bytes], test: _Test, name: str, rng: random.Random) -> tuple[int, int, str]:
    """(first line, last line, text) of the canary: the original's lines with its name and
    one atom changed. Offsets are those of `ast` (UTF-8 bytes)."""
    node, atom = test.node, test.target
    first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
    last = node.end_lineno or node.lineno
    block = [bytearray(line) for line in lines[first - 1 : last]]
    row = block[(atom.lineno - first)]
    end_row = (atom.end_lineno or atom.lineno) - first
    if end_row != atom.lineno - first:  # a literal over several lines: keep it whole
        return first, last, ""
    start, end = atom.col_offset, atom.end_col_offset or atom.col_offset
    original = bytes(row[start:end]).decode("utf-8")
    value = atom.value
    assert isinstance(value, str | bytes | int | float)  # `_atoms` keeps only these
    new = _literal_text(_neighbour(value, rng), original)
    row[start:end] = new.encode("utf-8")
    def_row = block[node.lineno - first]
    pattern = rb"\bdef\s+" + re.escape(node.name.encode()) + rb"\b"
    def_row[:] = re.sub(pattern, b"def " + name.encode(), bytes(def_row), count=1)
    return first, last, b"".join(block).decode("utf-8")


def _gap(lines: list[bytes], first: int) -> int:
    """Blank lines between a test and what comes before it (its spacing, copied)."""
    count, index = 0, first - 2
    while index >= 0 and not lines[index].strip():
        count, index = count + 1, index - 1
    return count


def _pick(tests: list[_Test], rng: random.Random) -> list[_Test]:
    """One test per style first (in random order), then at random, up to PER_MODULE."""
    shuffled = rng.sample(tests, len(tests))
    chosen: list[_Test] = []
    for style in sorted({t.style for t in shuffled}):
        chosen.append(next(t for t in shuffled if t.style == style))
    rest = [t for t in shuffled if t not in chosen]
    return (chosen + rest)[:PER_MODULE]


def _plant_module(text: str, rng: random.Random) -> tuple[str, list[tuple[str, str]]] | None:
    """The module with canaries, and (canary, original) node names; None if it has none."""
    try:
        module = parse_module(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    lines = text.encode("utf-8").splitlines(keepends=True)
    if lines and not lines[-1].endswith(b"\n"):
        lines[-1] += b"\n"
    taken = {n.name for n in ast.walk(module) if isinstance(n, ast.FunctionDef | ast.ClassDef)}
    insertions: list[tuple[int, str]] = []
    pairs: list[tuple[str, str]] = []
    for test in _pick(list(_tests(module, rng)), rng):
        name = _name(rng, taken, test.node.name)
        first, last, copy = _copy(lines, test, name, rng)
        if not copy:
            continue
        taken.add(name)
        gap = "\n" * max(_gap(lines, first), 2 if not test.prefix else 1)
        if rng.random() < 0.5:  # before the original (after its own leading gap)
            insertions.append((first - 1, copy + gap))
        else:
            insertions.append((last, gap + copy))
        pairs.append((test.prefix + name, test.prefix + test.node.name))
    if not pairs:
        return None
    text_lines = [line.decode("utf-8") for line in lines]
    for line, snippet in sorted(insertions, key=lambda item: item[0], reverse=True):
        text_lines[line:line] = [snippet]
    return "".join(text_lines), pairs


def plant(sources: dict[str, str], rng: random.Random) -> Canaries:
    """Canaries for hidden test modules given as {relative path: text}."""
    files: dict[str, str] = {}
    names: dict[str, list[str]] = {}
    originals: dict[str, str] = {}
    for path in sorted(sources):
        if not path.endswith(".py"):
            continue
        planted = _plant_module(sources[path], rng)
        if planted is None:
            continue
        files[path], pairs = planted
        names[path] = [canary for canary, _ in pairs]
        originals.update({f"{path}::{c}": f"{path}::{o}" for c, o in pairs})
    return Canaries(files, names, originals)


def canary_problems(sources: dict[str, str]) -> list[str]:
    """Why hidden tests given as {relative path: text} would get no canaries at grading
    (validation refuses such a task: nothing would tell a forged report from a real one)."""
    modules = {path: text for path, text in sources.items() if path.endswith(".py")}
    if not modules:
        return ["no hidden test module: grading could plant no canaries"]
    if any(_plant_module(text, random.Random(0)) for text in modules.values()):
        return []
    return [
        "the hidden tests get no canaries: no test compares a value to a literal in "
        f"straight-line code (in {', '.join(sorted(modules))})"
    ]
