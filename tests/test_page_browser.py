"""The explorable page in a real browser: Debian's chromium and chromium-driver, driven headless by Selenium.

Skipped cleanly without them (``pytest -m browser`` runs only these; .ci/run installs them). Each test opens a
page attncli wrote into a temporary folder and does what a reader does: click, press keys, switch the language.
"""

from __future__ import annotations

import json
import math
import re
import shutil

import pytest
from conftest import EXAMPLES

import attncli
from attncli.teach.page import page_html
from attncli.teach.texts import texts

pytestmark = [pytest.mark.browser, pytest.mark.slow]  # a real browser: minutes, not seconds
webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed (pip install selenium)")
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.common.keys import Keys  # noqa: E402

CJK = re.compile(r"[\u3400-\u9fff]")


def browser_paths() -> tuple[str, str] | None:
    chromium = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    driver = shutil.which("chromedriver")
    return (chromium, driver) if chromium and driver else None


@pytest.fixture(scope="module")
def browser():
    paths = browser_paths()
    if paths is None:
        pytest.skip("chromium and chromedriver are not installed (apt-get install chromium chromium-driver)")
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = paths[0]
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                     "--window-size=1280,1000", "--lang=en-US"):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"performance": "ALL", "browser": "ALL"})
    driver = webdriver.Chrome(service=Service(paths[1]), options=options)
    yield driver
    driver.quit()


@pytest.fixture
def page(browser, tmp_path):
    """Open the page of an example (or a mapping), ready: its script has drawn the tables."""

    def open_page(document, width: int = 1280):
        name = document.replace("/", "_") if isinstance(document, str) else "document"
        trace = attncli.compute(EXAMPLES / document if isinstance(document, str) else document)
        path = tmp_path / f"{name}.html"
        path.write_text(page_html(trace, name), encoding="utf-8")
        browser.set_window_size(width, 1000)
        browser.get_log("performance")  # what came before this page
        browser.get(path.as_uri())
        assert browser.find_element(By.TAG_NAME, "html").get_attribute("data-ready") is not None
        return path

    return open_page


def weights_cell(browser, row: int, column: int, head: int = 0):
    """The weights table's cell (row, column), 1-based as a reader counts."""
    tables = browser.find_elements(By.CSS_SELECTOR, "table[data-key=weights]")
    return tables[head].find_elements(By.CSS_SELECTOR, "tbody tr")[row - 1].find_elements(By.TAG_NAME, "td")[column - 1]


def marked_lines(browser) -> list[str]:
    return [li.text for li in browser.find_elements(By.CSS_SELECTOR, "#panel li.hl")]


def test_a_weight_shows_its_exponential_over_the_rows_sum(browser, page):
    """Weight (1, 2) of the illustrated example: e⁴ / (e² + e⁴ + e⁴) = 0.4683, written as explain writes it."""
    page("illustrated.yaml")
    cell = weights_cell(browser, 1, 2)
    assert cell.text == "0.4683"
    cell.click()
    assert browser.find_element(By.ID, "panel").is_displayed()
    e2, e4 = math.exp(2), math.exp(4)  # the scores of query 1 are 2, 4, 4 (scale: none)
    total = e2 + e4 + e4
    lines = marked_lines(browser)
    assert f"Input 2: exp(4) = {e4:.4f}" in lines
    assert f"Input 2: a = {e4:.4f} / {total:.4f} = {e4 / total:.4f}" in lines
    assert f"Σ = {e2:.4f} + {e4:.4f} + {e4:.4f} = {total:.4f}" in lines
    assert f"{e4 / total:.4f}" == "0.4683"
    assert "Input 1: a =" not in " ".join(lines)  # only the clicked key's lines are marked


def test_a_score_shows_its_dot_product(browser, page):
    page("illustrated.yaml")
    cells = browser.find_element(By.CSS_SELECTOR, "table[data-key=scores]")  # S = Q·Kᵀ
    cells.find_elements(By.CSS_SELECTOR, "tbody tr")[1].find_elements(By.TAG_NAME, "td")[1].click()
    # q₂ = [2, 2, 2], k₂ = [4, 4, 0]: 2·4 + 2·4 + 2·0 = 16
    assert marked_lines(browser) == ["Input 2: q₂ · k₂ = 2·4 + 2·4 + 2·0 = 16"]


