"""The review report in a real browser (Playwright driving the system's Chromium, offline): every figure visible,
every link resolving, no console error, the page no wider than a 1400 px window, equations rendered as MathML, and
a long table cut to its preview, filtered and sorted by the page's own script.

The page is served from the checkout by a request handler of the test, so its links to CSVs resolve as they do
beside the built file; any request outside that origin is refused and counted. Chromium comes from the system
(Debian: apt-get install chromium); where it is missing the test is skipped with that reason.
"""

from __future__ import annotations

import mimetypes
import shutil
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest

from kvwall.report import contents

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
ORIGIN = "http://report.invalid"
WIDTH = 1400
#: The page budget: the whole report, every figure inlined.
LARGEST_PAGE = 3_000_000
#: Chromium's switches for a headless run that fetches nothing of its own.
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]

pytestmark = [pytest.mark.slow, pytest.mark.skipif(CHROMIUM is None, reason="no Chromium installed (Debian: apt-get install -y chromium)")]


@pytest.fixture(scope="module")
def browser_page(root, review_report):
    sync_api = pytest.importorskip("playwright.sync_api")
    served, refused, errors = [], [], []

    def serve(route):
        url = urlparse(route.request.url)
        if f"{url.scheme}://{url.netloc}" != ORIGIN:
            refused.append(route.request.url)
            return route.abort()
        path = unquote(url.path).lstrip("/")
        if path == "review-report.html":
            return route.fulfill(status=200, body=review_report, content_type="text/html; charset=utf-8")
        file = (Path(root) / path).resolve()
        if Path(root).resolve() not in file.parents or not file.is_file():
            return route.fulfill(status=404, body="not found")
        served.append(path)
        return route.fulfill(status=200, body=file.read_bytes(), content_type=mimetypes.guess_type(path)[0] or "text/plain")

    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": WIDTH, "height": 900})
            page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
            page.on("pageerror", lambda error: errors.append(str(error)))
            page.route("**/*", serve)
            page.goto(f"{ORIGIN}/review-report.html", wait_until="load")
            yield page, served, refused, errors
        finally:
            browser.close()


def test_the_page_is_small_enough(review_report):
    assert len(review_report.encode("utf-8")) < LARGEST_PAGE


def test_no_console_error_and_nothing_fetched_from_elsewhere(browser_page):
    page, _, refused, errors = browser_page
    assert errors == [] and refused == []


def test_the_page_fits_a_1400_px_window(browser_page):
    page = browser_page[0]
    assert page.evaluate("document.documentElement.scrollWidth") <= WIDTH
    assert page.evaluate("document.body.scrollWidth") <= WIDTH


def test_every_figure_is_visible(browser_page):
    page = browser_page[0]
    for stem, number, _ in contents.FIGURE_ORDER:
        image = page.locator(f"#figure-{stem} img")
        image.scroll_into_view_if_needed()
        assert image.is_visible(), stem
        assert image.evaluate("i => i.complete && i.naturalWidth > 0 && i.getBoundingClientRect().width > 300"), stem


def test_every_link_resolves(browser_page):
    page = browser_page[0]
    links = page.eval_on_selector_all("a[href]", "links => links.map(a => a.getAttribute('href'))")
    anchors = [link[1:] for link in links if link.startswith("#")]
    files = [link for link in links if not link.startswith("#")]
    missing = [a for a in anchors if page.evaluate("id => document.getElementById(id) === null", a)]
    assert missing == []
    assert files and all(not urlparse(link).scheme for link in files)  # relative to the checkout, never the web
    statuses = {link: page.evaluate("url => fetch(url).then(r => r.status)", link) for link in sorted(set(files))}
    assert statuses == {link: 200 for link in statuses}


def test_navigation_names_every_figure_table_notebook_and_canonical_section(root, browser_page):
    page = browser_page[0]
    targets = set(page.eval_on_selector_all("#navigation a", "links => links.map(a => a.getAttribute('href'))"))
    assert {f"#figure-{stem}" for stem, _, _ in contents.FIGURE_ORDER} <= targets
    assert {f"#{t.anchor}" for t in contents.tables(Path(root))} <= targets
    assert {f"#notebook-{name}" for name, _ in contents.NOTEBOOKS} <= targets
    sections = [line for line in (Path(root) / "CANONICAL-NUMBERS.md").read_text(encoding="utf-8").splitlines()
                if line.startswith("## ")]
    labels = page.eval_on_selector_all("#navigation a[href^='#canonical-']", "links => links.map(a => a.textContent)")
    assert labels == [line[3:] for line in sections] and len(labels) >= 8
    page.locator("#navigation a[href='#notebook-05_serving_validation']").click()
    assert page.evaluate("document.getElementById('notebook-05_serving_validation').getBoundingClientRect().top") < 50


def test_equations_render_as_mathml_and_no_raw_tex_is_left(browser_page):
    page = browser_page[0]
    assert page.locator(".notebook math").count() >= 60
    raw = page.evaluate("""() => [...document.querySelectorAll('.notebook .text_cell_render, .notebook .jp-MarkdownOutput')]
        .map(e => e.textContent).filter(t => /\\$[^$\\s][^$]*\\$/.test(t))""")
    assert raw == []
    box = page.locator(".notebook math").first.bounding_box()
    assert box and box["width"] > 0 and box["height"] > 0


def test_a_long_table_shows_its_preview_filters_and_sorts(browser_page):
    page = browser_page[0]
    table = page.locator("#table-derived-deployments table.data")
    rows = table.locator("tbody tr")
    visible = "t => [...t.tBodies[0].rows].filter(r => !r.hidden).length"
    assert table.evaluate(visible) == 20 < rows.count()
    search = page.locator("#table-derived-deployments input[type=search]")
    search.fill("deepseek-v3 b200")
    shown = table.evaluate("t => [...t.tBodies[0].rows].filter(r => !r.hidden).map(r => r.textContent)")
    assert shown and all("DeepSeek-V3" in text and "B200" in text for text in shown)
    search.fill("")
    assert table.evaluate(visible) == 20
    header = table.locator("thead th").first
    header.click()
    first = table.evaluate("t => t.tBodies[0].rows[0].cells[0].textContent")
    header.click()
    assert header.get_attribute("aria-sort") == "descending"
    assert table.evaluate("t => t.tBodies[0].rows[0].cells[0].textContent") >= first
