"""The chart's Grafana dashboard and Prometheus alerts, checked offline against the real metrics.

A dashboard or an alert that names a metric the worker does not export shows nothing and never
fires, silently. So every PromQL expression the chart ships (dashboard panels, template variables,
PrometheusRule alerts) may name only series that a real ``neardup.stream.worker.metrics.Metrics``
registry exposes (as ``/metrics`` renders them: ``_total`` counters, ``_bucket``/``_sum``/``_count``
histograms) or the one documented outside metric, kafka-exporter's ``kafka_consumergroup_lag``; and
it may group only by labels those series have or that a Kubernetes scrape attaches.

Expressions are checked by a small lexer (balanced brackets, metric names, grouping labels) and,
where an interpreter with the ``promql-parser`` package is at hand (this venv or ``.venv-helm``),
also parsed by it, whose selectors must agree with the lexer. The chart is rendered by helm's own
renderer through ``test_deploy``'s helpers; the dashboard ConfigMap is validated against the
Kubernetes schemas with ``deploy/deploy_check.py``'s checks, the PrometheusRule (a CRD, like the
ServiceMonitor) structurally here.
"""

from __future__ import annotations

import functools
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.metrics import MetricWrapperBase
from prometheus_client.parser import text_string_to_metric_families
from test_deploy import HELM_PY, ROOT, _require_helm_venv, kinds, manifests, one, refused

from neardup.stream.worker.metrics import Metrics

CHART = ROOT / "helm" / "neardup"
DASHBOARD = CHART / "dashboards" / "neardup.json"
ENABLED = {"dashboard": {"enabled": True}, "prometheusRule": {"enabled": True}}

# Outside metrics the chart may name, with their labels: Kafka consumer lag is not a worker metric.
KAFKA_EXPORTER = {"kafka_consumergroup_lag": {"consumergroup", "topic", "partition"}}
# Labels a Kubernetes scrape (ServiceMonitor or pod annotations) attaches to every series.
TARGET_LABELS = {"namespace", "pod", "job", "instance", "container", "service", "endpoint"}
# Grafana's own variables, and a value to put in their place before parsing.
GRAFANA_BUILTINS = {"__rate_interval": "5m", "__interval": "1m", "__range": "1h"}

ALERTS = {
    "NeardupDeadLettersGrowing",
    "NeardupRedisUnavailable",
    "NeardupConsumerLagGrowing",
    "NeardupWorkersNotReady",
}
# Panels the dashboard must have: title -> metrics its queries must read.
EXPECTED_PANELS = {
    "Articles/s": {"neardup_articles_in_total"},
    "Verdict mix": {"neardup_verdicts_total"},
    "Dead letters by reason": {"neardup_dead_letters_total"},
    "Batch latency": {"neardup_batch_seconds_bucket"},
    "Redis round trips and retries": {
        "neardup_redis_round_trips_total",
        "neardup_index_retries_total",
    },
    "Candidates per article": {"neardup_candidates_per_article_bucket"},
    "Workers ready": {"neardup_ready"},
    "Consumer lag": {"kafka_consumergroup_lag"},
}


# --- what the worker exports ---------------------------------------------------------------------


@functools.cache
def exposed_series() -> dict[str, frozenset[str]]:
    """Series name -> label names, as a worker's /metrics renders them.

    Labelled metrics expose nothing until a child exists, so one child of each is made first."""
    metrics = Metrics()
    for metric in vars(metrics).values():
        labelnames = getattr(metric, "_labelnames", ())
        if isinstance(metric, MetricWrapperBase) and labelnames:
            metric.labels(*["x"] * len(labelnames))
    text = metrics.render().decode()
    series: dict[str, set[str]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            series.setdefault(sample.name, set()).update(sample.labels)
    return {name: frozenset(labels) for name, labels in series.items()}


def known_series() -> dict[str, frozenset[str]]:
    return {**exposed_series(), **{k: frozenset(v) for k, v in KAFKA_EXPORTER.items()}}


def test_registry_exposes_what_the_chart_relies_on() -> None:
    series = exposed_series()
    assert "neardup_articles_in_total" in series
    assert {"neardup_batch_seconds_bucket", "neardup_batch_seconds_count"} <= series.keys()
    assert "verdict" in series["neardup_verdicts_total"]
    assert "reason" in series["neardup_dead_letters_total"]
    assert "le" in series["neardup_candidates_per_article_bucket"]
    assert "neardup_ready" in series


# --- PromQL, lexed ------------------------------------------------------------------------------

_KEYWORDS = {"and", "or", "unless", "by", "without", "on", "ignoring", "group_left"}
_KEYWORDS |= {"group_right", "bool", "offset", "inf", "nan"}
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'')
_GROUPING = re.compile(r"\b(by|without|on|ignoring|group_left|group_right)\s*\(([^()]*)\)")
_WORD = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")


