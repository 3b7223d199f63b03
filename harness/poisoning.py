"""The boilerplate-poisoning attack: a producer teaches its own source someone else's story.

The producer sends a victim's story as its own documents ``rounds`` times, so the story becomes
that source's "template", then sends it again: a detector that leaves a source's template out
misses the copy. Real Reuters-21578 stories, in the attacker's :data:`SHAPES`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Literal

from harness import data
from neardup.sketch import features, verify
from neardup.stream.model import Article

__all__ = ["COPIER", "SHAPES", "TAIL", "VICTIM", "Shape", "copies", "poison", "stories"]

VICTIM, COPIER = "victim.example", "copier.example"
TAIL = "Shared with our readers by our partners."
Shape = Literal["lines", "sentences", "template", "runs"]
SHAPES: tuple[Shape, ...] = ("lines", "sentences", "template", "runs")
_RUN_WORDS = 30
_NAV = "Copier Daily | Home | World | Business | Markets | Tech | Sign in"
_SIGNUP = "Get the Copier Daily briefing in your inbox every morning, free of charge."
_FOOTER = (
    "Copyright Copier Daily Media. All rights reserved. Copier Daily, 9 Mill Road, Eastfield. "
    "Terms of use | Privacy policy | Cookie settings | Contact us. Reproduction in whole or in "
    "part without permission is prohibited."
)
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"])")


def _jaccard(a: str, b: str) -> float:
    return verify.jaccard(features.shingle_hashes(a), features.shingle_hashes(b))


def _sentences(text: str) -> list[str]:
    return [s for line in text.split("\n") for s in _SENTENCE.split(line.strip()) if s.strip()]


def _runs(text: str) -> list[str]:
    """The text's title line, then the words of its body in lines of :data:`_RUN_WORDS`, none
    ending a sentence (a full stop at a line's end left out)."""
    title, _, body = text.partition("\n")
    words = body.split()
    lines = [" ".join(words[i : i + _RUN_WORDS]) for i in range(0, len(words), _RUN_WORDS)]
    return [title, *(line.rstrip(".!?") for line in lines)]


def _wrapped(body: Sequence[str]) -> str:
    return "\n".join([_NAV, _SIGNUP, *body, _FOOTER])


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
        if any(_jaccard(d["text"], p.text) >= 0.5 for p in picked):
            continue  # ... nor one story under two heads
        if len(seen) > skip:
            picked.append(Article(d["id"], d["text"], source=VICTIM))
        if len(picked) == n:
            return picked
    raise ValueError("not enough stories")


def poison(victims: Sequence[Article], rounds: int = 3, shape: Shape = "lines") -> list[Article]:
    """The victims' text as the copier's documents, in the attacker's ``shape``."""
    fillers = [d["text"].split("\n")[1] for d in data.reuters()[9000:9400] if "\n" in d["text"]]
    out: list[Article] = []
    for r in range(rounds):
        for v in victims:
            lines = [x for x in v.text.split("\n") if x.strip()]
            if shape == "sentences":
                said = _sentences(v.text)
                parts = [" ".join(said[i : i + 3]) for i in range(0, len(said), 3)]
            elif shape == "runs":
                runs = _runs(v.text)
                parts = ["\n".join(runs[i : i + 2]) for i in range(0, len(runs), 2)]
            else:
                parts = ["\n".join(lines[i : i + 4]) for i in range(0, len(lines), 4)]
            for part in parts:
                filler = fillers[(len(out) * 7 + r) % len(fillers)]
                body = [part, filler]
                text = _wrapped(body) if shape == "template" else "\n".join(body)
                out.append(Article(f"p{len(out)}", text, source=COPIER))
    return out


def copies(victims: Sequence[Article], shape: Shape = "lines") -> list[Article]:
    """Each story again under the copier's source, in the attacker's ``shape``."""
    out = []
    for v in victims:
        if shape == "sentences":
            text = f"{' '.join(_sentences(v.text))}\n{TAIL}"
        elif shape == "template":
            text = _wrapped([v.text])
        elif shape == "runs":
            text = "\n".join([*_runs(v.text), TAIL])
        else:
            text = f"{v.text}\n{TAIL}"
        out.append(Article(f"copy-{v.id}", text, source=COPIER))
    return out
