"""Pure helpers the graders share: changed lines and files, Python definitions, globs, and
what the trajectory says (tool calls, injected messages, the final message).

Nothing here reads a disk or runs a process; everything takes text or records.
"""

from __future__ import annotations

import ast
import difflib
import functools
import json
import re
from dataclasses import dataclass
from typing import Any

from harness.grading.scoring import FinalState, Records
from harness.patch import glob_regex
from harness.pyast import parse_module

EDIT_TOOLS = ("write_file", "edit_file")


def matches(path: str, globs: list[str]) -> bool:
    return any(glob_regex(pattern).fullmatch(path) for pattern in globs)


def is_test_path(path: str) -> bool:
    name = path.rsplit("/", 1)[-1]
    return path.startswith(("tests/", "test/")) or name.startswith("test_")


def changed_files(state: FinalState) -> list[str]:
    """Touched files whose content really differs (a file written back unchanged is not)."""
    return [path for path in state.touched if state.before.get(path) != state.after.get(path)]


def lines(text: str | None) -> list[str]:
    return (text or "").splitlines()


@dataclass(frozen=True)
class Hunk:
    """One changed region: before lines [b1, b2) replaced by after lines [a1, a2) (0-based)."""

    b1: int
    b2: int
    a1: int
    a2: int
    old: tuple[str, ...]
    new: tuple[str, ...]


def hunks(before: str | None, after: str | None) -> list[Hunk]:
    old, new = lines(before), lines(after)
    matcher = difflib.SequenceMatcher(a=old, b=new, autojunk=False)
    return [
        Hunk(i1, i2, j1, j2, tuple(old[i1:i2]), tuple(new[j1:j2]))
        for tag, i1, i2, j1, j2 in matcher.get_opcodes()
        if tag != "equal"
    ]


def added_lines(before: str | None, after: str | None) -> list[str]:
    return [line for hunk in hunks(before, after) for line in hunk.new]


def changed_line_count(state: FinalState, paths: list[str] | None = None) -> int:
    """Lines added plus lines removed over every changed file (or those of `paths`)."""
    total = 0
    for path in changed_files(state) if paths is None else paths:
        for hunk in hunks(state.before.get(path), state.after.get(path)):
            total += len(hunk.old) + len(hunk.new)
    return total


def squash_whitespace(text: str) -> str:
    return "\n".join(" ".join(line.split()) for line in text.splitlines() if line.strip())


def whitespace_only(old: str, new: str) -> bool:
    """The two differ at most in whitespace (indentation, spacing, blank lines)."""
    return old != new and squash_whitespace(old) == squash_whitespace(new)


def apply_renames(text: str, renames: dict[str, str]) -> str:
    for old, new in renames.items():
        text = re.sub(rf"\b{re.escape(old)}\b", new, text)
    return text


@functools.lru_cache(maxsize=32)
def parse(source: str | None) -> ast.Module | None:
    """The module's tree, or None when it does not parse. Cached: graders and builders ask
    for the same file's tree many times over, so the tree is shared; nobody changes it."""
    if source is None:
        return None
    try:
        return parse_module(source)
    except SyntaxError:
        return None


Function = ast.FunctionDef | ast.AsyncFunctionDef


def definitions(source: str | None) -> dict[str, ast.AST]:
    """Top-level functions and classes, and methods as `Class.method`, by name."""
    tree = parse(source)
    found: dict[str, ast.AST] = {}
    if tree is None:
        return found
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            found[node.name] = node
            if isinstance(node, ast.ClassDef):
                for child in node.body:
                    if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                        found[f"{node.name}.{child.name}"] = child
    return found


def functions(source: str | None) -> dict[str, Function]:
    return {
        name: node
        for name, node in definitions(source).items()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
    }


def signature(node: Function) -> str:
    returns = f" -> {ast.unparse(node.returns)}" if node.returns else ""
    return f"({ast.unparse(node.args)}){returns}"


def span(node: ast.AST) -> tuple[int, int]:
    """0-based [start, end) lines of a definition, decorators included."""
    decorators = getattr(node, "decorator_list", [])
    start = min([node.lineno, *(d.lineno for d in decorators)]) - 1  # type: ignore[attr-defined]
    return start, node.end_lineno or node.lineno  # type: ignore[attr-defined]


