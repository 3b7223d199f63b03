//! MinHash signatures, SimHash fingerprints and 32-bit shingle sets of many documents.
//!
//! The conventions are the reference's (`sketch/minhash.py`, `sketch/simhash.py`,
//! `sketch/ragged.py`); all arithmetic is modulo 2^64, as numpy's uint64 is.

const PHI: u64 = 0x9E37_79B9_7F4A_7C15;
const PROBE_MULT: u64 = 0x0000_0100_0000_01B3; // FNV-64 prime: a bin's probe sequence
const EMPTY: u64 = u64::MAX; // a bin no shingle fell in

/// splitmix64's finaliser (`neardup.sketch.features.mix64`).
#[inline]
pub fn mix64(x: u64) -> u64 {
    let z = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    let z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// `minhash._seed_word`: one salted word of a seed.
fn seed_word(seed: u64, salt: u64) -> u64 {
    mix64(seed.wrapping_mul(PHI).wrapping_add(salt))
}

/// A MinHash scheme's constants, derived once per call as `MinHasher.__post_init__` does.
pub struct Params {
    k: usize,
    seed_mix: u64,
    probe_salt: u64,
    kperm: Option<(Vec<u64>, Vec<u64>)>, // the k permutations x -> a x + b
    simhash_key: u64,
}

impl Params {
    pub fn new(k: usize, seed: u64, kperm: bool, simhash_seed: u64) -> Self {
        let perms = kperm.then(|| {
            let (s1, s2) = (seed_word(seed, 1), seed_word(seed, 2));
            let a = (0..k as u64).map(|i| mix64(i.wrapping_add(s1)) | 1).collect();
            let b = (0..k as u64).map(|i| mix64(i.wrapping_add(s2))).collect();
            (a, b)
        });
        Params {
            k,
            seed_mix: seed_word(seed, 0),
            probe_salt: seed_word(seed, 3),
            kperm: perms,
            simhash_key: mix64(simhash_seed.wrapping_add(PHI)), // simhash._word_keys(seed, 1)
        }
    }

    /// The bin of a mixed value: its high 32 bits scaled to `[0, k)`.
    #[inline]
    fn bin(&self, x: u64) -> usize {
        (((x >> 32) * self.k as u64) >> 32) as usize
    }

    /// Step `t` of the probe sequence of bin `j` (`MinHasher._probe_steps`).
    #[inline]
    fn probe(&self, j: usize, t: u64) -> usize {
        let at = (j as u64).wrapping_mul(PROBE_MULT).wrapping_add(t).wrapping_add(self.probe_salt);
        self.bin(mix64(at))
    }
}

/// The batch's results, laid out as the Python side returns them.
pub struct Sketches {
    pub signatures: Vec<u64>, // documents x k, row-major
    pub simhashes: Vec<u64>,
    pub shingles: Vec<u32>,
    pub shingle_offsets: Vec<i64>,
}

/// The `(start, end)` of each chosen document, checked against the batch.
pub fn spans(n: usize, offsets: &[i64], docs: &[i64]) -> Result<Vec<(usize, usize)>, String> {
    if offsets.is_empty() || offsets[0] != 0 || offsets[offsets.len() - 1] as u64 != n as u64 {
        return Err("offsets must run from 0 to the number of hashes".into());
    }
    if offsets.windows(2).any(|w| w[0] > w[1]) {
        return Err("offsets must not decrease".into());
    }
    let count = offsets.len() - 1;
    docs.iter()
        .map(|&d| match usize::try_from(d) {
            Ok(i) if i < count => Ok((offsets[i] as usize, offsets[i + 1] as usize)),
            _ => Err(format!("document {d} is not in a batch of {count}")),
        })
        .collect()
}

/// Every chosen document's sketches, in the order given.
pub fn sketch(hashes: &[u64], spans: &[(usize, usize)], p: &Params) -> Sketches {
    let mut out = Sketches {
        signatures: vec![EMPTY; spans.len() * p.k],
        simhashes: Vec::with_capacity(spans.len()),
        shingles: Vec::new(),
        shingle_offsets: Vec::with_capacity(spans.len() + 1),
    };
    out.shingle_offsets.push(0);
    let mut sorted: Vec<u64> = Vec::new();
    let mut low: Vec<u32> = Vec::new();
    for (row, &(a, b)) in out.signatures.chunks_exact_mut(p.k.max(1)).zip(spans) {
        sorted.clear();
        sorted.extend_from_slice(&hashes[a..b]);
        sorted.sort_unstable();
        out.simhashes.push(simhash(&sorted, p.simhash_key)); // repeats weigh as tf
        sorted.dedup();
        signature(&sorted, p, row);
        low.clear();
        low.extend(sorted.iter().map(|&h| h as u32));
        low.sort_unstable();
        low.dedup();
        out.shingles.extend_from_slice(&low);
        out.shingle_offsets.push(out.shingles.len() as i64);
    }
    out
}

/// Byte value -> a word whose byte k is bit k of the value: eight one-bit counters side by
/// side, so that adding such words counts eight bits at once (`simhash._SPREAD`).
const SPREAD: [u64; 256] = {
    let mut table = [0u64; 256];
    let mut v = 0;
    while v < 256 {
        let mut k = 0;
        while k < 8 {
            table[v] |= (((v >> k) & 1) as u64) << (8 * k);
            k += 1;
        }
        v += 1;
    }
    table
};
const LANE_MAX: usize = 255; // features added before a byte counter could overflow

/// 64-bit SimHash of features, repeats counted (`simhash.simhash_many` unweighted): bit b is
/// set iff more than half the mixed features have it set.
fn simhash(features: &[u64], key: u64) -> u64 {
    let mut counts = [0u64; 64];
    for run in features.chunks(LANE_MAX) {
        let mut lanes = [0u64; 8];
        for &h in run {
            let x = mix64(h ^ key);
            for (p, lane) in lanes.iter_mut().enumerate() {
                *lane += SPREAD[((x >> (8 * p)) & 0xFF) as usize];
            }
        }
        for (p, lane) in lanes.iter().enumerate() {
            for k in 0..8 {
                counts[8 * p + k] += (lane >> (8 * k)) & 0xFF;
            }
        }
    }
    let n = features.len() as u64;
    (0..64).filter(|&b| 2 * counts[b] > n).fold(0, |fp, b| fp | (1 << b))
}

/// The MinHash signature of a set of unique hashes into `row` (already all `EMPTY`).
pub fn signature(unique: &[u64], p: &Params, row: &mut [u64]) {
    if unique.is_empty() {
        return;
    }
    match &p.kperm {
        Some((a, b)) => {
            for &h in unique {
                let x = mix64(h ^ p.seed_mix);
                for ((v, &ai), &bi) in row.iter_mut().zip(a).zip(b) {
                    *v = (*v).min(ai.wrapping_mul(x).wrapping_add(bi));
                }
            }
        }
        None => {
            for &h in unique {
                let x = mix64(h ^ p.seed_mix);
                let slot = &mut row[p.bin(x)];
                *slot = (*slot).min(x);
            }
            densify(row, p);
        }
    }
}

/// Optimal densification (`MinHasher._densify`): an empty bin copies the first filled bin
/// along its own probe sequence, read from the bins as they were before any copy.
fn densify(row: &mut [u64], p: &Params) {
    let empty: Vec<usize> = (0..row.len()).filter(|&j| row[j] == EMPTY).collect();
    if empty.is_empty() || empty.len() == row.len() {
        return;
    }
    let before = row.to_vec();
    for j in empty {
        let mut t = 0u64;
        loop {
            let src = p.probe(j, t);
            if before[src] != EMPTY {
                row[j] = before[src];
                break;
            }
            t += 1;
        }
    }
}
