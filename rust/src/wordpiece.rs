//! BERT WordPiece tokenizing of ASCII text, for the static embedding tier.
//!
//! Why here: the `tokenizers` binding was ~85 % of the static tier's CPU (it normalises,
//! keeps offsets and tokenizes the whole text before truncating to 128 tokens). This one
//! reads bytes, stops at the window, and feeds the pooling in the same call
//! (`static_embed::pool_texts`). It covers ASCII only, which is most code; the caller sends
//! other texts to `tokenizers`. Equal ids to the vendored MiniLM `tokenizer.json` (uncased
//! BertNormalizer with clean_text, BertPreTokenizer, WordPiece with `##` and 100 characters
//! per word at most, the special tokens split out of the raw text first): the tests compare it
//! with `tokenizers` on every ASCII character and on real corpora
//! (`tests/test_static_wordpiece.py`).

use rustc_hash::FxHashMap;

use crate::error::CoreError;

/// The vocabulary, split into word-initial pieces and `##` continuations (without the prefix),
/// so a lookup is one hash of a byte slice.
pub struct WordPiece {
    start: FxHashMap<Box<[u8]>, u32>,
    cont: FxHashMap<Box<[u8]>, u32>,
    max_start: usize,
    max_cont: usize,
    unk: u32,
    specials: Vec<(Box<[u8]>, u32)>,
    max_word: usize,
    size: usize,
}

/// What the BertNormalizer and BertPreTokenizer make of an ASCII byte.
#[derive(Clone, Copy, PartialEq)]
enum Class {
    Word,
    Space,
    Punct,
    Dropped,
}

fn class(b: u8) -> Class {
    match b {
        b' ' | b'\t' | b'\n' | b'\r' => Class::Space,
        0..=0x1f | 0x7f => Class::Dropped, // control characters: removed (clean_text)
        b'!'..=b'/' | b':'..=b'@' | b'['..=b'`' | b'{'..=b'~' => Class::Punct,
        _ => Class::Word,
    }
}

impl WordPiece {
    /// `vocab[id]` is the token of `id`; `specials` the ids of the added tokens matched in
    /// the raw text (`[CLS]`, `[SEP]`, ...); `unk` the id of a word with no split.
    pub fn new(
        vocab: &[&str],
        unk: u32,
        specials: &[u32],
        max_word: usize,
    ) -> Result<Self, CoreError> {
        if unk as usize >= vocab.len() || specials.iter().any(|&s| s as usize >= vocab.len()) {
            return Err(CoreError::InvalidArgument(format!(
                "wordpiece: special or unknown token id outside the {} tokens",
                vocab.len()
            )));
        }
        let mut start = FxHashMap::default();
        let mut cont = FxHashMap::default();
        for (id, token) in vocab.iter().enumerate() {
            let id = id as u32;
            if !token.is_ascii() || specials.contains(&id) {
                continue; // never matched in ASCII text (specials are split out first)
            }
            match token.strip_prefix("##") {
                Some(rest) if !rest.is_empty() => {
                    cont.entry(rest.as_bytes().into()).or_insert(id);
                }
                _ => {
                    start.entry(token.as_bytes().into()).or_insert(id);
                }
            }
        }
        let longest = |m: &FxHashMap<Box<[u8]>, u32>| m.keys().map(|k| k.len()).max().unwrap_or(0);
        let specials = specials
            .iter()
            .map(|&id| (vocab[id as usize].as_bytes().into(), id))
            .collect();
        Ok(WordPiece {
            max_start: longest(&start),
            max_cont: longest(&cont),
            start,
            cont,
            unk,
            specials,
            max_word,
            size: vocab.len(),
        })
    }