def grafana_to_promql(expr: str) -> str:
    """Grafana's $__rate_interval and friends replaced by durations (variables in strings stay)."""
    for name, value in GRAFANA_BUILTINS.items():
        expr = expr.replace(f"${{{name}}}", value).replace(f"${name}", value)
    return expr


def check_balanced(expr: str) -> None:
    pairs = {")": "(", "]": "[", "}": "{"}
    stack: list[str] = []
    for ch in _STRING.sub('""', expr):
        if ch in "([{":
            stack.append(ch)
        elif ch in pairs:
            assert stack and stack.pop() == pairs[ch], f"unbalanced {ch!r} in {expr!r}"
    assert not stack, f"unclosed {stack} in {expr!r}"


def lex(expr: str) -> tuple[set[str], set[str]]:
    """(metric names, grouping labels) of a PromQL expression; asserts balanced brackets."""
    check_balanced(expr)
    s = _STRING.sub('""', expr)
    s = re.sub(r"\{[^{}]*\}", " ", s)  # label matchers
    s = re.sub(r"\[[^\[\]]*\]", " ", s)  # ranges and subqueries
    grouping: set[str] = set()
    for m in _GROUPING.finditer(s):
        grouping |= {label.strip() for label in m.group(2).split(",") if label.strip()}
    s = _GROUPING.sub(r" \1 ", s)
    assert "$" not in s, f"a Grafana variable outside a string or range: {expr!r}"
    names: set[str] = set()
    for m in _WORD.finditer(s):
        word, rest = m.group(), s[m.end() :].lstrip()
        before = s[m.start() - 1] if m.start() else " "
        if word in _KEYWORDS or before.isdigit() or before == ".":
            continue  # an operator, a modifier, a number's exponent or a duration's unit
        if rest.startswith("(") or re.match(r"(by|without)\b", rest):
            continue  # a function or an aggregation
        names.add(word)
    return names, grouping


def test_lexer_finds_selectors_and_grouping() -> None:
    names, grouping = lex(
        'histogram_quantile(0.99, sum by (le, pod) (rate(a_bucket{x="y(", z=~"$pod"}[5m])))'
        " / on (pod) group_left sum(b_total offset 1m) without (verdict) > 1e3"
    )
    assert names == {"a_bucket", "b_total"}
    assert grouping == {"le", "pod", "verdict"}
    with pytest.raises(AssertionError):
        lex("sum(rate(x[5m])")


# --- PromQL, parsed (when a parser is at hand) --------------------------------------------------

_PARSE = """
import json, sys
import promql_parser as p
out = []
for expr in json.load(sys.stdin):
    names = []
    def visit(node):
        if type(node).__name__ == "VectorSelector" and node.name:
            names.append(node.name)
    try:
        p.walk(p.parse(expr), visit)
        out.append({"names": sorted(set(names))})
    except Exception as exc:
        out.append({"error": str(exc)})
print(json.dumps(out))
"""


@functools.cache
def promql_python() -> str | None:
    """An interpreter that can import promql_parser (PyPI's promql-parser), or None."""
    for python in (sys.executable, str(HELM_PY)):
        if not Path(python).exists():
            continue
        probe = subprocess.run(
            [python, "-c", "import promql_parser"], capture_output=True, check=False
        )
        if probe.returncode == 0:
            return python
    return None


