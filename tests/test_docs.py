"""The docs stay true to the code: the options page is what the generator writes from
`RunSpec` now, the architecture page what it draws from the table of allowed imports
(`tests/layers.py`), and the README's relative links point to files that exist."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
# [text](target) or [text](target "title"); images too
LINK = re.compile(r"!?\[[^\]]*\]\(\s*(?:<([^>\n]+)>|([^)\s]+))(?:\s+\"[^\"]*\")?\s*\)")
FENCE = re.compile(r"^(```|~~~).*?^\1", re.DOTALL | re.MULTILINE)
TOP_FOLDERS = (
    "cursorbench/", "harness/", "leaderboard/", "evals/", "training/", "tests/",
    "benchmarks/", "scripts/", "examples/", "docs/", ".ci/",
)  # fmt: skip
PLACEHOLDERS = {"evals/scenarios/EVAL.yaml"}  # a pattern the text explains, not a file


def load_generator(name: str = "gen_options") -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def relative_links(markdown: str) -> list[str]:
    """Link targets that name a file of the repository (not a URL, not an anchor alone)."""
    text = FENCE.sub("", markdown)
    text = re.sub(r"`[^`\n]*`", "", text)  # code spans are not links
    targets = []
    for bracketed, bare in LINK.findall(text):
        target = bracketed or bare
        if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.IGNORECASE) or target.startswith("#"):
            continue
        targets.append(target.split("#", 1)[0])
    return targets


def named_paths(markdown: str) -> set[str]:
    """Repository paths named in code spans (`harness/grading/grade.py`), globs left out."""
    paths = set()
    for span in re.findall(r"`([^`\n]+)`", markdown):
        for token in re.findall(r"[\w./-]+", span):
            if token.startswith(TOP_FOLDERS) and not re.search(r"[*{]", span):
                paths.add(token.rstrip(".,;:"))
    return paths


def test_options_page_is_what_the_generator_writes_from_runspec() -> None:
    generator = load_generator()
    page = ROOT / "docs" / "reference" / "options.md"
    assert page.read_text(encoding="utf-8") == generator.render(), (
        "docs/reference/options.md is stale: run "
        "`PYTHONPATH=. .venv/bin/python scripts/gen_options.py` and commit the page"
    )


def test_architecture_page_is_what_the_generator_draws_from_the_import_table() -> None:
    generator = load_generator("gen_architecture")
    page = ROOT / "docs" / "architecture.md"
    assert page.read_text(encoding="utf-8") == generator.render(), (
        "docs/architecture.md is stale: run "
        "`PYTHONPATH=. .venv/bin/python scripts/gen_architecture.py` and commit the page"
    )


def test_options_page_names_every_runspec_field() -> None:
    from cursorbench.config import RunSpec

    page = (ROOT / "docs" / "reference" / "options.md").read_text(encoding="utf-8")
    for name in RunSpec.model_fields:
        assert f"| `{name}` |" in page, name


def test_every_relative_link_in_the_readme_points_to_a_file() -> None:
    links = relative_links(README.read_text(encoding="utf-8"))
    assert links, "the README links into docs/"
    missing = [link for link in links if not (ROOT / link).exists()]
    assert not missing, f"README.md links to files that do not exist: {missing}"


def test_every_repository_path_the_docs_name_exists() -> None:
    pages = [README, *sorted((ROOT / "docs").rglob("*.md"))]
    missing = {
        f"{page.relative_to(ROOT)}: {path}"
        for page in pages
        for path in named_paths(page.read_text(encoding="utf-8")) - PLACEHOLDERS
        if not (ROOT / path).exists()
    }
    assert not missing, f"the docs name files that do not exist (moved?): {sorted(missing)}"


def test_relative_links_are_found_and_urls_and_anchors_skipped() -> None:
    markdown = (
        "See [a](docs/a.md#part), ![b](img/b.png), [c](https://example.org/c.md), "
        "[d](#here), `[e](not/a/link.md)` and [f](<docs/f g.md>).\n"
        "```\n[g](in/a/fence.md)\n```\n"
    )
    assert relative_links(markdown) == ["docs/a.md", "img/b.png", "docs/f g.md"]


def test_the_readme_stays_short() -> None:
    assert len(README.read_text(encoding="utf-8").encode()) <= 10_500
