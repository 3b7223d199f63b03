"""The quality benchmark's report, ``quality.md``: each section's table and headlines, from the
result :mod:`bench.quality_bench` writes (its sections measure, this module renders)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from bench import quality_poison
from bench.markdown import code_line, pct, table
from bench.newswire import stream
from bench.quality_briefs import Cell, goal
from bench.quality_disguise import SETS, TARGET_FOUND
from bench.quality_newswire import SHOWN_MISSED, SHOWN_WRONG, TARGET_LINKED
from bench.quality_pages import DIRECTION, FEW_PAGES
from bench.quality_recall import TARGETS
from bench.quality_systems import BATCH
from harness.briefs import LANGS
from harness.pages import KINDS

# --------------------------------------------------------------------------- briefs


def briefs_kind_cells(row: Mapping[str, Any]) -> list[str]:
    """A ``by_kind`` row as table cells: kind, pairs, each system's linked share, the goal."""
    op, bound = goal(row["kind"])
    return [
        row["kind"],
        str(row["pairs"]),
        pct(row["neardup_linked"]),
        pct(row["datasketch_linked"]),
        f"{op} {pct(bound, 0)}",
    ]


def _briefs_by_part(cells: Sequence[Cell]) -> list[list[str]]:
    """Copies per noise kind (each of a pair's kinds) and siblings per changed fact."""
    parts: dict[tuple[str, str, str], list[int]] = {}
    for c in cells:
        if c.kind == "unrelated":
            continue
        for part in c.detail.split("+"):
            acc = parts.setdefault((c.lang, c.kind, part), [0, 0, 0])
            acc[0] += c.pairs
            acc[1] += c.neardup
            acc[2] += c.datasketch
    return [
        [f"{lang} {kind}: {part}", str(n), pct(nd / n), pct(ds / n)]
        for (lang, kind, part), (n, nd, ds) in sorted(parts.items())
    ]


def briefs_headline(section: Mapping[str, Any]) -> list[str]:
    out = []
    for lang in LANGS:
        got = {r["kind"]: r for r in section["by_kind"] if r["lang"] == lang}
        out.append(
            f"briefs {lang}: neardup finds {pct(got['copy']['neardup_linked'])} of copies, links "
            f"{pct(got['sibling']['neardup_linked'])} of siblings and "
            f"{pct(got['unrelated']['neardup_linked'])} of unrelated pairs; datasketch "
            f"{pct(got['copy']['datasketch_linked'])} / {pct(got['sibling']['datasketch_linked'])}"
            f" / {pct(got['unrelated']['datasketch_linked'])}"
        )
    return out


def briefs_markdown(section: Mapping[str, Any]) -> list[str]:
    cfg = section["settings"]
    cells = [Cell(**c) for c in section["by_detail"]]
    parts = [
        "## 1. Short briefs",
        "",
        f"`{cfg['generator']}`: {cfg['pairs_per_kind']} pairs per language and kind, "
        f"{cfg['docs']} documents in one stream. neardup at its defaults; linked = "
        "`duplicate_of` the earlier brief or the same cluster. datasketch: the earlier brief is "
        "among the later one's candidates.",
        "",
    ]
    head = ["language", "kind", "pairs", "neardup linked", "datasketch linked", "target"]
    body = [[r["lang"], *briefs_kind_cells(r)] for r in section["by_kind"]]
    parts += [table(head, body), "", *(f"- {h}" for h in briefs_headline(section)), ""]
    parts += [
        "### By noise kind or changed fact",
        "",
        "A copy with two kinds of noise counts under each.",
        "",
        table(["group", "pairs", "neardup linked", "datasketch linked"], _briefs_by_part(cells)),
        "",
    ]
    return parts


# --------------------------------------------------------------------------- pages


