"""The task factory: proposes feature-deletion tasks from a package's own test suite.

`propose` (one package release) runs the suite once with per-test coverage
(`coverage_map`), enumerates candidate deletions (`candidates`), filters them cheaply
from the coverage, then measures the survivors with the validator's own derivation
(`filters`, `propose`), and writes task specs plus `proposals.json`. `prompts` writes
their prompts (offline, or through an OpenAI-compatible endpoint); `review` decides
which proposed tasks may join a suite. `release` finds the sdist and its date.

Kinds of task (`--kind`): `deletion` (new_feature), `bugs` (debugging), `iterate`
(iterate_on_feature, `followups`), `review` (code_review, `review_tasks`), `testing`
(`testing_tasks`), `usages` (understanding, `usages`),
`docs` (documentation, `docs_tasks`), `refactor` (refactor, `refactor_tasks`).
"""

# `--kind` values and the kinds each proposes
KINDS: dict[str, tuple[str, ...]] = {
    "deletion": ("deletion",), "bugs": ("bugs",), "iterate": ("iterate",),
    "review": ("review",), "testing": ("testing",), "usages": ("usages",), "docs": ("docs",),
    "refactor": ("refactor",),
    "both": ("deletion", "bugs"),
    # the kinds whose references change many lines (a suite held to a median size)
    "large": ("deletion", "iterate", "testing", "docs", "refactor"),
    "all": ("deletion", "bugs", "iterate", "review", "testing", "usages", "docs", "refactor"),
}  # fmt: skip