    /// The ids of `text` (ASCII, else an error), at most `max_tokens`, into `out` (cleared).
    pub fn encode(
        &self,
        text: &[u8],
        max_tokens: usize,
        out: &mut Vec<u32>,
    ) -> Result<(), CoreError> {
        out.clear();
        if !text.is_ascii() {
            return Err(CoreError::InvalidArgument(
                "wordpiece: the text is not ASCII (send it to `tokenizers`)".into(),
            ));
        }
        let mut word: Vec<u8> = Vec::with_capacity(64);
        let mut i = 0;
        while i < text.len() && out.len() < max_tokens {
            let b = text[i];
            if b == b'[' {
                if let Some((len, id)) = self.special_at(&text[i..]) {
                    self.flush(&mut word, out);
                    out.push(id);
                    i += len;
                    continue;
                }
            }
            match class(b) {
                Class::Word => word.push(b.to_ascii_lowercase()),
                Class::Space => self.flush(&mut word, out),
                Class::Punct => {
                    self.flush(&mut word, out);
                    word.push(b);
                    self.flush(&mut word, out);
                }
                Class::Dropped => {}
            }
            i += 1;
        }
        self.flush(&mut word, out);
        out.truncate(max_tokens);
        Ok(())
    }

    /// The largest id `encode` can give (the vocabulary's size less one).
    pub fn max_id(&self) -> usize {
        self.size - 1
    }

    fn special_at(&self, rest: &[u8]) -> Option<(usize, u32)> {
        self.specials
            .iter()
            .find(|(s, _)| rest.starts_with(s))
            .map(|(s, id)| (s.len(), *id))
    }

    /// The pieces of `word` (greedy longest match first), or the unknown token; clears it.
    fn flush(&self, word: &mut Vec<u8>, out: &mut Vec<u32>) {
        if word.is_empty() {
            return;
        }
        if word.len() > self.max_word {
            out.push(self.unk);
            word.clear();
            return;
        }
        let before = out.len();
        let mut begin = 0;
        while begin < word.len() {
            let (map, longest) = if begin == 0 {
                (&self.start, self.max_start)
            } else {
                (&self.cont, self.max_cont)
            };
            let mut end = word.len().min(begin + longest);
            let found = loop {
                if end <= begin {
                    break None;
                }
                if let Some(&id) = map.get(&word[begin..end]) {
                    break Some(id);
                }
                end -= 1;
            };
            match found {
                Some(id) => {
                    out.push(id);
                    begin = end;
                }
                None => {
                    out.truncate(before);
                    out.push(self.unk);
                    break;
                }
            }
        }
        word.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn small() -> WordPiece {
        let vocab = [
            "[PAD]", "[UNK]", "[CLS]", "a", "b", "ab", "##b", "##c", "##cd", "(", ")", "x",
        ];
        WordPiece::new(&vocab, 1, &[0, 2], 5).unwrap()
    }

    fn ids(wp: &WordPiece, text: &str, max: usize) -> Vec<u32> {
        let mut out = Vec::new();
        wp.encode(text.as_bytes(), max, &mut out).unwrap();
        out
    }

    #[test]
    fn splits_like_bert() {
        let wp = small();
        assert_eq!(ids(&wp, "AB(x)", 10), vec![5, 9, 11, 10]);
        assert_eq!(ids(&wp, "abcd abb", 10), vec![5, 8, 5, 6]);
        assert_eq!(
            ids(&wp, "a\x01b", 10),
            vec![5],
            "control characters join the word"
        );
        assert_eq!(ids(&wp, "x[CLS]a", 10), vec![11, 2, 3]);
        assert_eq!(ids(&wp, "abz", 10), vec![1], "no split: unknown");
        assert_eq!(ids(&wp, "abbbbb", 10), vec![1], "longer than max_word");
        assert_eq!(
            ids(&wp, "abcd abcd", 3),
            vec![5, 8, 5],
            "truncated at the window"
        );
        assert_eq!(ids(&wp, "", 3), Vec::<u32>::new());
    }

    #[test]
    fn rejects_non_ascii_and_bad_vocab() {
        let wp = small();
        let mut out = Vec::new();
        assert!(wp.encode("é".as_bytes(), 4, &mut out).is_err());
        assert!(WordPiece::new(&["a"], 3, &[], 5).is_err());
    }
}
