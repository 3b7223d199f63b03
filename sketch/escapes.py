"""Part of step 1 of the canonical form: a text sent escaped is read as the text it escapes.

Two encodings a copy is sent in without a reader's noticing, once a program shows it: a JSON
string literal (``"line\\nline \\"quoted\\" caf\\u00e9"``, its quotes kept or not) and a
quoted-printable mail body (soft line breaks ``=`` at a line's end, bytes as ``=C3=A9``). Each is
decoded only when the text cannot be read otherwise (:func:`json_literal`,
:func:`quoted_printable`): every backslash, or every ``=``, starts an escape, and there are
several. Plain text has a backslash or an ``=`` rarely, so :func:`unescape` looks no further
than a test for those two characters.
"""

from __future__ import annotations

import quopri
import re
from functools import cache

from neardup.sketch.unhide import invisible_class

# a JSON escape: a quote, a backslash, a slash, a control letter or four hexadecimal digits
_JSON_ESCAPE_RE = re.compile(r'\\(?:["\\/bfnrtBFNRT]|[uU][0-9a-fA-F]{4})')
_JSON_CHARS = {
    '"': '"',
    "\\": "\\",
    "/": "/",
    "b": "\b",
    "f": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
}
# what says a text is a literal and not a text with a backslash in it: a line break, a quote
# or a code point escaped
_JSON_TELLING = re.compile(r'\\(?:[nN"]|[uU][0-9a-fA-F]{4})')
_QP_SOFT_RE = re.compile(r"=\r?\n")
_QP_BYTE_RE = re.compile(r"=[0-9A-F]{2}")
_QP_IN_WORD_RE = re.compile(r"\S=\r?\n\S")  # a soft line break cutting a word


def _json_char(match: re.Match[str]) -> str:
    escape = match.group()
    kind = escape[1].lower()
    return chr(int(escape[2:], 16)) if kind == "u" else _JSON_CHARS[kind]


def json_literal(text: str) -> str | None:
    """The text a JSON string literal stands for, or None when ``text`` is not one beyond
    doubt: within its quotes (if it has them) it holds no raw line break, every backslash starts
    a JSON escape, and one of them is a line break, a quote or a code point, two without quotes
    (``C:\\temp\\new`` is a path). Escapes are read whatever the case of their letter
    (``\\N``, ``\\U00E9``): the canonical form lowercases, and a text must read alike folded
    once or twice."""
    body = text.strip()
    quoted = len(body) >= 2 and body[0] == body[-1] == '"'
    if quoted:
        body = body[1:-1]
    if "\n" in body or "\r" in body:
        return None
    found = _JSON_ESCAPE_RE.findall(body)
    if not found or "\\" in _JSON_ESCAPE_RE.sub("", body):
        return None
    if len(_JSON_TELLING.findall(body)) < (1 if quoted else 2):
        return None
    out = _JSON_ESCAPE_RE.sub(_json_char, body)
    if any("\ud800" <= c <= "\udfff" for c in out):  # a pair of escapes for one code point
        out = out.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return out


def quoted_printable(text: str) -> str | None:
    """The text a quoted-printable body stands for (its bytes read as UTF-8, else, in an ASCII
    body, as Latin-1), or None when ``text`` is not one beyond doubt: every ``=`` an escape (a
    soft line break or a byte in upper-case hexadecimal), and two of them, or a soft line
    break that cuts a word (``S=\\nix``; a line ending ``rates were =`` is a table's). A
    character past ASCII is read as written (an invisible one the form removes must not decide
    whether the rest is read)."""
    breaks = list(_QP_SOFT_RE.finditer(text))
    soft, byte = len(breaks), len(_QP_BYTE_RE.findall(text))
    if soft + byte != text.count("=") or (soft + byte < 2 and not _QP_IN_WORD_RE.search(text)):
        return None
    if any(not _encoder_break(text, m.start(), m.end()) for m in breaks):
        return None
    raw = quopri.decodestring(text.encode("utf-8", "surrogatepass"))
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw.decode("latin-1") if text.isascii() else None


QP_SHORTEST_BROKEN_LINE = 40
"""An encoder breaks a line only where it would pass 76 characters: a soft line break that
ends a shorter line (``colour =`` alone on a line of reflowed code) and cuts no word is not
one."""


def _encoder_break(text: str, at: int, end: int) -> bool:
    """Whether the soft line break ``text[at:end]`` ends a line an encoder would break: a
    long one, or one cut inside a word."""
    line = at - (text.rfind("\n", 0, at) + 1)
    if line >= QP_SHORTEST_BROKEN_LINE:
        return True
    return at > 0 and end < len(text) and not text[at - 1].isspace() and not text[end].isspace()


@cache
def _invisible_re() -> re.Pattern[str]:
    return re.compile(f"[{invisible_class(astral=True)}]")


def unescape(text: str) -> str:
    """``text`` read as the JSON literal or quoted-printable body it is, or as it is; what one
    decoding gives is read again (a JSON literal of a mail body), at most
    :data:`DEPTH` times. Characters the form removes are removed first: an invisible character
    between ``=`` and a line break must not decide whether the text is read."""
    for _ in range(DEPTH):
        if "\\" not in text and "=" not in text:
            break
        bare = text if text.isascii() else _invisible_re().sub("", text)
        found = json_literal(bare) if "\\" in bare else None
        if found is None and "=" in bare:
            found = quoted_printable(bare)
        if found is None:
            break
        text = found
    return text


DEPTH = 4
"""How many encodings, one inside another, a text is read through."""


__all__ = ["DEPTH", "QP_SHORTEST_BROKEN_LINE", "json_literal", "quoted_printable", "unescape"]