def pages_headline(section: Mapping[str, Any]) -> list[str]:
    out = []
    for name, r in section["neardup"].items():
        line = (
            f"pages, neardup {name}: syndicated found {pct(r['linked']['syndicated']['share'])}, "
            f"same-site linked {pct(r['linked']['same_site']['share'])}, link precision "
            f"{pct(r['links']['precision'])} over {r['links']['pairs']} cluster pairs"
        )
        if "direction" in r:
            d = r["direction"]
            line += (
                f"; direction right: excerpt {pct(d['excerpt']['share'])}, "
                f"embeds {pct(d['embeds']['share'])}"
            )
        out.append(line)
    ds = section["datasketch"]
    out.append(
        f"pages, datasketch: syndicated among candidates "
        f"{pct(ds['linked']['syndicated']['share'])}, same-site "
        f"{pct(ds['linked']['same_site']['share'])}, candidate precision "
        f"{pct(ds['links']['precision'])} over {ds['links']['pairs']} candidate pairs"
    )
    return out


def pages_markdown(section: Mapping[str, Any]) -> list[str]:
    cfg = section["settings"]
    runs, ds = section["neardup"], section["datasketch"]
    names = list(runs)
    parts = [
        "## 2. Web pages",
        "",
        f"`{cfg['generator']}`: {cfg['docs']} pages of {cfg['sites']} sites, each with its `url` "
        "and `source`; a pair is a true copy exactly when both pages carry the same story. "
        "Linked: the second's `duplicate_of` is the first or they share a cluster (datasketch: "
        "the first is among the second's candidates).",
        "",
    ]
    head = ["pair kind", "pairs", *(f"neardup {n}" for n in names), "datasketch", "should be"]
    rows = []
    for kind in KINDS:
        should = "linked" if kind in ("syndicated", "excerpt", "embeds") else "not linked"
        rows.append(
            [
                kind,
                str(ds["linked"][kind]["pairs"]),
                *(pct(runs[n]["linked"][kind]["share"]) for n in names),
                pct(ds["linked"][kind]["share"]),
                should,
            ]
        )
    parts += [table(head, rows), ""]
    prec = [
        [
            f"neardup {n}",
            str(runs[n]["links"]["pairs"]),
            str(runs[n]["links"]["false"]),
            pct(runs[n]["links"]["precision"]),
        ]
        for n in names
    ]
    prec.append(
        [
            "datasketch (candidate pairs)",
            str(ds["links"]["pairs"]),
            str(ds["links"]["false"]),
            pct(ds["links"]["precision"]),
        ]
    )
    parts += [
        "Link precision: every pair of pages in one neardup cluster (for datasketch, every "
        "candidate pair), judged by the pages' story.",
        "",
        table(["system", "pairs", "different stories", "precision"], prec),
        "",
    ]
    drow = []
    for n in names:
        if "direction" not in runs[n]:
            continue
        d = runs[n]["direction"]
        drow += [
            [
                f"neardup {n}: {kind}",
                str(d[kind]["pairs"]),
                str(d[kind]["right"]),
                pct(d[kind]["share"]),
                ", ".join(f"{k}: {v}" for k, v in d[kind]["seen"].items()),
            ]
            for kind in DIRECTION
        ]
    parts += [
        "Direction under containment: the later page's verdict says `excerpt` (it lies inside "
        "the earlier page) or `embeds` (it contains it); share over all pairs of the kind.",
        "",
        table(["run: pair kind", "pairs", "direction right", "share", "directions seen"], drow),
        "",
        *(f"- {h}" for h in pages_headline(section)),
        "",
    ]
    lays = section.get("layouts", {})
    if lays:
        lrows = [
            [
                f"{layout}, neardup {name}",
                pct(r["linked"]["syndicated"]["share"]),
                pct(r["linked"]["same_site"]["share"]),
                pct(r["links"]["precision"]),
                str(r["links"]["pairs"]),
            ]
            for layout, by in lays.items()
            for name, r in by.items()
        ]
        parts += [
            "Other layouts (`harness.pages.generate(layout=...)`): `paragraph`, every site's "
            "footer (with its sign-up and cookie lines, one sign-up sentence rotating) as one "
            "paragraph and its boxes on one line; `mixed`, each site one of the four "
            "combinations of footer and box layouts; `latest`, one box on one line of the "
            "site's eight newest headlines before the page, newest first (joined by a "
            "separator, commas or spaces alone; untitled on a quarter of the sites), no "
            "related box. `one at a time`: one page a call to the "
            f"engine, as a worker fed one message at a time decides them (else {BATCH} a call). "
            "`mixed, 20 pages a site`: sites with few pages (`generate(layout='mixed', "
            f"{', '.join(f'{k}={v}' for k, v in FEW_PAGES.items())})`): a site's template is "
            "learned from fewer pages, and more copies come while a site is still new (no "
            "target: the held-out targets are for sites of about 57 pages).",
            "",
            table(
                ["layout, run", "syndicated found", "same-site linked", "precision", "pairs"],
                lrows,
            ),
            "",
        ]
    return parts


