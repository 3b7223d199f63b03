"""Step 1 of the canonical form (:mod:`neardup.sketch.canonical`): markup and character
references read as a reader sees them.

:func:`looks_like_html` says whether a text carries evidence of markup (a closed element, a
break; a bare ``<P>`` or ``<BAC>``, as newswire writes tickers, is not). :func:`html_text` is
the visible text of HTML: markup removed (block elements end a line; ``script``, ``style`` and
the like are dropped with their content), references decoded. Plain tags are read by one split;
the standard library's parser reads the rest, at most an eighth of a document
(:data:`PARSER_SHARE`); past it the rest is read roughly, which reads a well-formed document as
the parser does: bounded work. :func:`decode` and :func:`decode_each` apply this to any text
(markup when it is HTML, character references ``&#101;``, ``&eacute;``, ``&amp;`` in any), once
a text sent as a JSON literal or a quoted-printable body is read as what it escapes
(:mod:`neardup.sketch.escapes`).
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence
from html.parser import HTMLParser
from itertools import chain

from neardup.sketch.escapes import unescape

# evidence of markup: a known element closed (</p>), a line break or rule, a comment, a
# doctype, or a known element with attributes (<a href=...>). A bare <P> or <A> alone is not:
# newswire writes tickers so (<BAC>, <P>)
_ELEMENT_NAMES = (
    "html head body p div span a b i u em strong li ul ol h1 h2 h3 h4 h5 h6 table tr td th "
    "section article header footer nav aside main blockquote pre code figure figcaption font "
    "small sup sub title script style noscript time abbr cite q s del ins mark label button "
    "form select option dl dt dd img meta link iframe input"
)


def _alternation(words: list[str]) -> str:
    """A regular expression for any of ``words``, written as a tree of their prefixes
    (``b(?:lockquote|ody|utton)?``): the expression engine tries an alternation branch by
    branch, and a text of ``<b>`` or ``<a `` repeated (each a known element, not markup)
    tried some sixty names at every ``<`` (several times a news story's whole sketch)."""
    by_first: dict[str, list[str]] = {}
    for word in sorted(set(words)):
        by_first.setdefault(word[0], []).append(word[1:])
    branches = []
    for first, rests in by_first.items():
        longer = [r for r in rests if r]
        if not longer:
            branches.append(re.escape(first))
            continue
        tail = _alternation(longer)
        optional = "" not in rests or tail.startswith("(?:") or len(tail) == 1
        tail = tail if optional else f"(?:{tail})"
        branches.append(f"{re.escape(first)}{tail}{'?' if '' in rests else ''}")
    return branches[0] if len(branches) == 1 else f"(?:{'|'.join(branches)})"


_ELEMENTS = _alternation(_ELEMENT_NAMES.split())
# a known element with an attribute: any tag name with an attribute first (a lookahead over
# letters; the names' tree, read case-blind, cost a text of "<a x" or "<b>" repeated, no
# attribute, three times as much at every "<")
_WITH_ATTRIBUTE = rf"(?=[a-z][a-z0-9]*\s+[a-z-]+\s*=){_ELEMENTS}\s+[a-z-]+\s*="
_HTML_TAG_RE = re.compile(
    rf"<(?:/{_ELEMENTS}\s*>|(?:br|hr|wbr)\s*/?>|!--|!doctype\s+html|{_WITH_ATTRIBUTE})",
    re.IGNORECASE,
)
_ENTITY_RE = re.compile(r"&(?:#[0-9]+|#[xX][0-9a-fA-F]+|[A-Za-z][A-Za-z0-9]{1,31});?")
# elements whose content a reader never sees as text
_HIDDEN = frozenset({"script", "style", "noscript", "template", "head", "svg", "math", "iframe"})
# elements that end a line where they start and end (the rest are inline: a word may cross them)
_BLOCKS = frozenset(
    ("address", "article", "aside", "blockquote", "br", "dd", "div", "dl", "dt", "figcaption",
     "figure", "footer", "form", "h1", "h2", "h3", "h4", "h5", "h6", "header", "hr", "li", "main",
     "nav", "ol", "p", "pre", "section", "table", "td", "th", "tr", "ul", "title", "body", "html")
)  # fmt: skip


def looks_like_html(text: str) -> bool:
    """Whether a text carries HTML markup (see ``_HTML_TAG_RE``: a closed element, a break)."""
    return "<" in text and _HTML_TAG_RE.search(text) is not None


class _Text(HTMLParser):
    """The text a browser shows of an HTML document or fragment, a block per line."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.hidden = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _HIDDEN:
            self.hidden += 1
        elif tag in _BLOCKS:
            self.parts.append("\n")

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _BLOCKS:
            self.parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in _HIDDEN:
            self.hidden = max(0, self.hidden - 1)
        elif tag in _BLOCKS:
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        if not self.hidden:
            self.parts.append(data)


def html_text(text: str) -> str:
    """The visible text of HTML: markup removed, references decoded, a line per block.

    Stretches of plain tags (:func:`_plain_markup_text`) are read by one split each; the
    parser reads from a ``<`` that opens no plain tag until it stands between tags again with
    nothing open that hides or holds text, at a ``<`` at least :data:`PARSER_STRETCH`
    characters on (then the split goes on). The parser's share is bounded: past
    1/:data:`PARSER_SHARE` of the document it stops where it stands and the rest is read
    roughly (:func:`_markup_read_roughly`), as the parser reads every well-formed document.
    The parser costs several times the split per tag: a page of short elements it read alone
    cost some five times news text."""
    shown: list[str] = []
    parser: _PlainTagsFirst | None = None
    at, n = 0, len(text)
    budget, spent = max(PARSER_STRETCH, n // PARSER_SHARE), 0
    while at < n:
        plain, at = _plain_run(text, at)
        shown.append(plain)
        if at == n:
            break
        parser = parser or _PlainTagsFirst()
        step = PARSER_STRETCH
        while True:
            stop = text.find("<", at + step)
            stop = n if stop < 0 else stop
            parser.feed(text[at:stop])
            spent, at = spent + stop - at, stop
            if at == n or spent >= budget:
                parser.close()  # what is open is read as the parser reads it at an end
                break
            if not parser.rawdata and parser.cdata_elem is None and not parser.hidden:
                break
            step = min(2 * step, max(PARSER_STRETCH, budget - spent))  # still open: read on
        shown += parser.parts
        parser.parts.clear()
        if spent >= budget and at < n:  # the parser's share spent: the rest is read roughly
            shown.append(_markup_read_roughly(text[at:], parser.hidden))
            break
    # a line per block, its white space one space: str.split()'s white space is re's \s
    return _EMPTY_LINES_RE.sub("\n", _SPACES_RE.sub(" ", "".join(shown))).strip()


_SPACES_RE = re.compile(r"(?: [^\S\n]|[^\S\n ])[^\S\n]*")  # not a single space: it stays
_EMPTY_LINES_RE = re.compile(r"\s*\n\s*")


def _plain_run(text: str, at: int) -> tuple[str, int]:
    """What :class:`_Text` collects of the plain markup from ``at`` (:func:`_plain_markup_text`),
    and where it stops: at a ``<`` that opens no plain tag, or the end. Read in windows that
    end before a ``<`` and double while they stay plain, so a document of plain tags is
    matched once (looking ahead for the first tag that is not plain cost twice the split)."""
    shown: list[str] = []
    n, window = len(text), 64
    while at < n:
        end = text.find("<", at + window)
        end = n if end < 0 else end
        got = _plain_markup_text(text[at:end])
        if got is None:  # the first < that is not plain lies in this window
            m = _NOT_PLAIN_AT.search(text, at, end)
            cut = m.start() if m else end
            got = _plain_markup_text(text[at:cut]) if cut > at else ""
            if got is not None:
                shown.append(got)
                at = cut
            return "".join(shown), at
        shown.append(got)
        at, window = end, 2 * window
    return "".join(shown), at


PARSER_STRETCH = 256
"""The least the parser reads once it starts: a document with a stray ``<`` between every few
tags is read by the parser alone, not by a switch per tag."""
PARSER_SHARE = 8
"""The parser reads at most an eighth of a document (and :data:`PARSER_STRETCH`): it costs
some five times the rough reading per tag, so a document built to need it everywhere is read
mostly roughly."""

# the rough reading: a comment to its close (or the end), a declaration or an instruction to
# its >, a tag to its > (named by its first letters, its attributes and closing slash caught)
_ROUGH_RE = re.compile(
    r"<!--.*?(?:-->|\Z)|<[!?][^>]*>?|<(/?)([A-Za-z][^\s/>]*)([^>]*)>?", re.DOTALL
)


def _markup_read_roughly(text: str, hidden: int) -> str:
    """What :class:`_Text` collects of a well-formed document (each tag closed by the first
    ``>``, no raw text holding a ``<``), by one split, from ``hidden`` elements open: the
    reading of a document's rest past the parser's share. A malformed document may read
    otherwise than by the parser (an attribute quoting a ``>``), alike for every copy."""
    parts = _ROUGH_RE.split(text)
    data, ends, names = parts[0::4], parts[1::4], [(t or "").lower() for t in parts[2::4]]
    if any("&" in d for d in data):
        data = _unescape_each(data)
    breaks = ["\n" if t in _BLOCKS else "" for t in names]
    if hidden or not _HIDDEN.isdisjoint(names):
        data = data[:]
        if hidden:
            data[0] = ""
        for k, (end, t, rest) in enumerate(zip(ends, names, parts[3::4], strict=True)):
            if t in _HIDDEN and not (rest or "").endswith("/"):
                hidden = max(0, hidden - 1) if end else hidden + 1
            if hidden:
                data[k + 1] = ""
    return "".join(chain.from_iterable(zip(data, breaks, strict=False))) + data[-1]


class _PlainTagsFirst(_Text):
    """:class:`_Text` reading a plain tag (:data:`_PLAIN_TAG_RE`, no element of
    :data:`_NOT_PLAIN`) by one match: the parser's own reading of a tag (a tolerant scan, its
    attributes listed one by one, its line counted) was most of the cost of a document of
    short elements. Every other construct is the parser's, and what is collected is the
    same (property-tested against :class:`_Text`)."""

    def updatepos(self, i: int, j: int) -> int:
        return j  # no line numbers: nothing here asks where the parser is

    def parse_starttag(self, i: int) -> int:
        m = _PLAIN_START_RE.match(self.rawdata, i)
        if m is None or (tag := m.group(1).lower()) in _NOT_PLAIN:
            return super().parse_starttag(i)
        if m.group(2):
            self.handle_startendtag(tag, [])
        else:
            self.handle_starttag(tag, [])
        return m.end()

    def parse_endtag(self, i: int) -> int:
        m = _PLAIN_END_RE.match(self.rawdata, i) if self.cdata_elem is None else None
        if m is None or (tag := m.group(1).lower()) in _NOT_PLAIN:
            return super().parse_endtag(i)
        self.handle_endtag(tag)
        return m.end()


# a tag whose name is letters and digits, with attributes plainly written (a quoted value holds
# no < or >): what the parser reads the same way whatever surrounds it
_PLAIN_ATTRS = (
    r"(?:\s+[A-Za-z_:][-A-Za-z0-9_:.]*(?:\s*=\s*(?:\"[^\"<>]*\"|'[^'<>]*'|[^\s\"'=<>`]+))?)*"
)
_PLAIN_TAG_RE = re.compile(r"</?([A-Za-z][A-Za-z0-9]*)" + _PLAIN_ATTRS + r"\s*/?>")
# the same, a start tag (its closing slash caught) and an end tag: what the parser reads
_PLAIN_START_RE = re.compile(r"<([A-Za-z][A-Za-z0-9]*)" + _PLAIN_ATTRS + r"\s*(/?)>")
_PLAIN_END_RE = re.compile(r"</([A-Za-z][A-Za-z0-9]*)" + _PLAIN_ATTRS + r"\s*/?>")
# elements the parser reads differently (raw text, hidden content) or whose handling has
# changed between Python versions: a document with one takes the parser
_NOT_PLAIN = _HIDDEN | {"title", "textarea", "xmp", "plaintext", "noembed", "noframes"}
# the first < that opens no plain tag, or a tag of _NOT_PLAIN (or a NUL, which the split uses)
_NOT_PLAIN_AT = re.compile(
    "\0|<(?!"
    + _PLAIN_TAG_RE.pattern[1:]
    + ")|</?(?:"
    + "|".join(sorted(_NOT_PLAIN))
    + ")(?![A-Za-z0-9])",
    re.IGNORECASE,
)


def _plain_markup_text(text: str) -> str | None:
    """What :class:`_Text` collects of a document whose every ``<`` opens a plain tag
    (:data:`_PLAIN_TAG_RE`) of no element in :data:`_NOT_PLAIN`, or None for any other: the
    data between tags with its references decoded, a newline for each block tag, found by one
    split (the parser's Python work per tag cost a page of short elements several times the
    rest of reading it)."""
    if not text:
        return ""
    parts = _PLAIN_TAG_RE.split(text)
    names = [n.lower() for n in parts[1::2]]
    if text.count("<") != len(names) or "\0" in text or not _NOT_PLAIN.isdisjoint(names):
        return None
    data = parts[0::2]
    if any("&" in d for d in data):
        data = _unescape_each(data)
    breaks = ["\n" if n in _BLOCKS else "" for n in names]
    return "".join(chain.from_iterable(zip(data, breaks, strict=False))) + data[-1]


def decode(text: str, *, is_html: bool | None = None) -> str:
    """Step 1: a text sent escaped read as what it escapes (:func:`unescape`), markup removed
    when the text is HTML (``is_html`` None: detected), character references decoded in any
    text; what that gives read so again (:data:`DECODE_ROUNDS`)."""
    return _reread(text, _decode_once(text, is_html))


DECODE_ROUNDS = 4
"""How many times a text is read as escapes, markup and references at most: what one reading
gives may be one again (``&amp;lt;p&amp;gt;``, ``&amp;#101;``: escaped twice), and the form read
again must be the form (idempotent). Bounded: each round is one more pass over the text."""


def _decode_once(text: str, is_html: bool | None) -> str:
    if "\\" in text or "=" in text:  # a C scan each: most texts have neither
        text = unescape(text)
    if is_html or (is_html is None and looks_like_html(text)):
        return html_text(text)
    if "&" in text and _ENTITY_RE.search(text):
        return html.unescape(text)
    return text


def _reread(before: str, read: str) -> str:
    """``read`` (one reading of ``before``) read again until nothing changes, in
    :data:`DECODE_ROUNDS` readings in all."""
    for _ in range(DECODE_ROUNDS - 1):
        if read == before or not any(c in read for c in "&<\\="):
            break
        before, read = read, _decode_once(read, None)
    return read


def _unescape_each(texts: list[str]) -> list[str]:
    """``[html.unescape(t) for t in texts]`` by one call over them joined by NUL, which no
    reference decodes to (``&#0;`` reads U+FFFD) and none spans; texts holding a NUL are
    unescaped one by one."""
    if len(texts) < 2 or any("\0" in t for t in texts):
        return [html.unescape(t) for t in texts]
    return html.unescape("\0".join(texts)).split("\0")


def decode_each(texts: Sequence[str]) -> list[str]:
    """``[decode(t) for t in texts]``: markup read per text; the references of all the others
    decoded at once (:func:`_unescape_each`)."""
    sent = texts
    # the tests inline (a call a line was a good part of the cost of a text of short lines)
    texts = [unescape(t) if "\\" in t or "=" in t else t for t in texts]
    out = list(texts)
    plain = []
    for i, t in enumerate(texts):
        if "<" in t and looks_like_html(t):
            out[i] = html_text(t)
        elif "&" in t and _ENTITY_RE.search(t):
            plain.append(i)
    for i, d in zip(plain, _unescape_each([texts[i] for i in plain]), strict=True):
        out[i] = d
    return [b if a is b else _reread(a, b) for a, b in zip(sent, out, strict=True)]


__all__ = [
    "DECODE_ROUNDS",
    "PARSER_SHARE",
    "PARSER_STRETCH",
    "decode",
    "decode_each",
    "html_text",
    "looks_like_html",
]
