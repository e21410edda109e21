"""The block parser lives in its own module (a refactor task's hidden tests)."""

import ast
import subprocess
import sys
from pathlib import Path

import markdown

PACKAGE = Path(markdown.__file__).parent


def classes_defined_in(path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {node.name for node in tree.body if isinstance(node, ast.ClassDef)}


def test_blockparser_module_defines_the_parser_and_its_state():
    from markdown import blockparser

    assert blockparser.BlockParser.__module__ == "markdown.blockparser"
    assert blockparser.State.__module__ == "markdown.blockparser"
    assert issubclass(blockparser.State, list)


def test_blockprocessors_no_longer_defines_them():
    defined = classes_defined_in(PACKAGE / "blockprocessors.py")
    assert "BlockParser" not in defined
    assert "State" not in defined
    assert {"BlockProcessor", "ListIndentProcessor", "ParagraphProcessor"} <= defined


def test_blockprocessors_still_offers_the_parser():
    from markdown import blockparser, blockprocessors

    assert blockprocessors.BlockParser is blockparser.BlockParser


def test_blockparser_imports_first_in_a_fresh_interpreter():
    code = "import markdown.blockparser as b; import markdown; print(b.BlockParser.__name__)"
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=PACKAGE.parent,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "BlockParser"


def test_blockparser_needs_no_processor_at_import_time():
    tree = ast.parse((PACKAGE / "blockparser.py").read_text(encoding="utf-8"))
    runtime_imports = [
        node
        for node in tree.body
        if isinstance(node, (ast.Import, ast.ImportFrom))
        and "blockprocessors" in ast.unparse(node)
    ]
    assert runtime_imports == []


def test_markdown_builds_its_parser_from_the_module():
    from markdown import blockparser

    md = markdown.Markdown()
    assert type(md.parser) is blockparser.BlockParser
    assert isinstance(md.parser.state, blockparser.State)
    assert md.convert("# Title\n\n* one\n* two\n") == (
        "<h1>Title</h1>\n<ul>\n<li>one</li>\n<li>two</li>\n</ul>"
    )


def test_block_extensions_still_work():
    text = (
        "!!! note\n    Take *care*.\n\n"
        "| a | b |\n|---|---|\n| 1 | 2 |\n\n"
        "1. one\n* two\n\n"
        "The HTML spec.\n\n*[HTML]: Hyper Text Markup Language\n"
    )
    html = markdown.markdown(text, extensions=["admonition", "tables", "sane_lists", "abbr"])
    assert '<div class="admonition note">' in html
    assert "<td>1</td>" in html
    assert "<ol>\n<li>one</li>\n</ol>" in html
    assert '<abbr title="Hyper Text Markup Language">HTML</abbr>' in html
