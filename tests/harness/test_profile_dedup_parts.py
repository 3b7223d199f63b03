"""The parts of a whole ``neardup dedup`` run: start-up and the boilerplate pass take their
whole stacks, any other sample goes to its deepest known frame."""

from __future__ import annotations

from harness.profile import (
    ALL_THREADS,
    ARGS,
    BOILERPLATE,
    DEDUP_LOOP,
    DEDUP_PARTS,
    DEDUP_SKETCHES,
    FACTS,
    INDEX,
    IO,
    NO_PYTHON,
    OTHER,
    START_UP,
    VERDICT,
    Part,
    attribute_command,
    command_part,
)

SCRIPT = "<module> (neardup)"
IMPORT = (
    "_find_and_load (<frozen importlib._bootstrap>);"
    "_call_with_frames_removed (<frozen importlib._bootstrap>)"
)
DEDUP = (
    f"{SCRIPT};main (stream/cli/main.py);Typer.__call__ (typer/main.py);"
    "Command.__call__ (typer/_click/core.py);get_callback.<locals>.wrapper (typer/main.py);"
    "dedup (stream/cli/main.py)"
)
LOOP = (
    f"{DEDUP};run (asyncio/runners.py);BaseEventLoop.run_forever (asyncio/base_events.py);"
    "BaseEventLoop._run_once (asyncio/base_events.py);Handle._run (asyncio/events.py)"
)
PROCESS = (
    f"{LOOP};_dedup (stream/cli/main.py);_dedup.<locals>.flush (stream/cli/main.py);"
    "Engine.process (stream/engine/engine.py);Engine._process_ns (stream/engine/engine.py)"
)
PREPARE = (
    f"{PROCESS};Engine._prepare_and_register (stream/engine/engine.py);"
    "prepare (stream/engine/prepare.py)"
)
RAW = "\n".join(
    [
        # importing sketch/ (and numpy under it) is start-up, not sketches
        f"{SCRIPT};{IMPORT};<module> (sketch/__init__.py);{IMPORT};<module> (numpy/__init__.py) 11",
        # site's imports, before the script runs: no <module> frame first
        f"{IMPORT};<module> (<frozen site>);main (<frozen site>) 2",
        # the script's own module-level code
        f"{SCRIPT} 1",
        # the policy's banding parameters, though computed in sketch/lsh.py
        f"{DEDUP};__create_fn__.<locals>.__init__ (<string>);Policy.__post_init__ "
        "(stream/namespaces/policy.py);recall_floor_params (sketch/lsh.py) 3",
        # interpreter start and exit
        " 4",
        # typer building the command: argument parsing (typer's <module> (<string>) is no import)
        f"{SCRIPT};main (stream/cli/main.py);Typer.__call__ (typer/main.py);"
        "get_params_from_function (typer/utils.py);ForwardRef._evaluate (typing.py);"
        "<module> (<string>);Option (typer/params.py) 5",
        # the boilerplate pass takes a model's method and the index's line counts under it
        f"{PROCESS};learn (stream/engine/boilerplate.py);"
        "learn.<locals>.<listcomp> (stream/engine/boilerplate.py);lines_of (sketch/lines.py) 13",
        f"{PROCESS};learn (stream/engine/boilerplate.py);Article.source_name (stream/model.py) 2",
        f"{PROCESS};Engine._process_ns (stream/engine/engine.py);MemoryIndex.add_lines "
        "(stream/index/memory.py);MemoryIndex._space (stream/index/memory.py) 3",
        # numpy under sketch/ is sketches; facts under prepare are facts
        f"{PREPARE};_long (stream/engine/prepare.py);MinHasher.signatures (sketch/minhash.py);"
        "_wrapfunc (numpy/_core/fromnumeric.py) 7",
        f"{PREPARE};_long (stream/engine/prepare.py);numbers_of (sketch/facts.py) 6",
        # the memory index registering
        f"{PROCESS};Engine._prepare_and_register (stream/engine/engine.py);MemoryIndex.register "
        "(stream/index/memory.py) 4",
        # exact Jaccard under the engine, numpy under it: verification
        f"{PROCESS};judge (stream/engine/judge.py);jaccard (sketch/verify.py);"
        "searchsorted (numpy/_core/fromnumeric.py) 8",
        # a dataclass __init__ (no part) in the engine: the engine's
        f"{PROCESS};Engine._verdict (stream/engine/engine.py);__create_fn__.<locals>.__init__ "
        "(<string>) 2",
        # reading a line: the schema; the loop's own time
        f"{LOOP};_dedup (stream/cli/main.py);article_from_obj (stream/schema.py) 5",
        f"{LOOP} 3",
        # a frame of no part at all
        "somewhere (elsewhere.py) 1",
    ]
)


def test_each_sample_goes_to_its_part() -> None:
    got = attribute_command(RAW, DEDUP_PARTS)
    assert dict(got.parts) == {
        START_UP: 11 + 2 + 1 + 3,
        NO_PYTHON: 4,
        ARGS: 5,
        BOILERPLATE: 13 + 2 + 3,
        DEDUP_SKETCHES: 7,
        FACTS: 6,
        INDEX: 4,
        VERDICT: 8 + 2,
        IO: 5,
        DEDUP_LOOP: 3,
        OTHER: 1,
    }
    assert got.threads[ALL_THREADS].samples == sum(got.parts.values()) == 80


def test_leaves_are_the_last_frames() -> None:
    got = attribute_command(RAW, DEDUP_PARTS)
    assert got.leaves["lines_of (sketch/lines.py)", BOILERPLATE] == 13
    assert got.leaves["_wrapfunc (numpy/_core/fromnumeric.py)", DEDUP_SKETCHES] == 7
    assert got.leaves["(no Python frame)", NO_PYTHON] == 4
    assert got.leaves["Handle._run (asyncio/events.py)", DEDUP_LOOP] == 3
    assert sum(got.leaves.values()) == 80


def test_whole_parts_win_over_deeper_frames_and_order_settles_the_rest() -> None:
    frames = [*PREPARE.split(";"), "MemoryIndex.line_counts (stream/index/memory.py)"]
    assert command_part(frames, DEDUP_PARTS) == BOILERPLATE
    verify = [*PROCESS.split(";"), "jaccard (sketch/verify.py)"]
    assert command_part(verify, DEDUP_PARTS) == VERDICT  # before sketch/ in the list
    sketch_first = (Part("sketch", ("sketch/",)), Part("verify", ("sketch/verify.py",)))
    assert command_part(verify, sketch_first) == "sketch"
    fallback = (Part("loop", ("asyncio/",), fallback=True), Part("cli", ("stream/cli/main.py",)))
    assert command_part(LOOP.split(";"), fallback) == "cli"


def test_a_frame_of_the_installed_package_is_named_as_its_folder() -> None:
    """py-spy names the installed package's files ``neardup/stream/...``: the same parts."""
    frames = [
        *LOOP.split(";"),
        "Engine.process (neardup/stream/engine/engine.py)",
        "judge_short (neardup/stream/engine/judge.py)",
        "compare (neardup/sketch/facts.py)",
    ]
    assert command_part(frames) == FACTS
    assert command_part(frames[:-1]) == VERDICT
    assert (
        command_part([*frames[:-2], "_long (neardup/stream/engine/prepare.py)"]) == DEDUP_SKETCHES
    )