def new_or_changed_functions(state: FinalState, path: str) -> dict[str, Function]:
    """Functions of the file's final state that are new or whose source changed."""
    old = definitions(state.before.get(path))
    result = {}
    for name, node in functions(state.after.get(path)).items():
        previous = old.get(name)
        if previous is None or ast.dump(previous) != ast.dump(node):
            result[name] = node
    return result


def imported_modules(source: str | None) -> set[str]:
    tree = parse(source)
    found: set[str] = set()
    if tree is None:
        return found
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.split(".")[0])
    return found


# -- the trajectory -----------------------------------------------------------------------


@dataclass(frozen=True)
class ToolEvent:
    name: str
    arguments: dict[str, Any]
    output: str
    after_injections: int  # injected user messages before this call

    @property
    def path(self) -> str | None:
        value = self.arguments.get("path")
        return value if isinstance(value, str) else None

    @property
    def failed(self) -> bool:
        return self.output.startswith("error: ")


def tool_events(records: Records) -> list[ToolEvent]:
    events: list[ToolEvent] = []
    injected = 0
    for record in records:
        if record.get("type") == "message" and record.get("injected"):
            injected += 1
        elif record.get("type") == "tool" and not record.get("skipped"):
            raw = record.get("arguments") or "{}"
            try:
                arguments = json.loads(raw) if isinstance(raw, str) else dict(raw)
            except (json.JSONDecodeError, TypeError, ValueError):
                arguments = {}
            if not isinstance(arguments, dict):
                arguments = {}
            output = str(record.get("output", ""))
            events.append(ToolEvent(str(record.get("name")), arguments, output, injected))
    return events


def injected_messages(records: Records) -> list[str]:
    return [
        str(record.get("content", ""))
        for record in records
        if record.get("type") == "message" and record.get("injected")
    ]


def final_message(records: Records) -> str:
    """What the agent said last: its `finish` summary, or its last reply without tools."""
    for record in reversed(records):
        if record.get("type") == "agent_end":
            return str(record.get("message") or "")
    return ""


def penalty_score(penalties: list[tuple[float, str]]) -> tuple[float, list[str]]:
    """1 minus the penalties (floored at 0), with each penalty's reason and weight."""
    value = max(0.0, 1.0 - sum(weight for weight, _ in penalties))
    return round(value, 4), [f"-{weight:.2f}: {reason}" for weight, reason in penalties]


# -- facts in prose -------------------------------------------------------------------------

_TOKEN = re.compile(r"\d[\d,]*(?:\.\d+)?|[^\W\d_][\w]*|_\w+", re.UNICODE)


def _canonical(token: str) -> str:
    """Numbers lose thousands separators and a zero fraction ("5,400.0" -> "5400");
    words lose case and underscores ("TAX_RATE" -> "taxrate")."""
    if token[0].isdigit():
        number = token.replace(",", "")
        if "." in number:
            number = number.rstrip("0").rstrip(".")
        return number
    return token.lower().replace("_", "")


_NUMBERS = (
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
    "fifteen sixteen seventeen eighteen nineteen twenty"
)
NUMBER_WORDS = {word: str(number) for number, word in enumerate(_NUMBERS.split(" "))}


def fact_tokens(text: str, number_words: bool = False) -> list[str]:
    """The text's tokens, canonical; with `number_words`, "five" is "5" too."""
    tokens = [_canonical(token) for token in _TOKEN.findall(text)]
    return [NUMBER_WORDS.get(t, t) for t in tokens] if number_words else tokens


def states_fact(message: str, fact: str, number_words: bool = True) -> bool:
    """The message states the fact as whole tokens: "5,400" states "5400", "five" states
    "5", "timezone" states "time zone" and "time zones" (a plural), but "daytime zone"
    does not state "time zone" and "15400" does not state "5400". Without `number_words`
    a number must be written in digits (how a wrong fact is looked for: "one" in prose,
    as in "the one in utils.py", claims no number)."""
    wanted = "".join(fact_tokens(fact, number_words))
    if not wanted:
        return False
    said = fact_tokens(message, number_words)
    for start in range(len(said)):
        joined = ""
        for token in said[start:]:
            joined += token
            if joined in (wanted, f"{wanted}s", f"{wanted}es"):
                return True
            if len(joined) >= len(wanted) + 2:
                break
    return False


