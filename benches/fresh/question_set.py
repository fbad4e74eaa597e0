"""What every hand-written question set of benches/fresh shares: the intents' short names, an
answer span, and the list of questions written out as the JSON Lines `maguyva eval` reads."""

import json

D, R, IM, U, E, S = (
    "find_definition",
    "find_references",
    "impact_analysis",
    "understand_code",
    "exact_match",
    "find_similar",
)


def span(path, start, end, symbol=None):
    out = {"path": path, "start": start, "end": end}
    if symbol:
        out["symbol"] = symbol
    return out


class QuestionSet:
    """Questions of one corpus, numbered in the order they are added."""

    def __init__(self, corpus):
        self.corpus = corpus
        self.items = []

    def add(self, kind, text, intent, relevant, split):
        self.items.append(
            {
                "id": f"{self.corpus}-{kind}-{len(self.items) + 1:02d}",
                "query": text,
                "intent": intent,
                "relevant": relevant,
                "split": split,
                "source": "hand",
                "corpus": self.corpus,
            }
        )

    def write(self, out):
        with open(out, "w") as fh:
            for item in self.items:
                fh.write(json.dumps(item) + "\n")
        print(len(self.items), "queries ->", out)
