//! Printing a result's matching lines as the CLI does (`maguyva search`, text and `--json`),
//! one buffer per file: a common literal lists tens of thousands of lines, and building a
//! Python string per line was most of its time (issue 21).
//!
//! The rules are those of `maguyva.interfaces.output.Renderer.lines_of`, `text` and
//! `json_lines` (the reference: `tests/test_lines_native.py` compares the two byte for byte):
//! lines split on `\n` (a final newline ends the last line), text decoded as UTF-8 with
//! U+FFFD for bad bytes and trailing `\r` stripped, JSON strings as Python's `json.dumps`
//! with `ensure_ascii=False` writes them, `{"bytes": base64}` for a line that is not UTF-8.

use std::path::Path;

use memchr::memmem::Finder;
use rayon::prelude::*;

const LINE_COLOR: &str = "\x1b[32m";
const MATCH_COLOR: &str = "\x1b[1;31m";
const RESET: &str = "\x1b[0m";

/// What to highlight: a literal, matched as Python's `re` matches an escaped bytes pattern
/// (leftmost, non-overlapping; with `insensitive`, ASCII letters only fold).
pub struct Highlight {
    needle: Vec<u8>,
    insensitive: bool,
    finder: Finder<'static>,
}

impl Highlight {
    /// `None` for an empty literal (nothing to highlight).
    pub fn new(literal: &[u8], insensitive: bool) -> Option<Self> {
        if literal.is_empty() {
            return None;
        }
        let needle: Vec<u8> = if insensitive {
            literal.to_ascii_lowercase()
        } else {
            literal.to_vec()
        };
        let finder = Finder::new(&needle).into_owned();
        Some(Self {
            needle,
            insensitive,
            finder,
        })
    }

    /// Byte ranges of the matches in `line`.
    pub fn spans(&self, line: &[u8], folded: &mut Vec<u8>, out: &mut Vec<(usize, usize)>) {
        out.clear();
        let hay: &[u8] = if self.insensitive {
            folded.clear();
            folded.extend(line.iter().map(u8::to_ascii_lowercase));
            folded
        } else {
            line
        };
        let n = self.needle.len();
        out.extend(self.finder.find_iter(hay).map(|s| (s, s + n)));
    }
}

/// How to print one result's lines.
pub struct LineOptions<'a> {
    /// Every recorded line of the file (literal, definition and reference questions), not
    /// only those inside the result's span.
    pub every: bool,
    /// At most this many matching lines.
    pub cap: usize,
    /// Lines of context around each matching line.
    pub context: usize,
    pub highlight: Option<&'a Highlight>,
    /// ANSI colours (text only).
    pub color: bool,
    /// `None`: text lines (`N:text`, `N-context`, `--` between gaps). `Some`: JSON Lines.
    pub json: Option<JsonParts<'a>>,
}

/// Pieces of each JSON line that the caller formats once per file.
pub struct JsonParts<'a> {
    /// The `"path"` value, e.g. `{"text":"src/a.py"}`.
    pub path: &'a str,
    /// The `"maguyva"` value of a match line, e.g. `{"rank":1,"score":0.5}`.
    pub on_match: &'a str,
}

/// The printed bytes and ripgrep's per-file counts.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Printed {
    pub out: Vec<u8>,
    /// Lines printed as matches.
    pub matched_lines: usize,
    /// Matches in them (a match line without a highlighted span counts one).
    pub matches: usize,
    /// Bytes of the printed lines, newlines included.
    pub bytes: usize,
}

/// `(offset, length)` of every line of `data`, as `data.split(b"\n")` minus the empty piece
/// after a final newline.
fn split_lines(data: &[u8]) -> Vec<(usize, usize)> {
    let mut out = Vec::with_capacity(data.len() / 32 + 1);
    let mut start = 0usize;
    for p in memchr::memchr_iter(b'\n', data) {
        out.push((start, p - start));
        start = p + 1;
    }
    if start < data.len() || !data.ends_with(b"\n") {
        out.push((start, data.len() - start));
    }
    out
}

/// The line numbered `n` (1-based; 0 and below index from the end, as a Python list does).
fn line_at(lines: &[(usize, usize)], n: i64) -> Option<(usize, usize)> {
    let len = lines.len() as i64;
    let i = if n >= 1 { n - 1 } else { n - 1 + len };
    (0..len).contains(&i).then(|| lines[i as usize])
}

