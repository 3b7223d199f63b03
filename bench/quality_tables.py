"""The quality benchmark's report, ``quality.md``, from the result :mod:`bench.quality_bench`
writes: each section's tables and headlines. How a section measures is its module's docstring
(``bench/quality_*.py``); the report names the module and does not say it again."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from bench.markdown import code_line, data_table, met, pct, report, table
from bench.newswire import stream
from bench.quality_briefs import Cell, goal
from bench.quality_disguise import SETS, TARGET_FOUND
from bench.quality_newswire import SHOWN_MISSED, SHOWN_WRONG, TARGET_LINKED
from bench.quality_pages import DIRECTION, FEW_PAGES
from bench.quality_recall import TARGETS
from bench.quality_systems import BATCH
from harness.pages import KINDS

Section = Mapping[str, Any]
LINKED = (
    "pairs={pairs} | neardup linked={neardup_linked:.1%} | "
    "datasketch linked={datasketch_linked:.1%}"
)
GROUPS = "group={0} | pairs={1} | neardup linked={2:.1%} | datasketch linked={3:.1%}"
SYSTEMS = ("neardup", "datasketch")


def _kinds(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``by_kind`` rows with their target (``>= 99%``)."""
    return [{**r, "target": "{} {:.0%}".format(*goal(r["kind"]))} for r in rows]


def headline(section: Section) -> list[str]:
    """A section's targets, one line each (what a run prints as a section ends)."""
    return [
        f"{t['target']} [{t['where']}]: neardup {pct(t['neardup'], 2)}, datasketch "
        f"{pct(t['datasketch'], 2)} (goal {t['goal']})"
        for t in section["targets"]
    ]


def briefs_markdown(section: Section) -> list[str]:
    cfg, parts = section["settings"], {}
    for c in (Cell(**c) for c in section["by_detail"]):
        for part in c.detail.split("+") if c.kind != "unrelated" else []:
            acc = parts.setdefault((c.lang, c.kind, part), [0, 0, 0])
            acc[:] = [acc[0] + c.pairs, acc[1] + c.neardup, acc[2] + c.datasketch]
    groups = [
        (" ".join(k[:2]) + f": {k[2]}", n, a / n, b / n) for k, (n, a, b) in sorted(parts.items())
    ]
    return [
        f"`{cfg['generator']}`: {cfg['docs']} documents in one stream. "
        "Method: `bench/quality_briefs.py`.",
        data_table(
            f"language={{lang}} | kind={{kind}} | {LINKED} | target={{target}}",
            _kinds(section["by_kind"]),
        ),
        "### By noise kind or changed fact",
        "A copy with two kinds of noise counts under each.",
        data_table(GROUPS, groups),
    ]


def pages_markdown(section: Section) -> list[str]:
    cfg, runs, ds = section["settings"], section["neardup"], section["datasketch"]
    systems = {**{f"neardup {n}": r for n, r in runs.items()}, "datasketch": ds}
    few = ", ".join(f"{k}={v}" for k, v in FEW_PAGES.items())
    kinds = []
    for k in KINDS:
        shares = [pct(r["linked"][k]["share"]) for r in systems.values()]
        should = "linked" if k in ("syndicated", *DIRECTION) else "not linked"
        kinds.append([k, str(ds["linked"][k]["pairs"]), *shares, should])
    links = [
        (n.replace("datasketch", "datasketch (candidate pairs)"), r["links"])
        for n, r in systems.items()
    ]
    layouts = [
        (f"{lay}, neardup {n}", r)
        for lay, by in section.get("layouts", {}).items()
        for n, r in by.items()
    ]
    directions = [
        (f"neardup {n}: {k}", d, ", ".join(f"{a}: {b}" for a, b in d["seen"].items()))
        for n, r in runs.items()
        if "direction" in r
        for k in DIRECTION
        for d in [r["direction"][k]]
    ]
    return [
        f"`{cfg['generator']}`: {cfg['docs']} pages of {cfg['sites']} sites, a true copy exactly "
        "when both pages carry the same story. Method: `bench/quality_pages.py`.",
        table(["pair kind", "pairs", *systems, "should be"], kinds),
        "Link precision: every pair of pages in one neardup cluster (for datasketch, every "
        "candidate pair), judged by the pages' story.",
        data_table(
            "system={0} | pairs={1[pairs]} | different stories={1[false]} | "
            "precision={1[precision]:.1%}",
            links,
        ),
        "Direction under containment: the later page's verdict says `excerpt` (it lies inside "
        "the earlier page) or `embeds` (it contains it); share over all pairs of the kind.",
        data_table(
            "run: pair kind={0} | pairs={1[pairs]} | direction right={1[right]} | "
            "share={1[share]:.1%} | directions seen={2}",
            directions,
        ),
        f"Other layouts, `harness.pages.generate(layout=...)`; `one at a time`: one page a call "
        f"to the engine (else {BATCH}); `mixed, 20 pages a site`: `generate(layout='mixed', "
        f"{few})`, no target (the targets are for sites of about 57 pages)."
        if layouts
        else None,
        data_table(
            "layout, run={0} | syndicated found={1[linked][syndicated][share]:.1%} | "
            "same-site linked={1[linked][same_site][share]:.1%} | "
            "precision={1[links][precision]:.1%} | pairs={1[links][pairs]}",
            layouts,
        ),
    ]


