//! Normalised texts -> tokens -> shingle hashes, for a whole batch laid end to end
//! (`neardup.sketch.features.TextBatch.shingle_hashes`).
//!
//! No Unicode table of Rust's own is read: which code point is a word character, a CJK
//! character or a separator is the reference's table (`features._char_classes`, built from
//! Python's `re` and so from its Unicode version), passed in with the classes of the few code
//! points past the BMP a batch holds. All arithmetic is modulo 2^64, as numpy's uint64 is.

use crate::sets::mix64;

const POLY: u64 = 0x0000_0100_0000_01B3; // FNV-64 prime: a token's polynomial hash
/// `features._WINDOW_MULT`: a window's multipliers, by position modulo 4.
const WINDOW_MULT: [u64; 4] =
    [0x9E37_79B9_7F4A_7C15, 0xC2B2_AE3D_27D4_EB4F, 0x1656_67B1_9E37_79F9, 0xD6E8_FEB8_6659_FD93];

/// A code point's class: 0 separator, 1 word character, 2 CJK (`features._char_classes`).
pub struct Classes<'a> {
    pub bmp: &'a [u8],        // every BMP code point's class (65,536 of them)
    pub astral: &'a [u32],    // sorted code points past the BMP the batch holds
    pub astral_cls: &'a [u8], // their classes
}

impl Classes<'_> {
    #[inline]
    fn of(&self, c: u32) -> u8 {
        if let Some(&k) = self.bmp.get(c as usize) {
            return k;
        }
        match self.astral.binary_search(&c) {
            Ok(i) => self.astral_cls[i],
            Err(_) => 0, // never: the caller classified every one the batch holds
        }
    }
}

/// The token hashes of one normalised text (`features._spans_and_hashes`): each run of word
/// characters is a token, each CJK character one alone; a token's hash is
/// `mix64(Σ_j c_j P^j + len M_1 + seed)`.
pub fn token_hashes<T: Copy + Into<u64>>(
    codes: &[T],
    cls: &Classes,
    seed: u64,
    out: &mut Vec<u64>,
) {
    let finish = |poly: u64, len: u64| {
        mix64(poly.wrapping_add(len.wrapping_mul(WINDOW_MULT[1])).wrapping_add(seed))
    };
    let (mut poly, mut power, mut len) = (0u64, 1u64, 0u64); // the word run being read
    for &c in codes {
        let c: u64 = c.into();
        match cls.of(c as u32) {
            1 => {
                poly = poly.wrapping_add(c.wrapping_mul(power));
                power = power.wrapping_mul(POLY);
                len += 1;
                continue;
            }
            k => {
                if len > 0 {
                    out.push(finish(poly, len));
                    (poly, power, len) = (0, 1, 0);
                }
                if k == 2 {
                    out.push(finish(c, 1));
                }
            }
        }
    }
    if len > 0 {
        out.push(finish(poly, len));
    }
}

/// `features.combine_windows`: the hash of every `w` consecutive values, or of all of them
/// when there are fewer than `w` (none when there are none).
pub fn combine_windows(values: &[u64], w: usize, out: &mut Vec<u64>) {
    let n = values.len();
    if n == 0 {
        return;
    }
    let w = w.min(n);
    for window in values.windows(w) {
        let mut acc = window[0].wrapping_mul(WINDOW_MULT[0]);
        for (j, &v) in window.iter().enumerate().skip(1) {
            acc = acc.wrapping_add(v.wrapping_mul(WINDOW_MULT[j % 4])).wrapping_add(j as u64);
        }
        out.push(mix64(acc.wrapping_add(w as u64)));
    }
}

/// What a batch's texts of one code width read as: their white space folded (the folded
/// codes and each text's span in them), the folded texts' digit runs, and their shingle
/// hashes with offsets (`shingles`).
pub type Read<T> =
    (Vec<T>, Vec<(usize, usize)>, (Vec<i64>, Vec<i64>, Vec<bool>), (Vec<u64>, Vec<i64>));

/// `fold_spaces`, then `shingles` and `digit_runs` of the folded texts: the text work of
/// `text_features`, written once for either code width.
pub fn fold_and_read<T: Copy + Into<u64> + From<u8>>(
    codes: &[T],
    texts: &[(usize, usize)],
    space: &[bool],
    cls: &Classes,
    w: usize,
    seed: u64,
) -> Read<T> {
    let (norm, spans) = fold_spaces(codes, texts, space);
    let shingled = shingles(&norm, &spans, cls, w, seed);
    let runs = digit_runs(&norm);
    (norm, spans, runs, shingled)
}