/// Print the lines of one result: `lines` are its recorded matching lines, `start..=end`
/// its span; `data` is the file's content.
pub fn print_lines(
    data: &[u8],
    start: i64,
    end: i64,
    lines: &[i64],
    opts: &LineOptions<'_>,
) -> Printed {
    print_lines_counted(data, start, end, lines, opts, true)
}

/// [`print_lines`]; without `count_matches`, a plain text line's matches are not looked for
/// (`Printed::matches` then counts one per matched line).
fn print_lines_counted(
    data: &[u8],
    start: i64,
    end: i64,
    lines: &[i64],
    opts: &LineOptions<'_>,
    count_matches: bool,
) -> Printed {
    print_forward(data, start, end, lines, opts, count_matches)
        .unwrap_or_else(|| print_split(data, start, end, lines, opts, count_matches))
}

/// [`print_lines_counted`] over the file split into lines first: every rule, the fallbacks
/// of a result without a recorded line in the file included.
fn print_split(
    data: &[u8],
    start: i64,
    end: i64,
    lines: &[i64],
    opts: &LineOptions<'_>,
    count_matches: bool,
) -> Printed {
    let file = split_lines(data);
    let n_lines = file.len() as i64;
    let last = end.min(n_lines);
    let mut folded = Vec::new();
    let mut spans = Vec::new();
    let mut inside: Vec<i64> = if opts.every {
        lines
            .iter()
            .copied()
            .filter(|&n| 1 <= n && n <= n_lines)
            .collect()
    } else {
        lines
            .iter()
            .copied()
            .filter(|&n| start <= n && n <= last)
            .collect()
    };
    if inside.is_empty() {
        if let Some(light) = opts.highlight {
            for n in start..=last {
                if let Some((o, l)) = line_at(&file, n) {
                    light.spans(&data[o..o + l], &mut folded, &mut spans);
                    if !spans.is_empty() {
                        inside.push(n);
                    }
                }
            }
        }
    }
    if inside.is_empty() {
        inside.push(start.min(n_lines));
    }
    inside.sort_unstable();
    inside.dedup();
    inside.truncate(opts.cap);
    // (line, is a match), in order, each once.
    let context = opts.context as i64;
    let mut wanted: Vec<(i64, bool)> = Vec::with_capacity(inside.len() * (1 + 2 * opts.context));
    for &n in &inside {
        for m in (n - context).max(1)..=(n + context).min(n_lines) {
            wanted.push((m, m == n));
        }
    }
    if context > 0 {
        wanted.sort_unstable();
        let mut merged: Vec<(i64, bool)> = Vec::with_capacity(wanted.len());
        for (m, is_match) in wanted {
            match merged.last_mut() {
                Some(prev) if prev.0 == m => prev.1 |= is_match,
                _ => merged.push((m, is_match)),
            }
        }
        wanted = merged;
    }
    // A file that is UTF-8 as a whole is UTF-8 line by line (`\n` is ASCII): its lines are
    // copied, not decoded one by one.
    let mut lines_out =
        LinePrinter::new(opts, count_matches, Some(std::str::from_utf8(data).is_ok()));
    lines_out.printed.out.reserve(wanted.len() * 48);
    for (n, is_match) in wanted {
        let Some((offset, len)) = line_at(&file, n) else {
            continue;
        };
        lines_out.line(data, n, offset, len, is_match);
    }
    lines_out.printed
}

/// Prints one file's lines one by one, as `Renderer.text` and `json_lines` print them.
struct LinePrinter<'o, 'a> {
    opts: &'o LineOptions<'a>,
    /// What highlights a match line: looked for only for colour, JSON and counted matches.
    light: Option<&'a Highlight>,
    /// Whether the whole file is UTF-8; `None`: each printed line is checked.
    utf8: Option<bool>,
    previous: Option<i64>,
    folded: Vec<u8>,
    spans: Vec<(usize, usize)>,
    printed: Printed,
}

impl<'o, 'a> LinePrinter<'o, 'a> {
    fn new(opts: &'o LineOptions<'a>, count_matches: bool, utf8: Option<bool>) -> Self {
        // Plain text prints no span: a match line's highlights are found only for colour and
        // JSON (whose counts are the caller's; `print_results` returns the bytes alone).
        let light = opts
            .highlight
            .filter(|_| count_matches || opts.color || opts.json.is_some());
        Self {
            opts,
            light,
            utf8,
            previous: None,
            folded: Vec::new(),
            spans: Vec::new(),
            printed: Printed::default(),
        }
    }