# --------------------------------------------------------------------------- newswire


def newswire_headline(section: Mapping[str, Any]) -> list[str]:
    nd, ds = section["neardup"], section["datasketch"]
    return [
        f"newswire, neardup: {nd['pairs']} cluster pairs ({nd['identical']} identical, "
        f"{nd['same']} judged same, {nd['different']} judged different, {nd['unjudged']} "
        f"unjudged), precision {pct(nd['precision'])} over judged; keeps "
        f"{nd['judged_same_kept']} of {nd['judged_same_pairs']} judged-same pairs in one cluster",
        f"newswire, datasketch: {ds['pairs']} candidate pairs ({ds['identical']} identical, "
        f"{ds['same']} same, {ds['different']} different, {ds['unjudged']} unjudged), precision "
        f"{pct(ds['precision'])} over judged; {ds['judged_same_kept']} of "
        f"{ds['judged_same_pairs']} judged-same pairs among its candidates",
    ]


def _newswire_wrong_rows(
    wrong: Sequence[Mapping[str, str]], texts: Mapping[str, str]
) -> list[list[str]]:
    def title(doc_id: str) -> str:
        head = texts[doc_id].split("\n", 1)[0].strip()
        return (head[:60] + "...") if len(head) > 60 else head

    return [
        [
            f"{w['first']} / {w['second']}",
            f"{title(w['first'])} / {title(w['second'])}".replace("|", "/"),
            w["note"].replace("|", "/"),
        ]
        for w in wrong[:SHOWN_WRONG]
    ]


def newswire_markdown(section: Mapping[str, Any]) -> list[str]:
    cfg, nd, ds = section["settings"], section["neardup"], section["datasketch"]
    texts = {d["id"]: d["text"] for d in stream()}
    head = [
        "system",
        "pairs",
        "identical",
        "judged same",
        "judged different",
        "unjudged",
        "precision (judged)",
        "judged-same pairs kept",
    ]
    rows = [
        [
            label,
            str(r["pairs"]),
            str(r["identical"]),
            str(r["same"]),
            str(r["different"]),
            str(r["unjudged"]),
            pct(r["precision"]),
            f"{r['judged_same_kept']} / {r['judged_same_pairs']}",
        ]
        for label, r in (("neardup (cluster pairs)", nd), ("datasketch (candidate pairs)", ds))
    ]
    parts = [
        "## 3. Real newswire",
        "",
        f"`{cfg['stream']}`: {cfg['docs']} Reuters-21578 stories in the wire's order, run once "
        "per system. neardup at its defaults: every pair of one cluster; datasketch: every "
        "document with each of its candidates. Judged by `bench.newswire.judge` against "
        f"{cfg['judged_pairs']} pairs people read; unjudged pairs are counted, never guessed "
        "(their ids are in the json). Judged-same pairs kept: of the pairs people judged the "
        "same item, how many the system puts in one cluster (datasketch: among its candidates).",
        "",
        table(head, rows),
        "",
        *(f"- {h}" for h in newswire_headline(section)),
        "",
    ]
    if nd["wrong"]:
        n = len(nd["wrong"])
        which = f"The first {SHOWN_WRONG} of the {n}" if n > SHOWN_WRONG else f"The {n}"
        parts += [
            f"{which} neardup cluster pairs judged different (earlier first):",
            "",
            table(["pair", "titles", "judges' note"], _newswire_wrong_rows(nd["wrong"], texts)),
            "",
        ]
    else:
        parts += ["No neardup cluster pair is judged different.", ""]
    return parts + _newswire_recall_markdown(section["pair_recall"], texts)


