// The originality check page: calls the worker's JSON API (POST check, GET articles/{id},
// GET clusters/{id}) on the origin that served it. Paths are relative, so the page also works
// behind a proxy that mounts the worker under a prefix.
"use strict";

(function () {
  const PAGE_SIZE = 50;
  const TOKEN_KEY = "neardup.token";
  const NAMESPACE_KEY = "neardup.namespace";

  const $ = (id) => document.getElementById(id);

  const VERDICT_TEXT = {
    original: "No earlier article copies it: an original.",
    near_duplicate: "A near copy of an earlier article.",
    duplicate: "The same text as an earlier article.",
  };
  const METHOD_TEXT = {
    new: "new (no earlier match)",
    exact: "exact (the same normalised text)",
    jaccard: "jaccard (shared word sequences)",
    containment: "containment (one text inside the other)",
    edit: "edit (short text, edit similarity)",
  };
  const DIRECTION_TEXT = {
    excerpt: "excerpt: your text lies inside the earlier one",
    embeds: "embeds: your text contains the earlier one",
  };
  // a related text with a direction: one lies inside the other (its similarity is the share
  // of the smaller text found in the larger)
  const RELATED_DIRECTION_TEXT = {
    excerpt: (share) => share + " of your text lies inside it",
    embeds: (share) => "your text holds " + share + " of it",
  };

  // ------------------------------------------------------------------ the API

  class ApiError extends Error {
    constructor(status, reason, detail) {
      super(reason);
      this.status = status;
      this.reason = reason;
      this.detail = detail;
    }
  }

  function headers(json) {
    const h = { Accept: "application/json" };
    if (json) h["Content-Type"] = "application/json";
    const token = $("token").value.trim();
    if (token) h.Authorization = "Bearer " + token;
    return h;
  }

  async function api(method, path, body) {
    let response;
    try {
      response = await fetch(path, {
        method,
        headers: headers(body !== undefined),
        body: body === undefined ? undefined : JSON.stringify(body),
        cache: "no-store",
      });
    } catch (err) {
      throw new ApiError(0, "unreachable", String(err && err.message ? err.message : err));
    }
    let data = null;
    const text = await response.text();
    if (text) {
      try {
        data = JSON.parse(text);
      } catch (_) {
        data = null;
      }
    }
    if (!response.ok) {
      const reason = data && data.error ? String(data.error) : "http_" + response.status;
      throw new ApiError(response.status, reason, data ? data.detail ?? data : text);
    }
    if (data === null) throw new ApiError(response.status, "invalid_response", text.slice(0, 200));
    return data;
  }

  function query(params) {
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(params)) {
      if (v !== undefined && v !== null && v !== "") q.set(k, String(v));
    }
    const s = q.toString();
    return s ? "?" + s : "";
  }

  function explain(err) {
    if (!(err instanceof ApiError)) return "Something went wrong: " + String(err);
    const detail = err.detail === undefined || err.detail === null ? "" : describe(err.detail);
    const tail = detail ? " (" + detail + ")" : "";
    switch (err.status) {
      case 0:
        return "The service could not be reached" + tail + ".";
      case 401:
        return "The service asks for a token: enter the check token and try again.";
      case 413:
        return "The text is too long for the service" + tail + ".";
      case 404:
        return "Not found" + tail + ".";
      case 503:
        return "The index is unavailable right now; try again shortly" + tail + ".";
      default:
        return "The service refused it: " + err.reason + tail + ".";
    }
  }

  function describe(detail) {
    if (typeof detail === "string") return detail;
    if (detail && typeof detail === "object") {
      if (detail.limit_bytes !== undefined) return "limit " + detail.limit_bytes + " bytes";
      return JSON.stringify(detail);
    }
    return String(detail);
  }

  function showError(box, message) {
    box.textContent = message;
    box.hidden = !message;
  }

  // ------------------------------------------------------------------ small renderers

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === "class") node.className = v;
      else if (k.startsWith("data-")) node.setAttribute(k, v);
      else node[k] = v;
    }
    for (const c of children) if (c !== null && c !== undefined) node.append(c);
    return node;
  }

  function percent(x) {
    return typeof x === "number" ? (x * 100).toFixed(1) + "%" : "—";
  }

  function formatTime(value) {
    if (value === null || value === undefined || value === "") return el("span", {}, "—");
    let date = null;
    if (typeof value === "number") date = new Date(value > 1e12 ? value : value * 1000);
    else if (/^\d+(\.\d+)?$/.test(String(value))) date = new Date(Number(value) * 1000);
    else date = new Date(String(value));
    if (Number.isNaN(date.getTime())) return el("span", {}, String(value));
    const iso = date.toISOString();
    return el("time", { dateTime: iso }, iso.replace("T", " ").replace(/\.\d+Z$/, " UTC"));
  }

  function changeText(c) {
    const kind = c.kind ? c.kind + ": " : "";
    if (c.earlier === null || c.earlier === undefined) return kind + (c.now ?? "—") + " (added)";
    if (c.now === null || c.now === undefined) return kind + c.earlier + " (left out)";
    return kind + c.earlier + " → " + c.now;
  }

  function clusterLink(articleId, namespace, clusterId) {
    const link = el("a", { href: "#lookup-heading", class: "cluster-link" }, "its cluster");
    link.addEventListener("click", (event) => {
      event.preventDefault();
      openClusterOf(articleId, namespace, clusterId);
    });
    return link;
  }

  // ------------------------------------------------------------------ highlighting

  // Evidence offsets are Python string indices: code points. Array.from walks a string by code
  // points (a JavaScript index counts UTF-16 units, two for an emoji or a rare CJK character).
  function renderHighlighted(container, text, spans) {
    container.replaceChildren();
    const chars = Array.from(text);
    const ordered = spans
      .filter((s) => Number.isInteger(s.start) && Number.isInteger(s.end) && s.end > s.start)
      .sort((a, b) => a.start - b.start || a.end - b.end);
    let pos = 0;
    for (const span of ordered) {
      const start = Math.max(span.start, pos);
      const end = Math.min(span.end, chars.length);
      if (end <= start) continue;
      if (start > pos) container.append(chars.slice(pos, start).join(""));
      const mark = el(
        "mark",
        {
          "data-span": String(span.index),
          tabIndex: 0,
          title: "Shared passage " + (span.index + 1) + " (" + percent(span.share) + " shared)",
        },
        chars.slice(start, end).join(""),
      );
      container.append(mark);
      pos = end;
    }
    if (pos < chars.length) container.append(chars.slice(pos).join(""));
  }

  function twins(mark) {
    return $("compare").querySelectorAll('mark[data-span="' + mark.dataset.span + '"]');
  }

  function setTwin(event, on) {
    const mark = event.target.closest && event.target.closest("mark[data-span]");
    if (!mark) return;
    for (const m of twins(mark)) m.classList.toggle("twin", on);
  }

  function jumpToTwin(event) {
    const mark = event.target.closest && event.target.closest("mark[data-span]");
    if (!mark) return;
    if (event.type === "keydown" && event.key !== "Enter" && event.key !== " ") return;
    event.preventDefault();
    const pane = mark.closest(".text");
    for (const m of twins(mark)) {
      if (m.closest(".text") !== pane) {
        m.scrollIntoView({ block: "nearest" });
        m.focus({ preventScroll: true });
        return;
      }
    }
  }

  function wireCompare() {
    const box = $("compare");
    box.addEventListener("mouseover", (e) => setTwin(e, true));
    box.addEventListener("mouseout", (e) => setTwin(e, false));
    box.addEventListener("focusin", (e) => setTwin(e, true));
    box.addEventListener("focusout", (e) => setTwin(e, false));
    box.addEventListener("click", jumpToTwin);
    box.addEventListener("keydown", jumpToTwin);
  }

  async function showComparison(verdict, text) {
    const block = $("compare-block");
    const evidence = Array.isArray(verdict.evidence) ? verdict.evidence : [];
    if (!verdict.duplicate_of) {
      block.hidden = true;
      $("text-now").replaceChildren();
      $("text-earlier").replaceChildren();
      return;
    }
    const now = evidence.map((s, i) => ({ start: s.start, end: s.end, share: s.share, index: i }));
    const earlier = evidence.map((s, i) => ({
      start: s.earlier_start,
      end: s.earlier_end,
      share: s.share,
      index: i,
    }));
    renderHighlighted($("text-now"), text, now);
    $("earlier-id").textContent = verdict.duplicate_of;
    const covered = now.reduce((n, s) => n + Math.max(0, s.end - s.start), 0);
    const length = Array.from(text).length || 1;
    $("compare-summary").textContent = evidence.length
      ? evidence.length +
        (evidence.length === 1 ? " passage" : " passages") +
        " shared, " +
        percent(Math.min(1, covered / length)) +
        " of your text. Hover or focus a highlight to see its twin; Enter jumps to it."
      : "No passage could be singled out.";
    const pane = $("text-earlier");
    pane.replaceChildren(el("p", { class: "help" }, "Loading the earlier text…"));
    block.hidden = false;
    try {
      const path =
        "articles/" + encodeURIComponent(verdict.duplicate_of) + query({ namespace: verdict.namespace });
      const article = await api("GET", path);
      if (typeof article.text === "string") renderHighlighted(pane, article.text, earlier);
      else
        pane.replaceChildren(
          el("p", { class: "help" }, "This namespace does not keep texts: only yours is shown."),
        );
    } catch (err) {
      pane.replaceChildren(el("p", { class: "error" }, explain(err)));
    }
  }

  // ------------------------------------------------------------------ the verdict

  function fact(list, term, value) {
    list.append(el("dt", {}, term), el("dd", {}, value));
  }

  function renderVerdict(v, text) {
    const kind = String(v.verdict);
    const badge = $("verdict");
    badge.textContent = kind;
    badge.className = "verdict verdict-" + kind.replace(/[^a-z_]/g, "");
    $("verdict-summary").textContent = VERDICT_TEXT[kind] || "";

    const facts = $("verdict-facts");
    facts.replaceChildren();
    if (v.duplicate_of) fact(facts, "Copy of", el("code", {}, v.duplicate_of));
    fact(facts, "Similarity", v.similarity === null ? "—" : percent(v.similarity) + " (" + v.similarity + ")");
    fact(facts, "Method", METHOD_TEXT[v.method] || String(v.method));
    if (v.direction) fact(facts, "Direction", DIRECTION_TEXT[v.direction] || String(v.direction));
    if (v.cluster && v.duplicate_of) fact(facts, "Cluster", el("code", {}, v.cluster));
    if (v.namespace) fact(facts, "Namespace", el("code", {}, v.namespace));
    if (v.namespace_known === false) {
      fact(facts, "Note", el("span", { id: "namespace-note" }, v.note || "nothing is indexed in this namespace"));
    }

    const matches = Array.isArray(v.matches) ? v.matches : [];
    $("matches").replaceChildren(
      ...matches.map((m) =>
        el(
          "li",
          { class: "match" },
          el("code", { class: "match-id" }, m.id),
          " — " + percent(m.similarity) + " similar — ",
          clusterLink(m.id, v.namespace, m.id === v.duplicate_of ? v.cluster : null),
        ),
      ),
    );
    $("matches-block").hidden = matches.length === 0;

    const changes = Array.isArray(v.changes) ? v.changes : [];
    $("changes").replaceChildren(...changes.map((c) => el("li", {}, changeText(c))));
    $("changes-block").hidden = changes.length === 0;

    const related = Array.isArray(v.related) ? v.related : [];
    $("related").replaceChildren(
      ...related.map((r) => {
        const says = r.direction ? RELATED_DIRECTION_TEXT[r.direction] : null;
        const li = el(
          "li",
          { class: "related" },
          el("code", {}, r.id),
          says
            ? " — " + says(percent(r.similarity)) + " — "
            : " — " + percent(r.similarity) + " alike — ",
          clusterLink(r.id, v.namespace, null),
        );
        if (r.direction) li.dataset.direction = String(r.direction);
        const differs = Array.isArray(r.changes) ? r.changes : [];
        if (differs.length)
          li.append(el("ul", { class: "changes" }, ...differs.map((c) => el("li", {}, changeText(c)))));
        return li;
      }),
    );
    $("related-block").hidden = related.length === 0;

    $("result").hidden = false;
    return showComparison(v, text);
  }

  async function onCheck(event) {
    event.preventDefault();
    const error = $("check-error");
    const status = $("check-status");
    const button = $("check");
    const text = $("text").value;
    showError(error, "");
    if (!text.trim()) {
      showError(error, "Paste a text to check first.");
      $("text").focus();
      return;
    }
    const body = { text, register: false };
    const ns = $("namespace").value.trim();
    if (ns) body.namespace = ns;
    button.disabled = true;
    status.textContent = "Checking…";
    try {
      const verdict = await api("POST", "check", body);
      status.textContent = "";
      await renderVerdict(verdict, text);
      status.textContent = "Done: " + verdict.verdict + ".";
    } catch (err) {
      status.textContent = "";
      $("result").hidden = true;
      showError(error, explain(err));
    } finally {
      button.disabled = false;
    }
  }

  // ------------------------------------------------------------------ clusters

  const lookup = { cluster: null, namespace: null, offset: 0 };

  async function openClusterOf(articleId, namespace, clusterId) {
    let cluster = clusterId;
    if (!cluster) {
      try {
        const path = "articles/" + encodeURIComponent(articleId) + query({ namespace });
        cluster = (await api("GET", path)).cluster;
      } catch (err) {
        showError($("lookup-error"), explain(err));
        $("lookup-heading").scrollIntoView();
        return;
      }
    }
    $("cluster-id").value = cluster || articleId;
    await loadCluster(cluster || articleId, namespace || $("namespace").value.trim(), 0);
    $("lookup-heading").scrollIntoView();
  }

  async function loadCluster(cluster, namespace, offset) {
    const error = $("lookup-error");
    showError(error, "");
    const path =
      "clusters/" +
      encodeURIComponent(cluster) +
      query({ namespace, offset, limit: PAGE_SIZE });
    let page;
    try {
      page = await api("GET", path);
    } catch (err) {
      $("cluster-block").hidden = true;
      showError(
        error,
        err.status === 404 ? "No cluster " + cluster + " in this namespace." : explain(err),
      );
      return;
    }
    lookup.cluster = cluster;
    lookup.namespace = namespace;
    lookup.offset = offset;
    const members = Array.isArray(page.members) ? page.members : [];
    const summary = $("cluster-summary");
    summary.replaceChildren(
      "Cluster ",
      el("code", {}, String(page.cluster ?? cluster)),
      page.namespace ? " in " : "",
      page.namespace ? el("code", {}, String(page.namespace)) : "",
      ": " + page.size + (page.size === 1 ? " article" : " articles") + ", first seen ",
      formatTime(page.first_seen),
      ", last seen ",
      formatTime(page.last_seen),
      ".",
    );
    $("members-caption").textContent = members.length
      ? "Members " + (offset + 1) + "–" + (offset + members.length) + " of " + page.size
      : "No members on this page";
    $("members")
      .querySelector("tbody")
      .replaceChildren(
        ...members.map((m) => {
          const v = m.verdict && typeof m.verdict === "object" ? m.verdict : null;
          const kind = v ? v.verdict : m.verdict;
          const verdict = kind && v && v.duplicate_of ? kind + " of " + v.duplicate_of : kind;
          return el(
            "tr",
            {},
            el("td", {}, el("code", {}, String(m.id))),
            el("td", {}, m.seq === null || m.seq === undefined ? "—" : String(m.seq)),
            el("td", {}, formatTime(m.registered_at)),
            el("td", {}, verdict ? String(verdict) : "undecided"),
          );
        }),
      );
    $("prev").disabled = offset <= 0;
    $("next").disabled = page.next_offset === null || page.next_offset === undefined;
    $("next").dataset.offset = page.next_offset ?? "";
    $("cluster-block").hidden = false;
  }

  function onLookup(event) {
    event.preventDefault();
    const id = $("cluster-id").value.trim();
    if (!id) {
      showError($("lookup-error"), "Enter a cluster id first.");
      $("cluster-id").focus();
      return;
    }
    loadCluster(id, $("namespace").value.trim(), 0);
  }

  // ------------------------------------------------------------------ start

  function remember(input, key) {
    try {
      input.value = sessionStorage.getItem(key) || "";
      input.addEventListener("input", () => sessionStorage.setItem(key, input.value));
    } catch (_) {
      // storage refused (privacy settings): the field still works for this page
    }
  }

  document.addEventListener("DOMContentLoaded", () => {
    remember($("token"), TOKEN_KEY);
    remember($("namespace"), NAMESPACE_KEY);
    wireCompare();
    $("check-form").addEventListener("submit", onCheck);
    $("lookup-form").addEventListener("submit", onLookup);
    $("prev").addEventListener("click", () =>
      loadCluster(lookup.cluster, lookup.namespace, Math.max(0, lookup.offset - PAGE_SIZE)),
    );
    $("next").addEventListener("click", () => {
      const raw = $("next").dataset.offset;
      const next = Number(raw);
      if (raw !== "" && Number.isInteger(next)) loadCluster(lookup.cluster, lookup.namespace, next);
    });
  });
})();
