"""The SA-KG page's fCoSE layout at each quality, timed and measured (prints figures).

    .venv/bin/python tests/view/measure_layout.py MEMORY [REPEATS]

Loads the graph page in headless Chromium, then lays the drawn graph out again REPEATS
times (3) at each of fCoSE's qualities with the page's other layout settings, and prints
per layout: its time in the browser, the pairs of state thumbnails that overlap, the
median length of an edge between two states, and the crossings among the first 400
such edges drawn straight. Asserts nothing.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from measure_load import READY, _until, viewed  # noqa: E402

from kgagent.view.page_graph import LAYOUTS  # noqa: E402
from view.test_browser import CY  # noqa: E402

MEASURE = """
const t = performance.now();
cy.layout(arguments[0]).run();
const ms = performance.now() - t;
const boxes = cy.nodes().map(n => n.boundingBox({includeLabels: false}));
let overlaps = 0;
for (let i = 0; i < boxes.length; i++) for (let j = i + 1; j < boxes.length; j++) {
  const a = boxes[i], b = boxes[j];
  if (a.x1 < b.x2 && b.x1 < a.x2 && a.y1 < b.y2 && b.y1 < a.y2) overlaps++;
}
const edges = cy.edges().filter(e => !e.isLoop());
const lengths = edges.map(e => {
  const p = e.source().position(), q = e.target().position();
  return Math.hypot(p.x - q.x, p.y - q.y);
}).sort((x, y) => x - y);
const seg = edges.slice(0, 400).map(e =>
  [e.source().position(), e.target().position(), e.source().id(), e.target().id()]);
const side = (a, b, c) => (c.x - a.x) * (b.y - a.y) - (b.x - a.x) * (c.y - a.y);
let crossings = 0;
for (let i = 0; i < seg.length; i++) for (let j = i + 1; j < seg.length; j++) {
  const [p1, p2, s1, t1] = seg[i], [p3, p4, s2, t2] = seg[j];
  if (s1 == s2 || s1 == t2 || t1 == s2 || t1 == t2) continue;
  if (side(p3, p4, p1) * side(p3, p4, p2) < 0 && side(p1, p2, p3) * side(p1, p2, p4) < 0)
    crossings++;
}
return [ms, overlaps, boxes.length, lengths.length ? lengths[lengths.length >> 1] : 0,
        crossings, seg.length];
"""


def main() -> None:
    memory = Path(sys.argv[1])
    repeats = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    with viewed(memory) as (site, driver):
        driver.get(site.url + "/")
        _until(driver, READY["/"])
        time.sleep(1.0)  # the page's own layout has finished
        n, e = driver.execute_script(f"{CY} return [cy.nodes().length, cy.edges().length];")
        print(f"{n} states, {e} edges drawn (fCoSE settings: {json.dumps(LAYOUTS['fcose'])})")
        for quality in ("proof", "default", "draft"):
            opts = {**LAYOUTS["fcose"], "quality": quality}
            for _ in range(repeats):
                ms, ov, nodes, med, cross, seg = driver.execute_script(f"{CY} {MEASURE}", opts)
                pairs = nodes * (nodes - 1) // 2
                print(
                    f"{quality:8s} layout {ms:7.0f} ms   overlapping pairs {ov:4d} of {pairs:,}"
                    f"   median edge {med:4.0f} px   crossings {cross:5d} among {seg} edges"
                )


if __name__ == "__main__":
    main()
