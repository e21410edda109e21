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
  units off, an empty list given one item; inside `Decimal("1.50")`, `dedent("...")` and
  the like only a letter or digit replaced by another, which surely changes the value),
  under a name made of the module's own words;
- it sits right before or right after its original, at random, in the same class.

A canary runs its original's prefix, so a test whose prefix changes state outside itself
(patches a module, registers a handler) can fail an honest solution when its canary ran
first. Validation grades the reference with a canary for every test, each before its
original, and again with each after it (`Placement`: grading may draw either); a test
that fails under one is named, and the task lists it in `canary_exempt` (it carries no
canary) or is refused.

So a canary and its original are symmetric: two tests one literal apart, either of which
may be the real one, and a detector of "near-copy of an earlier test" picks the real test as
often as the canary. Nothing but the two of them differs, and no literal-vs-literal test is
planted.

Where an assert compares with a parameter of the test's `parametrize` rows, the canary
changes one atom of that parameter in every row, so each of its cases must fail.

Verdict (`testrun._canaries_sprung`): a canary that passed while no case of its original
failed means the verdict was steered. Both cannot pass honestly: they run the same code on
the same inputs and expect different values. A canary passing while its original failed may
be an honest wrong answer that happens to hit the neighbour value, and is not tampering. A
canary missing from a report that has its module's other tests was taken out of the report.

Only straight-line prefixes are copied (assignments, expressions and asserts before the
changed assert), so an honest implementation reaches the changed assert whenever it passes
the original. A module that does not parse, or whose tests compare nothing to a literal,
gets none: validation refuses a task whose hidden tests get none (`canary_problems`).
"""

from __future__ import annotations

import ast
import io
import random
import re
import string
import tokenize
from collections.abc import Iterator
from dataclasses import dataclass, field

from harness.pyast import parse_module

PER_MODULE = 4
# Statements after which the next one always runs (definitions run no code of their own).
_STRAIGHT = (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Expr, ast.Assert, ast.Pass,
             ast.FunctionDef, ast.ClassDef, ast.Import, ast.ImportFrom)  # fmt: skip
_VALUE_CALLS = {"Decimal", "Fraction", "dedent", "date", "datetime", "time", "timedelta"}
_RENDERS = re.compile(r"^assert\w*Renders$")  # e.g. markdown's `assertMarkdownRenders``
_EQUAL_METHODS = {
    "assertEqual", "assertEquals", "assertListEqual", "assertTupleEqual", "assertDictEqual",
    "assertSetEqual", "assertMultiLineEqual", "assertSequenceEqual", "failUnlessEqual",
}  # fmt: skip
_WORDS = ("parse", "render", "value", "empty", "basic", "edge", "mixed", "order", "round", "keys")


class Placement(random.Random):
    """A draw that gives every test that can carry a canary one (not `PER_MODULE` per
    module), each before its original (`before`) or each after it, instead of at random:
    validation grades the reference under both, the worst cases of any grading's draw."""

    def __init__(self, before: bool, seed: int = 0) -> None:
        super().__init__(seed)
        self.before = before


def _goes_before(rng: random.Random) -> bool:
    return rng.before if isinstance(rng, Placement) else rng.random() < 0.5


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
    targets: list[_Atom]  # the atoms of expected values to change


def _is_literal(node: ast.expr) -> bool:
    try:
        ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False
    return True


@dataclass(frozen=True)
class _Atom:
    node: ast.expr  # a constant to nudge, or an empty list or tuple to give one item
    strict: bool  # inside a call: only changes that surely change the value


def _atoms(node: ast.expr, strict: bool) -> list[_Atom]:
    """What can be nudged in an expected value: strings, bytes, ints, floats, empty lists
    and tuples (strict: only strings with a letter or digit to replace, and numbers)."""
    found: list[_Atom] = []
    for child in ast.walk(node):
        if isinstance(child, ast.List | ast.Tuple) and not child.elts and not strict:
            found.append(_Atom(child, strict))
        if not isinstance(child, ast.Constant) or isinstance(child.value, bool):
            continue
        value = child.value
        if isinstance(value, str | bytes):
            text = value.decode("latin-1") if isinstance(value, bytes) else value
            if not strict or any(c.isascii() and c.isalnum() for c in text):
                found.append(_Atom(child, strict))
        elif isinstance(value, int | float):
            found.append(_Atom(child, strict))
    return found


def _value_call(node: ast.expr) -> bool:
    """A call that makes a value from literals and is one-to-one in them (`Decimal("1.5")`,
    `dedent("...")`, `date(2020, 1, 2)`): a changed letter or digit changes its value."""
    if not isinstance(node, ast.Call) or node.keywords:
        return False
    function = node.func
    name = function.attr if isinstance(function, ast.Attribute) else getattr(function, "id", "")
    return name in _VALUE_CALLS and bool(node.args) and all(_is_literal(a) for a in node.args)


