"""Prompts for proposed tasks, written as a user would ask, not as a specification.

The rubric (also the endpoint writer's system prompt): short; the goal, not the code;
lengths that vary as people's do; the entry points a user would name (at most
`MAX_NAMES`), never a list of functions. `offline_prompt` writes one from the deleted
code's docstrings and the hidden tests' names, with the wording and the amount of
detail picked by a hash of the task id (the same task always gets the same prompt).
`EndpointWriter` asks any OpenAI-compatible endpoint through the harness's own client
(`harness.model.chat.OpenAIChatModel`) and falls back to the offline prompt when the reply
breaks the rubric.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field

from harness.model.chat import ModelAPIError, OpenAIChatModel

MAX_NAMES = 3
MIN_CHARS, MAX_CHARS = 60, 900
RUBRIC = """You write the request a developer would type to a coding assistant, for a task
made by deleting code from a Python package. Rules:
- Be short: one to five sentences. Vary the length as real requests vary.
- Describe the goal and the behaviour wanted, not the implementation.
- Name only the entry points a user would name (at most three), never a list of functions.
- No bullet lists, no headings, no code blocks, no test names, no file contents.
- Do not say that code was deleted or that tests exist unless a user would.
Reply with the request text only."""


@dataclass(frozen=True)
class PromptFacts:
    task_id: str
    package: str
    module: str  # dotted
    names: list[str]  # public names removed
    docstrings: list[str] = field(default_factory=list)
    test_names: list[str] = field(default_factory=list)


def first_sentence(text: str) -> str:
    """The first sentence of a docstring, on one line, without its full stop; a title
    underlined in reStructuredText ("ISMAGS Algorithm" over "====") is left out."""
    lines = text.strip().splitlines()
    if len(lines) > 1 and _RULE.fullmatch(lines[1].strip()):
        lines = lines[2:]
    flat = " ".join(" ".join(lines).split())
    match = re.match(r"(.+?[.!?])(\s|$)", flat)
    sentence = (match.group(1) if match else flat).rstrip(".!?")
    return sentence[:200]


_RULE = re.compile(r"([=\-~^*#+])\1{2,}")
_WORD = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])")  # snake_case and camelCase alike
_FILLER = {"a", "an", "and", "as", "by", "for", "if", "in", "is", "it", "of", "on", "or", "the",
           "to", "with"}  # fmt: skip


def behaviours(test_names: list[str], names: list[str]) -> list[str]:
    """Phrases from test names ("test_camelize_with_lower" -> "with lower", "testBadVal"
    -> "bad val"), distinct; a phrase of filler words or single letters alone ("test_and",
    "test_x") says nothing and is left out, as are digits ("testCmp4" -> "cmp")."""
    skip = {n.lower() for n in names} | {"test", "tests"}
    found: list[str] = []
    for test in test_names:
        leaf = re.sub(r"\[.*\]$", "", test.split("::")[-1])
        words = [w.lower() for w in _WORD.findall(leaf)]
        words = [w for w in words if w not in skip]
        phrase = " ".join(words)
        if phrase not in found and {w for w in words if len(w) > 2} - _FILLER:
            found.append(phrase)
    return found


def _pick(seed: int, options: list[str]) -> str:
    return options[seed % len(options)]


def listed(items: list[str]) -> str:
    """`a`, `a and b`, `a, b and c`."""
    return ", ".join(items[:-1]) + (" and " if len(items) > 1 else "") + items[-1]


def _named(names: list[str]) -> str:
    return listed([f"`{n}`" for n in names[:MAX_NAMES]])


# Verbs a docstring's first sentence starts with when it says what the code does
# ("Return the ...", "Converts ..."); a sentence starting otherwise ("Given ...", "NOTE:",
# "A helper ...") does not read after "it should" and is left out of the prompt.
_VERB_WORDS = """
add append apply build calculate call check choose clean collect combine compare compile
compute construct convert copy count create decide decode delete detect determine drop
emit encode ensure escape evaluate expand extract fetch fill filter find fix flatten
format generate get give group guess handle hash insert join load look make map mark
match merge normalize open pad parse pick produce quote raise read register remove
render replace resolve return round run save select send serialize set sort split strip
take tell test transform translate truncate try turn unpack unquote update validate
verify wrap write yield
"""
VERBS = frozenset(_VERB_WORDS.split())


def _imperative(word: str) -> str | None:
    """`word` as the imperative of one of `VERBS` ("Returns" -> "return"), or None."""
    low = word.lower()
    candidates = [low]
    if low.endswith("ies"):
        candidates.append(low[:-3] + "y")
    if low.endswith("es"):
        candidates.append(low[:-2])
    if low.endswith("s"):
        candidates.append(low[:-1])
    return next((c for c in candidates if c in VERBS), None)


def goal_of(docstring: str) -> str | None:
    """A docstring's first sentence as a goal to follow "it should", or None when it does
    not start with what the code does."""
    sentence = first_sentence(docstring)
    head, _, rest = sentence.partition(" ")
    verb = _imperative(head)
    if verb is None or not rest:
        return None
    return f"{verb} {rest}"


def _goals(facts: PromptFacts) -> list[str]:
    """The docstrings' first sentences that say what the code does, as goals."""
    return [goal for d in facts.docstrings if d.strip() and (goal := goal_of(d))]


def _goal(facts: PromptFacts) -> str:
    goals = _goals(facts)
    return goals[0] if goals else ""


