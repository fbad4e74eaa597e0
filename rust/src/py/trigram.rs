//! Python bindings for the trigram index: build, open, search, BM25.
//!
//! `TextIndex` is immutable after `open`, so one instance is shared by every engine thread;
//! each call releases the GIL for the whole scan.

use std::collections::HashMap;
use std::path::PathBuf;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::bm25::build::build_for_segment;
use crate::bm25::score::Bm25Index;
use crate::py::errors::to_py;
use crate::trigram::bm25;
use crate::trigram::build::{self, BuildInput, BuildOptions, ChunkSpan};
use crate::trigram::groups::WordBytes;
use crate::trigram::index;
use crate::trigram::rank;
use crate::trigram::search::{self, Case, SearchSpec};

/// `(path, [(start_line, end_line, chunk_id)])`: one file to index and its chunks.
type FileChunks = (String, Vec<(u32, u32, String)>);
/// `(path, n_matches, n_lines, [(line, text, [(start, end)])])`
type FileTuple = (String, u32, u32, Vec<(u32, String, Vec<(u32, u32)>)>);
/// `(file slot, start, end, chunk_id, snippet, lines, columns, whole, is_def, texts)`: one
/// chunk's lines; the slot indexes the files returned beside it.
type TopGroup = (
    usize,
    u32,
    u32,
    Option<String>,
    String,
    Vec<u32>,
    Vec<[u32; 3]>,
    bool,
    Option<bool>,
    Option<Vec<String>>,
);
/// `(start, end, chunk_id, n_columns, whole, is_def, (snippet, lines, columns))`: the first
/// group (in ranked order) of one file.
type FirstGroup = (
    u32,
    u32,
    Option<String>,
    usize,
    bool,
    bool,
    (String, Vec<u32>, Vec<[u32; 3]>),
);
/// `(path, the file's matching lines, demoted)`
type TopFile = (String, Vec<u32>, bool);
/// `literal_ranked`'s `(files, firsts, slots)`.
type RankedFiles = (Vec<TopFile>, Vec<FirstGroup>, Vec<u32>);
/// `(path, start_line, end_line, chunk_id, score, lines, term indices)`
type ChunkTuple = (String, u32, u32, Option<String>, f64, Vec<u32>, Vec<usize>);