    /// The line numbered `n`, `data[offset..offset + len]`.
    fn line(&mut self, data: &[u8], n: i64, offset: usize, len: usize, is_match: bool) {
        let raw = &data[offset..offset + len];
        self.spans.clear();
        if is_match {
            if let Some(light) = self.light {
                light.spans(raw, &mut self.folded, &mut self.spans);
            }
            self.printed.matched_lines += 1;
            self.printed.matches += self.spans.len().max(1);
        }
        self.printed.bytes += len + 1;
        let out = &mut self.printed.out;
        match &self.opts.json {
            None => {
                if self.previous.is_some_and(|p| n > p + 1) {
                    out.extend_from_slice(b"--\n");
                }
                self.previous = Some(n);
                let mut digits = [0u8; 20];
                paint(out, decimal(n, &mut digits), LINE_COLOR, self.opts.color);
                out.push(if is_match { b':' } else { b'-' });
                if is_match && self.opts.color && !self.spans.is_empty() {
                    let mut at = 0usize;
                    for &(s, e) in &self.spans {
                        if s < at {
                            continue;
                        }
                        decode_into(out, &raw[at..s]);
                        out.extend_from_slice(MATCH_COLOR.as_bytes());
                        decode_into(out, &raw[s..e]);
                        out.extend_from_slice(RESET.as_bytes());
                        at = e;
                    }
                    decode_into(out, &raw[at..]);
                } else if self
                    .utf8
                    .unwrap_or_else(|| std::str::from_utf8(raw).is_ok())
                {
                    out.extend_from_slice(trim_cr(raw));
                } else {
                    decode_into(out, raw);
                }
                out.push(b'\n');
            }
            Some(parts) => {
                out.extend_from_slice(if is_match {
                    b"{\"type\":\"match\",\"data\":{\"path\":"
                } else {
                    b"{\"type\":\"context\",\"data\":{\"path\":"
                });
                out.extend_from_slice(parts.path.as_bytes());
                out.extend_from_slice(b",\"lines\":");
                json_text(out, &data[offset..(offset + len + 1).min(data.len())], true);
                out.extend_from_slice(b",\"line_number\":");
                out.extend_from_slice(n.to_string().as_bytes());
                out.extend_from_slice(b",\"absolute_offset\":");
                out.extend_from_slice(offset.to_string().as_bytes());
                out.extend_from_slice(b",\"submatches\":[");
                for (i, &(s, e)) in self.spans.iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    out.extend_from_slice(b"{\"match\":");
                    json_text(out, &raw[s..e], false);
                    out.extend_from_slice(format!(",\"start\":{s},\"end\":{e}}}").as_bytes());
                }
                out.push(b']');
                if is_match {
                    out.extend_from_slice(b",\"maguyva\":");
                    out.extend_from_slice(parts.on_match.as_bytes());
                }
                out.extend_from_slice(b"}}\n");
            }
        }
    }
}

/// A forward walk over a file's lines: the line numbered `line` starts at `at` and ends at
/// `end` (its newline, or the end of the file). One `memchr` iterator finds every newline:
/// a call per line cost more than the search for short lines.
struct Cursor<'a> {
    data: &'a [u8],
    newlines: memchr::Memchr<'a>,
    line: i64,
    at: usize,
    end: Option<usize>,
}

impl<'a> Cursor<'a> {
    fn new(data: &'a [u8]) -> Self {
        let mut newlines = memchr::memchr_iter(b'\n', data);
        let end = newlines.next();
        Self {
            data,
            newlines,
            line: 1,
            at: 0,
            end,
        }
    }

    /// `(offset, length)` of the line numbered `n` (as `split_lines` gives it), `None` past
    /// the last line; `n` is never below a number sought before.
    fn seek(&mut self, n: i64) -> Option<(usize, usize)> {
        while self.line < n {
            self.at = self.end? + 1;
            self.end = self.newlines.next();
            self.line += 1;
        }
        // a final newline ends the last line (an empty file still has one, empty, line)
        if self.line != n || (self.at >= self.data.len() && !self.data.is_empty()) {
            return None;
        }
        Some((self.at, self.end.unwrap_or(self.data.len()) - self.at))
    }
}

