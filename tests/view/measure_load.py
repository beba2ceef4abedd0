"""Page load times of `kgagent view` in headless Chromium (prints figures; asserts nothing).

    .venv/bin/python tests/view/measure_load.py MEMORY [REPEATS] [PAGES]

PAGES: the paths to load, comma-separated (``/,/library``; all four by default).

For each page: seconds from navigation until what the page is for is on screen
(graph: every node drawn; library: the first rows; live: the picture loaded;
rounds: all five figures drawn), first load (cold: the view has not read the
memory yet) and the median of the reloads after it.
"""

from __future__ import annotations

import shutil
import statistics
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from view.conftest import make_browser, serve  # noqa: E402
from view.test_browser import CY  # noqa: E402

READY = {
    "/": f"(() => {{ {CY} return cy.nodes().length > 0 && cy.nodes().length == "
    "Number(document.getElementById('g-count-states').textContent.replace(/,/g, '')); })()",
    "/library": "document.querySelectorAll('#l-skills td').length > 0",
    "/live": "(() => { const i = document.getElementById('v-frame'); return i && i.complete && i.naturalWidth > 0; })()",
    "/rounds": "document.querySelectorAll('.js-plotly-plot .main-svg').length >= 5",
}


def _until(driver, js: str, timeout: float = 60.0) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            if driver.execute_script(f"return ({js});"):
                return
        except Exception:  # still loading
            pass
        time.sleep(0.02)
    raise SystemExit(f"timed out: {js[:60]}")


@contextmanager
def viewed(memory: Path) -> Iterator[tuple[Any, Any]]:
    """The view of ``memory`` served in this process and a headless Chromium: (site, driver)."""
    site = serve(memory, refresh_s=1.0)
    driver, profile = make_browser()
    try:
        yield site, driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)
        site.stop()


def main() -> None:
    memory = Path(sys.argv[1])
    repeats = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    pages = sys.argv[3].split(",") if len(sys.argv) > 3 else list(READY)
    with viewed(memory) as (site, driver):
        for path in pages:
            js = READY[path]
            times = []
            for _ in range(repeats + 1):
                t = time.perf_counter()
                driver.get(site.url + path)
                _until(driver, js)
                times.append(time.perf_counter() - t)
            print(
                f"{path:10s} first {times[0]:.2f} s   median of {repeats} reloads {statistics.median(times[1:]):.2f} s"
            )


if __name__ == "__main__":
    main()
