"""Atomic register-and-probe -> exact verification -> cluster -> verdict; replay, delete, expire.

No Kafka here: the worker, the HTTP check and ``neardup dedup`` all call :meth:`Engine.process`
with a batch of articles and an :class:`~neardup.stream.index.base.Index`. The sketches and bucket
ids come from :func:`neardup.stream.engine.prepare.prepare`; the engine adds what needs the index
and the clock. Beside it: which namespace an article's is indexed in, under which policy
(:mod:`~neardup.stream.engine.targets`); what a source repeats, left out as its boilerplate
(:mod:`~neardup.stream.engine.boilerplate`); and the match rules that judge each candidate and
make the verdict (:mod:`~neardup.stream.engine.judge`).

Three paths, chosen by the text:

* **exact**: a 128-bit hash of the normalised text; an earlier article with the same hash makes a
  ``duplicate`` (method ``exact``). Its slot has no cap, so hot buckets never hide a verbatim copy.
  A text whose form has no word (emoji, a flag, ``!!!``) is keyed on the text as sent and has
  no other path (:func:`~neardup.stream.engine.prepare.as_sent`); one whose form is empty
  (invisible characters, empty markup) is refused, ``empty_text``: nothing is a copy of nothing.
* **long** (``>= policy.short_tokens`` tokens): candidates from MinHash bands and SimHash permuted
  tables, verified by exact Jaccard (or containment) of token 3-shingles.
* **short** (comments, titles): candidates from MinHash bands over character n-grams, verified by
  normalised edit similarity.

A candidate that does not verify is dropped: a verdict never rests on a bucket collision alone.

Clusters. An original is its own cluster; a copy joins the cluster of its best earlier match. When
that match's own verdict is not yet stored (another worker is still deciding it), the engine
decides it here from the match's stored record and the articles earlier than it, which is a pure
function of data that no longer changes, so both workers reach the same cluster and a chain
``A <- B <- C`` ends in one cluster however it is spread over workers.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace

from neardup.stream.engine import boilerplate
from neardup.stream.engine.boilerplate import anchored, copied, lines_taught, resembled
from neardup.stream.engine.judge import AsSent, Found, matches, verdict
from neardup.stream.engine.prepare import Prepared, prepare, shows_nothing
from neardup.stream.engine.state import NamespaceState
from neardup.stream.engine.targets import ALIAS_TTL_S, Targets
from neardup.stream.errors import (
    ClusterChainError,
    ConflictError,
    DeletedError,
    InvalidMessage,
    NeardupError,
)
from neardup.stream.index.base import Index, Probe, Registration, StoredVerdict, Window
from neardup.stream.model import Article, Verdict
from neardup.stream.namespaces import names
from neardup.stream.namespaces.policy import PASSAGES, Policy
from neardup.stream.records import Kind, Record

EMPTY_FORM = "text shows nothing: only white space, invisible characters, marks or markup"
_CONCURRENT_LOOKUPS = 16  # whole-text lookups in flight at once (see Engine._whole_probes)
_PASSAGE_LOOKUP_BUCKETS = 2048  # buckets of one read of a batch's passages (Engine._passage_probes)


class Engine:
    """Decides verdicts for batches of articles against an index (memory or Redis).

    ``overlap_chunk``: with a remote index, a batch larger than this is sketched and registered
    in chunks of this many articles, the server registering one while the engine sketches the
    next (64: small enough to overlap well, large enough that numpy's per-call cost stays low).

    ``clock``: for tests only. By default time is the index's (:meth:`Index.now`, Redis's
    ``TIME``), so registration times, retention and liveness agree across workers whatever
    their own clocks say.
    """

    def __init__(
        self,
        index: Index,
        policy: Policy | None = None,
        *,
        policies: Mapping[str, Policy] | None = None,
        clock: Callable[[], float] | None = None,
        overlap_chunk: int = 64,
        aliases: Mapping[str, str] | None = None,
        alias_ttl_s: float = ALIAS_TTL_S,
    ) -> None:
        if overlap_chunk < 1:
            raise ValueError("overlap_chunk must be >= 1")
        self.index = index
        self._overlap_chunk = overlap_chunk
        self._clock = clock  # None: the index's clock (Redis's TIME), one for every worker
        self.targets = Targets(index, policy, policies, aliases, alias_ttl_s)

    @property
    def default_policy(self) -> Policy:
        return self.targets.default_policy

    def policy_for(self, ns: str) -> Policy:
        """The policy configured for ``ns``, as its check against the index left it."""
        return self.targets.policy_for(ns)

    async def namespace_known(self, ns: str) -> bool:
        """Whether anything was ever indexed in ``ns`` (or what it is an alias of)."""
        return await self.targets.known(ns)

    async def _now(self, ns: str) -> float:
        return self._clock() if self._clock is not None else await self.index.now(ns)

    async def process(
        self,
        articles: Sequence[Article],
        *,
        register: bool = True,
        explain: bool | None = None,
        teach: bool = True,
    ) -> list[Verdict | NeardupError]:
        """Verdicts in input order; a per-article error is returned in its place, not raised
        (a text whose canonical form is empty: :class:`InvalidMessage` ``empty_text``).
        ``explain``: give each copy's evidence (the passages it shares with ``duplicate_of``);
        by default the namespace policy's ``explain``. ``teach``: whether the registered
        articles' lines count towards their sources' boilerplate (``/check`` never teaches: a
        request could teach another site's text as template); a check that registers nothing
        never teaches."""
        if any(a.format == "page" for a in articles):
            # a page's main content takes trafilatura milliseconds to seconds (a page of 500 KB
            # of paragraphs, about 3 s): read off the event loop, which keeps serving /health,
            # /check and the broker's heartbeats meanwhile
            articles = await asyncio.to_thread(lambda: [a.as_read() for a in articles])
        else:
            articles = [a.as_read() for a in articles]
        results: list[Verdict | NeardupError | None] = [None] * len(articles)
        by_ns: dict[str, list[int]] = {}
        for i, a in enumerate(articles):
            if shows_nothing(a.text):  # nothing a reader sees is a copy of nothing
                results[i] = InvalidMessage("empty_text", EMPTY_FORM)
                continue
            by_ns.setdefault(a.namespace, []).append(i)
        for ns, idx in by_ns.items():
            decided: list[Verdict | NeardupError]
            try:
                names.check_namespace(ns)
                where, policy = await self.targets.of(ns)
                if register:
                    policy = await self.targets.ensure(where, policy)
                else:  # a read-only check writes nothing, not even the namespace's scheme
                    policy = await self.targets.ensure_read(where, policy)
                wanted = policy.explain if explain is None else explain
                decided = await self._process_ns(
                    where, policy, [articles[i] for i in idx], register, wanted, ns, teach
                )
            except NeardupError as exc:
                # One namespace's lasting fault (another scheme, ...) is its articles' error,
                # not the batch's: the other namespaces still get their verdicts. A retriable
                # error is the whole batch's, retried by the caller.
                if exc.retriable:
                    raise
                decided = [exc] * len(idx)
            for i, res in zip(idx, decided, strict=True):
                results[i] = res
        return [r for r in results if r is not None]

    async def _process_ns(
        self,
        ns: str,
        policy: Policy,
        articles: list[Article],
        register: bool,
        explain: bool,
        name: str = "",
        teach: bool = True,
    ) -> list[Verdict | NeardupError]:
        # a check without retention reads no clock: nothing it decides depends on the time
        timed = register or policy.retention_s is not None
        now = await self._now(ns) if timed else 0.0
        live_after = None if policy.retention_s is None else now - policy.retention_s
        if policy.retention_s is not None and register:
            await self.index.expire(ns, now - policy.retention_s, limit=2 * len(articles) + 10)
        in_batch: Counter[bytes] = Counter()
        lines, without_boilerplate, left_out, sampled, learned = await boilerplate.learn(
            self.index, ns, policy, articles, teach, in_batch
        )
        records: dict[int, bytes] = {}  # read with a check's probe: not read again
        verdicts: dict[int, bytes] = {}
        if register:
            prepared, probes = await self._prepare_and_register(
                ns, policy, articles, without_boilerplate, sampled, now
            )
        else:
            prepared = anchored(policy, prepare(policy, articles, without_boilerplate), sampled)
            probes = []
            for p in prepared:  # one read each: id, buckets, and the records and verdicts found
                read = await self.index.check(
                    ns, p.article.id, p.content, p.buckets, live_after=live_after
                )
                if read.own is not None:
                    rec, ver = read.records.get(read.own), read.verdicts.get(read.own)
                    probes.append(Probe(read.own, "replay", None, (), record=rec, verdict=ver))
                    continue
                probes.append(Probe(0, "new", read.exact_seq, read.candidates))
                records.update(read.records)
                verdicts.update(read.verdicts)
        # each text as sent, read once for all its candidates when its sketch left lines out
        sents = [
            AsSent(policy, p, lines[k]) if left_out[k] or learned[k] else None
            for k, p in enumerate(prepared)
        ]
        state = NamespaceState(
            ns, policy, "" if name == ns else name, raw_verdicts=verdicts, in_batch=in_batch
        )
        state.records.update({s: Record.decode(b) for s, b in records.items()})
        wanted = {s for pr in probes for s in (*pr.candidates, pr.exact_seq) if s is not None}
        await self._load_records(state, wanted)
        await self._views(
            state, {s for k, pr in enumerate(probes) if learned[k] for s in pr.candidates}
        )
        # Verify every new article first (pure), then read the stored verdicts of all best
        # matches decided before this batch in one call: their clusters are what copies join.
        found = {
            k: matches(state, p, probe, register, now, left_out[k], learned[k], sents[k])
            for k, (p, probe) in enumerate(zip(prepared, probes, strict=True))
            if probe.status == "new"
        }
        await self._whole_probes(
            state, prepared, probes, found, left_out, learned, sents, register, now
        )
        await self._passage_probes(
            state, prepared, probes, found, left_out, learned, sents, register, now
        )
        ours = {pr.seq for pr in probes}
        bests = {f.matches[0].seq for f in found.values() if f.matches}
        await self._load_verdicts(state, bests - ours)
        stored: dict[int, StoredVerdict] = {}
        decided: dict[int, Verdict | NeardupError] = {}
        for k in sorted(range(len(prepared)), key=lambda k: probes[k].seq):
            p, probe = prepared[k], probes[k]
            if probe.status == "deleted":  # taken down and remembered: never registered again
                decided[k] = DeletedError(f"article id {p.article.id!r} was deleted")
                continue
            if probe.status == "replay":
                v_or_err = await self._replay(state, p, probe)
                decided[k] = v_or_err
                if register and probe.verdict is None and isinstance(v_or_err, Verdict):
                    # registered by an attempt that never stored its verdict (timed out, or
                    # killed in between): store it now, so later copies take their cluster from
                    # what was published instead of re-deriving it from data that may expire
                    state.verdicts[probe.seq] = v_or_err
                    stored[probe.seq] = StoredVerdict(p.article.id, v_or_err.to_json())
                continue
            got, doc_id = found[k], p.article.id
            best = got.matches[0].seq if got.matches else None
            cluster = (await self._resolve(state, best)).cluster if best is not None else doc_id
            v = verdict(state, p, doc_id, probe, got, register, cluster, explain)
            decided[k] = v
            if register:
                state.verdicts[probe.seq] = v
                stored[probe.seq] = StoredVerdict(doc_id, v.to_json())
        # The verdicts and the lines they teach are stored in one step, last: an attempt cut
        # off before it is replayed and counts its lines then, one that got through is replayed
        # (if at all) with its verdicts stored and counts nothing, so a line is counted once
        # per article whatever fails when. On a replicated store the step waits for the
        # replicas, which covers the cluster members written before it.
        taught = (
            lines_taught(
                policy,
                articles,
                lines,
                probes,
                decided,
                copied(state.records.values(), decided, articles),
                resembled(policy, state.records, decided, articles, lines, probes),
            )
            if register and teach
            else []
        )
        if stored:
            copies = [
                (v.cluster, seq, now)
                for seq, v in state.verdicts.items()
                if seq in stored and v.verdict != "original"
            ]
            await self.index.add_members(ns, copies)
            await self.index.put_verdicts(ns, stored, taught, policy.boilerplate_lines)
        elif taught:
            await self.index.add_lines(ns, taught, policy.boilerplate_lines)
        return [decided[k] for k in range(len(prepared))]

    async def _prepare_and_register(
        self,
        ns: str,
        policy: Policy,
        articles: list[Article],
        without_boilerplate: list[str | None],
        sampled: list[tuple[int, ...]],
        now: float,
    ) -> tuple[list[Prepared], list[Probe]]:
        """Sketch and register the articles. With a remote index, in chunks: while the server
        registers one chunk, this process sketches the next, so the two CPUs work at the same
        time instead of taking turns. Chunks are registered in the order sent, so sequence
        numbers follow the articles' order, as without chunks."""

        def registrations(part: list[Prepared]) -> list[Registration]:
            return [
                Registration(
                    p.article.id,
                    p.content,
                    p.buckets,
                    p.record(now, keep_text=policy.keep_text).encode(),
                    now,
                )
                for p in part
            ]

        size = self._overlap_chunk if self.index.remote else len(articles)
        prepared = []
        live_after = None if policy.retention_s is None else now - policy.retention_s
        forget_before = now - policy.remember_deleted_s
        window = Window(live_after, forget_before)
        async with self.index.registration(ns, policy.bucket_cap) as stream:
            for lo in range(0, len(articles), size):
                # sketched while the server registers the chunk before
                part = anchored(
                    policy,
                    prepare(policy, articles[lo : lo + size], without_boilerplate[lo : lo + size]),
                    sampled[lo : lo + size],
                )
                prepared += part
                await stream.send(registrations(part), window)
            return prepared, await stream.probes()

    async def _load_verdicts(self, state: NamespaceState, seqs: set[int]) -> None:
        missing = [s for s in seqs if s not in state.verdicts]
        for s in [s for s in missing if s in state.raw_verdicts]:
            state.verdicts[s] = Verdict.from_json(state.raw_verdicts[s])
        missing = [s for s in missing if s not in state.verdicts]
        if missing:
            raw = await self.index.verdicts(state.ns, sorted(missing))
            state.verdicts.update({s: Verdict.from_json(b) for s, b in raw.items()})

    async def _load_records(self, state: NamespaceState, seqs: set[int]) -> None:
        missing = [s for s in seqs if s not in state.records]
        if missing:
            raw = await self.index.records(state.ns, sorted(missing))
            state.records.update({s: Record.decode(b) for s, b in raw.items()})

    async def _replay(
        self, state: NamespaceState, p: Prepared, probe: Probe
    ) -> Verdict | NeardupError:
        if probe.record is not None and Record.decode(probe.record).content != p.content:
            return ConflictError(
                f"article id {p.article.id!r} was indexed before (seq {probe.seq}) with a "
                "different text; use a new id for a new text"
            )
        if probe.verdict is not None:
            return Verdict.from_json(probe.verdict)
        await self._load_records(state, {probe.seq})
        if probe.seq not in state.records:  # deleted or expired since registered: stays down
            return DeletedError(f"article id {p.article.id!r} was removed while decided")
        return await self._resolve(state, probe.seq)

    async def _whole_probes(
        self,
        state: NamespaceState,
        prepared: list[Prepared],
        probes: list[Probe],
        found: dict[int, Found],
        left_out: list[frozenset[bytes]],
        learned: list[frozenset[bytes]],
        sents: list[AsSent | None],
        register: bool,
        at: float,
    ) -> None:
        """What a source repeats is learned over time: an article sketched without lines it
        repeats may copy an earlier one registered whole, before they were learned, whose
        buckets it does not share. Each such article that matched nothing also looks up (reads
        only: registering those buckets would make every page of a site a candidate of every
        other) the MinHash bands of its whole text; the earlier articles found are judged with
        the rest (:func:`_judge`: the same lines left out of both, or the whole texts)."""
        todo = [k for k in found if left_out[k]]
        if not todo:
            return
        policy, bands = state.policy, state.policy.bands_rows[0]
        live_after = None if policy.retention_s is None else at - policy.retention_s
        wholes = zip(todo, prepare(policy, [prepared[k].article for k in todo]), strict=True)
        longs = [(k, w) for k, w in wholes if w.kind is Kind.LONG]
        # concurrent reads, a bounded number at a time: one wait per group, not per article,
        # and never more connections than a client's pool holds (redis-py's asyncio pool
        # raises past its max_connections, 100 by default, rather than waiting)
        looked: list[tuple[int | None, tuple[int, ...]]] = []
        for lo in range(0, len(longs), _CONCURRENT_LOOKUPS):
            looked += await asyncio.gather(
                *(
                    self.index.lookup(state.ns, w.content, w.buckets[:bands], live_after=live_after)
                    for _, w in longs[lo : lo + _CONCURRENT_LOOKUPS]
                )
            )
        more: dict[int, Probe] = {}
        for (k, _), (_, seqs) in zip(longs, looked, strict=True):
            probe = probes[k]
            new = set(seqs) - set(probe.candidates)
            if register:
                new = {s for s in new if s < probe.seq}
            if new:
                more[k] = replace(probe, candidates=tuple(sorted(new | set(probe.candidates))))
        await self._load_records(state, {s for p in more.values() for s in p.candidates})
        await self._views(state, {s for p in more.values() for s in p.candidates})
        for k, probe in more.items():
            found[k] = matches(
                state, prepared[k], probe, register, at, left_out[k], learned[k], sents[k]
            )

    async def _passage_probes(
        self,
        state: NamespaceState,
        prepared: list[Prepared],
        probes: list[Probe],
        found: dict[int, Found],
        left_out: list[frozenset[bytes]],
        learned: list[frozenset[bytes]],
        sents: list[AsSent | None],
        register: bool,
        at: float,
    ) -> None:
        """An earlier article that lies inside a longer new text shares few of its bands (an
        article of 150 words after 300 of new text: Jaccard about a third), but its smallest
        winnowed passage is among the new text's (:mod:`neardup.sketch.winnow`). Each long
        article that matched nothing reads (only) the buckets of its smallest passages; the
        earlier articles found are judged with the rest and kept as related, with their
        direction (:func:`neardup.stream.engine.judge.inside`), never as copies: a copy's
        cluster is what its registered buckets find (:meth:`_step` decides an undecided one
        again from them alone)."""
        todo = [k for k, f in found.items() if not f.matches and prepared[k].passages]
        if not todo:
            return
        policy = state.policy
        live_after = None if policy.retention_s is None else at - policy.retention_s
        wanted: dict[int, list[int]] = {}  # bucket -> the articles that read it
        groups: list[set[int]] = [set()]
        for k in todo:  # a few reads for the batch, each of a bounded number of buckets
            if len(groups[-1]) + len(prepared[k].passages) > _PASSAGE_LOOKUP_BUCKETS:
                groups.append(set())
            groups[-1].update(prepared[k].passages)
            for b in prepared[k].passages:
                wanted.setdefault(b, []).append(k)
        content = prepared[todo[0]].content  # any: only the buckets' articles are read
        looked = await asyncio.gather(
            *(
                self.index.lookup(state.ns, content, sorted(g), live_after=live_after)
                for g in groups
            )
        )
        found_seqs = {s for _, seqs in looked for s in seqs}
        # whose passages found it: the batch's own articles' say (each finds itself), the
        # records' buckets say for the others
        own = {probes[k].seq: k for k in range(len(prepared))} if register else {}
        await self._load_records(state, found_seqs - own.keys())
        leads: dict[int, set[int]] = {}
        for s in found_seqs:
            rec = state.records.get(s)
            if s in own:
                buckets: Sequence[int] = prepared[own[s]].passages[:PASSAGES]
            else:
                buckets = rec.buckets if rec is not None else ()
            for b in buckets:
                for k in wanted.get(b, ()):
                    leads.setdefault(k, set()).add(s)
        more: dict[int, Probe] = {}
        for k, seqs in leads.items():
            probe = probes[k]
            new = seqs - set(probe.candidates) - {probe.exact_seq, probe.seq}
            if register:
                new = {s for s in new if s < probe.seq}
            if new:
                more[k] = replace(probe, exact_seq=None, candidates=tuple(sorted(new)))
        if not more:
            return
        await self._load_records(state, {s for p in more.values() for s in p.candidates})
        await self._views(state, {s for k, p in more.items() if learned[k] for s in p.candidates})
        for k, probe in more.items():
            got = matches(
                state, prepared[k], probe, register, at, left_out[k], learned[k], sents[k]
            )
            extra = [*got.matches, *got.related]
            if extra:
                related = [*found[k].related, *extra]
                related.sort(key=lambda m: (-m.similarity, m.seq))
                found[k] = Found(found[k].matches, related)

    async def _views(self, state: NamespaceState, seqs: set[int]) -> None:
        """The views of the records among ``seqs`` not viewed yet (:func:`boilerplate.views`),
        the batch's own documents counted too."""
        todo = {s: rec for s in seqs - state.views.keys() if (rec := state.records.get(s))}
        if todo and state.policy.boilerplate_min_docs:
            state.views.update(
                await boilerplate.views(self.index, state.ns, state.policy, todo, state.in_batch)
            )

    async def _resolve(self, state: NamespaceState, seq: int) -> Verdict:
        """The verdict of stored article ``seq``: stored, or decided from its record and the
        articles before it, as its own batch decided it.

        Iterative, so any chain of undecided copies resolves: a stack of seqs where each pushed
        seq is the best match of the one below it, hence strictly smaller, so the walk ends.
        Each article's matches are computed once (``pending``) and its verdict once its best
        match's cluster is known. The article's own record must be loaded (or loadable); the
        matches' records are, since :meth:`_matches` keeps only loaded, live ones.
        """
        pending: dict[int, tuple[Record, Probe, Found]] = {}
        stack = [seq]
        while stack:
            top = stack[-1]
            await self._load_verdicts(state, {top})  # no round trip when already loaded
            if top in state.verdicts:
                stack.pop()
                continue
            if top not in pending:
                pending[top] = await self._step(state, top)
            rec, probe, found = pending[top]
            best = found.matches[0].seq if found.matches else None
            if best is not None and best not in state.verdicts:
                await self._load_verdicts(state, {best})
                if best not in state.verdicts:
                    stack.append(best)
                    continue
            cluster = state.verdicts[best].cluster if best is not None else rec.doc_id
            state.verdicts[top] = verdict(
                state, rec, rec.doc_id, probe, found, True, cluster, state.policy.explain
            )
            stack.pop()
        return state.verdicts[seq]

    async def _step(self, state: NamespaceState, seq: int) -> tuple[Record, Probe, Found]:
        """A stored article's record, its probe of the articles before it, and the matches."""
        await self._load_records(state, {seq})
        rec = state.records.get(seq)
        if rec is None:
            raise ClusterChainError(f"seq {seq} vanished while its cluster was resolved")
        retention = state.policy.retention_s
        live_after = None if retention is None else rec.registered_at - retention
        first, cands = await self.index.lookup(
            state.ns, rec.content, rec.buckets, live_after=live_after
        )
        earlier = tuple(s for s in cands if s < seq)
        exact = first if first is not None and first < seq else None
        await self._load_records(state, {*earlier, *([exact] if exact is not None else [])})
        probe = Probe(seq, "new", exact, earlier)
        return rec, probe, matches(state, rec, probe, register=True, at=rec.registered_at)

    async def delete(self, ns: str, doc_id: str) -> bool:
        """Takedown: the article leaves buckets, content slot, records and verdicts."""
        names.check_namespace(ns)
        where, _ = await self.targets.of(ns)
        return await self.index.delete(where, doc_id)

    async def expire(self, ns: str) -> int:
        where, policy = await self.targets.of(ns)  # a rebuilt namespace expires where it lives
        policy = self.targets.checked.get(where, policy)
        if policy.retention_s is None:
            return 0
        now = await self._now(where)
        return await self.index.expire(where, now - policy.retention_s, limit=100_000)


__all__ = ["Engine"]