/// [`print_lines_counted`] without splitting the whole file: the wanted lines are reached by
/// one forward walk, and a line is checked for UTF-8 when it is printed (all lines of `self`
/// in the stdlib print 1.4 of the 8.8 MB read, issue 21). `None` when a rule needs the
/// file's line count first: no recorded line inside the file (the fallbacks: the highlighted
/// lines of the span, else its first line) or a span starting before line 1 (Python's
/// negative indices).
fn print_forward(
    data: &[u8],
    start: i64,
    end: i64,
    lines: &[i64],
    opts: &LineOptions<'_>,
    count_matches: bool,
) -> Option<Printed> {
    if !opts.every && start < 1 {
        return None;
    }
    let mut inside: Vec<i64> = if opts.every {
        lines.iter().copied().filter(|&n| n >= 1).collect()
    } else {
        lines
            .iter()
            .copied()
            .filter(|&n| start <= n && n <= end)
            .collect()
    };
    inside.sort_unstable();
    inside.dedup();
    // Lines past the file's end are the tail of `inside`: dropping them before or after the
    // cap keeps the same lines.
    inside.truncate(opts.cap);
    let mut cursor = Cursor::new(data);
    let mut found: Vec<(usize, usize)> = Vec::with_capacity(inside.len());
    for &n in &inside {
        let Some(at) = cursor.seek(n) else { break };
        found.push(at);
    }
    inside.truncate(found.len());
    if inside.is_empty() {
        return None;
    }
    let mut lines_out = LinePrinter::new(opts, count_matches, None);
    lines_out.printed.out.reserve(inside.len() * 48);
    if opts.context == 0 {
        for (&n, &(offset, len)) in inside.iter().zip(&found) {
            lines_out.line(data, n, offset, len, true);
        }
        return Some(lines_out.printed);
    }
    let context = opts.context as i64;
    let mut wanted: Vec<(i64, bool)> = Vec::with_capacity(inside.len() * (1 + 2 * opts.context));
    for &n in &inside {
        for m in (n - context).max(1)..=(n + context) {
            wanted.push((m, m == n));
        }
    }
    wanted.sort_unstable();
    wanted.dedup_by(|next, prev| {
        let same = next.0 == prev.0;
        if same {
            prev.1 |= next.1;
        }
        same
    });
    let mut cursor = Cursor::new(data);
    for (n, is_match) in wanted {
        // only the context after the last match line can be past the file's end
        let Some((offset, len)) = cursor.seek(n) else {
            break;
        };
        lines_out.line(data, n, offset, len, is_match);
    }
    Some(lines_out.printed)
}

/// One result of an answer for `print_results`: its heading (the text before its lines,
/// without the final newline), its root-relative path, its span and its recorded lines.
pub struct ResultLines<'a> {
    pub heading: &'a [u8],
    pub path: &'a str,
    pub start: i64,
    pub end: i64,
    pub lines: &'a [i64],
}