def _pair(texts: Mapping[str, str], pair: Mapping[str, Any]) -> tuple[str, ...]:
    """A pair's ids, then each story's title (cut at 60 characters)."""
    heads = [
        texts[pair[k]].split("\n", 1)[0].strip().replace("|", "/") for k in ("first", "second")
    ]
    cut = [(h[:60] + "...") if len(h) > 60 else h for h in heads]
    return (f"{pair['first']} / {pair['second']}", *cut)


def newswire_markdown(section: Section) -> list[str]:
    cfg, nd, ds = section["settings"], section["neardup"], section["datasketch"]
    wrong, recall = nd["wrong"], section["pair_recall"]
    missed, n = recall["missed"], len(wrong)
    texts = {d["id"]: d["text"] for d in stream()} if wrong or missed else {}
    return [
        f"`{cfg['stream']}`: {cfg['docs']} Reuters-21578 stories in the wire's order; pairs "
        f"judged against {cfg['judged_pairs']} pairs people read (unjudged pairs are counted, "
        "never guessed). Method: `bench/quality_newswire.py`.",
        data_table(
            "system={0} | pairs={1[pairs]} | identical={1[identical]} | judged same={1[same]} | "
            "judged different={1[different]} | unjudged={1[unjudged]} | "
            "precision (judged)={1[precision]:.1%} | "
            "judged-same pairs kept={1[judged_same_kept]} / {1[judged_same_pairs]}",
            [("neardup (cluster pairs)", nd), ("datasketch (candidate pairs)", ds)],
        ),
        (f"The first {SHOWN_WRONG} of the {n}" if n > SHOWN_WRONG else f"The {n}")
        + " neardup cluster pairs judged different (earlier first):"
        if wrong
        else "No neardup cluster pair is judged different.",
        data_table(
            "pair={0} | titles={1} / {2} | judges' note={3}",
            [(*_pair(texts, w), w["note"].replace("|", "/")) for w in wrong[:SHOWN_WRONG]],
        ),
        "### Pair recall against brute force",
        "Every pair of stories at or above the Jaccard bound is "
        "linked, related (named in `related`) or silently missed; datasketch: the earlier story "
        "among the later's candidates.",
        data_table(
            "pairs=J >= {at} | n={pairs} | neardup linked={linked:.1%} | related={related:.1%} | "
            "silently missed={missed} | datasketch={datasketch:.1%} | target=>= {target:.1%}",
            [{**r, "target": TARGET_LINKED[r["at"]]} for r in recall["rows"]],
        ),
        f"Silently missed at J >= 0.8 ({len(missed)}, highest Jaccard first):" if missed else None,
        data_table(
            "pair={0} | J={3:.3f} | earlier={1} | later={2}",
            [(*_pair(texts, m), m["jaccard"]) for m in missed[:SHOWN_MISSED]],
        ),
    ]


