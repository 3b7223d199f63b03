//! neardup's compiled core: the numeric per-document work of a batch, one call per batch.
//!
//! Every function here has a pure-Python reference in `sketch/` that defines its result; the
//! tests hold the two exactly equal. The GIL is released while a batch is worked on.

mod sets;

use numpy::ndarray::Array2;
use numpy::{IntoPyArray, PyArray1, PyArray2, PyReadonlyArray1};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

/// What `sketch_sets` returns: signatures (documents x k), SimHash fingerprints, and each
/// document's 32-bit sorted unique shingles as a ragged array with its offsets.
type SetsOut<'py> = (
    Bound<'py, PyArray2<u64>>,
    Bound<'py, PyArray1<u64>>,
    Bound<'py, PyArray1<u32>>,
    Bound<'py, PyArray1<i64>>,
);

/// The sketches of the documents `docs` of a ragged batch of shingle hashes (document i owns
/// `hashes[offsets[i]:offsets[i + 1]]`, repeats kept): see `neardup.sketch.sets.sketch_sets`.
#[pyfunction]
#[pyo3(signature = (hashes, offsets, docs, num_perm, seed, kperm, simhash_seed))]
#[allow(clippy::too_many_arguments)]
fn sketch_sets<'py>(
    py: Python<'py>,
    hashes: PyReadonlyArray1<'py, u64>,
    offsets: PyReadonlyArray1<'py, i64>,
    docs: PyReadonlyArray1<'py, i64>,
    num_perm: usize,
    seed: u64,
    kperm: bool,
    simhash_seed: u64,
) -> PyResult<SetsOut<'py>> {
    let hashes = hashes.as_slice()?;
    let offsets = offsets.as_slice()?;
    let docs = docs.as_slice()?;
    let spans = sets::spans(hashes.len(), offsets, docs).map_err(PyValueError::new_err)?;
    if !(1..=0xFFFF).contains(&num_perm) {
        return Err(PyValueError::new_err("num_perm must be in [1, 65535]"));
    }
    let params = sets::Params::new(num_perm, seed, kperm, simhash_seed);
    let out = py.detach(|| sets::sketch(hashes, &spans, &params));
    let sigs = Array2::from_shape_vec((spans.len(), num_perm), out.signatures)
        .map_err(|e| PyValueError::new_err(e.to_string()))?;
    Ok((
        sigs.into_pyarray(py),
        out.simhashes.into_pyarray(py),
        out.shingles.into_pyarray(py),
        out.shingle_offsets.into_pyarray(py),
    ))
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(sketch_sets, m)?)?;
    Ok(())
}