def _newswire_recall_markdown(recall: Mapping[str, Any], texts: Mapping[str, str]) -> list[str]:
    rows = [
        [
            f"J >= {r['at']}",
            str(r["pairs"]),
            pct(r["linked"]),
            pct(r["related"]),
            str(r["missed"]),
            pct(r["datasketch"]),
            f">= {pct(TARGET_LINKED[r['at']], 1)}",
        ]
        for r in recall["rows"]
    ]
    head = ["pairs", "n", "neardup linked", "related", "silently missed", "datasketch", "target"]
    parts = [
        "### Pair recall against brute force",
        "",
        "Every pair of stories whose normalised word 3-shingle sets have Jaccard at or above the "
        "bound (`harness.corpus.exact_similarities`): linked (one cluster, or named in "
        "`duplicate_of`/`matches`), related (named in `related` with what changed), or silently "
        "missed. datasketch: the earlier story among the later's candidates.",
        "",
        table(head, rows),
        "",
    ]
    missed = recall["missed"]
    if missed:
        shown = [
            [f"{m['first']} / {m['second']}", f"{m['jaccard']:.3f}",
             _newswire_title(texts, m["first"]), _newswire_title(texts, m["second"])]
            for m in missed[:SHOWN_MISSED]
        ]  # fmt: skip
        parts += [
            f"Silently missed at J >= 0.8 ({len(missed)}, highest Jaccard first):",
            "",
            table(["pair", "J", "earlier", "later"], shown),
            "",
        ]
    return parts


def _newswire_title(texts: Mapping[str, str], doc_id: str) -> str:
    head = texts[doc_id].split("\n", 1)[0].strip().replace("|", "/")
    return (head[:60] + "...") if len(head) > 60 else head


# --------------------------------------------------------------------------- recall


def recall_headline(section: Mapping[str, Any]) -> list[str]:
    out = []
    for key, lv in section["levels"].items():
        nd, off, ds = lv["neardup"], lv["neardup, boilerplate off"], lv["datasketch"]
        out.append(
            f"long texts, J >= {key}: neardup pair recall {pct(nd['pair_recall'], 2)} "
            f"({nd['true_pairs']} of {nd['truth_pairs']}; boilerplate off "
            f"{pct(off['pair_recall'], 2)}), datasketch candidate recall "
            f"{pct(ds['pair_recall'], 2)}"
        )
    return out


def recall_markdown(section: Mapping[str, Any]) -> list[str]:
    cfg = section["settings"]
    head = [
        "level",
        "truth pairs",
        "run",
        "pairs found",
        "pair recall",
        "capped recall",
        "pair precision",
        "target",
    ]
    rows = []
    for key, lv in section["levels"].items():
        for name, q in lv.items():
            goal = f">= {pct(TARGETS[float(key)], 1)}" if name == "neardup" else ""
            rows.append(
                [
                    f"J >= {key}",
                    str(q["truth_pairs"]),
                    name if name != "datasketch" else "datasketch (candidates)",
                    str(q["true_pairs"]),
                    pct(q["pair_recall"], 2),
                    pct(q["pair_recall_capped"], 2),
                    pct(q["pair_precision"], 2),
                    goal,
                ]
            )
    return [
        "## 4. Long-text recall",
        "",
        f"`{cfg['generator']}`, truth: {cfg['truth']}. neardup at its defaults "
        "(and with boilerplate learning off, to show what it costs on a corpus without sources): "
        "pairs from `duplicate_of` and `matches`; datasketch: its candidates. Precision is "
        "against the pairs at the row's level (a neardup pair between 0.8 and 0.9 counts as "
        "false in the J >= 0.9 row).",
        "",
        table(head, rows),
        "",
        *(f"- {h}" for h in recall_headline(section)),
        "",
    ]


