"""Model-check the sharded namespace's registration protocol (``model/sharded.pml``) with spin.

Each :data:`CONFIGS` entry is one verification: spin writes the model's checker (``pan.c``), gcc
builds it, and it searches every interleaving of the articles' shard calls, their crashes and a
takedown for an assertion that fails. A failure leaves a trail, which spin replays: the lines the
model prints on it (each article's published verdict) are the counterexample.

``python -m harness.model`` (``make model``) runs them all and exits 1 unless the naive pairwise
rule fails and the chosen protocol holds. spin is Debian's ``spin`` package (``make install``
installs it).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

MODEL = Path(__file__).resolve().parents[1] / "model" / "sharded.pml"


@dataclass(frozen=True)
class Config:
    name: str
    what: str
    defines: dict[str, int]
    holds: bool  # the expected outcome: no assertion fails
    slow: bool = False  # about a minute (make unit leaves it out)
    memory_mb: int = 2048  # the checker stops past it (an error), rather than swap


CONFIGS = (
    Config(
        "naive-3",
        "the pairwise rule (who saw whom, ties to the smaller id), 3 articles",
        {"PROTOCOL": 0, "N": 3, "CRASHES": 0},
        holds=False,
    ),
    Config(
        "seq-first-3",
        "the chosen protocol with its first two steps swapped (the seq taken first), 3 articles",
        {"PROTOCOL": 2, "N": 3, "CRASHES": 0},
        holds=False,
    ),
    Config(
        "chosen-3-crashes",
        "the chosen protocol, 3 articles, two crashes of any of them at any points",
        {"PROTOCOL": 1, "N": 3, "CRASHES": 2},
        holds=True,
    ),
    Config(
        "chosen-3-chain-crashes",
        "the chosen protocol, a chain of 3 articles (the ends not alike), two crashes",
        {"PROTOCOL": 1, "N": 3, "CRASHES": 2, "CHAIN": 1},
        holds=True,
    ),
    Config(
        "chosen-3-takedown",
        "the chosen protocol, 3 articles, a crash at any point, a takedown of one racing them",
        {"PROTOCOL": 1, "N": 3, "CRASHES": 1, "TAKEDOWN": 1},
        holds=True,
    ),
    Config(
        "chosen-4",
        "the chosen protocol, 4 articles",
        {"PROTOCOL": 1, "N": 4, "CRASHES": 0},
        holds=True,
        slow=True,
        memory_mb=4096,
    ),
)


@dataclass
class Checked:
    config: Config
    errors: int
    states: int
    seconds: float
    trail: list[str] = field(default_factory=list)  # the counterexample's printed lines
    output: str = ""

    @property
    def as_expected(self) -> bool:
        return (self.errors == 0) == self.config.holds


def spin() -> str:
    found = shutil.which("spin")
    if found is None:
        raise RuntimeError("spin is not installed: Debian's spin package (make install)")
    return found


def check(config: Config, model: Path = MODEL) -> Checked:
    """One exhaustive search of ``config`` (safety properties: assertions, invalid end states)."""
    flags = [f"-D{k}={v}" for k, v in config.defines.items()]
    with tempfile.TemporaryDirectory(prefix="neardup-model-") as tmp:
        work = Path(tmp)
        shutil.copy(model, work / model.name)
        started = time.perf_counter()
        _run([spin(), *flags, "-a", model.name], work)
        # COLLAPSE: compressed state vectors; MEMLIM: the search stops (an error) rather than
        # taking the machine's memory
        cc = ["gcc", "-O2", "-DSAFETY", "-DNOFAIR", "-DCOLLAPSE", f"-DMEMLIM={config.memory_mb}"]
        _run([*cc, "-o", "pan", "pan.c"], work)
        out = subprocess.run(
            ["./pan", "-m1000000"], cwd=work, capture_output=True, text=True, check=False
        ).stdout
        seconds = time.perf_counter() - started
        for cut in ("MEMLIM", "out of memory", "max search depth too small"):
            if cut in out:  # a search cut short proves nothing
                raise RuntimeError(
                    f"{config.name}: the search was cut short ({cut}):\n{out[-2000:]}"
                )
        errors = _number(r"errors: (\d+)", out)
        trail: list[str] = []
        if errors:
            replay = _run([spin(), *flags, "-t", model.name], work)
            trail = [line.strip() for line in replay.splitlines() if line.strip().startswith("@")]
    states = int(float(_found(r"([\d.e+]+) states, stored", out)))
    return Checked(config, errors, states, seconds, trail, out)


def _found(pattern: str, text: str) -> str:
    m = re.search(pattern, text)
    if m is None:
        raise RuntimeError(f"spin's checker printed no {pattern!r}:\n{text[-2000:]}")
    return m.group(1)


def _number(pattern: str, text: str) -> int:
    return int(_found(pattern, text))


def _run(argv: list[str], cwd: Path) -> str:
    done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    return done.stdout


def main() -> int:
    ok = True
    for config in CONFIGS:
        got = check(config)
        ok &= got.as_expected
        verdict = "holds" if got.errors == 0 else f"fails ({got.errors} error)"
        expected = "as expected" if got.as_expected else "NOT AS EXPECTED"
        print(
            f"{config.name}: {config.what}: {verdict}, {got.states:,} states, "
            f"{got.seconds:.1f} s ({expected})"
        )
        for line in got.trail:
            print(f"    {line}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
