"""Usage: python benches/fresh/chi_set.py eval/fresh/chi-5.0.7.jsonl ROOT (the unpacked corpus).

Write eval/fresh/chi-5.0.7.jsonl: hand-written questions, spans checked against the code.

Definition and understand spans: ctags `end` lines (`ctags --fields=+ne`), copied in by hand.
Reference and impact answers: the `rg -n -w NAME` lines outside comments and the definition,
each read by hand (exclusions listed per query).
"""

import re
import subprocess
import sys

from question_set import IM, D, E, QuestionSet, R, S, U, span

ROOT = sys.argv[2]
CORPUS = "chi-5.0.7"
OUT = sys.argv[1]


def uses(name, exclude=(), only_files=None):
    out = subprocess.run(
        ["rg", "-n", "-w", "--type", "go", name], cwd=ROOT, capture_output=True, text=True
    ).stdout
    spans = []
    for line in sorted(out.splitlines()):
        path, num, text = line.split(":", 2)
        if re.match(r"\s*//", text) or f"{path}:{num}" in exclude:
            continue
        if only_files and path not in only_files:
            continue
        spans.append({"path": path, "start": int(num), "end": int(num)})
    return spans


# Inside `/* ... */` (throttle_test.go 207-254): found after the first run, no use.
BLOCK_COMMENTED = "middleware/throttle_test.go:211"

QUESTIONS = QuestionSet(CORPUS)
q = QUESTIONS.add


# find_definition
q("def", "where is the Mux struct declared", D, [span("mux.go", 21, 46, "Mux")], "tune")
q("def", "definition of RouteContext", D, [span("context.go", 27, 30, "RouteContext")], "heldout")
q(
    "def",
    "func ThrottleBacklog",
    D,
    [span("middleware/throttle.go", 38, 40, "ThrottleBacklog")],
    "tune",
)
q(
    "def",
    "where is the WrapResponseWriter interface defined",
    D,
    [span("middleware/wrap_writer.go", 48, 64, "WrapResponseWriter")],
    "heldout",
)
q("def", "getEdge", D, [span("tree.go", 317, 328, "node.getEdge")], "tune")
q("def", "type Compressor", D, [span("middleware/compress.go", 47, 58, "Compressor")], "heldout")
q(
    "def",
    "where's HeaderRouter defined",
    D,
    [span("middleware/route_headers.go", 51, 51, "HeaderRouter")],
    "heldout",
)

# find_references (uses; definition line excluded)
q("ref", "who uses RouteCtxKey", R, uses("RouteCtxKey", {"context.go:39"}), "tune")
q("ref", "callers of NewRouteContext", R, uses("NewRouteContext", {"context.go:33"}), "heldout")
q("ref", "where is methodMap read or written", R, uses("methodMap", {"tree.go:34"}), "tune")
q(
    "ref",
    "find usages of ThrottleOpts",
    R,
    uses("ThrottleOpts", {"middleware/throttle.go:20", BLOCK_COMMENTED}),
    "heldout",
)
q(
    "ref",
    "who calls NewWrapResponseWriter",
    R,
    uses("NewWrapResponseWriter", {"middleware/wrap_writer.go:15"}),
    "tune",
)
q("ref", "references to GetReqID", R, uses("GetReqID", {"middleware/request_id.go:83"}), "heldout")
q(
    "ref",
    "where is PrintPrettyStack called from",
    R,
    uses("PrintPrettyStack", {"middleware/recoverer.go:47"}),
    "tune",
)
q("ref", "every place that uses mALL", R, uses("mALL", {"tree.go:31"}), "heldout")

# impact_analysis
q(
    "imp",
    "what breaks if I change the signature of RegisterMethod",
    IM,
    uses("RegisterMethod", {"tree.go:48"}),
    "tune",
)
q(
    "imp",
    "impact of renaming NewCompressor",
    IM,
    uses("NewCompressor", {"middleware/compress.go:64"}),
    "heldout",
)
q(
    "imp",
    "if GetLogEntry returned something else, what code would need to change",
    IM,
    uses("GetLogEntry", {"middleware/logger.go:77", "_examples/logging/main.go:125"}),
    "tune",
)
q(
    "imp",
    "what depends on ChainHandler",
    IM,
    uses("ChainHandler", {"chain.go:24", "chain.go:30"}),
    "heldout",
)
q("imp", "what is affected if I change Walk", IM, uses("Walk", {"tree.go:827"}), "tune")
q(
    "imp",
    "impact of changing the parameters of cW",
    IM,
    uses("cW", {"middleware/terminal.go:55"}),
    "heldout",
)