def test_a_masked_cell_names_the_causal_mask(browser, page):
    page("causal.yaml")
    trace = attncli.compute(EXAMPLES / "causal.yaml")
    assert not trace.spec.allowed[0, 0, 1]  # the first query may not see the second key
    weights_cell(browser, 1, 2).click()
    text = browser.find_element(By.ID, "panel").text
    sentence = texts("en")["scores"]["mask_causal"].format(q=f"“{trace.spec.tokens[0]}”")
    assert sentence in text
    assert any(line.endswith("→   masked") for line in marked_lines(browser))


def visible_sentences(browser) -> list[str]:
    """The text of every visible element that holds words (not the tables' numbers and labels)."""
    found = browser.execute_script("""
        const out = [];
        for (const e of document.querySelectorAll('h1, h2, h3, p, button, figcaption, label > span')) {
            const r = e.getBoundingClientRect();
            if (e.classList.contains('formula')) continue;  // a formula is the same in both languages
            if (r.width > 0 && r.height > 0 && e.innerText.trim()) out.push(e.innerText.trim());
        }
        return out;""")
    return found


def test_the_language_switch_turns_every_visible_sentence_chinese(browser, page):
    page("causal.yaml")
    weights_cell(browser, 1, 2).click()  # a panel open too
    english = visible_sentences(browser)
    assert english and not any(CJK.search(s) for s in english if len(s.split()) > 3)
    browser.find_element(By.ID, "lang").click()
    chinese = visible_sentences(browser)
    english_left = [s for s in chinese if re.search("[A-Za-z]", s) and not CJK.search(s)
                    and s != "English"]  # (the switch back says English; step buttons are numbers)
    assert english_left == []
    assert browser.find_element(By.TAG_NAME, "html").get_attribute("lang") == "zh-CN"
    sentence = texts("zh")["scores"]["mask_causal"].split("{q}")[0]
    assert sentence in browser.find_element(By.ID, "panel").text
    masked = texts("zh")["label"]["masked"]  # the lines are arithmetic; their one word is Chinese too
    assert any(line.endswith(f"→   {masked}") for line in marked_lines(browser))


def test_a_page_made_in_chinese_opens_in_chinese(browser, tmp_path):
    path = tmp_path / "zh.html"
    path.write_text(page_html(attncli.compute(EXAMPLES / "causal.yaml"), "causal", lang="zh"), encoding="utf-8")
    browser.get(path.as_uri())
    assert browser.find_element(By.TAG_NAME, "html").get_attribute("lang") == "zh-CN"
    assert browser.find_element(By.ID, "lang").text == "English"
    assert browser.find_element(By.ID, "path-step").text.startswith(texts("zh")["step"])


def test_the_page_makes_no_network_request(browser, page):
    path = page("bert_base.yaml")
    weights_cell(browser, 2, 3).click()
    browser.find_element(By.ID, "lang").click()
    browser.find_element(By.ID, "theme").click()
    requests = []
    for entry in browser.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        if message["method"] in ("Network.requestWillBeSent", "Network.webSocketCreated"):
            requests.append(message["params"].get("request", {}).get("url") or message["params"].get("url"))
    assert requests and set(requests) == {path.as_uri()}  # the page itself, read from disk, and nothing else


