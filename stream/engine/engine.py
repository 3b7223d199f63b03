"""Atomic register-and-probe -> exact verification -> cluster -> verdict; replay, delete, expire.

No Kafka here: the worker, the HTTP check and ``neardup dedup`` all call :meth:`Engine.process`
with a batch of articles and an :class:`~neardup.stream.index.base.Index`. It decides them in
stages, each a function over the batch and one record per article
(:mod:`~neardup.stream.engine.stages`): read, then per namespace prepare, register (or look
up, for a read-only check), verify, resolve, store. The sketches and bucket
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
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace

from neardup.stream import names
from neardup.stream.engine import boilerplate
from neardup.stream.engine.boilerplate import copied, lines_taught, resembled
from neardup.stream.engine.judge import Found, matches, verdict
from neardup.stream.engine.prepare import Prepared, prepare, shows_nothing
from neardup.stream.engine.stages import (
    InFlight,
    Run,
    decision_order,
    in_flight,
    prepare_all,
    read_all,
    read_as_sent,
    take_learned,
)
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
        read = await read_all(articles)
        results: list[Verdict | NeardupError | None] = [None] * len(read)
        by_ns: dict[str, list[int]] = {}
        for i, a in enumerate(read):
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
                    where, policy, [read[i] for i in idx], register, wanted, ns, teach
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
        """One namespace's articles, stage by stage (:mod:`neardup.stream.engine.stages`);
        verdicts in input order."""
        run = await self._open(ns, policy, articles, register, explain, name, teach)
        await self._prepare(run)
        if register:
            await self._register(run)
        else:
            await self._check(run)
        await self._verify(run)
        await self._resolve_all(run)
        await self._store(run)
        return [it.decided for it in run.items]

    async def _open(
        self,
        ns: str,
        policy: Policy,
        articles: list[Article],
        register: bool,
        explain: bool,
        name: str,
        teach: bool,
    ) -> Run:
        """The batch's time, and what retention let go before it registers anything."""
        # a check without retention reads no clock: nothing it decides depends on the time
        timed = register or policy.retention_s is not None
        now = await self._now(ns) if timed else 0.0
        if policy.retention_s is not None and register:
            await self.index.expire(ns, now - policy.retention_s, limit=2 * len(articles) + 10)
        state = NamespaceState(ns, policy, "" if name == ns else name)
        return Run(state, in_flight(articles), register, explain, teach, now)

    async def _prepare(self, run: Run) -> None:
        """What each text's source repeats (one read of the index for the batch), left out of
        what it is sketched by; the sketches themselves are made as the batch registers
        (:meth:`_register`) or is looked up (:meth:`_check`)."""
        state, articles = run.state, [it.article for it in run.items]
        learned = await boilerplate.learn(
            self.index, state.ns, state.policy, articles, run.teach, state.in_batch
        )
        take_learned(run.items, learned)

    async def _register(self, run: Run) -> None:
        """Sketch and register the articles. With a remote index, in chunks: while the server
        registers one chunk, this process sketches the next, so the two CPUs work at the same
        time instead of taking turns. Chunks are registered in the order sent, so sequence
        numbers follow the articles' order, as without chunks."""
        policy, now = run.state.policy, run.now

        def registrations(part: list[InFlight]) -> list[Registration]:
            return [
                Registration(
                    it.article.id,
                    it.prepared.content,
                    it.prepared.buckets,
                    it.prepared.record(now, keep_text=policy.keep_text).encode(),
                    now,
                )
                for it in part
            ]

        items = run.items
        size = self._overlap_chunk if self.index.remote else len(items)
        window = Window(run.live_after, now - policy.remember_deleted_s)
        async with self.index.registration(run.state.ns, policy.bucket_cap) as stream:
            for lo in range(0, len(items), size):
                part = items[lo : lo + size]
                prepare_all(policy, part)  # sketched while the server registers the chunk before
                await stream.send(registrations(part), window)
            probes = await stream.probes()
        for it, probe in zip(items, probes, strict=True):
            it.probe = probe

    async def _check(self, run: Run) -> None:
        """Sketch the articles and look each up, registering nothing: one read each, its id,
        its buckets, and the records and verdicts found (not read again)."""
        state = run.state
        prepare_all(state.policy, run.items)
        records: dict[int, bytes] = {}
        for it in run.items:
            p = it.prepared
            read = await self.index.check(
                state.ns, p.article.id, p.content, p.buckets, live_after=run.live_after
            )
            if read.own is not None:
                rec, ver = read.records.get(read.own), read.verdicts.get(read.own)
                it.probe = Probe(read.own, "replay", None, (), record=rec, verdict=ver)
                continue
            it.probe = Probe(0, "new", read.exact_seq, read.candidates)
            records.update(read.records)
            state.raw_verdicts.update(read.verdicts)
        state.records.update({s: Record.decode(b) for s, b in records.items()})

    async def _verify(self, run: Run) -> None:
        """Read the candidates' records, and judge each new article's candidates (pure); then
        the candidates that the whole text (:meth:`_whole_probes`) and the smallest passages
        (:meth:`_passage_probes`) of the articles that matched nothing find."""
        state, items = run.state, run.items
        read_as_sent(state.policy, items)
        wanted = {s for it in items for s in (*it.probe.candidates, it.probe.exact_seq)}
        await self._load_records(state, {s for s in wanted if s is not None})
        await self._views(state, {s for it in items if it.learned for s in it.probe.candidates})
        for it in items:
            if it.probe.status == "new":
                it.found = self._matches(run, it, it.probe)
        await self._whole_probes(run)
        await self._passage_probes(run)

    @staticmethod
    def _matches(run: Run, it: InFlight, probe: Probe) -> Found:
        """What ``it``'s candidates in ``probe`` verify as (:func:`matches`)."""
        return matches(
            run.state,
            it.prepared,
            probe,
            run.register,
            run.now,
            it.left_out,
            it.learned,
            it.sent,
        )

    async def _resolve_all(self, run: Run) -> None:
        """Each article's verdict, in seq order: an earlier copy's cluster is what a later one
        joins. The stored verdicts of all best matches decided before this batch are read in
        one call first."""
        state, items = run.state, run.items
        ours = {it.probe.seq for it in items}
        bests = {it.found.matches[0].seq for it in items if it.found and it.found.matches}
        await self._load_verdicts(state, bests - ours)
        for k in decision_order(items):
            items[k].decided = await self._decide(run, items[k])

    async def _decide(self, run: Run, it: InFlight) -> Verdict | NeardupError:
        """One article's verdict (or error), kept to be stored when the batch registers."""
        state, p, probe = run.state, it.prepared, it.probe
        if probe.status == "deleted":  # taken down and remembered: never registered again
            return DeletedError(f"article id {p.article.id!r} was deleted")
        if probe.status == "replay":
            v_or_err = await self._replay(state, p, probe)
            if run.register and probe.verdict is None and isinstance(v_or_err, Verdict):
                # registered by an attempt that never stored its verdict (timed out, or
                # killed in between): store it now, so later copies take their cluster from
                # what was published instead of re-deriving it from data that may expire
                state.verdicts[probe.seq] = v_or_err
                run.stored[probe.seq] = StoredVerdict(p.article.id, v_or_err.to_json())
            return v_or_err
        got, doc_id = it.found, p.article.id
        assert got is not None  # a new article's candidates were verified
        best = got.matches[0].seq if got.matches else None
        cluster = (await self._resolve(state, best)).cluster if best is not None else doc_id
        v = verdict(state, p, doc_id, probe, got, run.register, cluster, run.explain)
        if run.register:
            state.verdicts[probe.seq] = v
            run.stored[probe.seq] = StoredVerdict(doc_id, v.to_json())
        return v

    async def _store(self, run: Run) -> None:
        """The verdicts and the lines they teach are stored in one step, last: an attempt cut
        off before it is replayed and counts its lines then, one that got through is replayed
        (if at all) with its verdicts stored and counts nothing, so a line is counted once
        per article whatever fails when. On a replicated store the step waits for the
        replicas, which covers the cluster members written before it."""
        state, policy, items = run.state, run.state.policy, run.items
        taught: list[bytes] = []
        if run.register and run.teach:
            articles = [it.article for it in items]
            lines = [it.lines for it in items]
            probes = [it.probe for it in items]
            decided = {k: items[k].decided for k in decision_order(items)}
            taught = lines_taught(
                policy,
                articles,
                lines,
                probes,
                decided,
                copied(state.records.values(), decided, articles),
                resembled(policy, state.records, decided, articles, lines, probes),
            )
        if run.stored:
            copies = [
                (v.cluster, seq, run.now)
                for seq, v in state.verdicts.items()
                if seq in run.stored and v.verdict != "original"
            ]
            await self.index.add_members(state.ns, copies)
            await self.index.put_verdicts(state.ns, run.stored, taught, policy.boilerplate_lines)
        elif taught:
            await self.index.add_lines(state.ns, taught, policy.boilerplate_lines)

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

    async def _whole_probes(self, run: Run) -> None:
        """What a source repeats is learned over time: an article sketched without lines it
        repeats may copy an earlier one registered whole, before they were learned, whose
        buckets it does not share. Each such article that matched nothing also looks up (reads
        only: registering those buckets would make every page of a site a candidate of every
        other) the MinHash bands of its whole text; the earlier articles found are judged with
        the rest (:func:`judge`: the same lines left out of both, or the whole texts)."""
        todo = [it for it in run.items if it.found is not None and it.left_out]
        if not todo:
            return
        state = run.state
        policy, bands = state.policy, state.policy.bands_rows[0]
        wholes = zip(todo, prepare(policy, [it.article for it in todo]), strict=True)
        longs = [(it, w) for it, w in wholes if w.kind is Kind.LONG]
        # concurrent reads, a bounded number at a time: one wait per group, not per article,
        # and never more connections than a client's pool holds (redis-py's asyncio pool
        # raises past its max_connections, 100 by default, rather than waiting)
        looked: list[tuple[int | None, tuple[int, ...]]] = []
        for lo in range(0, len(longs), _CONCURRENT_LOOKUPS):
            looked += await asyncio.gather(
                *(
                    self.index.lookup(
                        state.ns, w.content, w.buckets[:bands], live_after=run.live_after
                    )
                    for _, w in longs[lo : lo + _CONCURRENT_LOOKUPS]
                )
            )
        more: list[tuple[InFlight, Probe]] = []
        for (it, _), (_, seqs) in zip(longs, looked, strict=True):
            probe = it.probe
            new = set(seqs) - set(probe.candidates)
            if run.register:
                new = {s for s in new if s < probe.seq}
            if new:
                candidates = tuple(sorted(new | set(probe.candidates)))
                more.append((it, replace(probe, candidates=candidates)))
        await self._load_records(state, {s for _, p in more for s in p.candidates})
        await self._views(state, {s for _, p in more for s in p.candidates})
        for it, probe in more:
            it.found = self._matches(run, it, probe)

    async def _passage_probes(self, run: Run) -> None:
        """An earlier article that lies inside a longer new text shares few of its bands (an
        article of 150 words after 300 of new text: Jaccard about a third), but its smallest
        winnowed passage is among the new text's (:mod:`neardup.sketch.winnow`). Each long
        article that matched nothing reads (only) the buckets of its smallest passages; the
        earlier articles found are judged with the rest and kept as related, with their
        direction (:func:`neardup.stream.engine.judge.inside`), never as copies: a copy's
        cluster is what its registered buckets find (:meth:`_step` decides an undecided one
        again from them alone)."""
        items, state = run.items, run.state
        todo = [
            k
            for k, it in enumerate(items)
            if it.found is not None and not it.found.matches and it.prepared.passages
        ]
        if not todo:
            return
        wanted: dict[int, list[int]] = {}  # bucket -> the articles that read it
        groups: list[set[int]] = [set()]
        for k in todo:  # a few reads for the batch, each of a bounded number of buckets
            passages = items[k].prepared.passages
            if len(groups[-1]) + len(passages) > _PASSAGE_LOOKUP_BUCKETS:
                groups.append(set())
            groups[-1].update(passages)
            for b in passages:
                wanted.setdefault(b, []).append(k)
        content = items[todo[0]].prepared.content  # any: only the buckets' articles are read
        looked = await asyncio.gather(
            *(
                self.index.lookup(state.ns, content, sorted(g), live_after=run.live_after)
                for g in groups
            )
        )
        found_seqs = {s for _, seqs in looked for s in seqs}
        # whose passages found it: the batch's own articles' say (each finds itself), the
        # records' buckets say for the others
        own = {it.probe.seq: k for k, it in enumerate(items)} if run.register else {}
        await self._load_records(state, found_seqs - own.keys())
        leads: dict[int, set[int]] = {}
        read = wanted.keys()
        for s in found_seqs:
            rec = state.records.get(s)
            if s in own:
                buckets: Sequence[int] = items[own[s]].prepared.passages[:PASSAGES]
            else:
                buckets = rec.buckets if rec is not None else ()
            for b in read & buckets:  # the few of its buckets read (a set operation, in C)
                for k in wanted[b]:
                    leads.setdefault(k, set()).add(s)
        more: list[tuple[InFlight, Probe]] = []
        for k, seqs in leads.items():
            probe = items[k].probe
            new = seqs - set(probe.candidates) - {probe.exact_seq, probe.seq}
            if run.register:
                new = {s for s in new if s < probe.seq}
            if new:
                more.append(
                    (items[k], replace(probe, exact_seq=None, candidates=tuple(sorted(new))))
                )
        if not more:
            return
        await self._load_records(state, {s for _, p in more for s in p.candidates})
        await self._views(state, {s for it, p in more if it.learned for s in p.candidates})
        for it, probe in more:
            got = self._matches(run, it, probe)
            extra = [*got.matches, *got.related]
            if extra and it.found is not None:
                related = [*it.found.related, *extra]
                related.sort(key=lambda m: (-m.similarity, m.seq))
                it.found = Found(it.found.matches, related)

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