# --------------------------------------------------------------------------- realbriefs


def realbriefs_headline(section: Mapping[str, Any]) -> list[str]:
    got = {r["kind"]: r for r in section["by_kind"]}
    return [
        f"real briefs: neardup finds {pct(got['copy']['neardup_linked'])} of noisy copies and "
        f"links {pct(got['sibling']['neardup_linked'])} of siblings; datasketch "
        f"{pct(got['copy']['datasketch_linked'])} / {pct(got['sibling']['datasketch_linked'])}"
    ]


def realbriefs_markdown(section: Mapping[str, Any]) -> list[str]:
    cfg = section["settings"]
    parts = [
        "## 5. Real short briefs",
        "",
        f"`{cfg['generator']}`: Reuters-21578 headlines and stories of fewer than 30 tokens, "
        f"{cfg['docs']} documents in one stream. neardup at its defaults; linked = "
        "`duplicate_of` the earlier brief or the same cluster. datasketch: the earlier brief is "
        "among the later one's candidates.",
        "",
    ]
    head = ["kind", "pairs", "neardup linked", "datasketch linked", "target"]
    body = [briefs_kind_cells(r) for r in section["by_kind"]]
    parts += [table(head, body), "", *(f"- {h}" for h in realbriefs_headline(section)), ""]
    fam = [
        [
            f"{r['kind']}: {r['family']}",
            str(r["pairs"]),
            pct(r["neardup_linked"]),
            pct(r["datasketch_linked"]),
        ]
        for r in section["by_family"]
    ]
    parts += [
        "### By noise family or substitution",
        "",
        "A copy with two families counts under each; `rebreak+tag end` (a headline re-broken "
        "over lines with a tag added) has its own row. `+ noise`: a substitution with one "
        "surface-noise family besides.",
        "",
        table(["group", "pairs", "neardup linked", "datasketch linked"], fam),
        "",
    ]
    return parts


# --------------------------------------------------------------------------- disguise


def disguise_headline(section: Mapping[str, Any]) -> list[str]:
    rows = [r for r in section["by_disguise"] if r["copies"]]
    n = sum(r["copies"] for r in rows)
    nd = sum(r["neardup_found"] * r["copies"] for r in rows) / n
    ds = sum(r["datasketch_found"] * r["copies"] for r in rows) / n
    low = [r for r in rows if r["neardup_found"] < TARGET_FOUND]
    worst = min(rows, key=lambda r: r["neardup_found"])
    return [
        f"disguises: neardup finds {pct(nd)} of {n} disguised copies ({len(rows)} disguises; "
        f"worst {worst['disguise']} {pct(worst['neardup_found'])}; "
        f"{len(low)} below {pct(TARGET_FOUND)}), datasketch {pct(ds)}; "
        f"{len(section['originals_linked'])} undisguised originals linked"
    ]


def _disguise_set_cell(r: Mapping[str, Any], s: str) -> str:
    got = r["by_set"].get(s)
    return "-" if got is None else pct(got["neardup_found"])