def recall_markdown(section: Section) -> list[str]:
    cfg = section["settings"]
    rows = []
    for key, level in section["levels"].items():
        goal = f">= {pct(TARGETS[float(key)], 1)}"
        for run, q in level.items():
            name = run.replace("datasketch", "datasketch (candidates)")
            rows.append((key, q, name, goal if run == "neardup" else ""))
    return [
        f"`{cfg['generator']}`, truth: {cfg['truth']}. Precision is against the pairs at the "
        "row's level (a neardup pair between 0.8 and 0.9 counts as false in the J >= 0.9 row). "
        "Method: `bench/quality_recall.py`.",
        data_table(
            "level=J >= {0} | truth pairs={1[truth_pairs]} | run={2} | pairs found={1[true_pairs]}"
            " | pair recall={1[pair_recall]:.2%} | capped recall={1[pair_recall_capped]:.2%} | "
            "pair precision={1[pair_precision]:.2%} | target={3}",
            rows,
        ),
    ]


def realbriefs_markdown(section: Section) -> list[str]:
    cfg = section["settings"]
    return [
        f"`{cfg['generator']}`: Reuters-21578 headlines and stories of fewer than 30 tokens, "
        f"{cfg['docs']} documents in one stream. Method: `bench/quality_real_briefs.py`.",
        data_table(f"kind={{kind}} | {LINKED} | target={{target}}", _kinds(section["by_kind"])),
        "### By noise family or substitution",
        "A copy with two families counts under each; `+ noise`: a substitution with one "
        "surface-noise family besides.",
        data_table(f"group={{kind}}: {{family}} | {LINKED}", section["by_family"]),
    ]


def disguise_markdown(section: Section) -> list[str]:
    cfg = section["settings"]
    sizes = ", ".join(f"{cfg['originals'][s]} {s}" for s in SETS if s in cfg["originals"])
    linked = ", ".join(
        f"`{x['id']}` ({x['verdict']} of `{x['duplicate_of']}`)"
        for x in section["originals_linked"]
    )
    sent = [r for r in section["by_disguise"] if r["copies"]]
    n = sum(r["copies"] for r in sent)
    nd, ds = (pct(sum(r[f"{s}_found"] * r["copies"] for r in sent) / n) for s in SYSTEMS)
    rows = [
        {
            **r,
            "low": "**" * (r["neardup_found"] < TARGET_FOUND),
            "verdicts": ", ".join(f"{k} {v}" for k, v in sorted(r["verdicts"].items())),
        }
        for r in sent
    ]
    by_set = "".join(f"{s}={{by_set[{s}][neardup_found]:.1%}} | " for s in SETS)
    notes = "; ".join(f"`{r['disguise']}`: {r['note']}" for r in section["by_disguise"])
    return [
        f"`{cfg['generator']}`: {sizes} originals, then {cfg['copies']} copies under "
        f"{cfg['disguises']} disguises. Target: every disguise >= {pct(TARGET_FOUND)}. In all, "
        f"neardup found {nd} of the {n} copies sent, datasketch {ds}. "
        "Method: `bench/quality_disguise.py`.",
        "### By family",
        data_table(
            "family={family} | disguises={disguises} | copies={copies} | "
            "neardup found={neardup_found:.1%} | worst disguise={neardup_worst:.1%} | "
            "datasketch={datasketch_found:.1%}",
            section["by_family"],
        ),
        "### By disguise",
        "neardup's found rate per set of originals (a dash: not meant for it), then in all, then "
        "datasketch's in all; `verdicts`: how neardup judged the copies.",
        data_table(
            f"disguise=`{{disguise}}` | family={{family}} | copies={{copies}} | {by_set}neardup="
            "{low}{neardup_found:.1%}{low} | datasketch={datasketch_found:.1%} | "
            "verdicts={verdicts}",
            rows,
        ),
        f"Disguises: {notes}.",
        f"Originals wrongly linked: {linked}" if linked else None,
    ]


def poison_markdown(section: Section) -> list[str]:
    runs = ("neardup, no poison", "clean"), ("neardup, poisoned", "poisoned")
    rows = [
        (shape, label, r[key], r[key].get("linked_elsewhere", "n/a"))
        for shape, r in section["shapes"].items()
        for label, key in (*runs, ("datasketch (candidates)", "datasketch"))
    ]
    return [
        "Method: `bench/quality_poison.py` (`harness.poisoning`).",
        data_table(
            "shape={0} | run={1} | copies={2[copies]} | found={2[found]} | share={2[share]:.1%} | "
            "linked to another text={3}",
            rows,
        ),
    ]


