"""The explorable page (attncli page): its size, the time to make it, and how soon a browser can use it.

    python benchmarks/page.py [--rounds 3] [--no-browser]

For each example: the page's bytes (limits: the illustrated example 200 KB, BERT-base 12 MB), the time to make it
beside the time to make the same document's JSON (``to_json``, the yardstick, in turns with it), and, in headless
chromium (Debian's chromium and chromium-driver, Selenium), the milliseconds from the start of navigation to the
end of the page's script (the tables drawn, every number clickable: ``data-ready``), beside a blank page's in the
same browser. Prints; asserts nothing about time.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import attncli  # noqa: E402
from attncli.outputs.serialize import to_json  # noqa: E402
from attncli.teach.page import page_html  # noqa: E402

EXAMPLES = ("illustrated.yaml", "causal.yaml", "two_heads.yaml", "llama_style.yaml", "bert_base.yaml",
            "backward/grads.yaml")  # the last: every gradient cell written out too (issue 33)


def timed(make) -> float:
    start = time.perf_counter()
    make()
    return time.perf_counter() - start


def browser():
    chromium, driver = shutil.which("chromium"), shutil.which("chromedriver")
    if not (chromium and driver):
        return None
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        return None
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1280,1000"):
        options.add_argument(argument)
    return webdriver.Chrome(service=Service(driver), options=options)


def ready_ms(driver, path: Path) -> float:
    driver.get(path.as_uri())  # returns once the load event has fired (the script has run)
    return float(driver.find_element("tag name", "html").get_attribute("data-ready"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--no-browser", action="store_true")
    args = parser.parse_args()
    driver = None if args.no_browser else browser()
    folder = Path(tempfile.mkdtemp(prefix="attncli-page-"))
    blank = folder / "blank.html"
    blank.write_text("<!DOCTYPE html><script>document.documentElement.setAttribute('data-ready', "
                     "String(Math.round(performance.now())))</script>", encoding="utf-8")
    print(f"{'example':<20} {'bytes':>10} {'page s':>8} {'json s':>8} {'ratio':>6} {'ready ms':>9} {'blank ms':>9}")
    try:
        for name in EXAMPLES:
            trace = attncli.compute(ROOT / "examples" / name)
            pages, jsons, ready, empty = [], [], [], []
            for _ in range(args.rounds):
                pages.append(timed(lambda: page_html(trace, name)))  # noqa: B023
                jsons.append(timed(lambda: to_json(trace, None)))  # noqa: B023
            path = folder / f"{name.replace('/', '_')}.html"
            path.write_text(page_html(trace, name), encoding="utf-8")
            if driver is not None:
                for _ in range(args.rounds):
                    ready.append(ready_ms(driver, path))
                    empty.append(ready_ms(driver, blank))
            page_s, json_s = statistics.median(pages), statistics.median(jsons)
            shown = (f"{statistics.median(ready):>9.0f} {statistics.median(empty):>9.0f}" if ready
                     else f"{'-':>9} {'-':>9}")
            ratio = page_s / json_s
            print(f"{name:<20} {path.stat().st_size:>10,} {page_s:>8.2f} {json_s:>8.3f} {ratio:>6.0f} {shown}")
    finally:
        if driver is not None:
            driver.quit()
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