/// Every text's shingle hashes in token order, repeats kept, end to end, with offsets
/// (`TextBatch.shingle_hashes`): text i is `codes[spans[i].0..spans[i].1]`.
pub fn shingles<T: Copy + Into<u64>>(
    codes: &[T],
    spans: &[(usize, usize)],
    cls: &Classes,
    w: usize,
    seed: u64,
) -> (Vec<u64>, Vec<i64>) {
    let mut hashes = Vec::new();
    let mut offsets = Vec::with_capacity(spans.len() + 1);
    offsets.push(0i64);
    let mut tokens = Vec::new();
    for &(a, b) in spans {
        tokens.clear();
        token_hashes(&codes[a..b], cls, seed, &mut tokens);
        combine_windows(&tokens, w, &mut hashes);
        offsets.push(hashes.len() as i64);
    }
    (hashes, offsets)
}

/// A text's winnowed passages (`neardup.sketch.winnow.passages`), the `limit` smallest, in
/// increasing order, appended to `out`: its passages are the `combine_windows` of `width`
/// shingles; a text of at most `span` of them keeps its smallest, a longer one the smallest of
/// each run of `span` consecutive ones. `windows` is scratch space.
pub fn passages(
    shingles: &[u64],
    width: usize,
    span: usize,
    limit: usize,
    windows: &mut Vec<u64>,
    out: &mut Vec<u64>,
) {
    windows.clear();
    combine_windows(shingles, width, windows);
    if windows.is_empty() || limit == 0 {
        return;
    }
    let from = out.len();
    if windows.len() <= span {
        out.push(*windows.iter().min().expect("not empty"));
        return;
    }
    // each run's smallest, by a queue of the places whose value no later one undercuts
    let mut queue = std::collections::VecDeque::with_capacity(span);
    for (i, &v) in windows.iter().enumerate() {
        while queue.back().is_some_and(|&j: &usize| windows[j] >= v) {
            queue.pop_back();
        }
        queue.push_back(i);
        if queue[0] + span <= i {
            queue.pop_front();
        }
        if i + 1 >= span {
            out.push(windows[queue[0]]);
        }
    }
    let kept = &mut out[from..];
    kept.sort_unstable();
    let mut n = 0;
    for k in 0..kept.len() {
        if k == 0 || kept[k] != kept[n - 1] {
            kept[n] = kept[k];
            n += 1;
        }
    }
    out.truncate(from + n.min(limit));
}

/// A text's character n-gram hashes, sorted unique, into `out` (cleared first)
/// (`features.char_ngram_hashes` of the text less its spaces): each code point is
/// `mix64(c ^ seed)`, the n-grams are `combine_windows` of those. `codes` is scratch space.
pub fn char_ngrams<T: Copy + Into<u64>>(
    text: &[T],
    n: usize,
    seed: u64,
    codes: &mut Vec<u64>,
    out: &mut Vec<u64>,
) {
    codes.clear();
    codes.extend(text.iter().map(|&c| c.into()).filter(|&c| c != 32).map(|c| mix64(c ^ seed)));
    out.clear();
    combine_windows(codes, n, out);
    out.sort_unstable();
    out.dedup();
}

/// Each text with its white space folded (`" ".join(text.split())`,
/// `features.fold_spaces`), laid end to end with a NUL between two texts: the codes, and
/// each text's `(start, end)` in them. `space`: `str.isspace` of every BMP code point.
pub fn fold_spaces<T: Copy + Into<u64> + From<u8>>(
    codes: &[T],
    texts: &[(usize, usize)],
    space: &[bool],
) -> (Vec<T>, Vec<(usize, usize)>) {
    let is_space = |c: T| space.get(Into::<u64>::into(c) as usize).copied().unwrap_or(false);
    let mut out = Vec::with_capacity(codes.len());
    let mut spans = Vec::with_capacity(texts.len());
    for (k, &(a, b)) in texts.iter().enumerate() {
        if k > 0 {
            out.push(T::from(0));
        }
        let start = out.len();
        let mut gap = false; // white space read since the last character kept
        for &c in &codes[a..b] {
            if is_space(c) {
                gap = out.len() > start;
            } else {
                if gap {
                    out.push(T::from(b' '));
                    gap = false;
                }
                out.push(c);
            }
        }
        spans.push((start, out.len()));
    }
    (out, spans)
}

