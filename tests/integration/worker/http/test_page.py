"""The originality check page in a real headless browser, on a real worker, broker and Redis.

Debian's chromium and chromedriver (``make install`` installs them as root) are driven by
selenium. The test is skipped only where neither is installed and this machine could not install
them (not root, or no apt-get); where it could, a missing browser fails the test, saying so.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from email.message import Message
from pathlib import Path

import pytest
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.remote.webelement import WebElement
from selenium.webdriver.support.ui import WebDriverWait

from harness.data import reuters
from harness.embedded import embedded, own_words, stories
from harness.kafka import Topics, collect, make_topics, produce
from harness.workers import WorkerProc, start_worker

TOKEN = "page-token"
WAIT_S = 15
STATIC = Path(__file__).parents[4] / "stream" / "worker" / "http" / "static"

#: The copied article: a Reuters story whose last sentence the copy rewrites, under a new lead
#: line with emoji. The emoji are two UTF-16 units each in the browser but one character in the
#: verdict's offsets, so a page that sliced by JavaScript string indices would highlight wrong.
ORIGINAL_ID = "r1085"
LAST = 'this is an urgent issue," the coffee analyst said.'
LEAD = "📰 Wire copy 🌍\n"
UNRELATED = (
    "The village fete raised money for a new roof on the church hall, organisers said on "
    "Sunday after counting the takings from the cake stall, the tombola and the dog show, "
    "and they thanked the volunteers who baked, sold raffle tickets and cleared up the field."
)


def _browser_paths() -> tuple[str, str] | None:
    browser = next(
        (p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if p),
        None,
    )
    driver = shutil.which("chromedriver")
    return (browser, driver) if browser and driver else None


@pytest.fixture(scope="module")
def browser() -> Iterator[WebDriver]:
    paths = _browser_paths()
    if paths is None:
        if shutil.which("apt-get") and os.geteuid() == 0:
            pytest.fail("chromium and chromedriver are missing: `make install` installs them")
        pytest.skip("no chromium/chromedriver, and this machine cannot install them")
    binary, chromedriver = paths
    options = webdriver.ChromeOptions()
    options.binary_location = binary
    for arg in (
        "--headless=new",
        "--no-sandbox",  # the tests may run as root in a container
        "--disable-dev-shm-usage",
        "--disable-gpu",
        "--window-size=1280,1000",
        "--no-first-run",
        "--disable-extensions",
    ):
        options.add_argument(arg)
    driver = webdriver.Chrome(options=options, service=Service(executable_path=chromedriver))
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture(scope="module")
def worker(
    redis_url: str, kafka_bootstrap: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Topics, WorkerProc]]:
    tmp = tmp_path_factory.mktemp("page")
    topics = asyncio.run(make_topics(kafka_bootstrap, partitions=1))
    proc = start_worker(
        topics, redis_url, tmp, f"neardup-{uuid.uuid4().hex[:6]}", NEARDUP_CHECK_TOKEN=TOKEN
    )
    try:
        proc.wait_ready()
        yield topics, proc
    finally:
        proc.stop()


def _get(url: str) -> tuple[int, Message, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=5) as r:
            return int(r.status), r.headers, bytes(r.read())
    except urllib.error.HTTPError as e:
        return e.code, e.headers, e.read()


def test_the_page_and_only_its_assets_are_served(worker: tuple[Topics, WorkerProc]) -> None:
    _, proc = worker
    status, headers, body = _get(proc.url("/"))
    assert status == 200
    assert headers["Content-Type"] == "text/html; charset=utf-8"
    assert "script-src 'self'" in headers["Content-Security-Policy"]
    assert b"<h1>Originality check</h1>" in body
    for name, kind in (("check.js", "text/javascript"), ("check.css", "text/css")):
        status, headers, body = _get(proc.url(f"/static/{name}"))
        assert (status, headers["Content-Type"]) == (200, f"{kind}; charset=utf-8")
        assert body == (STATIC / name).read_bytes()
    for bad in ("nope.js", ".hidden", "page.py", "__init__.py"):
        status, headers, body = _get(proc.url(f"/static/{bad}"))
        assert (status, json.loads(body)["error"]) == (404, "not_found"), bad
    for bad in ("..%2Fpage.py", "%2e%2e%2fweb.py", "..%5Cpage.py", "../page.py", "../../README.md"):
        assert _get(proc.url(f"/static/{bad}"))[0] == 404, bad


def _text_of(driver: WebDriver, element: WebElement) -> str:
    return str(driver.execute_script("return arguments[0].textContent", element))


def _marks(driver: WebDriver, pane: str) -> list[str]:
    return [_text_of(driver, m) for m in driver.find_elements(By.CSS_SELECTOR, f"#{pane} mark")]


def _check(driver: WebDriver, text: str, verdict: str) -> None:
    """Paste ``text``, press Check, wait for ``verdict``."""
    area = driver.find_element(By.ID, "text")
    # chromedriver types only the Basic Multilingual Plane: paste the way a clipboard does
    driver.execute_script(
        "arguments[0].value = arguments[1];"
        "arguments[0].dispatchEvent(new Event('input', {bubbles: true}));",
        area,
        text,
    )
    driver.find_element(By.ID, "check").click()
    WebDriverWait(driver, WAIT_S).until(
        lambda d: (
            d.find_element(By.ID, "check-status").text == f"Done: {verdict}."
            or d.find_element(By.ID, "check-error").is_displayed()
        )
    )
    assert not driver.find_element(By.ID, "check-error").is_displayed(), driver.find_element(
        By.ID, "check-error"
    ).text
    assert driver.find_element(By.ID, "verdict").text == verdict


def test_a_copy_shows_its_match_and_the_shared_passage_in_both_texts(
    worker: tuple[Topics, WorkerProc], browser: WebDriver
) -> None:
    topics, proc = worker
    ns = f"page-{uuid.uuid4().hex[:6]}"
    original = next(r for r in reuters() if r["id"] == ORIGINAL_ID)["text"]
    assert original.endswith(LAST)
    copy = LEAD + original[: -len(LAST)] + 'this matters," an analyst said.'
    shared = original[: -len(LAST)].rstrip()  # every line but the rewritten last one
    orig_id = f"orig-{uuid.uuid4().hex[:6]}"
    article = {"id": orig_id, "text": original, "namespace": ns}
    asyncio.run(produce(topics.bootstrap, topics.input, [(None, json.dumps(article).encode(), 0)]))
    got = asyncio.run(collect(topics.bootstrap, topics.verdicts, {orig_id}, timeout_s=30))
    assert got[orig_id][-1]["verdict"] == "original"

    driver = browser
    driver.get(proc.url("/"))
    driver.find_element(By.ID, "token").send_keys(TOKEN)
    driver.find_element(By.ID, "namespace").send_keys(ns)

    _check(driver, copy, "near_duplicate")
    matches = driver.find_elements(By.CSS_SELECTOR, "#matches .match-id")
    assert [m.text for m in matches] == [orig_id]
    assert orig_id in driver.find_element(By.ID, "earlier-id").text
    WebDriverWait(driver, WAIT_S).until(
        lambda d: d.find_elements(By.CSS_SELECTOR, "#text-earlier mark")
    )
    assert _marks(driver, "text-now") == [shared]
    assert _marks(driver, "text-earlier") == [shared]
    # the pane shows the whole texts, the marks only the shared part
    assert _text_of(driver, driver.find_element(By.ID, "text-now")) == copy
    assert _text_of(driver, driver.find_element(By.ID, "text-earlier")) == original
    now = driver.find_element(By.CSS_SELECTOR, "#text-now mark")
    twin = driver.find_element(By.CSS_SELECTOR, "#text-earlier mark")
    assert now.get_attribute("data-span") == twin.get_attribute("data-span") == "0"
    ActionChains(driver).move_to_element(now).perform()
    assert "twin" in (twin.get_attribute("class") or "")

    _check(driver, UNRELATED, "original")
    assert driver.find_elements(By.CSS_SELECTOR, "mark") == []
    assert not driver.find_element(By.ID, "compare-block").is_displayed()
    assert not driver.find_element(By.ID, "matches-block").is_displayed()
    assert driver.find_elements(By.ID, "namespace-note") == []  # the namespace is known
    # a namespace nothing was indexed in: the page says there was nothing to compare with
    box = driver.find_element(By.ID, "namespace")
    box.clear()
    box.send_keys(f"empty-{uuid.uuid4().hex[:6]}")
    _check(driver, copy, "original")
    assert "nothing is indexed" in driver.find_element(By.ID, "namespace-note").text
    box.clear()
    box.send_keys(ns)

    box = driver.find_element(By.ID, "cluster-id")
    box.clear()
    box.send_keys(orig_id)
    driver.find_element(By.ID, "lookup").click()
    WebDriverWait(driver, WAIT_S).until(
        lambda d: (
            d.find_elements(By.CSS_SELECTOR, "#members tbody tr")
            or d.find_element(By.ID, "lookup-error").is_displayed()
        )
    )
    assert not driver.find_element(By.ID, "lookup-error").is_displayed()
    rows = [
        [td.text for td in tr.find_elements(By.TAG_NAME, "td")]
        for tr in driver.find_elements(By.CSS_SELECTOR, "#members tbody tr")
    ]
    assert [r[0] for r in rows] == [orig_id]  # the checks registered nothing
    assert rows[0][3] == "original"
    assert "1 article" in driver.find_element(By.ID, "cluster-summary").text

    box.clear()
    box.send_keys(f"no-such-{uuid.uuid4().hex[:6]}")
    driver.find_element(By.ID, "lookup").click()
    error = driver.find_element(By.ID, "lookup-error")
    WebDriverWait(driver, WAIT_S).until(lambda d: error.is_displayed())
    assert "No cluster" in error.text

    driver.find_element(By.ID, "token").clear()
    driver.find_element(By.ID, "check").click()
    error = driver.find_element(By.ID, "check-error")
    WebDriverWait(driver, WAIT_S).until(lambda d: error.is_displayed())
    assert "token" in error.text


def test_an_embedded_article_is_shown_among_related_with_its_direction(
    worker: tuple[Topics, WorkerProc], browser: WebDriver
) -> None:
    """A submission of 300 words of its own and then a whole earlier story (issue 42, item 7):
    at the defaults the story is related, and the page says the submission holds it."""
    topics, proc = worker
    ns = f"page-{uuid.uuid4().hex[:6]}"
    story = stories(5)[4]
    orig_id = f"story-{uuid.uuid4().hex[:6]}"
    article = {"id": orig_id, "text": story.text, "namespace": ns}
    asyncio.run(produce(topics.bootstrap, topics.input, [(None, json.dumps(article).encode(), 0)]))
    got = asyncio.run(collect(topics.bootstrap, topics.verdicts, {orig_id}, timeout_s=30))
    assert got[orig_id][-1]["verdict"] == "original"

    driver = browser
    driver.get(proc.url("/"))
    for field, value in (("token", TOKEN), ("namespace", ns)):  # the page may keep them
        driver.find_element(By.ID, field).clear()
        driver.find_element(By.ID, field).send_keys(value)
    _check(driver, embedded(own_words(0, avoid=[story.id]), story.text), "original")
    items = driver.find_elements(By.CSS_SELECTOR, "#related li.related")
    assert len(items) == 1 and driver.find_element(By.ID, "related-block").is_displayed()
    assert items[0].get_attribute("data-direction") == "embeds"
    assert orig_id in items[0].text and "your text holds 100.0% of it" in items[0].text
