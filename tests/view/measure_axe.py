"""axe-core's WCAG 2.1 A/AA and best-practice checks on every page of `kgagent view`, in
headless Chromium (prints the count per rule; asserts nothing).

    .venv/bin/python tests/view/measure_axe.py MEMORY AXE_JS [WIDTHxHEIGHT]

AXE_JS: ``axe.min.js`` of the axe-core package (``npm pack axe-core``, then
``tar xzf axe-core-*.tgz package/axe.min.js``); it is injected into each page once the
page has drawn what it is for. The window is 1366x768 unless given. Each line: a page, a
rule that failed, how many elements failed it, and the rule's help text.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from view.measure_load import READY, _until, viewed  # noqa: E402

TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "best-practice"]


def main() -> None:
    memory, axe = Path(sys.argv[1]), Path(sys.argv[2]).read_text()
    width, height = (int(x) for x in (sys.argv[3] if len(sys.argv) > 3 else "1366x768").split("x"))
    with viewed(memory) as (site, driver):
        driver.set_window_size(width, height)
        driver.set_script_timeout(120)
        for path, ready in READY.items():
            driver.get(site.url + path)
            _until(driver, ready)
            driver.execute_script(axe)
            result = driver.execute_async_script(
                "const done = arguments[arguments.length - 1];"
                f"axe.run(document, {{runOnly: {{type: 'tag', values: {TAGS!r}}}}})"
                ".then(done).catch(e => done({error: String(e)}));"
            )
            if "error" in result:
                raise SystemExit(f"{path}: axe failed: {result['error']}")
            failed = result["violations"]
            print(
                f"{path}: {sum(len(v['nodes']) for v in failed)} elements fail {len(failed)} rules"
            )
            for v in failed:
                print(f"  {v['id']:24s} {len(v['nodes']):3d}  {v['help']}")


if __name__ == "__main__":
    main()