/// Every run of ASCII digits in `codes` (a point or comma between two digits joins them), as
/// `[start, end)`, and whether it stands beside no Latin letter
/// (`digits.DigitReading.digit_runs`, over the whole batch as it reads it).
pub fn digit_runs<T: Copy + Into<u64>>(codes: &[T]) -> (Vec<i64>, Vec<i64>, Vec<bool>) {
    let at = |i: usize| -> u64 { codes[i].into() };
    let digit = |i: usize| at(i).wrapping_sub(48) < 10;
    let letter = |i: usize| (97..=122).contains(&(at(i) | 32));
    let (mut starts, mut ends, mut alone) = (Vec::new(), Vec::new(), Vec::new());
    let n = codes.len();
    let mut i = 0;
    while i < n {
        if !digit(i) {
            i += 1;
            continue;
        }
        let start = i;
        let mut last = i; // the run's last digit
        loop {
            if last + 1 < n && digit(last + 1) {
                last += 1;
            } else if last + 2 < n && digit(last + 2) && matches!(at(last + 1), 44 | 46) {
                last += 2;
            } else {
                break;
            }
        }
        let end = last + 1;
        starts.push(start as i64);
        ends.push(end as i64);
        alone.push(!((start > 0 && letter(start - 1)) || (end < n && letter(end))));
        i = end;
    }
    (starts, ends, alone)
}

/// The `(start, end)` of each text, checked against the codes.
pub fn text_spans(n: usize, starts: &[i64], ends: &[i64]) -> Result<Vec<(usize, usize)>, String> {
    if starts.len() != ends.len() {
        return Err("starts and ends must be as long".into());
    }
    starts
        .iter()
        .zip(ends)
        .map(|(&a, &b)| match (usize::try_from(a), usize::try_from(b)) {
            (Ok(a), Ok(b)) if a <= b && b <= n => Ok((a, b)),
            _ => Err(format!("text [{a}, {b}) is not in {n} code points")),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn white_space_folds_to_one_space_inside_a_text_and_goes_at_its_ends() {
        let space: Vec<bool> = (0..0x10000u32).map(|c| c == 32 || c == 0x3000).collect();
        let codes: Vec<u32> =
            " a\u{3000} b ".chars().chain("c".chars()).map(|c| c as u32).collect();
        let (out, spans) = fold_spaces(&codes, &[(0, 6), (6, 7)], &space);
        assert_eq!(out, vec![97, 32, 98, 0, 99]);
        assert_eq!(spans, vec![(0, 3), (4, 5)]);
    }

    #[test]
    fn digit_runs_join_across_one_point_or_comma_and_see_letters_beside() {
        let codes = b"1,750 q3 4.5. 7..8".to_vec();
        let (starts, ends, alone) = digit_runs(&codes);
        assert_eq!(starts, vec![0, 7, 9, 14, 17]);
        assert_eq!(ends, vec![5, 8, 12, 15, 18]);
        assert_eq!(alone, vec![true, false, true, true, true]);
    }

    #[test]
    fn a_run_keeps_its_smallest_passage() {
        let (mut scratch, mut out) = (Vec::new(), Vec::new());
        let shingles: Vec<u64> = (0..40).map(|i| mix64(i * 7919)).collect();
        passages(&shingles, 1, 4, 100, &mut scratch, &mut out);
        let mut want: Vec<u64> = scratch.windows(4).map(|r| *r.iter().min().unwrap()).collect();
        want.sort_unstable();
        want.dedup();
        assert_eq!(out, want);
    }

    #[test]
    fn a_short_text_has_one_window_over_all_its_tokens() {
        let mut out = Vec::new();
        combine_windows(&[1, 2], 3, &mut out);
        let acc = 1u64
            .wrapping_mul(WINDOW_MULT[0])
            .wrapping_add(2u64.wrapping_mul(WINDOW_MULT[1]))
            .wrapping_add(1);
        assert_eq!(out, vec![mix64(acc.wrapping_add(2))]);
    }
}