def _expected_side(node: ast.expr) -> list[_Atom]:
    if _is_literal(node):
        return _atoms(node, strict=False)
    return _atoms(node, strict=True) if _value_call(node) else []


def _expected(statement: ast.stmt) -> list[_Atom]:
    """What can be nudged in the expected side of `assert x == <value>`,
    `self.assertEqual(x, <value>)` or `self.assert...Renders(source, <value>)`, where a
    value is a literal or a one-to-one call on literals and the other side is neither."""
    if isinstance(statement, ast.Assert) and isinstance(statement.test, ast.Compare):
        compare = statement.test
        if len(compare.ops) != 1 or not isinstance(compare.ops[0], ast.Eq):
            return []
        sides = [compare.left, compare.comparators[0]]
    elif isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call):
        call = statement.value
        function = call.func
        if not isinstance(function, ast.Attribute) or len(call.args) < 2:
            return []
        if _RENDERS.match(function.attr):
            return _expected_side(call.args[1])
        if function.attr not in _EQUAL_METHODS:
            return []
        sides = call.args[:2]
    else:
        return []
    values = [side for side in sides if _is_literal(side) or _value_call(side)]
    return _expected_side(values[0]) if len(values) == 1 else []


def _choice(function: ast.FunctionDef, rng: random.Random) -> list[_Atom]:
    """Atoms to change so that an assert reached by straight-line code fails: one in its
    literal expected value, or one in each row's expected value when the assert compares
    with a parameter of the test's `parametrize` rows."""
    options: list[list[_Atom]] = []
    rows = _parameter_rows(function)
    for statement in function.body:
        options += [[atom] for atom in _expected(statement)]
        name = _expected_parameter(statement)
        uses = sum(
            isinstance(n, ast.Name) and n.id == name for b in function.body for n in ast.walk(b)
        )
        if name in rows and uses == 1:  # used as the expected value only, never as an input
            per_row = [_expected_side(row) for row in rows[name]]
            if per_row and all(per_row):
                options.append([rng.choice(atoms) for atoms in per_row])
        if not isinstance(statement, _STRAIGHT):
            break
    return rng.choice(options) if options else []


def _parameter_rows(function: ast.FunctionDef) -> dict[str, list[ast.expr]]:
    """For each parameter of a `parametrize` decorator given as a literal list of rows, the
    value each row gives it (`pytest.param(...)` rows included)."""
    found: dict[str, list[ast.expr]] = {}
    for decorator in function.decorator_list:
        if not isinstance(decorator, ast.Call) or len(decorator.args) < 2:
            continue
        if not ast.unparse(decorator.func).endswith("parametrize"):
            continue
        names_node, rows_node = decorator.args[:2]
        if isinstance(names_node, ast.Constant) and isinstance(names_node.value, str):
            names = [n.strip() for n in names_node.value.split(",") if n.strip()]
        elif isinstance(names_node, ast.List | ast.Tuple):
            names = [str(n.value) for n in names_node.elts if isinstance(n, ast.Constant)]
        else:
            continue
        if not isinstance(rows_node, ast.List | ast.Tuple) or not rows_node.elts:
            continue
        values: list[list[ast.expr]] = []
        for row in rows_node.elts:
            if isinstance(row, ast.Call) and ast.unparse(row.func).endswith("param"):
                items = list(row.args)
            elif len(names) > 1 and isinstance(row, ast.Tuple | ast.List):
                items = list(row.elts)
            else:
                items = [row]
            if len(items) != len(names):
                break
            values.append(items)
        else:
            for index, name in enumerate(names):
                found[str(name)] = [items[index] for items in values]
    return found


def _expected_parameter(statement: ast.stmt) -> str:
    """The name in `assert <computed> == name` or `self.assertEqual(<computed>, name)`."""
    if isinstance(statement, ast.Assert) and isinstance(statement.test, ast.Compare):
        compare = statement.test
        if len(compare.ops) != 1 or not isinstance(compare.ops[0], ast.Eq):
            return ""
        sides = [compare.left, compare.comparators[0]]
    elif isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call):
        function = statement.value.func
        if not isinstance(function, ast.Attribute) or function.attr not in _EQUAL_METHODS:
            return ""
        sides = statement.value.args[:2]
    else:
        return ""
    names = [side.id for side in sides if isinstance(side, ast.Name)]
    computed = [side for side in sides if not isinstance(side, ast.Name | ast.Constant)]
    return names[0] if len(names) == 1 and len(computed) == 1 else ""


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
            targets = _choice(node, rng)
            if targets:
                yield _Test("", node, _style(node, ""), targets)
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
                targets = _choice(item, rng)
                if targets:
                    yield _Test(f"{node.name}::", item, _style(item, kinds[node.name]), targets)


