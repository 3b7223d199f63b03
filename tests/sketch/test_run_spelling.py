"""``run_spelling`` skips the runs that cannot spell a word exactly when no typo is looked for;
held equal to the plain search over every run (kept here as the reference)."""

from __future__ import annotations

from collections.abc import Sequence

from hypothesis import example, given
from hypothesis import strategies as st

from neardup.sketch.spelling import is_typo, run_spelling


def _every_run(
    word: str, tokens: Sequence[tuple[str | None, str]], typo: bool
) -> tuple[list[tuple[str | None, str]], bool]:
    """The search before the shortcut: every run of two to four tokens tried."""
    near: list[tuple[str | None, str]] = []
    for i in range(len(tokens) - 1):
        joined = tokens[i][1]
        for j in range(i + 1, min(i + 4, len(tokens))):
            kind, tok = tokens[j]
            if kind == "cjk":
                break
            joined += tok
            if joined == word:
                return list(tokens[i : j + 1]), False
            if typo and not near and len(word) >= 8 and is_typo(word, joined):
                near = list(tokens[i : j + 1])
            if len(joined) > len(word) + 1:
                break
    return near, bool(near)


_PIECES = st.sampled_from(
    ["tax", "free", "taxfree", "un", "ited", "states", "a", "s", "u", "x", "нало", "говый", "ελεύ"]
)
_LETTERS = "abcstналогвыйελεύθρο"  # Latin, Cyrillic, Greek (with a tonos): no rule is ASCII
_TOKENS = st.lists(
    st.tuples(
        st.sampled_from(["word", "num", "cjk", None]), _PIECES | st.text(_LETTERS, max_size=5)
    ),
    max_size=12,
)
_WORDS = st.sampled_from(
    ["taxfree", "unitedstates", "us", "taxfrees", "untedstates", "sas", "налоговый", "налгоовый"]
)


@given(_WORDS | st.text(_LETTERS, min_size=1, max_size=10), _TOKENS, st.booleans())
@example("unitedstates", [("word", "united"), ("word", "states")], False)
@example("untiedstates", [("word", "united"), ("word", "states")], True)  # a typo, run together
@example("taxfree", [("word", "x"), ("word", "tax"), ("word", "free")], True)
@example("налгоовый", [("word", "нало"), ("word", "говый")], True)  # Cyrillic, a swap
def test_the_shortcut_finds_what_every_run_finds(
    word: str, tokens: list[tuple[str | None, str]], typo: bool
) -> None:
    assert run_spelling(word, tokens, typo) == _every_run(word, tokens, typo)


def test_a_run_with_a_typo_is_still_found() -> None:
    tokens = [("word", "the"), ("word", "united"), ("word", "states")]
    assert run_spelling("untiedstates", tokens, True) == (tokens[1:], True)
    assert run_spelling("untiedstates", tokens, False) == ([], False)
    assert run_spelling("unitedstates", tokens, False) == (tokens[1:], False)
