//! neardup's compiled core: the numeric per-document work of a batch, one call per batch.
//!
//! Every function here has a pure-Python reference in `sketch/` that defines its result; the
//! tests hold the two exactly equal. The GIL is released while a batch is worked on.

mod lines;
mod sets;

use numpy::ndarray::Array2;
use numpy::{IntoPyArray, PyArray1, PyArray2, PyReadonlyArray1};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyString, PyTuple};

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

/// The line keys of a batch of ASCII texts, as `neardup.sketch.lines.lines_of(text, source,
/// seed, min_tokens=..., max_tokens=...)` gives them: per text, its lines' spans and 16-byte
/// keys (its source's 8-byte key `heads[i]`, then the line's fingerprint, big-endian).
/// `lines_read` and `key_chars` are the reference's `LINES_READ` and `LINE_KEY_CHARS`.
#[pyfunction]
#[pyo3(signature = (texts, heads, seed, min_tokens, max_tokens, lines_read, key_chars))]
#[allow(clippy::too_many_arguments)]
fn line_keys<'py>(
    py: Python<'py>,
    texts: Vec<Bound<'py, PyString>>,
    heads: Vec<Bound<'py, PyBytes>>,
    seed: u32,
    min_tokens: i64,
    max_tokens: usize,
    lines_read: usize,
    key_chars: usize,
) -> PyResult<Bound<'py, PyList>> {
    if heads.len() != texts.len() || heads.iter().any(|h| h.as_bytes().len() != 8) {
        return Err(PyValueError::new_err("one 8-byte head per text"));
    }
    // the strings stay alive (``texts`` holds them) while the GIL is released
    let mut read: Vec<&[u8]> = Vec::with_capacity(texts.len());
    for t in &texts {
        let s = t.to_str()?;
        if !s.is_ascii() {
            return Err(PyValueError::new_err("line_keys reads ASCII texts only"));
        }
        read.push(s.as_bytes());
    }
    let params = lines::Params {
        seed,
        min_tokens,
        max_tokens,
        lines_read,
        key_chars,
    };
    let found = py.detach(|| lines::keys_many(&read, &params));
    let out = PyList::empty(py);
    let mut key = [0u8; 16];
    for (f, head) in found.iter().zip(&heads) {
        key[..8].copy_from_slice(head.as_bytes());
        let spans = PyTuple::new(py, &f.spans)?;
        let keys = PyTuple::new(
            py,
            f.fingerprints.iter().map(|fp| {
                key[8..].copy_from_slice(&fp.to_be_bytes());
                PyBytes::new(py, &key)
            }),
        )?;
        out.append((spans, keys))?;
    }
    Ok(out)
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(sketch_sets, m)?)?;
    m.add_function(wrap_pyfunction!(line_keys, m)?)?;
    Ok(())
}
