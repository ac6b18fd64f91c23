"""The review report shows every table, figure and notebook rendered in one self-contained file, not linked."""

from html.parser import HTMLParser
from pathlib import Path

import pytest

from kvwall.report import contents

#: Builds, notebooks, rendered figures or a browser: `pytest -m "not slow"` leaves these out (docs/benchmark.md).
pytestmark = pytest.mark.slow


class _Sections(HTMLParser):
    """The HTML inside each <section id=...>, tags counted; every external reference kept."""

    def __init__(self):
        super().__init__()
        self.open: list[str] = []
        self.depth = 0
        self.tags: dict[str, list[str]] = {}
        self.text: dict[str, list[str]] = {}
        self.external: list[str] = []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        for name in ("src", "href"):
            value = attrs.get(name) or ""
            if value and not value.startswith(("#", "data:")):
                self.external.append(f"<{tag} {name}={value}>")
        if tag == "section":
            self.open.append(attrs["id"])
        for section in self.open:
            self.tags.setdefault(section, []).append(tag if tag != "img" else f"img:{(attrs.get('src') or '')[:21]}")

    def handle_endtag(self, tag):
        if tag == "section":
            self.open.pop()

    def handle_data(self, data):
        for section in self.open:
            self.text.setdefault(section, []).append(data)


@pytest.fixture(scope="module")
def report(review_report):
    parser = _Sections()
    parser.feed(review_report)
    return parser


def test_self_contained(root, report):
    """Nothing is fetched: images are inlined, and the only links out are to the full CSVs of long tables,
    relative to the checkout the report is written in."""
    links = [ref.split("=", 1)[1].rstrip(">") for ref in report.external]
    assert links and all(ref.startswith("<a href=") for ref in report.external)
    assert all(link.startswith("tables/") and link.endswith(".csv") and (root / link).is_file() for link in links)


def test_every_table_rendered_with_its_class_and_caption(root, report):
    tables = sorted(str(p.relative_to(root / "tables").with_suffix("")) for p in (root / "tables").glob("*/*.md"))
    assert len(tables) >= 27
    for artifact in tables:
        section = f"table-{artifact.replace('/', '-')}"
        assert "table" in report.tags[section] and "td" in report.tags[section], artifact
        text = " ".join(report.text[section])
        assert f"evidence class: {artifact.split('/')[0]}" in text, artifact
    # Table 4 as the paper prints it: s*(32) of Llama-3-70B is 13.4k (SoK Table 4), not 13351.4404296875.
    table4 = " ".join(report.text["table-derived-table4_traffic_crossover"])
    assert "13.4k" in table4 and "13351.44" not in table4


def test_captions_are_per_table(root):
    captions = [t.caption for t in contents.tables(Path(root))]
    assert len(set(captions)) == len(captions)


def test_every_notebook_rendered_with_its_outputs(report):
    for name, _ in contents.NOTEBOOKS:
        tags = report.tags[f"notebook-{name}"]
        assert tags.count("pre") >= 5 and "table" in tags, name  # code, printed outputs and DataFrames shown


def test_figures_in_the_paper_order_with_their_numbers(report):
    figures = [s for s in report.tags if s.startswith("figure-")]
    assert figures == [f"figure-{stem}" for stem, _, _ in contents.FIGURE_ORDER]
    for stem, number, _ in contents.FIGURE_ORDER:
        assert "img:data:image/png;base64" in report.tags[f"figure-{stem}"]
        assert " ".join(report.text[f"figure-{stem}"]).strip().startswith(number)


def test_a_long_table_is_cut_to_its_preview_with_a_summary(report):
    """serving_bounds has 4,185 rows (one per measurement): the page keeps its first 20 and says so."""
    section = report.tags["table-derived-serving_bounds"]
    assert section.count("tr") == 1 + 20  # the header row and the preview
    text = " ".join(report.text["table-derived-serving_bounds"])
    assert "4,185 rows: the first 20 shown" in text and "tables/derived/serving_bounds.csv" in text


def test_notebook_equations_are_mathml(report):
    tags = report.tags["notebook-01_footprint_and_crossovers"]
    assert tags.count("math") >= 20
    assert "$s^*(b)$" not in " ".join(report.text["notebook-01_footprint_and_crossovers"])


def test_canonical_numbers_rendered(report):
    assert report.tags["canonical"].count("table") >= 7
    assert "Crossovers and regimes" in " ".join(report.text["canonical"])


def test_tex_becomes_mathml_and_a_placeholder_in_a_tag_becomes_its_tex():
    from kvwall.report import mathml

    formulas: dict = {}
    text = mathml.protect(r"the crossover $s^*(b)$ and $$I^* = F/\beta$$, 5 \$ left", formulas)
    assert text == r"the crossover kvwallmath0x and kvwallmath1x, 5 \$ left"
    assert formulas["kvwallmath0x"].tex == "s^*(b)" and 'display="inline"' in formulas["kvwallmath0x"].mathml
    assert 'display="block"' in formulas["kvwallmath1x"].mathml
    restored = mathml.restore('<h2 id="at-kvwallmath0x">at kvwallmath0x</h2>', formulas)
    assert restored.startswith('<h2 id="at-s^*(b)">at <math') and "kvwallmath" not in restored


def test_a_column_summary_gives_ranges_and_distinct_values():
    from kvwall.report.tables import column_summaries

    summary = column_summaries("model,tpot\na,1.5\nb,\na,12.25\n")
    assert [(c.name, c.text) for c in summary] == [
        ("model", "2 distinct: a (2), b (1)"),
        ("tpot", "1.5 to 12.25; 1 blank"),
    ]


def test_a_code_token_the_style_gives_no_rule_is_its_text_alone():
    from kvwall.report.notebooks import unstyled_tokens_as_text

    # a name and punctuation have no rule in Pygments' default style, a space's colour shows nothing; an operator and
    # a keyword keep their spans, and so does anything outside a code block
    code = ('<div class="highlight hl-ipython3"><pre><span></span><span class="kn">import</span><span class="w"> '
            '</span><span class="nn">numpy</span>\n<span class="n">x</span><span class="o">=</span><span class="p">('
            '</span><span class="s2">&quot;a&quot;</span><span class="p">)</span></pre></div><span class="n">y</span>')
    assert unstyled_tokens_as_text(code) == (
        '<div class="highlight hl-ipython3"><pre><span></span><span class="kn">import</span> <span class="nn">numpy'
        '</span>\nx<span class="o">=</span>(<span class="s2">&quot;a&quot;</span>)</pre></div><span class="n">y</span>')


def test_every_notebook_shows_its_code_as_written(root, report):
    import nbformat

    for name, _ in contents.NOTEBOOKS:
        shown = "".join(report.text[f"notebook-{name}"])
        node = nbformat.read(root / "notebooks" / "executed" / f"{name}.ipynb", as_version=4)
        for cell in node.cells:
            if cell.cell_type == "code":
                assert cell.source.strip() in shown, (name, cell.source[:60])
