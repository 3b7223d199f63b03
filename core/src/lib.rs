//! neardup's compiled core: the numeric per-document work of a batch, one call per batch.
//!
//! Every function here has a pure-Python reference in `sketch/` that defines its result; the
//! tests hold the two exactly equal. The GIL is released while a batch is worked on.

mod features;
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
    let params = lines::Params { seed, min_tokens, max_tokens, lines_read, key_chars };
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

/// What `text_features` returns: the normalised texts (codes, starts, ends), every text's
/// shingle hashes (in token order, repeats kept) with their offsets, the long texts
/// (indices), their sketches as `sketch_sets` gives, and their winnowed passages with offsets
/// (long text j owns `passages[p[j]:p[j + 1]]`), and the normalised texts' digit runs.
type FeaturesOut<'py> = (
    (Bound<'py, PyAny>, Bound<'py, PyArray1<i64>>, Bound<'py, PyArray1<i64>>),
    Bound<'py, PyArray1<u64>>,
    Bound<'py, PyArray1<i64>>,
    Bound<'py, PyArray1<i64>>,
    SetsOut<'py>,
    Bound<'py, PyArray1<u64>>,
    Bound<'py, PyArray1<i64>>,
    RunsOut<'py>,
);

/// Runs of digits: starts, ends, and whether each stands beside no Latin letter.
type RunsOut<'py> =
    (Bound<'py, PyArray1<i64>>, Bound<'py, PyArray1<i64>>, Bound<'py, PyArray1<bool>>);

/// A batch's code points, one byte each (ASCII) or four.
enum Codes<'py> {
    Narrow(PyReadonlyArray1<'py, u8>),
    Wide(PyReadonlyArray1<'py, u32>),
}

impl<'py> Codes<'py> {
    /// A uint8 or uint32 array's view.
    fn of(codes: &Bound<'py, PyAny>) -> PyResult<Self> {
        match codes.extract::<PyReadonlyArray1<'py, u8>>() {
            Ok(narrow) => Ok(Codes::Narrow(narrow)),
            Err(_) => Ok(Codes::Wide(codes.extract::<PyReadonlyArray1<'py, u32>>()?)),
        }
    }

    /// How many code points there are.
    fn len(&self) -> PyResult<usize> {
        Ok(match self {
            Codes::Narrow(c) => c.as_slice()?.len(),
            Codes::Wide(c) => c.as_slice()?.len(),
        })
    }
}

/// The features of a batch of folded texts laid end to end (text i is
/// `codes[starts[i]:ends[i]]`, its canonical form): their white space folded (`space`: which
/// BMP code points are white space), their shingles, and the sketches and passages of those
/// with `n > 0` shingles and `n + w - 1 >= min_tokens` (the long path's texts): see
/// `neardup.sketch.sets.text_features`, its reference. `bmp`: every BMP code point's class
/// (`features._char_classes`); `astral`, `astral_cls`: the sorted code points past the BMP
/// the batch holds, and theirs.
#[pyfunction]
#[pyo3(signature = (codes, starts, ends, space, bmp, astral, astral_cls, w, seed, min_tokens, num_perm, minhash_seed, kperm, simhash_seed, passage_width, passage_span, passage_limit))]
#[allow(clippy::too_many_arguments)]
fn text_features<'py>(
    py: Python<'py>,
    codes: &Bound<'py, PyAny>,
    starts: PyReadonlyArray1<'py, i64>,
    ends: PyReadonlyArray1<'py, i64>,
    space: PyReadonlyArray1<'py, bool>,
    bmp: PyReadonlyArray1<'py, u8>,
    astral: PyReadonlyArray1<'py, u32>,
    astral_cls: PyReadonlyArray1<'py, u8>,
    w: usize,
    seed: u64,
    min_tokens: usize,
    num_perm: usize,
    minhash_seed: u64,
    kperm: bool,
    simhash_seed: u64,
    passage_width: usize,
    passage_span: usize,
    passage_limit: usize,
) -> PyResult<FeaturesOut<'py>> {
    let codes = Codes::of(codes)?;
    let (bmp, astral, astral_cls) = (bmp.as_slice()?, astral.as_slice()?, astral_cls.as_slice()?);
    let space = space.as_slice()?;
    if bmp.len() != 0x10000 || space.len() != 0x10000 || astral.len() != astral_cls.len() {
        return Err(PyValueError::new_err(
            "bmp and space must hold 65536 values, astral_cls one per astral code",
        ));
    }
    if w < 1 || passage_width < 1 || passage_span < 1 || !(1..=0xFFFF).contains(&num_perm) {
        return Err(PyValueError::new_err(
            "w, passage_width and passage_span must be >= 1, num_perm in [1, 65535]",
        ));
    }
    let cls = features::Classes { bmp, astral, astral_cls };
    let texts = features::text_spans(codes.len()?, starts.as_slice()?, ends.as_slice()?)
        .map_err(PyValueError::new_err)?;
    let params = sets::Params::new(num_perm, minhash_seed, kperm, simhash_seed);
    let run = |hashes: Vec<u64>, offsets: Vec<i64>| {
        let long: Vec<i64> = (0..offsets.len() - 1)
            .filter(|&i| {
                let m = (offsets[i + 1] - offsets[i]) as usize;
                m > 0 && m.saturating_add(w - 1) >= min_tokens
            })
            .map(|i| i as i64)
            .collect();
        let spans: Vec<(usize, usize)> = long
            .iter()
            .map(|&i| (offsets[i as usize] as usize, offsets[i as usize + 1] as usize))
            .collect();
        let out = sets::sketch(&hashes, &spans, &params);
        let (mut scratch, mut found, mut found_off) = (Vec::new(), Vec::new(), vec![0i64]);
        for &(a, b) in &spans {
            let (width, span) = (passage_width, passage_span);
            features::passages(&hashes[a..b], width, span, passage_limit, &mut scratch, &mut found);
            found_off.push(found.len() as i64);
        }
        (hashes, offsets, long, out, (found, found_off))
    };
    let (norm, norm_spans, runs, (hashes, offsets, long, out, (found, found_off))) = match &codes {
        Codes::Narrow(c) => {
            let c = c.as_slice()?;
            let (norm, spans, runs, found) = py.detach(|| {
                let (norm, spans, runs, (h, o)) =
                    features::fold_and_read(c, &texts, space, &cls, w, seed);
                (norm, spans, runs, run(h, o))
            });
            (norm.into_pyarray(py).into_any(), spans, runs, found)
        }
        Codes::Wide(c) => {
            let c = c.as_slice()?;
            let (norm, spans, runs, found) = py.detach(|| {
                let (norm, spans, runs, (h, o)) =
                    features::fold_and_read(c, &texts, space, &cls, w, seed);
                (norm, spans, runs, run(h, o))
            });
            (norm.into_pyarray(py).into_any(), spans, runs, found)
        }
    };
    let sigs = Array2::from_shape_vec((long.len(), num_perm), out.signatures)
        .map_err(|e| PyValueError::new_err(e.to_string()))?;
    let norm_starts: Vec<i64> = norm_spans.iter().map(|&(a, _)| a as i64).collect();
    let norm_ends: Vec<i64> = norm_spans.iter().map(|&(_, b)| b as i64).collect();
    Ok((
        (norm, norm_starts.into_pyarray(py), norm_ends.into_pyarray(py)),
        hashes.into_pyarray(py),
        offsets.into_pyarray(py),
        long.into_pyarray(py),
        (
            sigs.into_pyarray(py),
            out.simhashes.into_pyarray(py),
            out.shingles.into_pyarray(py),
            out.shingle_offsets.into_pyarray(py),
        ),
        found.into_pyarray(py),
        found_off.into_pyarray(py),
        (runs.0.into_pyarray(py), runs.1.into_pyarray(py), runs.2.into_pyarray(py)),
    ))
}

/// What `char_sketches` returns: a signature per text, and how many n-grams it has.
type CharsOut<'py> = (Bound<'py, PyArray2<u64>>, Bound<'py, PyArray1<i64>>);

/// The MinHash signatures of the character n-grams of each text (less its spaces) of a batch
/// laid end to end, and how many distinct n-grams each has (a text with none has a row of
/// `EMPTY`): see `neardup.sketch.sets.char_sketches`, its reference.
#[pyfunction]
#[pyo3(signature = (codes, starts, ends, n, seed, num_perm, minhash_seed, kperm))]
#[allow(clippy::too_many_arguments)]
fn char_sketches<'py>(
    py: Python<'py>,
    codes: &Bound<'py, PyAny>,
    starts: PyReadonlyArray1<'py, i64>,
    ends: PyReadonlyArray1<'py, i64>,
    n: usize,
    seed: u64,
    num_perm: usize,
    minhash_seed: u64,
    kperm: bool,
) -> PyResult<CharsOut<'py>> {
    if n < 1 || !(1..=0xFFFF).contains(&num_perm) {
        return Err(PyValueError::new_err("n must be >= 1 and num_perm in [1, 65535]"));
    }
    let codes = Codes::of(codes)?;
    let texts = features::text_spans(codes.len()?, starts.as_slice()?, ends.as_slice()?)
        .map_err(PyValueError::new_err)?;
    let params = sets::Params::new(num_perm, minhash_seed, kperm, 0);
    fn run<T: Copy + Into<u64>>(
        c: &[T],
        texts: &[(usize, usize)],
        n: usize,
        seed: u64,
        p: &sets::Params,
        k: usize,
    ) -> (Vec<u64>, Vec<i64>) {
        let mut sigs = vec![u64::MAX; texts.len() * k];
        let mut sizes = Vec::with_capacity(texts.len());
        let (mut scratch, mut grams) = (Vec::new(), Vec::new());
        for (row, &(a, b)) in sigs.chunks_exact_mut(k).zip(texts) {
            features::char_ngrams(&c[a..b], n, seed, &mut scratch, &mut grams);
            sets::signature(&grams, p, row);
            sizes.push(grams.len() as i64);
        }
        (sigs, sizes)
    }
    let (sigs, sizes) = match &codes {
        Codes::Narrow(c) => {
            let c = c.as_slice()?;
            py.detach(|| run(c, &texts, n, seed, &params, num_perm))
        }
        Codes::Wide(c) => {
            let c = c.as_slice()?;
            py.detach(|| run(c, &texts, n, seed, &params, num_perm))
        }
    };
    let sigs = Array2::from_shape_vec((texts.len(), num_perm), sigs)
        .map_err(|e| PyValueError::new_err(e.to_string()))?;
    Ok((sigs.into_pyarray(py), sizes.into_pyarray(py)))
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(sketch_sets, m)?)?;
    m.add_function(wrap_pyfunction!(line_keys, m)?)?;
    m.add_function(wrap_pyfunction!(text_features, m)?)?;
    m.add_function(wrap_pyfunction!(char_sketches, m)?)?;
    Ok(())
}