def embedded_markdown(section: Section) -> list[str]:
    rows = [
        (name, r["policy"], r["embedded"], r["excerpt"], r["shared_prefix"])
        for name, r in section["runs"].items()
    ]
    missed = [
        f"{name}: {', '.join(r['embedded']['missed'])}"
        for name, r in section["runs"].items()
        if r["embedded"]["missed"]
    ]
    return [
        "Method: `bench/quality_embedded.py` (`harness.embedded`). Found: the verdict names the "
        "story (`duplicate_of`, or `related`) with `direction` `embeds`; a part: the middle "
        "third of the story, named with `excerpt`.",
        data_table(
            "run={0} | policy=`{1}` | copies={2[copies]} | found={2[found]} | "
            "share={2[share]:.1%} | as duplicate_of={2[as_duplicate_of]} | linked to another "
            "text={2[linked_elsewhere]} | parts found={3[found]} of {3[parts]} | shared-prefix "
            "texts linked={4[linked]} of {4[texts]}",
            rows,
        ),
        f"Missed: {'; '.join(missed)}" if missed else None,
    ]


TITLES = {
    "briefs": "1. Short briefs",
    "pages": "2. Web pages",
    "newswire": "3. Real newswire",
    "recall": "4. Long-text recall",
    "realbriefs": "5. Real short briefs",
    "disguise": "6. Disguised copies",
    "poison": "7. Boilerplate poisoning",
    "embedded": "8. Embedded copies",
}
MARKDOWN: dict[str, Callable[[Section], list[str]]] = {
    name: globals()[f"{name}_markdown"] for name in TITLES
}
HEADLINE: dict[str, Callable[[Section], list[str]]] = dict.fromkeys(TITLES, headline)


def markdown(result: Mapping[str, Any]) -> str:
    sections, m, ds = result["sections"], result["machine"], result["datasketch"]
    settings = []
    for name, sec in sections.items():
        cfg, nd = sec["settings"], sec["settings"]["neardup"]
        for label, policy in nd.items() if "summary" not in nd else [("defaults", nd["summary"])]:
            run = label if label.startswith("neardup") else f"neardup {label}"
            settings.append((TITLES[name], cfg.get("generator") or cfg.get("stream"), run, policy))
    targets = [{**t, "state": met(t["met"])} for t in result["targets"]]
    wall = [(TITLES[n], run, s) for n, sec in sections.items() for run, s in sec["wall_s"].items()]
    blocks = [
        "# Verdict quality: neardup beside datasketch",
        f"Run {result['when']}, {result['total_s']:.1f} s in all; sections: "
        f"{', '.join(sections)}. {code_line(result['code'])}.",
        f"Machine: {m['cpu']}, {m['cores']} cores ({m['cores_usable']} usable), "
        f"{m['memory_gb']} GB, load {m['load_average_1m_at_start']:.2f} at start; Python "
        f"{m['python']}, neardup {m['neardup']}, datasketch {m['datasketch']}.",
        f"neardup: `Engine(MemoryIndex(), policy).process` in batches of {ds['batch']}, a "
        f"fresh index per run. datasketch: `{ds['class']}(threshold={ds['threshold']}, "
        f"num_perm={ds['num_perm']})` ({ds['bands']} bands of {ds['rows']} rows) on "
        f"{ds['shingles']}, its candidates (no verification). Method: `bench/quality_bench.py`.",
        "## Settings",
        data_table("section={0} | data=`{1}` | run={2} | policy=`{3}`", settings),
        "## Targets",
        data_table(
            "target={target} | where={where} | goal={goal} | neardup={neardup:.2%} | "
            "met?={state} | datasketch={datasketch:.2%}",
            targets,
        ),
        "## Wall time",
        data_table("section={0} | run={1} | seconds={2:.2f}", wall),
    ]
    for name, sec in sections.items():
        blocks += [f"## {TITLES[name]}", *MARKDOWN[name](sec)]
    return report(blocks)