def code_tokens(source: str | None) -> set[str]:
    """The identifiers (names, arguments, attributes, definitions, imports; of three
    characters or more) and the numbers a Python source holds, as fact tokens: the
    candidates a reply stuffed with every name and value lists."""
    tree = parse(source)
    found: set[str] = set()
    for node in ast.walk(tree) if tree is not None else ():
        words: list[str] = []
        if isinstance(node, ast.Name):
            words.append(node.id)
        elif isinstance(node, ast.arg):
            words.append(node.arg)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            words.append(node.name)
        elif isinstance(node, ast.Attribute):
            words.append(node.attr)
        elif isinstance(node, ast.alias):
            words += (node.asname or node.name).split(".")
        elif isinstance(node, ast.Constant) and type(node.value) in (int, float):
            words.append(repr(node.value))
        for word in words:
            tokens = fact_tokens(word)
            token = tokens[0] if len(tokens) == 1 else ""
            if len(token) >= 3 or token[:1].isdigit():
                found.add(token)
    return found


def stated_candidates(message: str, candidates: set[str]) -> set[str]:
    """The candidates (fact tokens, as `code_tokens` gives them) the message states."""
    return candidates & set(fact_tokens(message))


def missing_facts(message: str, facts: list[str]) -> list[str]:
    return [fact for fact in facts if not states_fact(message, fact)]


def stated_wrong(message: str, wrong: list[str]) -> list[str]:
    """The wrong facts the message states (numbers in digits)."""
    return [fact for fact in wrong if states_fact(message, fact, number_words=False)]


# -- what the change did to the code ---------------------------------------------------------


def broken_python(state: FinalState) -> list[str]:
    """Changed Python files outside tests that no longer parse (a change that breaks the
    code), and those deleted that existed."""
    found = []
    for path in changed_files(state):
        if not path.endswith(".py") or is_test_path(path):
            continue
        after = state.after.get(path)
        if after is None or parse(after) is None:
            found.append(path)
    return found


def modified_line_count(state: FinalState, paths: list[str] | None = None) -> int:
    """Lines a change touches, a modified line counted once: per changed region, the larger
    of its removed and added line counts."""
    total = 0
    for path in changed_files(state) if paths is None else paths:
        for hunk in hunks(state.before.get(path), state.after.get(path)):
            total += max(len(hunk.old), len(hunk.new))
    return total


# -- shell commands ---------------------------------------------------------------------------

READ_ONLY_PROGRAMS = frozenset(
    [
        "cat",
        "head",
        "tail",
        "less",
        "more",
        "ls",
        "tree",
        "wc",
        "grep",
        "egrep",
        "fgrep",
        "rg",
        "ag",
        "diff",
        "cmp",
        "file",
        "stat",
        "find",
        "pwd",
        "echo",
        "true",
        "which",
        "type",
        "du",
        "sort",
        "uniq",
        "cut",
        "nl",
        "pytest",
    ]
)
READ_ONLY_GIT = frozenset({"diff", "status", "log", "show", "blame", "grep", "ls-files"})
_SEGMENTS = re.compile(r"&&|\|\||[;|\n]")


def _read_only_segment(words: list[str]) -> bool:
    if not words:
        return True
    program, rest = words[0].rsplit("/", 1)[-1], words[1:]
    if program in ("python", "python3") and rest[:2] == ["-m", "pytest"]:
        return True
    if program == "git":
        options = [word for word in rest if not word.startswith("-")]
        return bool(options) and options[0] in READ_ONLY_GIT
    if program == "sed":
        return not any(word.startswith(("-i", "--in-place")) for word in rest)
    if program == "find":
        return not any(word in ("-delete", "-exec", "-execdir", "-fprint") for word in rest)
    return program in READ_ONLY_PROGRAMS


def read_only_command(command: str) -> bool:
    """A shell command that only reads: every part of it a known reading program, and no
    output redirected to a file. Anything unknown counts as a write."""
    cleaned = re.sub(r"\d?>&\d|\d?>\s*/dev/null", "", command)
    if ">" in cleaned or "`" in cleaned or "$(" in cleaned or re.search(r"\btee\b", cleaned):
        return False
    return all(_read_only_segment(part.split()) for part in _SEGMENTS.split(command))