def check_promql(exprs: list[str]) -> None:
    """Every expression lexes to known metrics and grouping labels; parsed too if possible."""
    known = known_series()
    for expr in exprs:
        names, grouping = lex(expr)
        assert names, f"no metric in {expr!r}"
        assert names <= known.keys(), f"unknown metrics {names - known.keys()} in {expr!r}"
        labels = TARGET_LABELS.union(*(known[n] for n in names))
        assert grouping <= labels, f"{expr!r} groups by labels its series lack: {grouping - labels}"
    python = promql_python()
    if python is None:
        return  # the lexer's checks above are what there is
    proc = subprocess.run(
        [python, "-c", _PARSE],
        input=json.dumps(exprs),
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    for expr, result in zip(exprs, json.loads(proc.stdout), strict=True):
        assert "error" not in result, f"promql-parser refuses {expr!r}: {result['error']}"
        assert set(result["names"]) == lex(expr)[0], expr


# --- the dashboard ------------------------------------------------------------------------------


def dashboard() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(DASHBOARD.read_text())
    return loaded


def panels(board: dict[str, Any]) -> list[dict[str, Any]]:
    """Every panel, with those inside collapsed rows."""
    out: list[dict[str, Any]] = []
    for panel in board["panels"]:
        out.append(panel)
        out.extend(panel.get("panels", []))
    return out


def panel_exprs(panel: dict[str, Any]) -> list[str]:
    return [grafana_to_promql(t["expr"]) for t in panel.get("targets", [])]


def variables(board: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {v["name"]: v for v in board["templating"]["list"]}


def variable_query(var: dict[str, Any]) -> str:
    query = var["query"]
    return str(query["query"] if isinstance(query, dict) else query)


def test_dashboard_is_grafana_dashboard_json() -> None:
    board = dashboard()
    assert 36 <= board["schemaVersion"] <= 41
    assert re.fullmatch(r"[a-zA-Z0-9_-]{1,40}", board["uid"])
    assert board["title"] and board["id"] is None, "a provisioned dashboard carries no id"
    ids = [p["id"] for p in panels(board)]
    assert len(ids) == len(set(ids)), "panel ids must be unique"
    cells: set[tuple[int, int]] = set()
    for panel in panels(board):
        pos = panel["gridPos"]
        assert {"h", "w", "x", "y"} <= pos.keys(), panel["title"]
        assert pos["w"] > 0 and pos["h"] > 0 and pos["x"] + pos["w"] <= 24, panel["title"]
        mine = {
            (x, y)
            for x in range(pos["x"], pos["x"] + pos["w"])
            for y in range(pos["y"], pos["y"] + pos["h"])
        }
        assert not cells & mine, f"{panel['title']} overlaps another panel"
        cells |= mine
        if panel["type"] == "row":
            continue
        assert panel["type"] in {"timeseries", "stat", "gauge", "bargauge", "table"}
        assert panel["datasource"] == {"type": "prometheus", "uid": "${datasource}"}
        assert panel["targets"] and panel.get("description"), panel["title"]
        refs = [t["refId"] for t in panel["targets"]]
        assert len(refs) == len(set(refs)), panel["title"]
        for target in panel["targets"]:
            assert target["datasource"] == panel["datasource"]


def test_dashboard_variables() -> None:
    vs = variables(dashboard())
    assert vs["datasource"]["type"] == "datasource" and vs["datasource"]["query"] == "prometheus"
    for name in ("namespace", "pod"):
        assert vs[name]["type"] == "query"
        assert vs[name]["datasource"]["uid"] == "${datasource}"
        assert re.fullmatch(rf"label_values\(.+, {name}\)", variable_query(vs[name]))
    assert vs["pod"]["includeAll"] and vs["pod"]["allValue"] == ".*"
    assert {vs["consumergroup"]["type"], vs["topic"]["type"]} == {"textbox"}
    # every variable a query uses is defined (or Grafana's own)
    text = json.dumps([p.get("targets", []) for p in panels(dashboard())])
    used = set(re.findall(r"\$\{?(\w+)", text))
    assert used <= vs.keys() | GRAFANA_BUILTINS.keys(), used - vs.keys()


def test_dashboard_has_the_expected_panels() -> None:
    by_title: dict[str, list[str]] = {}
    for panel in panels(dashboard()):
        by_title.setdefault(panel["title"], []).extend(panel_exprs(panel))
    for title, metrics in EXPECTED_PANELS.items():
        assert title in by_title, f"no panel {title!r}"
        named = set().union(*(lex(e)[0] for e in by_title[title]))
        assert metrics <= named, f"{title!r} reads {named}, not {metrics}"
    verdicts = by_title["Verdict mix"]
    assert any("by (verdict)" in e for e in verdicts)
    assert any("by (reason)" in e for e in by_title["Dead letters by reason"])
    latency = " ".join(by_title["Batch latency"])
    assert "histogram_quantile(0.5," in latency and "histogram_quantile(0.99," in latency


def test_consumer_lag_panels_say_where_lag_comes_from() -> None:
    lag = [p for p in panels(dashboard()) if "kafka_consumergroup_lag" in json.dumps(p)]
    assert lag
    for panel in lag:
        assert "kafka-exporter" in panel["description"]
        for expr in panel_exprs(panel):
            assert 'consumergroup="$consumergroup"' in expr and 'topic="$topic"' in expr


def test_dashboard_expressions_name_only_real_metrics() -> None:
    board = dashboard()
    exprs = [e for p in panels(board) for e in panel_exprs(p)]
    for var in variables(board).values():
        if var["type"] == "query":
            m = re.fullmatch(r"label_values\((.+), *\w+\)", variable_query(var))
            assert m, variable_query(var)
            exprs.append(m.group(1))
    check_promql(exprs)
    # every neardup_* selector of a panel follows the namespace and pod variables
    for panel in panels(board):
        for expr in panel_exprs(panel):
            for selector in re.findall(r"neardup_\w+(\{[^}]*\})?", expr):
                assert selector == '{namespace="$namespace", pod=~"$pod"}', panel["title"]


# --- the dashboard ConfigMap --------------------------------------------------------------------


def dashboard_configmaps(docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [d for d in docs if d["kind"] == "ConfigMap" and "neardup.json" in d.get("data", {})]


def test_dashboard_configmap_only_when_enabled() -> None:
    docs = manifests()
    assert not dashboard_configmaps(docs), "off by default"
    assert "PrometheusRule" not in kinds(docs), "off by default"
    (cm,) = dashboard_configmaps(manifests(metrics={"dashboard": {"enabled": True}}))
    assert cm["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert cm["metadata"]["name"] == "neardup-dashboard"
    shipped = dashboard()
    rendered = json.loads(cm["data"]["neardup.json"])
    assert rendered["panels"] == shipped["panels"] and rendered["uid"] == shipped["uid"]


def test_dashboard_configmap_label_namespace_and_kafka_defaults() -> None:
    docs = manifests(
        kafka={"consumerGroup": "dedup-news", "topics": {"input": "news"}},
        metrics={
            "dashboard": {
                "enabled": True,
                "namespace": "monitoring",
                "sidecarLabel": "grafana.example.com/dashboard",
                "sidecarLabelValue": "neardup",
                "annotations": {"grafana_folder": "Streaming"},
            }
        },
    )
    (cm,) = dashboard_configmaps(docs)
    meta = cm["metadata"]
    assert meta["labels"]["grafana.example.com/dashboard"] == "neardup"
    assert "grafana_dashboard" not in meta["labels"]
    assert meta["namespace"] == "monitoring"
    assert meta["annotations"] == {"grafana_folder": "Streaming"}
    vs = variables(json.loads(cm["data"]["neardup.json"]))
    for name, value in (("consumergroup", "dedup-news"), ("topic", "news")):
        assert vs[name]["query"] == value and vs[name]["current"]["value"] == value


_VALIDATE = """
import json, sys
sys.path.insert(0, "deploy")
import deploy_check as dc
values = json.loads(sys.argv[1])
docs, _ = dc.render(values)
problems = dc.Problems()
core = [d for d in docs if d["kind"] != "PrometheusRule"]
dc.validate_kubernetes(core, "[observability]", problems)
dc.check_references(docs, "[observability]", problems)
dc.check_secrets(docs, "[observability]", problems)
import helm_python
with dc.quiet_native_stderr():
    rep = helm_python.lint(str(dc.CHART), values, strict=True)
problems += [m["error"] for m in rep.get("messages", []) if m.get("severity", 0) >= 2]
print(json.dumps({"kinds": sorted({d["kind"] for d in docs}), "problems": problems}))
"""


def test_enabled_chart_lints_and_validates_against_kubernetes() -> None:
    """The dashboard ConfigMap against the Kubernetes schemas (strict, oldest and newest), the
    chart's cross-reference and secret checks, and helm lint --strict, all with both enabled."""
    _require_helm_venv()  # fails with the install hint when the toolchain is missing
    proc = subprocess.run(
        [str(HELM_PY), "-c", _VALIDATE, json.dumps({"metrics": ENABLED})],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
        timeout=240,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout)
    assert {"ConfigMap", "PrometheusRule"} <= set(out["kinds"])
    assert out["problems"] == []


# --- the PrometheusRule -------------------------------------------------------------------------


def rules(**values: Any) -> dict[str, dict[str, Any]]:
    docs = manifests(metrics={"prometheusRule": {"enabled": True, **values}})
    rule = one(docs, "PrometheusRule")
    assert rule["apiVersion"] == "monitoring.coreos.com/v1"
    (group,) = rule["spec"]["groups"]
    return {r["alert"]: r for r in group["rules"]}


def test_prometheus_rule_only_when_enabled() -> None:
    assert "PrometheusRule" not in kinds(manifests(metrics={"dashboard": {"enabled": True}}))
    docs = manifests(
        metrics={
            "prometheusRule": {
                "enabled": True,
                "namespace": "monitoring",
                "labels": {"release": "kube-prometheus-stack"},
            }
        }
    )
    meta = one(docs, "PrometheusRule")["metadata"]
    assert meta["namespace"] == "monitoring"
    assert meta["labels"]["release"] == "kube-prometheus-stack"
    assert meta["labels"]["app.kubernetes.io/instance"] == "neardup"


def test_alerts_are_complete() -> None:
    found = rules()
    assert found.keys() == ALERTS
    for name, rule in found.items():
        assert set(rule) <= {"alert", "expr", "for", "labels", "annotations"}, name
        assert re.fullmatch(r"([0-9]+(ms|s|m|h|d))+", rule["for"]), name
        assert rule["labels"]["severity"] in {"critical", "warning", "info"}, name
        notes = rule["annotations"]
        assert {"summary", "description", "runbook"} <= notes.keys(), name
        assert "runbook_url" not in notes, "only when metrics.prometheusRule.runbookUrl is set"
        # Prometheus' own templates reach Prometheus untouched by helm
        assert "{{ $labels." in notes["description"] or "{{ $value" in notes["description"]
    linked = rules(runbookUrl="https://runbooks.example.com/neardup/")
    for name, rule in linked.items():
        url = rule["annotations"]["runbook_url"]
        assert url == f"https://runbooks.example.com/neardup#{name.lower()}"


def test_alert_expressions_name_only_real_metrics() -> None:
    found = rules()
    check_promql([r["expr"] for r in found.values()])
    assert "neardup_dead_letters_total" in found["NeardupDeadLettersGrowing"]["expr"]
    assert "neardup_index_retries_total" in found["NeardupRedisUnavailable"]["expr"]
    assert "kafka_consumergroup_lag" in found["NeardupConsumerLagGrowing"]["expr"]
    assert "neardup_ready" in found["NeardupWorkersNotReady"]["expr"]
    # every neardup_* selector is narrowed to this release's namespace
    for rule in found.values():
        for selector in re.findall(r"neardup_\w+(\{[^}]*\})?", rule["expr"]):
            assert selector == '{namespace="neardup"}', rule["alert"]


def test_alert_thresholds_come_from_values() -> None:
    found = rules(
        rateWindow="10m",
        deadLetters={"ratePerSecond": 0.5, "for": "20m", "severity": "critical"},
        consumerLag={"threshold": 500, "window": "30m"},
        redisUnavailable={"for": "1m"},
    )
    dead = found["NeardupDeadLettersGrowing"]
    assert "[10m]" in dead["expr"] and re.search(r">\s*0\.5$", dead["expr"])
    assert (dead["for"], dead["labels"]["severity"]) == ("20m", "critical")
    lag = found["NeardupConsumerLagGrowing"]["expr"]
    assert re.search(r"\) > 500\n", lag) and "deriv(" in lag and "[30m:1m]" in lag
    assert 'consumergroup="neardup", topic="articles"' in lag
    assert found["NeardupRedisUnavailable"]["for"] == "1m"
    check_promql([r["expr"] for r in found.values()])


def test_alerts_follow_the_release_kafka_and_metric_selector() -> None:
    docs = manifests(
        kafka={"consumerGroup": "dedup-news", "topics": {"input": "news"}},
        metrics={"prometheusRule": {"enabled": True, "metricSelector": 'job="neardup-workers"'}},
    )
    (group,) = one(docs, "PrometheusRule")["spec"]["groups"]
    found = {r["alert"]: r["expr"] for r in group["rules"]}
    assert (
        'kafka_consumergroup_lag{consumergroup="dedup-news", topic="news"}'
        in (found["NeardupConsumerLagGrowing"])
    )
    assert 'neardup_ready{job="neardup-workers"}' in found["NeardupWorkersNotReady"]
    assert 'namespace="neardup"' not in found["NeardupRedisUnavailable"]


def test_workers_not_ready_counts_against_the_charts_floor() -> None:
    def expr(**values: Any) -> str:
        docs = manifests(**values)
        (group,) = one(docs, "PrometheusRule")["spec"]["groups"]
        (rule,) = [r for r in group["rules"] if r["alert"] == "NeardupWorkersNotReady"]
        return str(rule["expr"])

    on = {"prometheusRule": {"enabled": True}}
    default = expr(metrics=on)
    assert "== 0" in default and ") < 2" in default and "absent(neardup_ready" in default
    hpa = expr(metrics=on, autoscaling={"hpa": {"enabled": True, "minReplicas": 3}})
    assert ") < 3" in hpa
    # KEDA may scale to zero: then no count is expected, only unready workers alert
    keda = expr(metrics=on, autoscaling={"keda": {"enabled": True, "minReplicaCount": 0}})
    assert "== 0" in keda and "<" not in keda and "absent" not in keda
    pinned = {"prometheusRule": {"enabled": True, "workersNotReady": {"minReady": 1}}}
    assert ") < 1" in expr(metrics=pinned)
    check_promql([default, hpa, keda])


def test_bad_observability_values_are_refused() -> None:
    assert "additional properties" in refused(metrics={"dashboard": {"enabeld": True}})
    assert "additional properties" in refused(metrics={"alerts": {"enabled": True}})
    bad_for = {"prometheusRule": {"enabled": True, "deadLetters": {"for": "ten minutes"}}}
    assert "does not match" in refused(metrics=bad_for)
    bad_selector = {"prometheusRule": {"metricSelector": "namespace=neardup"}}
    assert "does not match" in refused(metrics=bad_selector)
    assert refused(metrics={"prometheusRule": {"consumerLag": {"threshold": -1}}})


def test_check_refuses_unknown_metrics_and_labels() -> None:
    """The check itself: a plausible but wrong name (the counter is neardup_index_retries) or a
    label the series lack must fail."""
    with pytest.raises(AssertionError, match="unknown metrics"):
        check_promql(["sum(rate(neardup_retries_total[5m]))"])
    with pytest.raises(AssertionError, match="unknown metrics"):
        check_promql(["sum(rate(neardup_articles_in[5m]))"])
    with pytest.raises(AssertionError, match="groups by labels"):
        check_promql(["sum by (kind) (rate(neardup_verdicts_total[5m]))"])
