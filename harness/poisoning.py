"""The boilerplate-poisoning attack: a producer teaches its own source someone else's story.

A producer that names its own ``source`` sends a victim's story line by line as documents of
its own (four lines and a filler line each, ``rounds`` times), so that every line of the story
is that source's "template"; then it sends the story again, with a line of its own after it. A
detector that leaves a source's template out of its texts and judges what remains misses the
copy (or links it to another copy whose remainder is alike). Real Reuters-21578 stories.
"""

from __future__ import annotations

from collections.abc import Sequence

from harness import data
from stream.model import Article

__all__ = ["COPIER", "TAIL", "VICTIM", "copies", "poison", "stories"]

VICTIM, COPIER = "victim.example", "copier.example"
TAIL = "Shared with our readers by our partners."


def stories(n: int = 8, *, skip: int = 0) -> list[Article]:
    """``n`` distinct Reuters stories of 150 words or more on several lines, as the victim's
    (the first ``skip`` such stories left out)."""
    picked: list[Article] = []
    seen: set[str] = set()
    for d in data.reuters():
        if len(d["text"].split()) < 150 or "\n" not in d["text"]:
            continue
        head = d["text"].split("\n", 1)[0]
        if head in seen:  # the wire re-sends some stories: no two alike
            continue
        seen.add(head)
        if len(seen) > skip:
            picked.append(Article(d["id"], d["text"], source=VICTIM))
        if len(picked) == n:
            return picked
    raise ValueError("not enough stories")


def poison(victims: Sequence[Article], rounds: int = 3) -> list[Article]:
    """The victims' lines as the copier's documents: four lines and a filler line each."""
    fillers = [d["text"].split("\n")[1] for d in data.reuters()[9000:9400] if "\n" in d["text"]]
    out: list[Article] = []
    for r in range(rounds):
        for v in victims:
            lines = [x for x in v.text.split("\n") if x.strip()]
            for i in range(0, len(lines), 4):
                filler = fillers[(len(out) * 7 + r) % len(fillers)]
                text = "\n".join([*lines[i : i + 4], filler])
                out.append(Article(f"p{len(out)}", text, source=COPIER))
    return out


def copies(victims: Sequence[Article]) -> list[Article]:
    """Each story again under the copier's source, with a line of its own after it."""
    return [Article(f"copy-{v.id}", f"{v.text}\n{TAIL}", source=COPIER) for v in victims]
