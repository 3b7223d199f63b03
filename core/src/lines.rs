//! The line keys of ASCII texts: what `neardup.sketch.lines.lines_of` finds in a text whose
//! characters are all ASCII (its `_key_ascii` loop), without a Python object per line.
//!
//! For an ASCII text the reference's normal form of a line is its words (runs between
//! Python's `str.split()` whitespace) lowered and joined by one space, less a leading list
//! number (`_MARKER_RE`); its fingerprint is the first 64-bit half of the MurmurHash3 x64/128
//! of that form. Bytes are characters here, so spans are byte offsets.

/// What the reference reads a batch's texts with (its constants and the caller's bounds).
pub struct Params {
    pub seed: u32,
    pub min_tokens: i64,
    pub max_tokens: usize, // 0: no upper bound
    pub lines_read: usize, // `LINES_READ`: a long text's lines read at its head and its foot
    pub key_chars: usize,  // `LINE_KEY_CHARS`: the longest line keyed when max_tokens is set
}

/// One text's lines: `[start, end)` spans and their fingerprints, in text order.
#[derive(Default)]
pub struct Found {
    pub spans: Vec<(usize, usize)>,
    pub fingerprints: Vec<u64>,
}

/// Python's `str.split()` whitespace among ASCII characters: `\t\n\v\f\r`, the four
/// separators `\x1c`-`\x1f`, and the space.
const fn is_space(c: u8) -> bool {
    matches!(c, b'\t'..=b'\r' | 0x1c..=0x1f | b' ')
}

/// Python's `\w` among ASCII characters.
const fn is_word(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

const SPACE: u8 = 1;
const WORD: u8 = 2;

/// Each byte's class: [`SPACE`], [`WORD`] or 0 (a table: one load per byte of a text).
static CLASS: [u8; 256] = {
    let mut table = [0u8; 256];
    let mut c = 0;
    while c < 256 {
        table[c] = if is_space(c as u8) {
            SPACE
        } else if is_word(c as u8) {
            WORD
        } else {
            0
        };
        c += 1;
    }
    table
};

/// The `[start, end)` of every line of `text` (what lies between two `\n`).
fn line_bounds(text: &[u8], out: &mut Vec<(usize, usize)>) {
    out.clear();
    let mut start = 0;
    for (i, &c) in text.iter().enumerate() {
        if c == b'\n' {
            out.push((start, i));
            start = i + 1;
        }
    }
    out.push((start, text.len()));
}

/// Folds `line` into `buf` (its words lowered, one space apart) and returns its number of
/// words and whether it has a word character; None when it has more than `max_tokens` words
/// (0: no bound), as `line.split(None, max_tokens)` then finds.
fn fold(line: &[u8], max_tokens: usize, buf: &mut Vec<u8>) -> Option<(usize, bool)> {
    buf.clear();
    let (mut n, mut seen, mut i) = (0usize, 0u8, 0usize);
    loop {
        while i < line.len() && CLASS[line[i] as usize] == SPACE {
            i += 1;
        }
        if i == line.len() {
            return Some((n, seen & WORD != 0));
        }
        n += 1;
        if max_tokens > 0 && n > max_tokens {
            return None;
        }
        if n > 1 {
            buf.push(b' ');
        }
        let start = i;
        while i < line.len() {
            let class = CLASS[line[i] as usize];
            if class == SPACE {
                break;
            }
            seen |= class;
            i += 1;
        }
        let at = buf.len();
        buf.extend_from_slice(&line[start..i]);
        buf[at..].make_ascii_lowercase();
    }
}

/// Where a leading list number ends in a folded line (0: none): the reference's
/// `^\W*(?:\d{1,3}|[a-z])[.)]\s+`. `\W*` cannot give back what it took (what follows it is a
/// word character), and `\d{1,3}` must take the whole run of digits (a digit is not `.)`).
fn marker_end(f: &[u8]) -> usize {
    let mut i = 0;
    while i < f.len() && !is_word(f[i]) {
        i += 1;
    }
    let Some(&c) = f.get(i) else { return 0 };
    let mut j = i + 1;
    if c.is_ascii_digit() {
        while j < f.len() && f[j].is_ascii_digit() {
            j += 1;
        }
        if j - i > 3 {
            return 0;
        }
    } else if !c.is_ascii_lowercase() {
        return 0;
    }
    if !matches!(f.get(j), Some(b'.' | b')')) {
        return 0;
    }
    let mut end = j + 1;
    while end < f.len() && is_space(f[end]) {
        end += 1;
    }
    if end == j + 1 {
        0
    } else {
        end
    }
}

/// The lines of an ASCII `text` that `lines_of` keys, with their fingerprints.
pub fn keys(text: &[u8], p: &Params, bounds: &mut Vec<(usize, usize)>, buf: &mut Vec<u8>) -> Found {
    line_bounds(text, bounds);
    let n = bounds.len();
    let (head, foot) = if n <= 2 * p.lines_read {
        (&bounds[..], &bounds[n..])
    } else {
        (&bounds[..p.lines_read], &bounds[n - p.lines_read..])
    };
    let longest = if p.max_tokens > 0 {
        p.key_chars
    } else {
        usize::MAX
    };
    let mut found = Found::default();
    for &(start, end) in head.iter().chain(foot) {
        if end - start > longest {
            continue;
        }
        let Some((words, word)) = fold(&text[start..end], p.max_tokens, buf) else {
            continue;
        };
        if words == 0 || (words as i64) < p.min_tokens || !word {
            continue;
        }
        let m = marker_end(buf);
        found.spans.push((start, end));
        found
            .fingerprints
            .push(mur3::murmurhash3_x64_128(&buf[m..], p.seed).0);
    }
    found
}

/// [`keys`] of each text of a batch.
pub fn keys_many(texts: &[&[u8]], p: &Params) -> Vec<Found> {
    let (mut bounds, mut buf) = (Vec::new(), Vec::new());
    texts
        .iter()
        .map(|t| keys(t, p, &mut bounds, &mut buf))
        .collect()
}