def test_the_keyboard_reaches_every_number(browser, page):
    page("illustrated.yaml")
    grids = browser.find_elements(By.CSS_SELECTOR, "table[role=grid]")
    body = browser.find_element(By.TAG_NAME, "body")
    body.click()
    reached = set()
    for _ in range(60):  # Tab: each table is one stop
        browser.switch_to.active_element.send_keys(Keys.TAB)
        active = browser.switch_to.active_element
        if active.get_attribute("data-rc") is not None:
            reached.add(active.find_element(By.XPATH, "ancestor::table").get_attribute("data-ti"))
    assert reached == {g.get_attribute("data-ti") for g in grids}
    for grid in grids:  # inside a table the arrow keys reach each number
        cells = grid.find_elements(By.CSS_SELECTOR, "td[data-rc]")
        browser.execute_script("arguments[0].focus()", cells[0])
        rows = len(grid.find_elements(By.CSS_SELECTOR, "tbody tr"))
        seen = set()
        for _ in range(rows):
            seen.add(browser.switch_to.active_element.get_attribute("data-rc"))
            for _ in range(len(cells) // rows - 1):
                browser.switch_to.active_element.send_keys(Keys.ARROW_RIGHT)
                seen.add(browser.switch_to.active_element.get_attribute("data-rc"))
            browser.switch_to.active_element.send_keys(Keys.HOME)
            browser.switch_to.active_element.send_keys(Keys.ARROW_DOWN)
        assert seen == {c.get_attribute("data-rc") for c in cells}
    weights = weights_cell(browser, 1, 2)
    browser.execute_script("arguments[0].focus()", weights)
    weights.send_keys(Keys.ENTER)
    assert "0.4683" in browser.find_element(By.ID, "panel-title").text
    browser.switch_to.active_element.send_keys(Keys.ESCAPE)
    assert not browser.find_element(By.ID, "panel").is_displayed()


@pytest.mark.parametrize("example", ["illustrated.yaml", "bert_base.yaml"])
def test_a_phone_wide_page_does_not_scroll_sideways(browser, page, example):
    page(example, width=375)
    weights_cell(browser, 1, 1).click()
    width = browser.execute_script("return [document.documentElement.scrollWidth, window.innerWidth]")
    assert width[0] <= width[1], width


def test_hovering_a_token_lights_its_row_and_column(browser, page):
    page("illustrated.yaml")
    from selenium.webdriver import ActionChains

    label = browser.find_element(By.CSS_SELECTOR, "tbody th[data-t='n1']")  # "Input 2", a row label
    ActionChains(browser).move_to_element(label).perform()
    lit = browser.find_elements(By.CSS_SELECTOR, ".hot")
    rows = [e for e in lit if e.get_attribute("data-rt") == "n1"]
    columns = [e for e in lit if e.get_attribute("data-ct") == "n1"]
    # the rows of X (4 numbers), Q, K, V, S, z, A, H and Y (3 each), and the columns of S, z and A (3 each)
    assert len(rows) == 4 + 8 * 3 and len(columns) == 3 * 3


def test_a_notebook_frame_draws_the_page(browser, tmp_path):
    """What a notebook puts in its output (the result's _repr_html_) draws the page inside its frame."""
    notebook = tmp_path / "notebook.html"
    shown = attncli.compute(EXAMPLES / "illustrated.yaml")._repr_html_()
    notebook.write_text(f"<!DOCTYPE html><html><body><p>Out[1]:</p>{shown}</body></html>", encoding="utf-8")
    browser.get(notebook.as_uri())
    browser.switch_to.frame(browser.find_element(By.TAG_NAME, "iframe"))
    try:
        weights_cell(browser, 1, 2).click()
        assert "0.4683" in browser.find_element(By.ID, "panel-title").text
    finally:
        browser.switch_to.default_content()


CLICK_ALL = """
const found = {cells: 0, empty: [], unmarked: []};
const cells = [...document.querySelectorAll('td[data-rc]')];
const every = Math.max(1, Math.floor(cells.length / 300));
for (let k = 0; k < cells.length; k += every) {
    const td = cells[k], key = td.closest('table').getAttribute('data-key');
    td.click();
    found.cells++;
    const body = document.getElementById('panel-body');
    if (!body.textContent.trim()) found.empty.push(key + ' ' + td.getAttribute('data-rc'));
    else if (['queries', 'scores', 'weights'].includes(key) && !body.querySelector('li.hl, p.note'))
        found.unmarked.push(key + ' ' + td.getAttribute('data-rc'));
}
return found;"""


@pytest.mark.parametrize("example", sorted(p.name for p in EXAMPLES.glob("*.yaml")) + ["backward/grads.yaml",
                                                                                    "backward/kernel_qkv.json"])
def test_every_number_of_every_example_opens_its_steps(browser, page, example):
    """As a teacher would try it: a click on (up to 300 of) the numbers of each example's page, in both languages,
    opens a panel with explain's steps; a query, score or weight always has its line marked (or the note saying
    why not); the browser logs no error."""
    page(example)
    browser.get_log("browser")
    for _ in ("en", "zh"):
        found = browser.execute_script(CLICK_ALL)
        assert found["cells"] > 0 and found["empty"] == [] and found["unmarked"] == [], found
        browser.find_element(By.ID, "lang").click()
    assert [entry for entry in browser.get_log("browser") if entry["level"] == "SEVERE"] == []


def test_the_walkthrough_goes_through_explains_steps_and_their_tables(browser, page):
    page("illustrated.yaml")
    for _ in range(3):
        browser.find_element(By.ID, "next").click()
    shown = browser.find_element(By.ID, "path-step").text
    assert shown.startswith("Step 4 · ") and "Input 2: q₁ · k₂ = 1·4 + 0·4 + 2·0 = 4" in shown
    browser.find_element(By.ID, "goto").click()
    marked = browser.find_elements(By.CSS_SELECTOR, "figure.in-step table")
    assert [t.get_attribute("data-key") for t in marked] == ["scores"]  # (scale: none: z is s)
    assert browser.switch_to.active_element.get_attribute("data-rc") == "0,0"  # the keyboard is there too
    top = browser.execute_script("return arguments[0].getBoundingClientRect().top", marked[0])
    assert 0 <= top < browser.execute_script("return window.innerHeight")
    browser.find_element(By.ID, "path-query").send_keys("Input 3")
    assert "Input 1: q₃ · k₁ = 2·0 + 1·1 + 3·1 = 4" in browser.find_element(By.ID, "path-step").text


# -- the gradients (issue 33's last item): examples/backward/grads.yaml, causal, 2 heads, d_k = 2

def grad_cell(browser, key: str, row: int, column: int, head: int = 0):
    """Cell (row, column) of the ``key`` table of ``head``, 1-based as a reader counts."""
    tables = browser.find_elements(By.CSS_SELECTOR, f"table[data-key={key}]")
    return tables[head].find_elements(By.CSS_SELECTOR, "tbody tr")[row - 1].find_elements(By.TAG_NAME, "td")[column - 1]


def panel_lines(browser) -> list[str]:
    return [li.text.strip() for li in browser.find_elements(By.CSS_SELECTOR, "#panel ol.grad li")]


def test_a_dv_cell_shows_its_sum_term_by_term(browser, page):
    """dV[cat, 1] of head 2 = Σ_i a_i,cat·dH_i,1 over the queries that see “cat” (cat, sat, down), reached with
    the keyboard and opened with Enter."""
    page("backward/grads.yaml")
    trace = attncli.compute(EXAMPLES / "backward" / "grads.yaml")
    a, d_h = trace.weights[1, :, 1], trace.gradients["grad_head_outputs"][1, :, 0]
    cell = grad_cell(browser, "grad_values", 2, 1, head=1)
    browser.execute_script("arguments[0].focus()", cell)
    cell.send_keys(Keys.ENTER)
    total = float(a[1:] @ d_h[1:])
    assert cell.text == f"{total:.4f}" and f"{total:.4f}" in browser.find_element(By.ID, "panel-title").text
    wrap = lambda x: f"({x:.4f})" if x < 0 else f"{x:.4f}"  # noqa: E731
    assert panel_lines(browser) == ["dV[cat, 1] = Σ_i a_i,cat·dH_i,1",
                                    "= " + " + ".join(f"{wrap(a[i])}·{wrap(d_h[i])}" for i in (1, 2, 3)),
                                    f"= {total:.4f}"]
    assert browser.find_element(By.CSS_SELECTOR, "#panel ol.grad li.hl").text.strip() == f"= {total:.4f}"
    assert "the value of key “cat” reaches every query that weighs it" in browser.find_element(By.ID, "panel").text


def test_a_masked_dz_cell_says_why_it_is_0_in_both_languages(browser, page):
    page("backward/grads.yaml")
    trace = attncli.compute(EXAMPLES / "backward" / "grads.yaml")
    grad_cell(browser, "grad_scaled_scores", 1, 3).click()  # “The” may not see “sat”
    d_a, d = trace.gradients["grad_weights"][0, 0, 2], trace.gradients["delta"][0, 0]
    assert panel_lines(browser) == [f"dZ[The, sat] = a·(dA − D) = 0·({d_a:.4f} − {d:.4f}) = 0"]
    EN, ZH = texts("en")["page_grads"], texts("zh")["page_grads"]
    assert EN["masked"].format(q="“The”", key="“sat”") in browser.find_element(By.ID, "panel").text
    browser.find_element(By.ID, "lang").click()
    panel = browser.find_element(By.ID, "panel")
    assert ZH["masked"].format(q="“The”", key="“sat”") in panel.text
    paragraphs = [p.text for p in panel.find_elements(By.CSS_SELECTOR, "#panel-body p")]
    assert paragraphs and all(CJK.search(p) for p in paragraphs)
    assert CJK.search(browser.find_element(By.ID, "panel-title").text)  # the table's title too
    grad_cell(browser, "grad_scaled_scores", 4, 2).click()  # an unmasked one, in Chinese: a·(dA − D)
    z = trace.gradients["grad_scaled_scores"][0, 3, 1]
    assert panel_lines(browser)[0].endswith(f"= {z:.4f}")
    assert ZH["masked"].split("{q}")[0] not in browser.find_element(By.ID, "panel").text


def test_gradients_are_coloured_blue_below_0_and_orange_above(browser, page):
    page("backward/grads.yaml")
    rgb = lambda td: [int(x) for x in re.findall(r"\d+", td.value_of_css_property("background-color"))[:3]]  # noqa: E731
    negative, positive = grad_cell(browser, "grad_weights", 2, 1), grad_cell(browser, "grad_weights", 4, 2)
    assert float(negative.text) < 0 < float(positive.text)  # -0.2400 and 3.8126 (the table's largest)
    (r1, _, b1), (r2, _, b2) = rgb(negative), rgb(positive)
    assert b1 > r1 and r2 > b2
    assert browser.find_element(By.ID, "signed-legend").is_displayed()



def test_a_linear_documents_output_opens_the_delta_rule_with_its_states(browser, tmp_path):
    """examples/linear/gated_delta.yaml: o at token 3 is S_3ᵀq̂ (q̂ = [0, 1], scaled by 1/√2): the panel marks explain's
    read-out line, with compute's number, and draws the states under their lines; in Chinese too."""
    from attncli.core.linear import run
    from attncli.inputs.document import read_document
    from attncli.inputs.linear import read_linear
    from attncli.teach.page.linear import linear_page_html

    trace = run(read_linear(read_document(str(EXAMPLES / "linear" / "gated_delta.yaml"))))
    path = tmp_path / "linear.html"
    path.write_text(linear_page_html(trace, "gated_delta.yaml"), encoding="utf-8")
    browser.get(path.as_uri())
    assert browser.find_element(By.TAG_NAME, "html").get_attribute("data-ready") is not None
    o = trace["head_outputs"][0, 2]
    assert abs(o - trace["state"][0, 2].T @ trace["normalized_queries"][0, 2] / math.sqrt(2)).max() < 1e-12
    cell = browser.find_element(By.CSS_SELECTOR, "table[data-key=head_outputs]")
    cell = cell.find_elements(By.CSS_SELECTOR, "tbody tr")[2].find_elements(By.TAG_NAME, "td")[0]
    assert cell.text == f"{o[0]:.4f}"
    cell.click()
    assert marked_lines(browser) == [f"5. Read out: o = Sᵀq̂ = [{o[0]:.4f}, {o[1]:.4f}] (q̂ = [0.0000, 1.0000], scaled "
                                     "by 0.7071): the head's output at token 3"]
    states = browser.find_elements(By.CSS_SELECTOR, "#panel table.state")
    assert len(states) == 4  # before, decayed, k̂·uᵀ, after
    after = [[float(td.text) for td in tr.find_elements(By.TAG_NAME, "td")]
             for tr in states[3].find_elements(By.TAG_NAME, "tr")[1:]]
    assert abs(after - trace["state"][0, 2]).max() < 1e-4
    browser.find_element(By.ID, "lang").click()
    assert marked_lines(browser)[0].startswith(f"5. 读出：o = Sᵀq̂ = [{o[0]:.4f}")
    assert CJK.search(browser.find_element(By.ID, "panel-title").text)
    assert browser.get_log("browser") == []  # no script error