def _neighbour_text(text: str, rng: random.Random, strict: bool) -> str:
    """A plausible string near `text`: two letters swapped, one changed, dropped or doubled;
    `strict`: one ASCII letter or digit replaced by another of its kind (a digit by a digit,
    a lower-case letter by another one), which changes what any one-to-one call makes."""
    if strict:
        places = [i for i, c in enumerate(text) if c.isascii() and c.isalnum()]
        index = rng.choice(places)
        kind = next(k for k in (string.digits, string.ascii_lowercase, string.ascii_uppercase)
                    if text[index] in k)  # fmt: skip
        return text[:index] + rng.choice(kind.replace(text[index], "")) + text[index + 1 :]
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


def _neighbour(
    value: str | bytes | int | float, rng: random.Random, strict: bool
) -> str | bytes | int | float:
    if isinstance(value, str):
        return _neighbour_text(value, rng, strict)
    if isinstance(value, bytes):
        return _neighbour_text(value.decode("latin-1"), rng, strict).encode("latin-1")
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
    node = test.node
    first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
    last = node.end_lineno or node.lineno
    block = lines[first - 1 : last]
    offsets = [0]
    for line in block:
        offsets.append(offsets[-1] + len(line))
    joined = b"".join(block)
    edits = []
    for target in test.targets:
        atom = target.node
        start = offsets[atom.lineno - first] + atom.col_offset
        end = offsets[(atom.end_lineno or atom.lineno) - first] + (atom.end_col_offset or 0)
        new = _replacement(atom, joined[start:end].decode("utf-8"), target.strict, rng)
        if not new:
            return first, last, ""
        edits.append((start, end, new.encode("utf-8")))
    for start, end, new_bytes in sorted(edits, reverse=True):
        joined = joined[:start] + new_bytes + joined[end:]
    text = joined.decode("utf-8")
    rows = text.splitlines(keepends=True)
    row = node.lineno - first
    rows[row] = re.sub(rf"\bdef\s+{re.escape(node.name)}\b", f"def {name}", rows[row], count=1)
    return first, last, "".join(rows)


def _replacement(atom: ast.expr, original: str, strict: bool, rng: random.Random) -> str:
    """The new source of one atom ('' if it cannot be changed in place)."""
    if isinstance(atom, ast.List | ast.Tuple):  # empty: give it one item
        item = repr(rng.choice(["", 0, "a"]))
        return f"[{item}]" if isinstance(atom, ast.List) else f"({item},)"
    if "\n" in original:  # a string over several lines: one letter or digit of its text
        return _edit_in_place(original, rng)
    value = atom.value if isinstance(atom, ast.Constant) else None
    assert isinstance(value, str | bytes | int | float)  # `_atoms` keeps only these
    return _literal_text(_neighbour(value, rng, strict), original)


def _edit_in_place(source: str, rng: random.Random) -> str:
    """`source`, string tokens (implicitly joined ones too), with one ASCII letter or digit of
    their text (not of an escape) replaced by another of its kind; '' when there is none."""
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (tokenize.TokenError, SyntaxError):
        return ""
    skip = (tokenize.NEWLINE, tokenize.NL, tokenize.ENDMARKER, tokenize.COMMENT)
    strings = [t for t in tokens if t.type not in skip]
    if not strings or any(t.type != tokenize.STRING for t in strings):
        return ""
    starts = [0]
    for line in source.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))
    places = []
    for token in strings:
        begin = starts[token.start[0] - 1] + token.start[1]
        text = token.string
        prefix = re.match(r"[a-zA-Z]*", text).group(0)  # type: ignore[union-attr]
        quote = text[len(prefix) : len(prefix) + 3]
        quote = quote if quote in ('"""', "'''") else quote[:1]
        for i in range(len(prefix) + len(quote), len(text) - len(quote)):
            char = text[i]
            if char.isascii() and char.isalnum() and "\\" not in text[max(0, i - 9) : i]:
                places.append(begin + i)
    if not places:
        return ""
    index = rng.choice(places)
    kind = next(k for k in (string.digits, string.ascii_lowercase, string.ascii_uppercase)
                if source[index] in k)  # fmt: skip
    return source[:index] + rng.choice(kind.replace(source[index], "")) + source[index + 1 :]


def _gap(lines: list[bytes], first: int) -> int:
    """Blank lines between a test and what comes before it (its spacing, copied)."""
    count, index = 0, first - 2
    while index >= 0 and not lines[index].strip():
        count, index = count + 1, index - 1
    return count


def _pick(tests: list[_Test], rng: random.Random) -> list[_Test]:
    """Every test, one per style first, then at random (the caller stops at PER_MODULE)."""
    shuffled = rng.sample(tests, len(tests))
    chosen: list[_Test] = []
    for style in sorted({t.style for t in shuffled}):
        chosen.append(next(t for t in shuffled if t.style == style))
    return chosen + [t for t in shuffled if t not in chosen]


