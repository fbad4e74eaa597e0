//! A resumable LZ4 block decoder, in safe Rust.
//!
//! The stored content is one LZ4 block per document (written by `lz4_flex`). A question that
//! needs only a document's first matching lines (`count_all: false`: a files-only search,
//! ripgrep's `-l`) can stop decoding once they are found: on rare literals half the bytes of
//! the matching files come after their first match. `lz4_flex` decodes a block in one call,
//! so this decoder decodes whole sequences until a requested output length is reached and
//! resumes from there. Fast paths copy 16 bytes at a time into a buffer with slack at its end
//! (bytes past the current output length are scratch, overwritten by later sequences), so
//! it keeps up with `lz4_flex`'s unsafe decoder; every access is bounds-checked, so a damaged
//! block is an error, never undefined behaviour.

/// Bytes of scratch the output buffer needs past the decoded length (wild copies).
pub const SLACK: usize = 32;

/// The block is malformed (or longer than its recorded length).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lz4Error;

/// Decoding state of one block: the input position and the bytes decoded so far.
pub struct Lz4Decoder<'a> {
    src: &'a [u8],
    ip: usize,
    op: usize,
    done: bool,
}

impl<'a> Lz4Decoder<'a> {
    /// Start decoding `src` (one LZ4 block). An empty block decodes to nothing.
    pub fn new(src: &'a [u8]) -> Self {
        Self {
            src,
            ip: 0,
            op: 0,
            done: src.is_empty(),
        }
    }

    /// Bytes decoded so far: `out[..decoded()]` is the content's prefix.
    pub fn decoded(&self) -> usize {
        self.op
    }

    /// True once the whole block is decoded.
    pub fn is_done(&self) -> bool {
        self.done
    }

    /// Decode whole sequences into `out` until at least `until` bytes are decoded or the
    /// block ends. `out` must be at least `limit + SLACK` bytes long, where `limit` is the
    /// document's recorded length: decoding past it is an error.
    pub fn decode_until(
        &mut self,
        out: &mut [u8],
        until: usize,
        limit: usize,
    ) -> Result<(), Lz4Error> {
        if out.len() < limit.saturating_add(SLACK) {
            return Err(Lz4Error);
        }
        let src = self.src;
        let (mut ip, mut op, mut done) = (self.ip, self.op, self.done);
        while !done && op < until {
            // The common sequence (at most 14 literals, a match of at most 18 bytes, far from
            // both ends): one bounds check for all its input, none for its output.
            if let (Some(w), true) = (src.get(ip..ip + 18), op + 32 <= limit) {
                let token = w[0];
                let (lit, short) = (usize::from(token >> 4), usize::from(token & 15));
                if lit < 15 && short < 15 {
                    copy16(&mut out[op..], &w[1..]);
                    op += lit;
                    let offset = usize::from(u16::from_le_bytes([w[1 + lit], w[2 + lit]]));
                    ip += 3 + lit;
                    if offset == 0 || offset > op {
                        return Err(Lz4Error);
                    }
                    copy_match(out, op, offset, short + 4);
                    op += short + 4;
                    continue;
                }
            }
            let token = *src.get(ip).ok_or(Lz4Error)?;
            ip += 1;
            // Literals.
            let mut lit = usize::from(token >> 4);
            if lit == 15 {
                lit += read_length(src, &mut ip)?;
            }
            let lit_end = ip.checked_add(lit).ok_or(Lz4Error)?;
            if lit_end > src.len() || op + lit > limit {
                return Err(Lz4Error);
            }
            if lit <= 16 && ip + 16 <= src.len() {
                // `op + 16 <= limit + SLACK <= out.len()`: a wild copy into the slack.
                copy16(&mut out[op..], &src[ip..]);
            } else {
                out[op..op + lit].copy_from_slice(&src[ip..lit_end]);
            }
            op += lit;
            ip = lit_end;
            if ip == src.len() {
                // The last sequence has literals only.
                done = true;
                break;
            }
            // The match: a 16-bit offset back into the output, then its length.
            let b = src.get(ip..ip + 2).ok_or(Lz4Error)?;
            let offset = usize::from(u16::from_le_bytes([b[0], b[1]]));
            ip += 2;
            let mut len = usize::from(token & 15);
            if len == 15 {
                len += read_length(src, &mut ip)?;
            }
            len += 4;
            if offset == 0 || offset > op || op + len > limit {
                return Err(Lz4Error);
            }
            copy_match(out, op, offset, len);
            op += len;
        }
        self.ip = ip;
        self.op = op;
        self.done = done;
        Ok(())
    }
}

