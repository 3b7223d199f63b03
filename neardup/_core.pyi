# The compiled core (core/src/lib.rs), an optional extension module: neardup.stream.core
# imports it when it was built. Its results are defined as the reference's in neardup.sketch.
import numpy as np
import numpy.typing as npt

def sketch_sets(
    hashes: npt.NDArray[np.uint64],
    offsets: npt.NDArray[np.int64],
    docs: npt.NDArray[np.int64],
    num_perm: int,
    seed: int,
    kperm: bool,
    simhash_seed: int,
) -> tuple[
    npt.NDArray[np.uint64], npt.NDArray[np.uint64], npt.NDArray[np.uint32], npt.NDArray[np.int64]
]: ...
def line_keys(
    texts: list[str],
    heads: list[bytes],
    seed: int,
    min_tokens: int,
    max_tokens: int,
    lines_read: int,
    key_chars: int,
) -> list[tuple[tuple[tuple[int, int], ...], tuple[bytes, ...]]]: ...
