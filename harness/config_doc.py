"""Generate ``docs/configuration.md``, the worker's configuration reference, from its settings.

Every row comes from :class:`neardup.stream.worker.config.Settings`; words the model lacks are in
``harness/data/templates/config_doc.toml``, so a setting added without one fails loudly.
``--check`` exits 1 when the committed page differs.
"""

from __future__ import annotations

import argparse
import sys
import tomllib
import types
import typing
from pathlib import Path

import annotated_types
from pydantic import SecretStr
from pydantic.fields import FieldInfo

from harness.data import DATA
from neardup.stream.names import NAMESPACE_RE
from neardup.stream.worker.config import TOOLING_VARIABLES, Settings

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "configuration.md"
PREFIX = "NEARDUP_"

# The page's own words (what each table holds: the comments of the file).
_WORDS = tomllib.loads((DATA / "templates" / "config_doc.toml").read_text(encoding="utf-8"))
INTRO: str = _WORDS["intro"]
OUTRO_HEAD: str = _WORDS["outro_head"]
SECTIONS: dict[str, str] = _WORDS["sections"]
_PATTERN = NAMESPACE_RE.pattern.strip("^$")
DESCRIPTIONS: dict[str, str] = {
    name: text.replace("{namespace_re}", _PATTERN) for name, text in _WORDS["descriptions"].items()
}
NOTES: dict[str, str] = _WORDS["notes"]


TYPE_NAMES: dict[object, str] = {str: "string", int: "integer", float: "number"}
_BOUNDS = (
    (annotated_types.Ge, "≥", "ge"),
    (annotated_types.Gt, ">", "gt"),
    (annotated_types.Le, "≤", "le"),
    (annotated_types.Lt, "<", "lt"),
)
_TABLE_HEAD = "| variable | type | default | meaning |\n|---|---|---|---|"


def _type(field: FieldInfo) -> str:
    """The field's type as an operator writes it, with its bounds."""
    annotation = field.annotation
    optional = False
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union:
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        optional = len(args) < len(typing.get_args(annotation))
        (annotation,) = args
    if typing.get_origin(annotation) is typing.Literal:
        text = " \\| ".join(f"`{v}`" for v in typing.get_args(annotation))
    elif annotation is SecretStr:
        text = "string, *secret*"
    elif annotation is bool:
        text = "`true` \\| `false`"
    else:
        text = TYPE_NAMES.get(annotation, getattr(annotation, "__name__", str(annotation)))
    bounds = [
        f"{sign} {getattr(meta, attr)}"
        for meta in field.metadata
        for kind, sign, attr in _BOUNDS
        if isinstance(meta, kind)
    ]
    if bounds:
        text += ", " + ", ".join(bounds)
    return text + (", optional" if optional else "")


def _default(field: FieldInfo) -> str:
    value = field.default
    if value is None:
        return "unset"
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return f"`{value}`"


def _description(name: str, field: FieldInfo) -> str:
    own = field.description
    kept = DESCRIPTIONS.get(name)
    if own and kept:
        raise ValueError(f"{name}: the model describes it now; drop DESCRIPTIONS[{name!r}]")
    if not own and not kept:
        raise ValueError(f"{name}: no description; add one to the model or to DESCRIPTIONS")
    text = own or kept or ""
    if name in NOTES:
        text += "; " + NOTES[name]
    return text.replace("|", "\\|")


def render() -> str:
    """The page, from the settings model."""
    fields = Settings.model_fields
    stale = sorted((set(DESCRIPTIONS) | set(NOTES) | set(SECTIONS)) - set(fields))
    if stale:
        raise ValueError(f"no such setting: {', '.join(stale)}")
    out = [INTRO.rstrip("\n")]
    for name, field in fields.items():
        if name in SECTIONS:
            out += ["", f"## {SECTIONS[name]}", "", _TABLE_HEAD]
        env = PREFIX + name.upper()
        out.append(
            f"| `{env}` | {_type(field)} | {_default(field)} | {_description(name, field)} |"
        )
    out += ["", OUTRO_HEAD]
    out += [f"- `{name}`" for name in sorted(TOOLING_VARIABLES)]
    out.append(f"- any `{PREFIX}TEST_*` variable")
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n", 1)[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the page is stale")
    args = parser.parse_args(argv)
    text = render()
    if args.check:
        if not PAGE.exists() or PAGE.read_text(encoding="utf-8") != text:
            print(f"{PAGE.relative_to(ROOT)} is stale: run python -m harness.config_doc")
            return 1
        return 0
    PAGE.parent.mkdir(exist_ok=True)
    PAGE.write_text(text, encoding="utf-8")
    print(f"wrote {PAGE.relative_to(ROOT)}")
    return 0


__all__ = ["DESCRIPTIONS", "NOTES", "render"]

if __name__ == "__main__":
    sys.exit(main())