/// Build a text index; returns a report dict. See `maguyva._core.pyi`.
#[pyfunction]
#[pyo3(signature = (root, out_dir, files, *, zstd_level=0, index_file=None, content_file=None))]
fn build_text_index(
    py: Python<'_>,
    root: PathBuf,
    out_dir: PathBuf,
    files: Vec<FileChunks>,
    zstd_level: i32,
    index_file: Option<String>,
    content_file: Option<String>,
) -> PyResult<HashMap<String, Py<PyAny>>> {
    let inputs: Vec<BuildInput> = files
        .into_iter()
        .map(|(path, chunks)| BuildInput {
            path,
            chunks: chunks
                .into_iter()
                .map(|(start_line, end_line, id)| ChunkSpan {
                    start_line,
                    end_line,
                    id,
                })
                .collect(),
        })
        .collect();
    let defaults = BuildOptions::default();
    let opts = BuildOptions {
        zstd_level,
        index_file: index_file.unwrap_or(defaults.index_file),
        content_file: content_file.unwrap_or(defaults.content_file),
        ..BuildOptions::default()
    };
    // Ctrl-C: the GIL is released during the build, so Python cannot run its SIGINT handler;
    // between batches the build re-attaches briefly and asks it (main thread only), and a
    // raised KeyboardInterrupt ends the build there.
    let mut interrupt: Option<PyErr> = None;
    let built = py.detach(|| {
        build::build_cancellable(
            &root,
            &inputs,
            &out_dir,
            &opts,
            &mut || match Python::attach(|py| py.check_signals()) {
                Ok(()) => false,
                Err(err) => {
                    interrupt = Some(err);
                    true
                }
            },
        )
    });
    let report = match built.map_err(to_py)? {
        Some(report) => report,
        None => {
            return Err(interrupt.unwrap_or_else(|| {
                pyo3::exceptions::PyKeyboardInterrupt::new_err("text index build cancelled")
            }))
        }
    };
    // The segment's BM25 postings, from what was just written (`crate::bm25`).
    let started = std::time::Instant::now();
    let postings = py
        .detach(|| build_for_segment(&out_dir, &opts.index_file, &opts.content_file))
        .map_err(to_py)?;
    let postings_seconds = started.elapsed().as_secs_f64();
    let skipped: Vec<(String, &'static str)> = report
        .skipped
        .iter()
        .map(|(p, r)| (p.clone(), r.as_str()))
        .collect();
    let mut out: HashMap<String, Py<PyAny>> = HashMap::new();
    out.insert(
        "docs".into(),
        report.docs.into_pyobject(py)?.into_any().unbind(),
    );
    out.insert(
        "trigrams".into(),
        report.trigrams.into_pyobject(py)?.into_any().unbind(),
    );
    out.insert(
        "chunks".into(),
        report.chunks.into_pyobject(py)?.into_any().unbind(),
    );
    for (k, v) in [
        ("build_id", report.build_id),
        ("content_bytes", report.content_bytes),
        ("stored_bytes", report.stored_bytes),
        ("index_bytes", report.index_bytes),
        ("bm25_bytes", postings.bytes),
        ("bm25_words", u64::from(postings.words)),
    ] {
        out.insert(k.into(), v.into_pyobject(py)?.into_any().unbind());
    }
    out.insert(
        "bm25_seconds".into(),
        postings_seconds.into_pyobject(py)?.into_any().unbind(),
    );
    out.insert(
        "skipped_files".into(),
        skipped.into_pyobject(py)?.into_any().unbind(),
    );
    Ok(out)
}

/// A loaded, read-only text index (thread-safe).
#[pyclass(frozen, module = "maguyva._core")]
struct TextIndex {
    inner: index::TextIndex,
    /// The segments' BM25 postings; `None` for an index built before them.
    bm25: Option<Bm25Index>,
    /// Documents decoded by literal and regex searches, kept for the next ones (bounded:
    /// `search::content_cache_budget`).
    cache: search::ContentCache,
}

/// The 256 flags of `word` (see `WordBytes`).
fn word_bytes(word: &[u8]) -> PyResult<WordBytes> {
    let flags: [u8; 256] = word
        .try_into()
        .map_err(|_| PyValueError::new_err("word must hold 256 flags"))?;
    Ok(WordBytes(flags.map(|b| b != 0)))
}

fn parse_case(case: &str) -> PyResult<Case> {
    match case {
        "sensitive" => Ok(Case::Sensitive),
        "insensitive" => Ok(Case::Insensitive),
        "smart" => Ok(Case::Smart),
        other => Err(PyValueError::new_err(format!(
            "case must be 'sensitive', 'insensitive' or 'smart', got {other:?}"
        ))),
    }
}

/// `(index_file, content_file, build_id, n_docs, deleted local ids)`: one segment.
type SegmentTuple = (String, String, u64, u32, Vec<u32>);

/// A literal question's word bytes, definition pattern and search, checked once for
/// `literal_top` and `literal_ranked`.
type TopSpec = (WordBytes, Option<std::sync::Arc<regex::Regex>>, SearchSpec);

impl TextIndex {
    #[allow(clippy::too_many_arguments)]
    fn top_spec(
        &self,
        pattern: String,
        definition: Option<String>,
        word: &[u8],
        demoted: &[u8],
        regex: bool,
        case: &str,
        whole_word: bool,
        path_glob: Option<String>,
        [max_lines, max_files, max_lines_per_file]: [usize; 3],
    ) -> PyResult<TopSpec> {
        let word = word_bytes(word)?;
        if demoted.len() != self.inner.n_docs() as usize {
            return Err(PyValueError::new_err(format!(
                "demoted must hold one flag per document ({}), got {}",
                self.inner.n_docs(),
                demoted.len()
            )));
        }
        let definition = definition
            .map(|d| rank::definition_regex(&d))
            .transpose()
            .map_err(|e| PyValueError::new_err(format!("bad definition pattern: {e}")))?;
        let spec = SearchSpec {
            pattern,
            regex,
            case: parse_case(case)?,
            whole_word,
            path_glob,
            max_lines,
            max_files,
            max_lines_per_file,
            count_all: false,
        };
        Ok((word, definition, spec))
    }
}

#[pymethods]
impl TextIndex {
    /// Open the index in `dir`: the single segment `trigram.idx` + `content.bin`, or the
    /// listed `segments` (base first) with their tombstones.
    #[new]
    #[pyo3(signature = (dir, segments=None, *, bm25=true))]
    fn new(
        py: Python<'_>,
        dir: PathBuf,
        segments: Option<Vec<SegmentTuple>>,
        bm25: bool,
    ) -> PyResult<Self> {
        let names: Vec<String> = match &segments {
            None => vec![crate::trigram::format::INDEX_FILE.to_string()],
            Some(list) => list.iter().map(|s| s.0.clone()).collect(),
        };
        let inner = py
            .detach(|| match segments {
                None => index::TextIndex::open(&dir),
                Some(list) => {
                    let specs: Vec<index::SegmentSpec> = list
                        .into_iter()
                        .map(|(index_file, content_file, build_id, n_docs, deleted)| {
                            index::SegmentSpec {
                                index_file,
                                content_file,
                                build_id,
                                n_docs,
                                deleted,
                            }
                        })
                        .collect();
                    index::TextIndex::open_segments(&dir, &specs)
                }
            })
            .map_err(to_py)?;
        let bm25 = if bm25 {
            py.detach(|| Bm25Index::open(&dir, &names, &inner))
                .map_err(to_py)?
        } else {
            None
        };
        Ok(Self {
            inner,
            bm25,
            cache: search::ContentCache::new(search::content_cache_budget()),
        })
    }

    /// The decoded-content cache: `(documents, bytes, budget in bytes)`.
    fn content_cache_size(&self) -> (usize, usize, usize) {
        let (docs, bytes) = self.cache.size();
        (docs, bytes, self.cache.budget())
    }

    /// Whether every segment has BM25 postings (an index built before them has none).
    #[getter]
    fn has_bm25_postings(&self) -> bool {
        self.bm25.is_some()
    }

    /// Where each path lives: `(segment, local id)`, or None when it is not a live document.
    fn locate(&self, paths: Vec<String>) -> Vec<Option<(u32, u32)>> {
        paths
            .iter()
            .map(|p| self.inner.find(p).map(|g| self.inner.locate(g)))
            .collect()
    }

    /// For each line of `path`, its smallest enclosing chunk `(start_line, end_line, id)`
    /// (None: no chunk holds it, or the path is not indexed).
    fn enclosing(&self, path: &str, lines: Vec<u32>) -> Vec<Option<(u32, u32, String)>> {
        match self.inner.find(path) {
            None => vec![None; lines.len()],
            Some(g) => self
                .inner
                .enclosing(g, &lines)
                .into_iter()
                .map(|c| c.map(|(s, e, id)| (s, e, id.to_string())))
                .collect(),
        }
    }

    /// Per segment: `(documents, live documents)`.
    fn segment_sizes(&self) -> Vec<(u32, usize)> {
        self.inner
            .segments()
            .iter()
            .enumerate()
            .map(|(s, seg)| (seg.n_docs(), self.inner.live_in(s).len()))
            .collect()
    }

    /// The live paths of segment `segment`, in order.
    fn segment_paths(&self, segment: usize) -> PyResult<Vec<String>> {
        let Some(seg) = self.inner.segments().get(segment) else {
            return Err(PyValueError::new_err(format!("no segment {segment}")));
        };
        Ok(self
            .inner
            .live_in(segment)
            .into_iter()
            .map(|d| seg.path(d).to_string())
            .collect())
    }

    /// Literal or regex search, in path order; returns `(files, candidates, truncated)`.
    #[pyo3(signature = (pattern, *, regex=false, case="smart", whole_word=false,
                        path_glob=None, max_lines=1000, max_files=usize::MAX,
                        max_lines_per_file=usize::MAX, count_all=true))]
    #[allow(clippy::too_many_arguments)]
    fn search(
        &self,
        py: Python<'_>,
        pattern: String,
        regex: bool,
        case: &str,
        whole_word: bool,
        path_glob: Option<String>,
        max_lines: usize,
        max_files: usize,
        max_lines_per_file: usize,
        count_all: bool,
    ) -> PyResult<(Vec<FileTuple>, usize, bool)> {
        let spec = SearchSpec {
            pattern,
            regex,
            case: parse_case(case)?,
            whole_word,
            path_glob,
            max_lines,
            max_files,
            max_lines_per_file,
            count_all,
        };
        let out = py
            .detach(|| search::search_in(&self.inner, &spec, Some(&self.cache)))
            .map_err(to_py)?;
        let files = out
            .files
            .into_iter()
            .map(|f| {
                (
                    self.inner.path(f.doc).to_string(),
                    f.n_matches,
                    f.n_lines,
                    f.each_line()
                        .map(|(line, text, cols)| (line, text.to_string(), cols.to_vec()))
                        .collect(),
                )
            })
            .collect();
        Ok((files, out.candidates, out.truncated))
    }

    /// The best `k` chunks holding a literal (or regex), for the text modality's ranking:
    /// the search's lines grouped by enclosing chunk, ranked in Rust, and only the best `k`
    /// groups (plus those whose definition flag Python decides) returned, in search order
    /// (`definition`: the target's definition pattern in the `regex` crate's dialect; `word`:
    /// 256 flags, the bytes that glue a match into a word; `demoted`: one flag per document,
    /// in `paths()` order). Returns `(files, groups, n_groups)`; see `maguyva._core.pyi`.
    #[pyo3(signature = (pattern, *, definition, word, demoted, k, regex=false, case="smart",
                        whole_word=false, path_glob=None, max_lines=1000, max_files=usize::MAX,
                        max_lines_per_file=usize::MAX))]
    #[allow(clippy::too_many_arguments)]
    fn literal_top(
        &self,
        py: Python<'_>,
        pattern: String,
        definition: Option<String>,
        word: &[u8],
        demoted: &[u8],
        k: usize,
        regex: bool,
        case: &str,
        whole_word: bool,
        path_glob: Option<String>,
        max_lines: usize,
        max_files: usize,
        max_lines_per_file: usize,
    ) -> PyResult<(Vec<TopFile>, Vec<TopGroup>, usize)> {
        let (word, definition, spec) = self.top_spec(
            pattern,
            definition,
            word,
            demoted,
            regex,
            case,
            whole_word,
            path_glob,
            [max_lines, max_files, max_lines_per_file],
        )?;
        let inner = &self.inner;
        let (files, groups, n_groups) = py
            .detach(|| -> crate::error::CoreResult<_> {
                let out = search::search_in(inner, &spec, Some(&self.cache))?;
                let chosen =
                    rank::top_groups(inner, &out.files, definition.as_deref(), &word, demoted, k);
                // Each file a chosen group is in, once (the groups come in file order).
                let mut files: Vec<TopFile> = Vec::new();
                let mut slot_of: Option<(usize, usize)> = None;
                let mut groups: Vec<TopGroup> = Vec::with_capacity(chosen.entries.len());
                for (file, at) in chosen.entries {
                    let slot = match slot_of {
                        Some((f, slot)) if f == file => slot,
                        _ => {
                            let f = &out.files[file];
                            files.push((
                                inner.path(f.doc).to_string(),
                                f.lines.iter().map(|l| l.line).collect(),
                                demoted[f.doc as usize] != 0,
                            ));
                            slot_of = Some((file, files.len() - 1));
                            files.len() - 1
                        }
                    };
                    let g = chosen.grouped[file].owned(&out.files[file], at);
                    groups.push((
                        slot, g.start, g.end, g.chunk_id, g.snippet, g.lines, g.columns, g.whole,
                        g.is_def, g.texts,
                    ));
                }
                Ok((files, groups, chosen.groups))
            })
            .map_err(to_py)?;
        Ok((files, groups, n_groups))
    }

    /// `literal_top`'s best `k` groups in ranked order, as the first group of each file
    /// with its details (a direct literal answer shows each file by its best group) and the
    /// file slot of every ranked group: `(files, firsts, slots)`. A group whose definition flag the `regex` crate cannot decide (a
    /// line that is not ASCII) is decided by `decide(texts)` (Python's `re`), called with
    /// the GIL held; without `decide`, such a group makes the answer `None`. See
    /// `maguyva._core.pyi`.
    #[pyo3(signature = (pattern, *, definition, word, demoted, k, regex=false, case="smart",
                        whole_word=false, path_glob=None, max_lines=1000, max_files=usize::MAX,
                        max_lines_per_file=usize::MAX, decide=None))]
    #[allow(clippy::too_many_arguments)]
    fn literal_ranked(
        &self,
        py: Python<'_>,
        pattern: String,
        definition: Option<String>,
        word: &[u8],
        demoted: &[u8],
        k: usize,
        regex: bool,
        case: &str,
        whole_word: bool,
        path_glob: Option<String>,
        max_lines: usize,
        max_files: usize,
        max_lines_per_file: usize,
        decide: Option<Bound<'_, PyAny>>,
    ) -> PyResult<Option<RankedFiles>> {
        let (word, definition, spec) = self.top_spec(
            pattern,
            definition,
            word,
            demoted,
            regex,
            case,
            whole_word,
            path_glob,
            [max_lines, max_files, max_lines_per_file],
        )?;
        let inner = &self.inner;
        let (out, mut chosen) = py
            .detach(|| -> crate::error::CoreResult<_> {
                let out = search::search_in(inner, &spec, Some(&self.cache))?;
                let chosen =
                    rank::top_groups(inner, &out.files, definition.as_deref(), &word, demoted, k);
                Ok((out, chosen))
            })
            .map_err(to_py)?;
        for &(file, at) in &chosen.entries {
            if chosen.grouped[file].groups[at].is_def.is_some() {
                continue;
            }
            let Some(decide) = &decide else {
                return Ok(None);
            };
            let texts = chosen.grouped[file].owned(&out.files[file], at).texts;
            let verdict: bool = decide.call1((texts.unwrap_or_default(),))?.extract()?;
            chosen.grouped[file].groups[at].is_def = Some(verdict);
        }
        let ranked = py.detach(|| {
            let mut order = rank::ranked_entries(inner, &out.files, &chosen, demoted)?;
            order.truncate(k);
            let mut files: Vec<TopFile> = Vec::new();
            let mut firsts: Vec<FirstGroup> = Vec::new();
            let mut slot_of = vec![u32::MAX; out.files.len()];
            let mut slots: Vec<u32> = Vec::with_capacity(order.len());
            for (file, at) in order {
                if slot_of[file] == u32::MAX {
                    slot_of[file] = files.len() as u32;
                    let f = &out.files[file];
                    let g = &chosen.grouped[file].groups[at];
                    files.push((
                        inner.path(f.doc).to_string(),
                        f.lines.iter().map(|l| l.line).collect(),
                        demoted[f.doc as usize] != 0,
                    ));
                    let owned = chosen.grouped[file].owned(f, at);
                    firsts.push((
                        g.start,
                        g.end,
                        g.chunk_id.map(str::to_string),
                        g.n_columns,
                        g.whole,
                        g.is_def.unwrap_or(false),
                        (owned.snippet, owned.lines, owned.columns),
                    ));
                }
                slots.push(slot_of[file]);
            }
            Some((files, firsts, slots))
        });
        Ok(ranked)
    }

    /// BM25 over chunks for lower-cased terms; the best `k` chunks. `method`: "auto" (the
    /// postings when the index has them and they can answer, else the content scan),
    /// "postings", "scan" (at most `max_docs` nominated documents) or "scan_all".
    #[pyo3(signature = (terms, k, *, max_docs=4000, method="auto"))]
    fn bm25(
        &self,
        py: Python<'_>,
        terms: Vec<String>,
        k: usize,
        max_docs: usize,
        method: &str,
    ) -> PyResult<Vec<ChunkTuple>> {
        if !matches!(method, "auto" | "postings" | "scan" | "scan_all") {
            return Err(PyValueError::new_err(format!(
                "method must be 'auto', 'postings', 'scan' or 'scan_all', got {method:?}"
            )));
        }
        let ranked = py
            .detach(|| {
                if matches!(method, "auto" | "postings") {
                    if let Some(p) = &self.bm25 {
                        if let Some(r) = p.rank(&self.inner, &terms, k)? {
                            return Ok(Some(r));
                        }
                    }
                    if method == "postings" {
                        return Ok(None);
                    }
                }
                match method {
                    "scan_all" => bm25::rank_all(&self.inner, &terms, k).map(Some),
                    _ => bm25::rank(&self.inner, &terms, k, max_docs).map(Some),
                }
            })
            .map_err(to_py)?
            .ok_or_else(|| {
                PyValueError::new_err(
                    "no BM25 postings for these terms (an index built before them, or a \
                     term with bytes outside [a-z0-9_])",
                )
            })?;
        Ok(ranked
            .into_iter()
            .map(|c| {
                (
                    self.inner.path(c.doc).to_string(),
                    c.start_line,
                    c.end_line,
                    c.chunk_id,
                    c.score,
                    c.lines,
                    c.terms,
                )
            })
            .collect())
    }

    /// Sizes: documents, trigrams, chunks, content bytes, index and stored bytes.
    fn stats(&self) -> HashMap<&'static str, u64> {
        HashMap::from([
            ("docs", u64::from(self.inner.n_docs())),
            ("trigrams", u64::from(self.inner.n_trigrams())),
            ("chunks", u64::from(self.inner.n_chunks())),
            ("content_bytes", self.inner.total_content_bytes()),
            ("index_bytes", self.inner.index_bytes()),
            ("stored_bytes", self.inner.stored_bytes()),
            ("bm25_bytes", self.bm25.as_ref().map_or(0, Bm25Index::bytes)),
            ("segments", self.inner.segments().len() as u64),
        ])
    }

    /// `(CRC-32 of the stored bytes of path, [text of lines start..=end of each range])`, the
    /// lines numbered as the chunker does (split on `\n` only, a trailing `\r` dropped),
    /// decoded as UTF-8 with replacement, each text as a JSON string (`json.dumps(text,
    /// ensure_ascii=False)`); None when `path` is not a live document: the texts of a file's
    /// chunks stored as spans (`store.spans`).
    fn spans<'py>(
        &self,
        py: Python<'py>,
        path: &str,
        ranges: Vec<(u32, u32)>,
    ) -> PyResult<Option<(u32, Vec<Bound<'py, PyBytes>>)>> {
        let Some(g) = self.inner.find(path) else {
            return Ok(None);
        };
        let (crc, texts) = py
            .detach(|| {
                let mut zstd = None;
                let mut out = Vec::new();
                let bytes = self.inner.read(g, &mut zstd, &mut out)?;
                Ok::<_, crate::error::CoreError>((
                    crc32fast::hash(bytes),
                    crate::trigram::spans::span_json(bytes, &ranges),
                ))
            })
            .map_err(to_py)?;
        let texts = texts.iter().map(|t| PyBytes::new(py, t)).collect();
        Ok(Some((crc, texts)))
    }

    /// The indexed paths, in document order (sorted as given to the builder).
    fn paths(&self) -> Vec<String> {
        (0..self.inner.n_docs())
            .map(|d| self.inner.path(d).to_string())
            .collect()
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(build_text_index, m)?)?;
    m.add_class::<TextIndex>()?;
    Ok(())
}