# understand_code (paraphrased: none names its answer)
q(
    "und",
    "how does the router find the handler for a path with url parameters and regexp placeholders",
    U,
    [span("tree.go", 387, 518, "node.findRoute")],
    "tune",
)
q(
    "und",
    "what reply is sent when the path exists but not for the request's http verb",
    U,
    [
        span("mux.go", 413, 450, "Mux.routeHTTP"),
        span("mux.go", 482, 485, "methodNotAllowedHandler"),
    ],
    "heldout",
)
q(
    "und",
    "how is a sub router attached under a path prefix so that it routes the rest of the path",
    U,
    [span("mux.go", 282, 333, "Mux.Mount")],
    "tune",
)
q(
    "und",
    "how are concurrent requests capped, with a waiting queue and a timeout for the queued ones",
    U,
    [span("middleware/throttle.go", 43, 113, "ThrottleWithOpts")],
    "heldout",
)
q(
    "und",
    "how is the client's ip address taken from headers set by a reverse proxy",
    U,
    [span("middleware/realip.go", 41, 57, "realIP")],
    "tune",
)
q(
    "und",
    "how does the response writer decide whether to compress, based on the content type",
    U,
    [
        span("middleware/compress.go", 300, 326, "compressResponseWriter.WriteHeader"),
        span("middleware/compress.go", 281, 298, "compressResponseWriter.isCompressable"),
    ],
    "heldout",
)
q(
    "und",
    "how is a panic in a handler turned into a 500 response with the stack logged",
    U,
    [span("middleware/recoverer.go", 22, 42, "Recoverer")],
    "tune",
)
q(
    "und",
    "how does each incoming request get a unique id made of the host name and a counter",
    U,
    [
        span("middleware/request_id.go", 67, 79, "RequestID"),
        span("middleware/request_id.go", 46, 60, "init"),
    ],
    "heldout",
)
q(
    "und",
    "how is the full pattern of the matched route put together from nested routers",
    U,
    [
        span("context.go", 122, 125, "Context.RoutePattern"),
        span("context.go", 129, 135, "replaceWildcards"),
    ],
    "heldout",
)

# exact_match (quoted literals; two are absent: the right answer is nothing)
q(
    "lit",
    '"chi: all middlewares must be defined before routes on a mux"',
    E,
    [span("mux.go", 100, 100)],
    "tune",
)
q(
    "lit",
    '"attempting to Mount() a handler on an existing path"',
    E,
    [span("mux.go", 290, 290)],
    "heldout",
)
q(
    "lit",
    '"chi/middleware: http.Hijacker is unavailable on the writer"',
    E,
    [span("middleware/compress.go", 368, 368)],
    "tune",
)
q(
    "lit",
    '"X-Request-Id"',
    E,
    [
        span("middleware/request_id.go", 25, 25),
        span("middleware/request_id_test.go", 27, 27),
        span("middleware/request_id_test.go", 30, 30),
    ],
    "heldout",
)
q("lit", "\"route param closing delimiter '}' is missing\"", E, [span("tree.go", 697, 697)], "tune")
q("lit", '"chi: routes must be defined before all middlewares on a mux"', E, [], "heldout")
q("lit", '"content-type wildcard pattern is not supported"', E, [], "tune")

# find_similar: real functions, renamed by hand (function, parameters, locals)
q(
    "sim",
    """func f(v0 string) func(http.Handler) http.Handler {
	v1 := func(v2 http.Handler) http.Handler {
		v3 := func(w http.ResponseWriter, r *http.Request) {
			if (r.Method == "GET" || r.Method == "HEAD") && strings.EqualFold(r.URL.Path, v0) {
				w.Header().Set("Content-Type", "text/plain")
				w.WriteHeader(http.StatusOK)
				w.Write([]byte("."))
				return
			}
			v2.ServeHTTP(w, r)
		}
		return http.HandlerFunc(v3)
	}
	return v1
}""",
    S,
    [span("middleware/heartbeat.go", 12, 26, "Heartbeat")],
    "tune",
)
q(
    "sim",
    """func f(v0 *http.Request) string {
	var v1 string
	if v2 := v0.Header.Get(trueClientIP); v2 != "" {
		v1 = v2
	} else if v3 := v0.Header.Get(xRealIP); v3 != "" {
		v1 = v3
	} else if v4 := v0.Header.Get(xForwardedFor); v4 != "" {
		v5 := strings.Index(v4, ", ")
		if v5 == -1 {
			v5 = len(v4)
		}
		v1 = v4[:v5]
	}
	return v1
}""",
    S,
    [span("middleware/realip.go", 41, 57, "realIP")],
    "heldout",
)
q(
    "sim",
    """func f(v0 http.Handler) http.Handler {
	v1 := func(w http.ResponseWriter, r *http.Request) {
		var v2 string
		v3 := chi.RouteContext(r.Context())
		if v3 != nil && v3.RoutePath != "" {
			v2 = v3.RoutePath
		} else {
			v2 = r.URL.Path
		}
		if len(v2) > 1 && v2[len(v2)-1] == '/' {
			v4 := v2[:len(v2)-1]
			if v3 == nil {
				r.URL.Path = v4
			} else {
				v3.RoutePath = v4
			}
		}
		v0.ServeHTTP(w, r)
	}
	return http.HandlerFunc(v1)
}""",
    S,
    [span("middleware/strip.go", 13, 33, "StripSlashes")],
    "tune",
)
q(
    "sim",
    """func f(v0 string, v1 ...string) bool {
	_, v0 = split(strings.ToLower(v0), ";")
	_, v0 = split(v0, "charset=")
	v0, _ = split(v0, ";")
	for _, v2 := range v1 {
		if v0 == v2 {
			return true
		}
	}
	return false
}""",
    S,
    [span("middleware/content_charset.go", 28, 39, "contentEncoding")],
    "heldout",
)
q(
    "sim",
    """func f(v0, v1 string) int {
	v2 := len(v0)
	if v3 := len(v1); v3 < v2 {
		v2 = v3
	}
	var v4 int
	for v4 = 0; v4 < v2; v4++ {
		if v0[v4] != v1[v4] {
			break
		}
	}
	return v4
}""",
    S,
    [span("tree.go", 753, 765, "longestPrefix")],
    "tune",
)
q(
    "sim",
    """func f(v0 []string, v1 string) bool {
	for _, v2 := range v0 {
		if strings.Contains(v2, v1) {
			return true
		}
	}
	return false
}""",
    S,
    [span("middleware/compress.go", 247, 254, "matchAcceptEncoding")],
    "heldout",
)

QUESTIONS.write(OUT)
