//! Lines of a stored document cut out as a chunk's text: the chunk store keeps a chunk whose
//! text is lines `start..=end` of its file as that span only (`maguyva.store.spans`), and
//! gets the text back from here.
//!
//! Lines are numbered as the chunker numbers them (`extract.chunks.source_lines`): split on
//! `\n` only (a lone `\r` or a form feed does not start a line), a final `\n` ends the last
//! line, one trailing `\r` dropped per line; a range's lines are joined by `\n` and decoded as
//! UTF-8 with U+FFFD for bad bytes. [`span_json`] gives each text as the JSON string a chunk
//! row holds (Python's `json.dumps(text, ensure_ascii=False)`), which the row is filled with.

/// The text of lines `start..=end` (1-based) of `bytes` for each range; lines past the end
/// are empty, as Python's slices are.
pub fn span_texts(bytes: &[u8], ranges: &[(u32, u32)]) -> Vec<String> {
    let mut starts = vec![0usize];
    starts.extend(memchr::memchr_iter(b'\n', bytes).map(|i| i + 1));
    // a final newline ends the last line rather than starting an empty one
    let n_lines = if bytes.is_empty() || bytes.ends_with(b"\n") {
        starts.len() - 1
    } else {
        starts.len()
    };
    ranges
        .iter()
        .map(|&(start, end)| {
            let first = (start.max(1) - 1) as usize;
            let last = (end as usize).min(n_lines);
            let mut text = Vec::new();
            for i in first..last {
                if i > first {
                    text.push(b'\n');
                }
                let a = starts[i];
                let mut b = starts.get(i + 1).map_or(bytes.len(), |&next| next - 1);
                if b > a && bytes[b - 1] == b'\r' {
                    b -= 1;
                }
                text.extend_from_slice(&bytes[a..b]);
            }
            String::from_utf8(text)
                .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
        })
        .collect()
}

/// [`span_texts`], each as a JSON string (`crate::lines::json_string`).
pub fn span_json(bytes: &[u8], ranges: &[(u32, u32)]) -> Vec<Vec<u8>> {
    span_texts(bytes, ranges)
        .iter()
        .map(|text| {
            let mut out = Vec::with_capacity(text.len() + 16);
            crate::lines::json_string(&mut out, text);
            out
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The chunker's numbering: `\n` only, one `\r` dropped, a final newline ends a line.
    #[test]
    fn lines_are_numbered_as_the_chunker_numbers_them() {
        let text = b"a\r\nb\x0cc\n\nd\r\r\ne";
        let got = span_texts(text, &[(1, 1), (2, 3), (1, 5), (4, 4), (5, 9), (7, 8)]);
        assert_eq!(
            got,
            ["a", "b\x0cc\n", "a\nb\x0cc\n\nd\r\ne", "d\r", "e", ""]
        );
        assert_eq!(span_texts(b"x\ny\n", &[(1, 3)]), ["x\ny"]);
        assert_eq!(span_texts(b"", &[(1, 1)]), [""]);
        assert_eq!(span_texts(b"\xffok", &[(1, 1)]), ["\u{fffd}ok"]);
        assert_eq!(
            span_json(b"a\t\"b\"\n\x01", &[(1, 2)]),
            [b"\"a\\t\\\"b\\\"\\n\\u0001\""]
        );
    }
}
