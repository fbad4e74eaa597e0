"""Methods called on receivers of unknown type: local type evidence narrows the target to one
method (`x = B()`, annotations, isinstance, `self.x = B()`), import evidence ranks candidates,
and a candidate without evidence gets a low confidence. Real files, real extractor."""

from __future__ import annotations

import textwrap

import pytest
from graph_support import build_graph

from maguyva.modalities.graph import MODALITY, GraphSearcher
from maguyva.modalities.graph.receivers import scan
from maguyva.modalities.graph.schema import (
    CONF_CANDIDATE,
    CONF_CANDIDATE_WEAK,
    CONF_NAMED,
    CONF_TYPED,
)

REPO = {
    "shop/a.py": """
        class Cart:
            def save(self):
                return 1

            @property
            def total(self):
                return 2
        """,
    "shop/b.py": """
        class Order:
            def save(self):
                return 3
        """,
    "shop/views.py": """
        from shop.a import Cart
        from shop import b


        def typed_by_assignment():
            order = b.Order()
            order.save()


        def typed_by_annotation(cart: Cart | None):
            cart.save()


        def typed_by_isinstance(thing):
            if isinstance(thing, b.Order):
                thing.save()


        def unknown(thing):
            thing.save()


        def reads_property(cart: Cart):
            print(cart.total)


        class Holder:
            def __init__(self):
                self.order = b.Order()

            def go(self):
                self.order.save()
        """,
    "shop/other.py": """
        def unknown(thing):
            thing.save()
        """,
    "shop/forms.py": """
        class BaseForm:
            def is_valid(self):
                return True


        class BaseFormSet:
            def is_valid(self):
                return False
        """,
    "shop/handlers.py": """
        from shop import forms


        def check_form(form):
            return form.is_valid()


        def check_formset(self, formset):
            return formset.is_valid()


        def check_thing(thing):
            return thing.is_valid()
        """,
}


@pytest.fixture(scope="module")
def shop(tmp_path_factory) -> GraphSearcher:
    repo = {**REPO, "shop/__init__.py": ""}
    return MODALITY.open(
        build_graph(tmp_path_factory.mktemp("shop"), repo, tmp_path_factory.mktemp("gen")), {}
    )


def callees(s: GraphSearcher, name: str) -> dict[str, float]:
    return {h.symbol or "": h.score or 0.0 for h in s.callees(name)}


@pytest.mark.parametrize(
    ("caller", "target"),
    [("typed_by_assignment", "shop.b.Order.save"), ("typed_by_annotation", "shop.a.Cart.save"),
     ("typed_by_isinstance", "shop.b.Order.save"), ("Holder.go", "shop.b.Order.save")],
)  # fmt: skip
def test_local_type_evidence_picks_one_method(shop, caller, target):
    got = {k: v for k, v in callees(shop, f"shop.views.{caller}").items() if k.endswith("save")}
    assert got == {target: pytest.approx(CONF_TYPED)}


def test_imports_rank_candidates_and_no_evidence_is_weak(shop):
    # views.py imports both modules: both candidates have evidence
    got = callees(shop, "shop.views.unknown")
    assert got == {
        "shop.a.Cart.save": pytest.approx(CONF_CANDIDATE / 2**0.5),
        "shop.b.Order.save": pytest.approx(CONF_CANDIDATE / 2**0.5),
    }
    # other.py imports neither: both weak, below the default query threshold
    assert callees(shop, "shop.other.unknown") == {}
    everything = GraphSearcher.open(shop.gen_dir, {"config": {"graph_min_confidence": 0.0}})
    weak = callees(everything, "shop.other.unknown")
    assert sorted(weak.values()) == pytest.approx([CONF_CANDIDATE_WEAK / 2**0.5] * 2)


def test_receiver_name_picks_the_class_it_names(shop):
    # `form` names BaseForm (not BaseFormSet), `formset` names BaseFormSet: with the import
    # as well, that candidate gets CONF_NAMED and the other drops to the weak tier
    everything = GraphSearcher.open(shop.gen_dir, {"config": {"graph_min_confidence": 0.0}})
    weak = pytest.approx(CONF_CANDIDATE_WEAK / 2**0.5)
    assert callees(everything, "shop.handlers.check_form") == {
        "shop.forms.BaseForm.is_valid": pytest.approx(CONF_NAMED),
        "shop.forms.BaseFormSet.is_valid": weak,
    }
    assert callees(shop, "shop.handlers.check_formset") == {
        "shop.forms.BaseFormSet.is_valid": pytest.approx(CONF_NAMED)
    }
    # a name that names no class: both candidates share the import evidence
    assert callees(shop, "shop.handlers.check_thing") == {
        "shop.forms.BaseForm.is_valid": pytest.approx(CONF_CANDIDATE / 2**0.5),
        "shop.forms.BaseFormSet.is_valid": pytest.approx(CONF_CANDIDATE / 2**0.5),
    }


def test_property_read_on_a_typed_receiver_is_a_reference(shop):
    hits = shop.references("Cart.total")
    assert {h.path: h.lines for h in hits} == {"shop/views.py": [24]}


def test_scan_finds_assignments_annotations_isinstance_and_attributes():
    text = textwrap.dedent("""
        def f(a: Store, b: "Optional[Other]", c=None):
            x = pkg.Thing(1)
            y: Final[Kind] = make()
            if isinstance(c, (Alpha, Beta)):
                pass
            self.z = Zed()
            w = self.factory()
        """)
    got = scan(text)
    assert got["a"] == ["Store"] and got["b"] == ["Other"] and got["x"] == ["pkg.Thing"]
    assert got["y"] == ["Kind", "make"] and got["c"] == ["Alpha"] and got["self.z"] == ["Zed"]
    assert "w" not in got


def _stdlib_lines() -> list[list[str]]:
    import sysconfig
    from pathlib import Path

    root = Path(sysconfig.get_paths()["stdlib"])
    names = ["typing.py", "dataclasses.py", "argparse.py", "asyncio/base_events.py",
             "email/message.py", "logging/__init__.py", "unittest/mock.py"]  # fmt: skip
    return [(root / n).read_text("utf-8").splitlines() for n in names if (root / n).exists()]


def test_a_file_scanned_once_gives_each_span_what_scanning_its_text_gives() -> None:
    """`FileScan` reads a file once; every span of lines (and the module text with spans
    blanked) must get exactly `scan` of that text, order included."""
    import random

    from maguyva.modalities.graph.receivers import FileScan

    rng = random.Random(7)
    files = _stdlib_lines()
    assert files
    compared = 0
    for lines in files:
        whole = FileScan(lines)
        for _ in range(60):
            lo = rng.randrange(len(lines))
            hi = min(len(lines), lo + rng.choice((3, 20, 200, 2000)))
            expected = scan("\n".join(lines[lo:hi]))
            assert whole.lines(lo, hi) == expected
            compared += bool(expected)
        keep = bytearray(b"\x01") * len(lines)
        blanked = list(lines)
        for _ in range(5):
            lo = rng.randrange(len(lines))
            hi = lo + rng.randrange(1, 300)
            keep[lo:hi] = bytes(len(keep[lo:hi]))
            blanked[lo:hi] = [""] * len(blanked[lo:hi])
        assert whole.kept(keep) == scan("\n".join(blanked))
    assert compared > 50  # the spans held evidence, not only empty dicts
