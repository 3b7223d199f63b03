"""The README and the manual in docs/: short where they should be, their links resolve, their
Python compiles, and the configuration reference is what the settings model gives."""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path

import pytest

from harness import config_doc
from neardup.stream.worker.config import Settings

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
PAGES = [README, ROOT / "CHANGELOG.md", *sorted(DOCS.glob("*.md"))]

FENCE = re.compile(r"^(```+|~~~+)\s*([\w+-]*)")
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")


def _prose_and_blocks(path: Path) -> tuple[list[str], list[tuple[str, int, str]]]:
    """The lines outside fenced code blocks, and each block as (language, first line, source)."""
    prose: list[str] = []
    blocks: list[tuple[str, int, str]] = []
    fence: str | None = None
    body: list[str] = []
    lang, start = "", 0
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        bare = line.strip()
        match = FENCE.match(bare)
        if fence is None and match:
            fence, lang, start, body = match.group(1), match.group(2).lower(), number + 1, []
        elif fence is not None and bare.startswith(fence) and not bare[len(fence) :]:
            blocks.append((lang, start, "\n".join(body) + "\n"))
            fence = None
        elif fence is not None:
            body.append(line)
        else:
            prose.append(line)
    assert fence is None, f"{path.name}: a code block opened at line {start - 1} never closes"
    return prose, blocks


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: markup dropped, lower case, punctuation out, spaces to '-'."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    text = text.replace("`", "").replace("*", "").lower()
    kept = []
    for char in text:
        category = unicodedata.category(char)
        if char in " -_" or category[0] in "LN" or category == "Mn":
            kept.append("-" if char == " " else char)
    return "".join(kept)


def _anchors(path: Path) -> set[str]:
    prose, _ = _prose_and_blocks(path)
    seen: dict[str, int] = {}
    anchors = set()
    for line in prose:
        match = HEADING.match(line)
        if not match:
            continue
        slug = _slug(match.group(2))
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        anchors.add(slug if count == 0 else f"{slug}-{count}")
    return anchors


def _links(path: Path) -> list[str]:
    prose, _ = _prose_and_blocks(path)
    text = "\n".join(re.sub(r"`[^`]*`", "", line) for line in prose)
    return LINK.findall(text)


def test_readme_is_short() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 200, f"README.md has {len(lines)} lines: move the detail to docs/"


def test_readme_tells_no_history() -> None:
    text = README.read_text(encoding="utf-8")
    commit = re.compile(r"\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{7,40}\b")
    assert not commit.search(text), "a commit hash: history goes to CHANGELOG.md"
    assert "the day before" not in text.lower()


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve(page: Path) -> None:
    links = _links(page)
    broken = []
    for link in links:
        if re.match(r"^[a-z][a-z0-9+.-]*:", link):  # http:, https:, mailto:
            continue
        target, _, anchor = link.partition("#")
        resolved = (page.parent / target).resolve() if target else page
        if not resolved.exists():
            broken.append(f"{link}: no such file")
        elif anchor and resolved.suffix == ".md" and anchor not in _anchors(resolved):
            broken.append(f"{link}: no such heading in {resolved.relative_to(ROOT)}")
    assert broken == []


def test_the_link_check_sees_links() -> None:
    assert "docs/usage.md" in _links(README)
    assert _slug("Streaming: `neardup worker`") == "streaming-neardup-worker"
    assert _slug("From Python: `neardup.Index`") == "from-python-neardupindex"


def test_every_docs_page_is_in_the_index() -> None:
    linked = {link.partition("#")[0] for link in _links(DOCS / "README.md")}
    pages = {p.name for p in DOCS.glob("*.md")} - {"README.md"}
    assert pages <= linked
    assert "docs/README.md" in _links(README)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_python_blocks_compile(page: Path) -> None:
    _, blocks = _prose_and_blocks(page)
    for lang, start, source in blocks:
        if lang in ("python", "py"):
            compile(source, f"{page.relative_to(ROOT)}:{start}", "exec")


def test_configuration_reference_is_generated() -> None:
    committed = (DOCS / "configuration.md").read_text(encoding="utf-8")
    assert committed == config_doc.render(), "run python -m harness.config_doc"


def test_configuration_reference_names_every_setting() -> None:
    committed = (DOCS / "configuration.md").read_text(encoding="utf-8")
    missing = [n for n in Settings.model_fields if f"`NEARDUP_{n.upper()}`" not in committed]
    assert missing == []


def test_the_generator_refuses_an_undescribed_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(config_doc.DESCRIPTIONS, "input_topic")
    with pytest.raises(ValueError, match="input_topic: no description"):
        config_doc.render()