def _parsed_lines(text: str) -> tuple[ast.Module, list[bytes]] | None:
    """The module's tree and its lines as bytes, the last ending in a newline; None if it
    does not parse."""
    try:
        module = parse_module(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    lines = text.encode("utf-8").splitlines(keepends=True)
    if lines and not lines[-1].endswith(b"\n"):
        lines[-1] += b"\n"
    return module, lines


def _plant_module(
    text: str, rng: random.Random, exempt: frozenset[str] = frozenset()
) -> tuple[str, list[tuple[str, str]]] | None:
    """The module with canaries, and (canary, original) node names; None if it has none.
    `exempt`: node names ("test_x", "TestC::test_x") that carry none."""
    parsed = _parsed_lines(text)
    if parsed is None:
        return None
    module, lines = parsed
    taken = {n.name for n in ast.walk(module) if isinstance(n, ast.FunctionDef | ast.ClassDef)}
    insertions: list[tuple[int, str]] = []
    pairs: list[tuple[str, str]] = []
    candidates = [t for t in _tests(module, rng) if t.prefix + t.node.name not in exempt]
    limit = len(candidates) if isinstance(rng, Placement) else PER_MODULE
    for test in _pick(candidates, rng):
        if len(pairs) == limit:
            break
        name = _name(rng, taken, test.node.name)
        first, last, copy = _copy(lines, test, name, rng)
        if not copy:
            continue
        taken.add(name)
        gap = "\n" * max(_gap(lines, first), 2 if not test.prefix else 1)
        if _goes_before(rng):  # before the original (after its own leading gap)
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


def _swap_module(text: str, rng: random.Random) -> str | None:
    """The module with every test that can carry a canary replaced, in place and under its
    own name, by its canary; None if none can."""
    parsed = _parsed_lines(text)
    if parsed is None:
        return None
    module, lines = parsed
    swaps = []
    for test in _tests(module, rng):
        first, last, copy = _copy(lines, test, test.node.name, rng)
        if copy:
            swaps.append((first, last, copy))
    if not swaps:
        return None
    text_lines = [line.decode("utf-8") for line in lines]
    for first, last, copy in sorted(swaps, reverse=True):
        text_lines[first - 1 : last] = [copy]
    return "".join(text_lines)


def swapped(sources: dict[str, str], rng: random.Random) -> dict[str, str]:
    """Test modules given as {relative path: text} with each test that can carry a canary
    turned into it in place: the same names, the same count, one expected value changed in
    each, so any honest implementation fails every one of them. For a verifier that reports
    no per-test outcomes (a Harbor reward): a run of these must fail, and nothing in it but
    those values tells it from a run of the real tests. Modules with none are left out."""
    found = {}
    for path in sorted(sources):
        if path.endswith(".py") and (text := _swap_module(sources[path], rng)) is not None:
            found[path] = text
    return found


def _exempt_in(exempt: frozenset[str], path: str) -> frozenset[str]:
    """The node names within module `path` of the exempt test ids ("path::TestC::test_x")."""
    return frozenset(e.removeprefix(f"{path}::") for e in exempt if e.startswith(f"{path}::"))


def plant(
    sources: dict[str, str], rng: random.Random, exempt: frozenset[str] = frozenset()
) -> Canaries:
    """Canaries for hidden test modules given as {relative path: text}; `exempt`: test ids
    ("path::test_x", "path::TestC::test_x") whose prefix changes state a copy of it would
    share (validation names them), which carry none."""
    files: dict[str, str] = {}
    names: dict[str, list[str]] = {}
    originals: dict[str, str] = {}
    for path in sorted(sources):
        if not path.endswith(".py"):
            continue
        planted = _plant_module(sources[path], rng, _exempt_in(exempt, path))
        if planted is None:
            continue
        files[path], pairs = planted
        names[path] = [canary for canary, _ in pairs]
        originals.update({f"{path}::{c}": f"{path}::{o}" for c, o in pairs})
    return Canaries(files, names, originals)


def canary_problems(sources: dict[str, str], exempt: frozenset[str] = frozenset()) -> list[str]:
    """Why hidden tests given as {relative path: text} would get no canaries at grading
    (validation refuses such a task: nothing would tell a forged report from a real one)."""
    modules = {path: text for path, text in sources.items() if path.endswith(".py")}
    if not modules:
        return ["no hidden test module: grading could plant no canaries"]
    draw = random.Random(0)
    if any(_plant_module(t, draw, _exempt_in(exempt, p)) for p, t in modules.items()):
        return []
    return [
        "the hidden tests get no canaries: no test compares a value to a literal in "
        f"straight-line code (in {', '.join(sorted(modules))})"
    ]