impl Lz4Decoder<'_> {
    /// Decode the rest of the block with `lz4_flex` (faster per byte than [`decode_until`]:
    /// ~2.8 against ~2.0 GB/s on kernel sources), the bytes decoded so far serving as its
    /// dictionary: the rest of the input is whole sequences, whose matches reach back into
    /// them. `out` as for [`decode_until`].
    ///
    /// [`decode_until`]: Lz4Decoder::decode_until
    pub fn finish(&mut self, out: &mut [u8], limit: usize) -> Result<(), Lz4Error> {
        if self.done {
            return Ok(());
        }
        let room = limit.checked_sub(self.op).ok_or(Lz4Error)?;
        let rest = self.src.get(self.ip..).ok_or(Lz4Error)?;
        let (dict, tail) = out.split_at_mut(self.op);
        let tail = tail.get_mut(..room).ok_or(Lz4Error)?;
        let n =
            lz4_flex::block::decompress_into_with_dict(rest, tail, dict).map_err(|_| Lz4Error)?;
        self.op += n;
        self.ip = self.src.len();
        self.done = true;
        Ok(())
    }
}

/// Copy a match of `len` bytes from `offset` bytes back to `out[op..]` (`offset <= op`;
/// `out` holds `SLACK` bytes past the match's end).
#[inline(always)]
fn copy_match(out: &mut [u8], op: usize, offset: usize, len: usize) {
    let start = op - offset;
    if len <= 16 && offset >= len {
        // Read 16 bytes, then write them (a move): bytes read past `op` are scratch
        // and land past the match's end (`offset >= len`).
        let piece: [u8; 16] = out[start..start + 16].try_into().expect("16 bytes");
        out[op..op + 16].copy_from_slice(&piece);
    } else if offset >= 16 {
        // 16 bytes at a time: each source piece is decoded before it is read
        // (`start + 16 <= op`); the last piece may spill into the slack
        // (`op + len + 15 <= limit + SLACK`).
        let (done, rest) = out.split_at_mut(op);
        let from = &done[start..];
        let mut i = 0;
        while i < len {
            if i + 16 <= from.len() {
                copy16(&mut rest[i..], &from[i..]);
            } else {
                // The piece reaches into bytes this match writes: byte by byte.
                for j in i..len.min(i + 16) {
                    rest[j] = if j < from.len() {
                        from[j]
                    } else {
                        rest[j - from.len()]
                    };
                }
            }
            i += 16;
        }
    } else {
        // A short offset (overlapping when shorter than the match: the last `offset`
        // bytes repeat): byte by byte.
        let w = &mut out[start..op + len];
        for i in offset..w.len() {
            w[i] = w[i - offset];
        }
    }
}

/// Copy 16 bytes (fixed size: two moves, no call).
#[inline(always)]
fn copy16(dst: &mut [u8], src: &[u8]) {
    let a: &[u8; 16] = src[..16].try_into().expect("16 bytes");
    dst[..16].copy_from_slice(a);
}

/// An LZ4 length continuation: bytes added until one is not 255.
#[inline]
fn read_length(src: &[u8], ip: &mut usize) -> Result<usize, Lz4Error> {
    let mut n = 0usize;
    loop {
        let b = *src.get(*ip).ok_or(Lz4Error)?;
        *ip += 1;
        n = n.checked_add(usize::from(b)).ok_or(Lz4Error)?;
        if b != 255 {
            return Ok(n);
        }
    }
}

