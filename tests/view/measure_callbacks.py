"""Response size and time of every Dash callback of `kgagent view` (prints figures; asserts nothing).

    .venv/bin/python tests/view/measure_callbacks.py MEMORY [SEARCH]

Serves MEMORY in this process and calls each callback over HTTP as the browser calls
it, with the values the page layouts hold: each page's layout, the graph, a state's and
a skill's panel, a search in "neighbourhood of" (SEARCH, ``s1`` by default), the library
sorted, filtered and paged, and the library's CSV. Ends with the process's peak resident
memory: the view's, reading the memory included. docs/view.md, "Large graphs".
"""

from __future__ import annotations

import json
import resource
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from view.conftest import serve  # noqa: E402

# the view is on this machine: no proxy, whatever the environment says
OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def _outputs(spec: str) -> Any:
    if spec.startswith(".."):
        return [
            dict(zip(("id", "property"), x.rsplit(".", 1))) for x in spec.strip(".").split("...")
        ]
    i, p = spec.rsplit(".", 1)
    return {"id": i, "property": p}


class Caller:
    def __init__(self, url: str) -> None:
        self.url = url
        self.deps = json.loads(OPENER.open(url + "/_dash-dependencies").read())
        self.values: dict[str, Any] = {}

    def dep(self, output: str) -> dict[str, Any]:
        return next(d for d in self.deps if output in d["output"].strip(".").split("..."))

    def call(self, dep: dict[str, Any], values: dict[str, Any], changed: str | None = None):
        """(response or None, bytes, seconds)."""
        v = {**self.values, **values}
        body = {
            "output": dep["output"],
            "outputs": _outputs(dep["output"]),
            "inputs": [dict(i, value=v.get(f"{i['id']}.{i['property']}")) for i in dep["inputs"]],
            "state": [dict(s, value=v.get(f"{s['id']}.{s['property']}")) for s in dep["state"]],
            "changedPropIds": [
                changed or f"{dep['inputs'][0]['id']}.{dep['inputs'][0]['property']}"
            ],
        }
        req = urllib.request.Request(
            self.url + "/_dash-update-component",
            data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json"},
        )
        t = time.perf_counter()
        try:
            raw = OPENER.open(req, timeout=900).read()
        except urllib.error.HTTPError as e:
            raw = e.read()
        dt = time.perf_counter() - t
        out = json.loads(raw)["response"] if raw else None
        return out, len(raw), dt

    def learn(self, tree: Any) -> None:
        """Remember the props of every component with an id (the values the page sends)."""
        if isinstance(tree, dict):
            p = tree.get("props")
            if isinstance(p, dict) and isinstance(p.get("id"), str):
                for k, val in p.items():
                    if k != "children":
                        self.values.setdefault(f"{p['id']}.{k}", val)
            for x in tree.values():
                self.learn(x)
        elif isinstance(tree, list):
            for x in tree:
                self.learn(x)


def show(what: str, got: tuple) -> None:
    print(f"{what:58s} {got[1]:>11,d} bytes {got[2]:7.2f} s", flush=True)


def main() -> None:
    memory = Path(sys.argv[1])
    search = sys.argv[2] if len(sys.argv) > 2 else "s1"
    t = time.perf_counter()
    site = serve(memory, refresh_s=1.0)
    print(f"view started in {time.perf_counter() - t:.1f} s (the first read of the memory)")
    try:
        c = Caller(site.url)
        page = c.dep("page.children")
        for path in ("/", "/library", "/live", "/rounds"):
            got = c.call(page, {"url.pathname": path})
            show(f"page layout {path}", got)
            c.learn(got[0])
        graph = c.call(c.dep("g-cy.elements"), {})
        show("graph", graph)
        els = graph[0]["g-cy"]["elements"]
        nodes = [e for e in els if "source" not in e["data"]]
        print(
            f"    {len(nodes):,} states, {len(els) - len(nodes):,} edges drawn; notes: "
            f"{graph[0]['g-notes']['children']}"
        )
        panel = c.dep("g-detail.children")
        if nodes:
            top = max(nodes, key=lambda e: e["data"]["visits"])
            show(
                "state panel (the most visited)",
                c.call(panel, {"g-cy.tapNodeData": top["data"]}, "g-cy.tapNodeData"),
            )
        skill = next((e for e in els if e["data"].get("skill")), None)
        if skill:
            show(
                "skill panel",
                c.call(panel, {"g-cy.tapEdgeData": skill["data"]}, "g-cy.tapEdgeData"),
            )
        for out in ("g-focus.options", "g-run.options", "g-cluster.options", "v-log.options"):
            show(f"{out} (after a change of the memory)", c.call(c.dep(out), {}, "g-sig.data"))
        got = c.call(
            c.dep("g-focus.options"), {"g-focus.search_value": search}, "g-focus.search_value"
        )
        show(f"g-focus.options (typed {search!r})", got)
        opts = got[0]["g-focus"]["options"] if got[0] else []
        print(f"    {opts[-1]['label'] if opts else 'no match'}")
        lib = c.dep("l-skills.data")
        for what, extra, changed in (
            (
                "library sorted by executions",
                {"l-skills.sort_by": [{"column_id": "executions", "direction": "desc"}]},
                "l-skills.sort_by",
            ),
            (
                "library filtered",
                {"l-skills.filter_query": "{fitness} > 0.5 && {status} scontains active"},
                "l-skills.filter_query",
            ),
            ("library page 401", {"l-skills.page_current": 400}, "l-skills.page_current"),
        ):
            got = c.call(lib, extra, changed)
            show(what, got)
            print(f"    {got[0]['l-shown']['children']}")
        t = time.perf_counter()
        raw = OPENER.open(site.url + "/download/skills.csv").read()
        show("/download/skills.csv", (None, len(raw), time.perf_counter() - t))
    finally:
        site.stop()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(f"peak resident memory of this process (the view): {peak:,} kB ({peak / 2**20:.2f} GiB)")


if __name__ == "__main__":
    main()