def disguise_markdown(section: Mapping[str, Any]) -> list[str]:
    cfg = section["settings"]
    sizes = ", ".join(f"{cfg['originals'][s]} {s}" for s in SETS if s in cfg["originals"])
    parts = [
        "## 6. Disguised copies",
        "",
        f"`{cfg['generator']}`: {sizes} originals registered (each must stay original), then "
        f"{cfg['copies']} copies under {cfg['disguises']} disguises checked against them "
        "(`register=False`). Found = `duplicate` or `near_duplicate` with `duplicate_of` its "
        "own original; datasketch: its original among the copy's candidates. A copy the "
        f"disguise leaves unchanged is not sent. Target: every disguise >= {pct(TARGET_FOUND)}.",
        "",
        *(f"- {h}" for h in disguise_headline(section)),
        "",
        "### By family",
        "",
        table(
            ["family", "disguises", "copies", "neardup found", "worst disguise", "datasketch"],
            [
                [
                    f["family"],
                    str(f["disguises"]),
                    str(f["copies"]),
                    pct(f["neardup_found"]),
                    pct(f["neardup_worst"]),
                    pct(f["datasketch_found"]),
                ]
                for f in section["by_family"]
            ],
        ),
        "",
        "### By disguise",
        "",
        "neardup's found rate per set of originals (`-`: not meant for it), then in all, then "
        "datasketch's in all; `verdicts`: how neardup judged the copies.",
        "",
    ]
    body = []
    for r in section["by_disguise"]:
        if not r["copies"]:
            continue
        verdicts = ", ".join(f"{k} {v}" for k, v in sorted(r["verdicts"].items()))
        body.append(
            [
                f"`{r['disguise']}`",
                r["family"],
                str(r["copies"]),
                *(_disguise_set_cell(r, s) for s in SETS),
                ("" if r["neardup_found"] >= TARGET_FOUND else "**")
                + pct(r["neardup_found"])
                + ("" if r["neardup_found"] >= TARGET_FOUND else "**"),
                pct(r["datasketch_found"]),
                verdicts,
            ]
        )
    head = ["disguise", "family", "copies", *SETS, "neardup", "datasketch", "verdicts"]
    parts += [table(head, body), ""]
    parts += [
        "Disguises: "
        + "; ".join(f"`{r['disguise']}`: {r['note']}" for r in section["by_disguise"])
        + ".",
        "",
    ]
    if section["originals_linked"]:
        parts += [
            "Originals wrongly linked: "
            + ", ".join(
                f"`{x['id']}` ({x['verdict']} of `{x['duplicate_of']}`)"
                for x in section["originals_linked"]
            ),
            "",
        ]
    return parts


# --------------------------------------------------------------------------- poison


def poison_headline(section: Mapping[str, Any]) -> list[str]:
    return [
        f"poisoning ({shape}): neardup finds {pct(r['poisoned']['share'])} of poisoned copies "
        f"({pct(r['clean']['share'])} without the poison), "
        f"{r['poisoned']['linked_elsewhere']} linked to another text; "
        f"datasketch {pct(r['datasketch']['share'])} among candidates"
        for shape, r in section["shapes"].items()
    ]


def poison_markdown(section: Mapping[str, Any]) -> list[str]:
    rows = []
    for shape, r in section["shapes"].items():
        for name, x in (("neardup, no poison", r["clean"]), ("neardup, poisoned", r["poisoned"])):
            rows.append(
                [shape, name, str(x["copies"]), str(x["found"]), pct(x["share"]),
                 str(x["linked_elsewhere"])]
            )  # fmt: skip
        ds = r["datasketch"]
        rows.append(
            [shape, "datasketch (candidates)", str(ds["copies"]), str(ds["found"]),
             pct(ds["share"]), "n/a"]
        )  # fmt: skip
    return [
        "## 7. Boilerplate poisoning",
        "",
        (quality_poison.__doc__ or "").split("\n\n", 1)[1].replace("\n", " ").strip(),
        "",
        table(["shape", "run", "copies", "found", "share", "linked to another text"], rows),
        "",
        *(f"- {h}" for h in poison_headline(section)),
        "",
    ]


# --------------------------------------------------------------------------- the report