/// Decode a whole block of `raw_len` bytes into `out` (resized as needed; its length is
/// `raw_len` afterwards).
pub fn decompress_into(src: &[u8], raw_len: usize, out: &mut Vec<u8>) -> Result<(), Lz4Error> {
    let need = raw_len.checked_add(SLACK).ok_or(Lz4Error)?;
    if out.len() < need {
        out.resize(need, 0);
    }
    let mut dec = Lz4Decoder::new(src);
    dec.decode_until(out, usize::MAX, raw_len)?;
    if !dec.is_done() || dec.decoded() != raw_len {
        return Err(Lz4Error);
    }
    out.truncate(raw_len);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn roundtrip_in_steps(data: &[u8], step: usize) {
        let block = lz4_flex::block::compress(data);
        let mut out = vec![0u8; data.len() + SLACK];
        let mut dec = Lz4Decoder::new(&block);
        let mut until = step;
        while !dec.is_done() {
            dec.decode_until(&mut out, until, data.len())
                .expect("decodes");
            assert!(dec.decoded() >= until.min(data.len()) || dec.is_done());
            assert_eq!(&out[..dec.decoded()], &data[..dec.decoded()]);
            until = until.saturating_add(step);
        }
        assert_eq!(dec.decoded(), data.len());
    }

    #[test]
    fn real_source_decodes_whole_and_in_steps() {
        let data = std::fs::read(file!()).expect("this file");
        let mut big = Vec::new();
        for i in 0..40 {
            big.extend_from_slice(&data[i * 37 % data.len()..]);
        }
        for step in [1, 7, 100, 4096, usize::MAX] {
            roundtrip_in_steps(&big, step);
        }
        let mut out = Vec::new();
        decompress_into(&lz4_flex::block::compress(&big), big.len(), &mut out).expect("ok");
        assert_eq!(out, big);
    }

    #[test]
    fn overlapping_and_long_runs() {
        let mut data = vec![b'a'; 100_000];
        data.extend(std::iter::repeat_n(b"xy".as_slice(), 5000).flatten());
        data.extend((0..70_000u32).map(|i| (i % 251) as u8));
        roundtrip_in_steps(&data, 999);
    }

    #[test]
    fn damaged_blocks_are_errors_not_panics() {
        let data: Vec<u8> = (0..20_000u32)
            .map(|i| b"abcdefgh"[(i % 13 % 8) as usize])
            .collect();
        let block = lz4_flex::block::compress(&data);
        let mut out = Vec::new();
        // Truncated, a wrong length, and every single-byte change: never a panic.
        assert!(decompress_into(&block[..block.len() / 2], data.len(), &mut out).is_err());
        assert!(decompress_into(&block, data.len() - 1, &mut out).is_err());
        assert!(decompress_into(&block, data.len() + 1, &mut out).is_err());
        for at in 0..block.len() {
            let mut bad = block.clone();
            bad[at] ^= 0xA5;
            let _ = decompress_into(&bad, data.len(), &mut out);
        }
        assert!(decompress_into(&[0xF0], 10, &mut out).is_err());
        assert!(decompress_into(&[0x10, b'a', 0, 0], 10, &mut out).is_err());
    }

    /// Throughput against `lz4_flex` on real files (not run by default):
    /// `MAGUYVA_LZ4_BENCH=/work/corpora/linux-source-6.1/kernel cargo test --release --lib
    /// lz4_throughput -- --ignored --nocapture`.
    #[test]
    #[ignore]
    fn lz4_throughput() {
        let Ok(dir) = std::env::var("MAGUYVA_LZ4_BENCH") else {
            return;
        };
        let mut blocks = Vec::new();
        crate::trigram::for_each_file(std::path::Path::new(&dir), |data| {
            blocks.push((lz4_flex::block::compress(&data), data.len()));
        });
        let raw: usize = blocks.iter().map(|b| b.1).sum();
        let mut out = Vec::new();
        let (mut best_ours, mut best_theirs) = (f64::MAX, f64::MAX);
        for _ in 0..9 {
            let t = std::time::Instant::now();
            for (b, n) in &blocks {
                decompress_into(b, *n, &mut out).expect("ours");
            }
            let ours = t.elapsed().as_secs_f64();
            let t = std::time::Instant::now();
            for (b, n) in &blocks {
                if out.len() < *n {
                    out.resize(*n, 0);
                }
                lz4_flex::block::decompress_into(b, &mut out[..*n]).expect("lz4_flex");
            }
            let theirs = t.elapsed().as_secs_f64();
            best_ours = best_ours.min(ours);
            best_theirs = best_theirs.min(theirs);
        }
        println!(
            "{} files, {:.1} MB, best of 9: ours {:.2} GB/s, lz4_flex {:.2} GB/s",
            blocks.len(),
            raw as f64 / 1e6,
            raw as f64 / best_ours / 1e9,
            raw as f64 / best_theirs / 1e9
        );
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// Any content (a small alphabet makes long and overlapping matches), decoded in any
        /// step size, equals the original; so does lz4_flex's own decoder's result.
        #[test]
        fn equals_lz4_flex(
            data in proptest::collection::vec(prop_oneof![Just(b'a'), Just(b'b'), any::<u8>()], 0..5000),
            step in 1usize..3000,
        ) {
            let block = lz4_flex::block::compress(&data);
            let theirs = lz4_flex::block::decompress(&block, data.len()).expect("lz4_flex");
            prop_assert_eq!(&theirs, &data);
            let mut out = Vec::new();
            decompress_into(&block, data.len(), &mut out).expect("decodes");
            prop_assert_eq!(&out, &data);
            roundtrip_in_steps(&data, step);
            // A first step by this decoder, the rest by lz4_flex with the prefix as dictionary.
            let mut buf = vec![0u8; data.len() + SLACK];
            let mut dec = Lz4Decoder::new(&block);
            dec.decode_until(&mut buf, step, data.len()).expect("step");
            dec.finish(&mut buf, data.len()).expect("finish");
            prop_assert!(dec.is_done());
            prop_assert_eq!(&buf[..dec.decoded()], &data[..]);
        }
    }
}