def offline_prompt(facts: PromptFacts) -> str:
    seed = int(hashlib.sha256(facts.task_id.encode()).hexdigest()[:8], 16)
    what, goals, goal = _named(facts.names), _goals(facts), _goal(facts)
    where = f"`{facts.module}`"
    if goal:
        opening = _pick(seed, [
            f"I need {what} in {where} back: it should {goal}.",
            f"Please add {what} to {where} so that I can {goal}.",
            f"{facts.package} is missing {what} in {where}. It's meant to {goal}.",
            f"Can you implement {what} in {where}? The idea is to {goal}.",
        ])  # fmt: skip
    else:
        opening = _pick(seed, [
            f"{facts.package} needs {what} in {where} again.",
            f"Please implement {what} in {where}.",
            f"Could you add {what} to {where}?",
        ])  # fmt: skip
    parts = [opening]
    details = behaviours(facts.test_names, facts.names)
    amount = (seed >> 4) % 4  # 0-3 sentences of detail: lengths vary
    if amount >= 1 and details:
        cases = listed(details[: 2 + (seed >> 8) % 3])
        parts.append(_pick(seed >> 12, [
            f"Cases I care about: {cases}.",
            f"It has to cope with {cases}.",
            f"Make sure it handles {cases}.",
        ]))  # fmt: skip
    if amount >= 2 and len(goals) > 1:
        parts.append(f"Also, it should {goals[1]}.")
    if amount >= 3:
        parts.append(_pick(seed >> 16, [
            "Keep it consistent with the rest of the module.",
            "Nothing else in the package should change behaviour.",
            "Follow the style the package already uses.",
        ]))  # fmt: skip
    return " ".join(parts)


def followup_turns(earlier: PromptFacts, later: PromptFacts) -> tuple[list[dict[str, str]], str]:
    """An iterate-on-feature task's session (`factory/followups.py`): the user's request for
    the whole feature, an answer that did the earlier part only, and the follow-up prompt
    asking for the rest; wording picked by a hash of the task id, like `offline_prompt`."""
    seed = int(hashlib.sha256(later.task_id.encode()).hexdigest()[:8], 16)
    first, rest, where = _named(earlier.names), _named(later.names), f"`{later.module}`"
    first_goal, rest_goal = _goal(earlier), _goal(later)
    asked = _pick(seed, [
        f"I'd like {first} and {rest} in {where}.",
        f"Can you write {first} for {later.package}, and {rest} after it, in {where}?",
        f"{later.package} needs {first} in {where}, and then {rest}.",
    ])  # fmt: skip
    if first_goal:
        asked += f" The first should {first_goal}."
    answer = f"I've added {first} to {where}"
    answer += f", to {first_goal}." if first_goal else "."
    answer += _pick(seed >> 3, [
        f" I haven't written {rest} yet.",
        f" {rest[:1].upper() + rest[1:]} is still to do; say if you want me to go on.",
        f" Next would be {rest}.",
    ])  # fmt: skip
    prompt = _pick(seed >> 6, [
        f"Thanks, that works. Now do {rest} as well",
        f"Good. Please go on with {rest}",
        f"Looks fine. Next, {rest}",
    ])  # fmt: skip
    prompt += f": it should {rest_goal}." if rest_goal else "."
    details = behaviours(later.test_names, later.names)
    if (seed >> 9) % 2 and details:
        prompt += f" It has to cope with {listed(details[: 2 + (seed >> 10) % 3])}."
    turns = [{"role": "user", "content": asked}, {"role": "assistant", "content": answer}]
    return turns, prompt


def prompt_problems(prompt: str, names: list[str]) -> list[str]:
    """How a prompt breaks the rubric (empty: it keeps it)."""
    problems = []
    if not MIN_CHARS <= len(prompt) <= MAX_CHARS:
        problems.append(f"{len(prompt)} characters (want {MIN_CHARS}-{MAX_CHARS})")
    if re.search(r"^\s*([-*•]|\d+\.)\s", prompt, re.MULTILINE) or "```" in prompt:
        problems.append("a list or a code block")
    if len(set(re.findall(r"`([^`]+)`", prompt))) > MAX_NAMES + 1:  # + the module
        problems.append("names more than three code entities")
    if re.search(r"\btest_\w+", prompt):
        problems.append("names a test")
    return problems


class EndpointWriter:
    """Prompts from an OpenAI-compatible endpoint, the rubric as the system prompt."""

    def __init__(self, base_url: str, model: str, api_key: str = "") -> None:
        self.model = OpenAIChatModel(name=model, base_url=base_url, api_key=api_key, price=None)

    def messages(self, facts: PromptFacts) -> list[dict[str, str]]:
        data = {
            "package": facts.package, "module": facts.module, "entry_points": facts.names,
            "docstrings": [first_sentence(d) for d in facts.docstrings if d.strip()],
            "behaviours_tested": behaviours(facts.test_names, facts.names)[:12],
        }  # fmt: skip
        return [
            {"role": "system", "content": RUBRIC},
            {"role": "user", "content": json.dumps(data, indent=1)},
        ]

    def write(self, facts: PromptFacts) -> tuple[str, str]:
        """(prompt, writer): the endpoint's when it keeps the rubric, else the offline one."""
        return self.ask(self.messages(facts), facts.names, offline_prompt(facts))

    def ask(
        self, messages: list[dict[str, str]], names: list[str], fallback: str
    ) -> tuple[str, str]:
        """The endpoint's reply to `messages` when it keeps the rubric, else `fallback`."""
        try:
            reply = self.model.complete(messages, tools=[])
        except ModelAPIError:
            return fallback, "offline (endpoint failed)"
        text = (reply.content or "").strip()
        if not text or prompt_problems(text, names):
            return fallback, "offline (reply broke the rubric)"
        return text, f"endpoint:{self.model.name}"


def write_prompt(facts: PromptFacts, writer: EndpointWriter | None) -> tuple[str, str]:
    if writer is None:
        return offline_prompt(facts), "offline"
    return writer.write(facts)