/// Every result of an answer printed as `Renderer.text` prints them, in one buffer: results
/// apart by an empty line, each its heading, then `print_lines` over its file as it is now
/// (read with `confined::read_confined`: a file that is not a regular file any more, is gone
/// or resolves outside `real_root` shows its heading alone). The files are read and printed
/// in parallel; the output keeps the results' order. Text only (`opts.json` must be `None`).
pub fn print_results(
    real_root: &Path,
    results: &[ResultLines<'_>],
    opts: &LineOptions<'_>,
) -> Vec<u8> {
    print_result_blocks(real_root, results, opts).concat()
}

/// [`print_results`]' output as one block per result, for a caller that copies them once
/// into its own buffer (the binding, into the `bytes` it returns): their concatenation was a
/// second fresh buffer of the whole answer (1.4 MB for all lines of `self` in the stdlib),
/// its pages faulted in and zeroed on every answer (issue 21).
pub fn print_result_blocks(
    real_root: &Path,
    results: &[ResultLines<'_>],
    opts: &LineOptions<'_>,
) -> Vec<Vec<u8>> {
    results
        .par_iter()
        .enumerate()
        .map(|(i, r)| {
            let mut out = Vec::with_capacity(r.heading.len() + 2);
            if i > 0 {
                out.push(b'\n');
            }
            out.extend_from_slice(r.heading);
            out.push(b'\n');
            BUFFER.with_borrow_mut(|data| {
                if crate::confined::read_confined_into(real_root, r.path, data) {
                    let printed = print_lines_counted(data, r.start, r.end, r.lines, opts, false);
                    out.extend_from_slice(&printed.out);
                }
                if data.capacity() > KEPT_BUFFER {
                    *data = Vec::new(); // a huge file's buffer is not kept
                }
            });
            out
        })
        .collect()
}

/// The largest file buffer a printing thread keeps.
const KEPT_BUFFER: usize = 8 << 20;

thread_local! {
    /// The file being printed, one buffer per thread kept between files and answers: a
    /// fresh allocation per file (8.8 MB for all lines of `self` in the stdlib) was mapped
    /// and faulted in page by page.
    static BUFFER: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

fn paint(out: &mut Vec<u8>, text: &[u8], code: &str, color: bool) {
    if color {
        out.extend_from_slice(code.as_bytes());
        out.extend_from_slice(text);
        out.extend_from_slice(RESET.as_bytes());
    } else {
        out.extend_from_slice(text);
    }
}

/// `n` in decimal, written into `buf` (no allocation per printed line).
fn decimal(n: i64, buf: &mut [u8; 20]) -> &[u8] {
    let mut at = buf.len();
    let mut v = n.unsigned_abs();
    loop {
        at -= 1;
        buf[at] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    if n < 0 {
        at -= 1;
        buf[at] = b'-';
    }
    &buf[at..]
}

/// Valid UTF-8 `raw` without its trailing `\r`s, as `decode_into` writes it.
fn trim_cr(raw: &[u8]) -> &[u8] {
    let end = raw.iter().rposition(|&b| b != b'\r').map_or(0, |i| i + 1);
    &raw[..end]
}

/// `raw.decode("utf-8", "replace").rstrip("\r")`, as UTF-8.
fn decode_into(out: &mut Vec<u8>, raw: &[u8]) {
    let text = String::from_utf8_lossy(raw);
    out.extend_from_slice(text.trim_end_matches('\r').as_bytes());
}

/// `{"text": ...}` for UTF-8 bytes, `{"bytes": base64}` otherwise. `with_newline`: the slice
/// lacks the line's final `\n` when the file does not end with one; it is added.
fn json_text(out: &mut Vec<u8>, raw: &[u8], with_newline: bool) {
    let owned;
    let value: &[u8] = if with_newline && !raw.ends_with(b"\n") {
        owned = [raw, b"\n"].concat();
        &owned
    } else {
        raw
    };
    match std::str::from_utf8(value) {
        Ok(text) => {
            out.extend_from_slice(b"{\"text\":");
            json_string(out, text);
        }
        Err(_) => {
            out.extend_from_slice(b"{\"bytes\":\"");
            base64(out, value);
            out.push(b'"');
        }
    }
    out.push(b'}');
}

/// A JSON string as Python's `json.dumps(..., ensure_ascii=False)` writes it.
pub fn json_string(out: &mut Vec<u8>, text: &str) {
    out.push(b'"');
    let bytes = text.as_bytes();
    let mut from = 0usize;
    for (i, &b) in bytes.iter().enumerate() {
        let escape: &[u8] = match b {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            b'\t' => b"\\t",
            0x08 => b"\\b",
            0x0c => b"\\f",
            0..=0x1f => b"",
            _ => continue,
        };
        out.extend_from_slice(&bytes[from..i]);
        if escape.is_empty() {
            out.extend_from_slice(format!("\\u{b:04x}").as_bytes());
        } else {
            out.extend_from_slice(escape);
        }
        from = i + 1;
    }
    out.extend_from_slice(&bytes[from..]);
    out.push(b'"');
}

/// Standard base64 with padding.
fn base64(out: &mut Vec<u8>, data: &[u8]) {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    for chunk in data.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let v = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        out.push(ALPHABET[(v >> 18) as usize & 63]);
        out.push(ALPHABET[(v >> 12) as usize & 63]);
        out.push(if chunk.len() > 1 {
            ALPHABET[(v >> 6) as usize & 63]
        } else {
            b'='
        });
        out.push(if chunk.len() > 2 {
            ALPHABET[v as usize & 63]
        } else {
            b'='
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text_opts(every: bool, context: usize) -> LineOptions<'static> {
        LineOptions {
            every,
            cap: 10_000,
            context,
            highlight: None,
            color: false,
            json: None,
        }
    }

    #[test]
    fn splits_as_python_does() {
        assert_eq!(split_lines(b""), vec![(0, 0)]);
        assert_eq!(split_lines(b"\n"), vec![(0, 0)]);
        assert_eq!(split_lines(b"a\nb"), vec![(0, 1), (2, 1)]);
        assert_eq!(split_lines(b"a\nb\n"), vec![(0, 1), (2, 1)]);
        assert_eq!(split_lines(b"a\n\n"), vec![(0, 1), (2, 0)]);
    }

    #[test]
    fn context_gaps_and_marks() {
        let data = b"one\ntwo\nthree\nfour\nfive\nsix\nseven\n";
        let p = print_lines(data, 1, 7, &[2, 6], &text_opts(true, 1));
        assert_eq!(
            String::from_utf8(p.out).unwrap(),
            "1-one\n2:two\n3-three\n--\n5-five\n6:six\n7-seven\n"
        );
        assert_eq!((p.matched_lines, p.matches), (2, 2));
    }

    #[test]
    fn numbers_and_line_ends_as_python_prints_them() {
        let mut buf = [0u8; 20];
        for n in [0i64, 7, 10, 99_999, -3, i64::MAX, i64::MIN + 1] {
            assert_eq!(decimal(n, &mut buf), n.to_string().as_bytes());
        }
        for raw in [&b"a\r\r"[..], b"\r", b"", b"a\rb", b"x"] {
            let mut decoded = Vec::new();
            decode_into(&mut decoded, raw);
            assert_eq!(trim_cr(raw), &decoded[..]);
        }
    }

    #[test]
    fn plain_text_of_a_utf8_file_and_of_a_broken_one() {
        let opts = text_opts(true, 0);
        let good = "x = 'é'\r\ny\n".as_bytes();
        let p = print_lines_counted(good, 1, 2, &[1, 2], &opts, false);
        assert_eq!(String::from_utf8(p.out).unwrap(), "1:x = 'é'\n2:y\n");
        let bad = b"\xffself\nok\n";
        let p = print_lines_counted(bad, 1, 2, &[1, 2], &opts, false);
        assert_eq!(String::from_utf8(p.out).unwrap(), "1:\u{fffd}self\n2:ok\n");
    }

    proptest::proptest! {
        /// The forward walk prints what the split file prints, wherever it applies.
        #[test]
        fn forward_walk_prints_as_the_split_file(
            pieces in proptest::collection::vec(
                proptest::sample::select(vec![&b"self"[..], b"x", b"\n", b"\r\n", b"\xff", b"\xc3\xa9", b""]),
                0..40,
            ),
            lines in proptest::collection::vec(-2i64..30, 0..12),
            start in -1i64..12,
            span in 0i64..20,
            every in proptest::bool::ANY,
            context in 0usize..3,
            cap in 0usize..6,
            color in proptest::bool::ANY,
            json in proptest::bool::ANY,
        ) {
            let data = pieces.concat();
            let light = Highlight::new(b"self", false);
            let opts = LineOptions {
                every,
                cap,
                context,
                highlight: light.as_ref(),
                color,
                json: json.then_some(JsonParts { path: "{\"text\":\"a\"}", on_match: "null" }),
            };
            let end = start + span;
            for count in [true, false] {
                if let Some(walked) = print_forward(&data, start, end, &lines, &opts, count) {
                    proptest::prop_assert_eq!(
                        walked,
                        print_split(&data, start, end, &lines, &opts, count)
                    );
                }
            }
        }
    }

    #[test]
    fn forward_walk_finds_the_lines_of_python_split() {
        for data in [&b""[..], b"\n", b"a", b"a\n", b"a\nb", b"a\n\nb\n", b"\n\n"] {
            let split = split_lines(data);
            let mut cursor = Cursor::new(data);
            for n in 1..=split.len() as i64 + 2 {
                assert_eq!(cursor.seek(n), line_at(&split, n), "{data:?} line {n}");
            }
        }
    }

    #[test]
    fn highlights_ascii_folded_literals() {
        let light = Highlight::new(b"self", true).unwrap();
        let mut spans = Vec::new();
        light.spans(b"SELF.x = Self", &mut Vec::new(), &mut spans);
        assert_eq!(spans, vec![(0, 4), (9, 13)]);
    }

    #[test]
    fn json_strings_escape_as_python() {
        let mut out = Vec::new();
        json_string(&mut out, "a\"b\\c\n\u{1}\u{7f}é");
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "\"a\\\"b\\\\c\\n\\u0001\u{7f}é\""
        );
        let mut b = Vec::new();
        base64(&mut b, b"\xffab");
        assert_eq!(b, b"/2Fi");
    }
}
