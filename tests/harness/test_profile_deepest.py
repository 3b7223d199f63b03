"""The deepest-frame classifier of py-spy stacks: the part of the deepest known frame wins."""

from __future__ import annotations

from harness.profile import (
    HTTP_CHECK_PARTS,
    IDLE,
    LOOP,
    Part,
    attribute_deepest,
    deepest_part,
)

SKETCHES, REDIS, WEB, ENGINE, FAUST = (p.name for p in HTTP_CHECK_PARTS[:5])
START = (
    "<module> (neardup);main (stream/cli/main.py);worker (stream/cli/main.py);"
    "Worker.execute_from_commandline (mode/worker.py);"
    "BaseEventLoop.run_forever (asyncio/base_events.py);"
    "BaseEventLoop._run_once (asyncio/base_events.py)"
)
RUN = f"{START};Handle._run (asyncio/events.py)"
VIEW = (
    f"{RUN};RequestHandler._handle_request (aiohttp/web_protocol.py);"
    "View.dispatch (faust/web/views.py);check (stream/worker/http/web.py)"
)
MAIN = "thread (100): MainThread"
CONSUMER = (
    "thread (101): Thread-3;Thread._bootstrap (threading.py);"
    "ServiceThread._start_thread (mode/threads.py)"
)
RAW = "\n".join(
    [
        # the brief's example, without --threads: sketches, although the view and engine wrap it
        "<module> (x);Handle._run (asyncio/events.py);check (stream/worker/http/web.py);"
        "prepare (stream/engine/prepare.py);mix64 (sketch/features.py) 7",
        # numpy called from sketch/ is the sketches'
        f"{MAIN};{VIEW};prepare (stream/engine/prepare.py);simhash_one (sketch/simhash.py);"
        "_wrapfunc (numpy/_core/fromnumeric.py) 5",
        # aiohttp parsing a request, called by asyncio's transport: the web server
        f"{MAIN};{RUN};_SelectorSocketTransport._read_ready (asyncio/selector_events.py);"
        "RequestHandler.data_received (aiohttp/web_protocol.py) 4",
        # the Redis client's socket write through asyncio's transport: the Redis client
        f"{MAIN};{VIEW};Engine.process (stream/engine/engine.py);"
        "RedisIndex.lookup (stream/index/redis/index.py);"
        "AbstractConnection._send_packed_command (redis/asyncio/connection.py);"
        "StreamWriter.writelines (asyncio/streams.py);"
        "_SelectorSocketTransport.write (asyncio/selector_events.py) 3",
        # a dataclass __init__ (no part) in the engine: the engine
        f"{MAIN};{VIEW};Engine.process (stream/engine/engine.py);"
        "Engine._process_ns (stream/engine/engine.py);"
        "__create_fn__.<locals>.__init__ (<string>) 2",
        # faust's JSON helper (orjson) answering the view: the web server ...
        f"{MAIN};{VIEW};View.json (faust/web/views.py);Web.json (faust/web/drivers/aiohttp.py);"
        "dumps (faust/utils/json.py) 2",
        # ... and the same helper in faust's fetcher: faust
        f"{MAIN};{RUN};Service._execute_task (mode/services.py);"
        "Fetcher._fetcher (faust/transport/consumer.py);dumps (faust/utils/json.py) 1",
        # the loop's own work: stream/cli/main.py and mode/worker.py above the loop do not count
        f"{MAIN};{START} 6",
        f"{MAIN};{RUN};_SelectorSocketTransport._read_ready (asyncio/selector_events.py) 1",
        # waiting in the selector
        f"{MAIN};{START};EpollSelector.select (selectors.py) 50",
        # other threads: never the main thread's parts
        f"{CONSUMER};EpollSelector.select (selectors.py) 9",
        f"{CONSUMER};Fetcher._fetch (aiokafka/consumer/fetcher.py) 1",
        "thread (102): metrics;Thread._bootstrap (threading.py);Condition.wait (threading.py) 4",
    ]
)


def test_each_sample_goes_to_its_deepest_known_part() -> None:
    got = attribute_deepest(RAW, HTTP_CHECK_PARTS)
    assert dict(got.parts) == {
        SKETCHES: 7 + 5,
        WEB: 4 + 2,
        REDIS: 3,
        ENGINE: 2,
        FAUST: 1,
        LOOP: 6 + 1,
        IDLE: 50,
    }


def test_threads_and_their_busy_samples() -> None:
    got = attribute_deepest(RAW, HTTP_CHECK_PARTS)
    assert (got.main.samples, got.main.busy) == (81, 31)
    assert (got.consumer.samples, got.consumer.busy) == (10, 1)
    assert got.consumer.busy_pct == 10.0
    other = got.threads["other: metrics"]
    assert (other.samples, other.busy) == (4, 0), "a condition wait is not busy"
    assert sum(t.samples for t in got.threads.values()) == 95


def test_leaves_are_the_main_thread_busy_stacks_last_frames() -> None:
    got = attribute_deepest(RAW, HTTP_CHECK_PARTS)
    assert got.leaves["mix64 (sketch/features.py)", SKETCHES] == 7
    assert got.leaves["_wrapfunc (numpy/_core/fromnumeric.py)", SKETCHES] == 5
    assert got.leaves["_SelectorSocketTransport.write (asyncio/selector_events.py)", REDIS] == 3
    assert got.leaves["BaseEventLoop._run_once (asyncio/base_events.py)", LOOP] == 6
    assert sum(got.leaves.values()) == got.main.busy
    assert not any(frame.startswith("EpollSelector.select") for frame, _ in got.leaves)


def test_order_of_parts_settles_a_frame_two_prefixes_match() -> None:
    frames = [
        "<module> (x)",
        "Handle._run (asyncio/events.py)",
        "lookup (stream/index/redis/index.py)",
    ]
    assert deepest_part(frames, HTTP_CHECK_PARTS) == REDIS
    engine_first = (Part("engine", ("stream/",)), Part("redis", ("stream/index/",)))
    assert deepest_part(frames, engine_first) == "engine"


def test_without_a_fallback_part_unknown_code_is_other() -> None:
    parts = (Part("sketches", ("sketch/",)),)
    frames = ["<module> (x)", "Handle._run (asyncio/events.py)", "callback (somelib/x.py)"]
    assert deepest_part(frames, parts) == "other code run by the event loop"
    assert deepest_part(["<module> (x)", "main (x.py)"], parts).startswith("outside")