TITLES = {
    "briefs": "1. Short briefs",
    "pages": "2. Web pages",
    "newswire": "3. Real newswire",
    "recall": "4. Long-text recall",
    "realbriefs": "5. Real short briefs",
    "disguise": "6. Disguised copies",
    "poison": "7. Boilerplate poisoning",
}

MARKDOWN: dict[str, Callable[[Mapping[str, Any]], list[str]]] = {
    "briefs": briefs_markdown,
    "pages": pages_markdown,
    "newswire": newswire_markdown,
    "recall": recall_markdown,
    "realbriefs": realbriefs_markdown,
    "disguise": disguise_markdown,
    "poison": poison_markdown,
}
HEADLINE: dict[str, Callable[[Mapping[str, Any]], list[str]]] = {
    "briefs": briefs_headline,
    "pages": pages_headline,
    "newswire": newswire_headline,
    "recall": recall_headline,
    "realbriefs": realbriefs_headline,
    "disguise": disguise_headline,
    "poison": poison_headline,
}


def _settings_rows(sections: Mapping[str, Any]) -> list[list[str]]:
    rows = []
    for name, sec in sections.items():
        cfg = sec["settings"]
        data = cfg.get("generator") or cfg.get("stream", "")
        nd = cfg["neardup"]
        runs = nd.items() if "summary" not in nd else [("defaults", nd["summary"])]
        for label, summary in runs:
            run = label if label.startswith("neardup") else f"neardup {label}"
            rows.append([TITLES[name], f"`{data}`", run, f"`{summary}`"])
    return rows


def _targets_rows(targets: Sequence[Mapping[str, Any]]) -> list[list[str]]:
    return [
        [
            t["target"],
            t["where"],
            t["goal"],
            pct(t["neardup"], 2),
            "met" if t["met"] else "**missed**",
            pct(t["datasketch"], 2),
        ]
        for t in targets
    ]


def _wall_rows(sections: Mapping[str, Any]) -> list[list[str]]:
    return [
        [TITLES[name], system, f"{seconds:.2f}"]
        for name, sec in sections.items()
        for system, seconds in sec["wall_s"].items()
    ]


def markdown(result: Mapping[str, Any]) -> str:
    sections, m, ds = result["sections"], result["machine"], result["datasketch"]
    parts = [
        "# Verdict quality: neardup beside datasketch",
        "",
        f"Run {result['when']}, {result['total_s']:.1f} s in all; sections: "
        f"{', '.join(sections)}. {code_line(result['code'])}.",
        "",
        f"Machine: {m['cpu']}, {m['cores']} cores ({m['cores_usable']} usable), "
        f"{m['memory_gb']} GB, load {m['load_average_1m_at_start']:.2f} at start; Python "
        f"{m['python']}, neardup {m['neardup']}, datasketch {m['datasketch']}.",
        "",
        "neardup: `Engine(MemoryIndex(), policy).process` in batches of "
        f"{ds['batch']}, a fresh index per run. datasketch: `{ds['class']}(threshold="
        f"{ds['threshold']}, num_perm={ds['num_perm']})` ({ds['bands']} bands of {ds['rows']} "
        f"rows) on {ds['shingles']}, query then insert per document, its candidates (no "
        "verification: it keeps no sets to verify against).",
        "",
        "## Settings",
        "",
        table(["section", "data", "run", "policy"], _settings_rows(sections)),
        "",
        "## Targets",
        "",
        "Met or missed is neardup's; datasketch's figure on the same measure is beside it.",
        "",
        table(
            ["target", "where", "goal", "neardup", "met?", "datasketch"],
            _targets_rows(result["targets"]),
        ),
        "",
        "## Headlines",
        "",
        *(f"- {h}" for name, sec in sections.items() for h in HEADLINE[name](sec)),
        "",
        "## Wall time",
        "",
        table(["section", "run", "seconds"], _wall_rows(sections)),
        "",
    ]
    for name, sec in sections.items():
        parts += MARKDOWN[name](sec)
    return "\n".join(parts)
