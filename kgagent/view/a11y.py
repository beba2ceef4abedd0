"""What the pages do for keyboard and screen-reader users that Dash's components do not.

Dash's components take no ``aria-*`` properties (a slider, a checklist or a dropdown
cannot be given a name from Python), and its DataTable handles keys on its whole
container: a Tab pressed on a filter row's "Aa" button, a page button or a selected cell
is taken for moving between cells and cancelled (``preventDefault``), so focus could not
leave the table, and its sort arrows could not be focused at all. :data:`SCRIPT` runs in
every page (the shell puts it after Dash's renderer) and mends both without touching
Dash's code:

* a Tab (or Shift+Tab) pressed anywhere in a DataTable is kept from the table's handler
  (a capture-phase listener stops it before React sees it), so the browser moves focus
  out as it does everywhere else; arrows still move between cells;
* each sort arrow is a button (focusable, "sort by <column>", Enter or Space sorts) and
  its heading says how the table is sorted (``aria-sort``); each filter box is named
  "filter <column>", each "Aa" button says what it does and whether it is on
  (``aria-pressed``); a filter the table cannot read (which it only tints) is marked
  ``aria-invalid`` and named in words in the element ``<table id>-filter-error``;
* a ``<label for=X id=L>`` names what Dash draws for control X where the browser cannot
  associate them: a slider's thumb and its number box, a checklist or radio items (which
  Dash marks as a list box of options holding checkboxes: made a labelled group of
  checkboxes or a radio group), a dropdown's button (its name: the label, then the
  value).

The pages' own markup does the rest (``<html lang>``, a ``<main>``, a heading and a
document title per page, a polite status line on the live page): see
:mod:`kgagent.view.shell`. Colours for text on a coloured badge come from
:func:`ink_on`, which picks the text colour that reaches WCAG's 4.5:1.
"""

from __future__ import annotations

#: WCAG 2.1 AA: the contrast normal text needs (1.4.3).
TEXT_CONTRAST = 4.5
#: The two text colours a badge may take.
BLACK = "#000000"
WHITE = "#ffffff"


def luminance(colour: str) -> float:
    """The relative luminance of ``#rrggbb`` (or ``#rgb``), as WCAG 2.1 defines it."""
    h = colour.lstrip("#")
    if len(h) == 3:
        h = "".join(c * 2 for c in h)
    if len(h) != 6:
        raise ValueError(f"not a #rrggbb colour: {colour!r}")
    out = []
    for i in (0, 2, 4):
        c = int(h[i : i + 2], 16) / 255
        out.append(c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4)
    r, g, b = out
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast(a: str, b: str) -> float:
    """WCAG 2.1's contrast ratio of two colours (1 to 21)."""
    la, lb = sorted((luminance(a), luminance(b)), reverse=True)
    return (la + 0.05) / (lb + 0.05)


def ink_on(background: str) -> str:
    """The text colour for ``background``: white where it reaches 4.5:1, else black
    (whichever contrasts more when neither does; one of them always reaches 4.5:1)."""
    if contrast(WHITE, background) >= TEXT_CONTRAST:
        return WHITE
    return max((BLACK, WHITE), key=lambda c: contrast(c, background))


#: Styles for what SCRIPT marks and for the tables' controls: Dash draws the "Aa" button
#: at opacity 0.1 (1.09:1), a sensitive one and any hovered control hot pink (2.5:1: here
#: the page's blue, 5:1); a visible focus ring on the sort buttons; a visually hidden text
#: (the page's h1).
CSS = """
body .dash-table-container .dash-spreadsheet-container .dash-spreadsheet-inner th.dash-filter input.dash-filter--case {
  opacity:1; color:var(--ink); background:#fff; font-size:11px; height:18px; line-height:1;
  border:1px dashed var(--muted); border-radius:3px; padding:1px 3px; cursor:pointer; }
body .dash-table-container .dash-spreadsheet-container .dash-spreadsheet-inner th.dash-filter input.dash-filter--case--sensitive {
  color:var(--ink); border:2px solid var(--ink); font-weight:700; }
body .dash-table-container .dash-spreadsheet-container .dash-spreadsheet-inner table {
  --accent:#0072B2; }
.dash-table-container .column-header--sort:focus-visible,
.dash-table-container input.dash-filter--case:focus-visible { outline:2px solid var(--accent);
  outline-offset:1px; }
.dash-table-container .dash-spreadsheet-container .dash-spreadsheet-inner th.dash-filter.invalid input {
  outline:2px solid #b02a37; }
.sr-only { position:absolute; width:1px; height:1px; padding:0; margin:-1px; overflow:hidden;
           clip:rect(0,0,0,0); white-space:nowrap; border:0; }
"""

SCRIPT = r"""
(function () {
  "use strict";
  function set(el, name, value) {
    if (el && el.getAttribute(name) !== value) el.setAttribute(name, value);
  }
  function unset(el, name) {
    if (el && el.hasAttribute(name)) el.removeAttribute(name);
  }
  function text(el) { return el ? el.textContent.trim() : ""; }
  var ACTIVATE = { "Enter": 1, " ": 1 };

  // A DataTable cancels every Tab pressed in it (it moves between cells): keep Tab from
  // its handler, so that focus leaves the table; make Enter and Space work its buttons.
  document.addEventListener("keydown", function (e) {
    var t = e.target;
    if (!(t instanceof Element) || !t.closest(".dash-table-container")) return;
    if (e.key === "Tab" && !e.ctrlKey && !e.altKey && !e.metaKey) {
      e.stopPropagation();
    } else if (ACTIVATE[e.key] && t.matches(".column-header--sort")) {
      e.preventDefault();
      e.stopPropagation();
      t.click();
    } else if (ACTIVATE[e.key] && t.matches("button, input[type=button]")) {
      e.stopPropagation();
    }
  }, true);

  function tables() {
    document.querySelectorAll(".dash-table-container").forEach(function (table) {
      var names = {};
      table.querySelectorAll("th.dash-header[data-dash-column]").forEach(function (th) {
        var col = th.getAttribute("data-dash-column");
        var name = text(th.querySelector(".column-header-name")) || col;
        names[col] = name;
        set(th, "scope", "col");
        var sort = th.querySelector(".column-header--sort");
        if (!sort) return;
        var icon = sort.querySelector("[data-icon]");
        var dir = icon ? icon.getAttribute("data-icon") : "sort";
        set(sort, "role", "button");
        set(sort, "tabindex", "0");
        set(sort, "aria-label", "sort by " + name);
        set(th, "aria-sort", dir === "sort-up" ? "ascending"
          : dir === "sort-down" ? "descending" : "none");
      });
      var msgId = table.id ? table.id + "-filter-error" : "";
      var msg = msgId ? document.getElementById(msgId) : null;
      var bad = [];
      table.querySelectorAll("th.dash-filter[data-dash-column]").forEach(function (th) {
        var col = th.getAttribute("data-dash-column");
        var name = names[col] || col;
        var box = th.querySelector("input[type=text]");
        var aa = th.querySelector("input.dash-filter--case");
        set(box, "aria-label", "filter " + name);
        if (aa) {
          set(aa, "aria-label", "match case in the filter of " + name);
          set(aa, "aria-pressed",
            aa.classList.contains("dash-filter--case--sensitive") ? "true" : "false");
        }
        if (th.classList.contains("invalid") && box) {
          bad.push(name + ": \u201c" + box.value + "\u201d");
          set(box, "aria-invalid", "true");
          if (msg) set(box, "aria-describedby", msgId);
        } else {
          unset(box, "aria-invalid");
          unset(box, "aria-describedby");
        }
      });
      if (msg) {
        var say = bad.length
          ? "Filter not understood, so not applied (" + bad.join("; ") +
            "): write a value (active), a comparison (>0.5, <=3) or contains text."
          : "";
        if (msg.textContent !== say) msg.textContent = say;
      }
    });
  }

  function labels() {
    document.querySelectorAll("label[for][id]").forEach(function (label) {
      var target = document.getElementById(label.htmlFor);
      if (!target || target.matches("input, select, textarea")) return;
      if (target.matches("button[aria-labelledby]")) {  // a dropdown: named by its value
        var ids = target.getAttribute("aria-labelledby").split(/\s+/);
        if (ids[0] !== label.id) {
          set(target, "aria-labelledby",
            [label.id].concat(ids.filter(function (i) { return i && i !== label.id; })).join(" "));
        }
        return;
      }
      target.querySelectorAll("[role=slider], input[type=number]").forEach(function (el) {
        set(el, "aria-labelledby", label.id);
      });
      if (target.getAttribute("role") === "listbox" || target.hasAttribute("data-a11y-group")) {
        var radio = !!target.querySelector("input[type=radio]");
        set(target, "data-a11y-group", "");
        set(target, "role", radio ? "radiogroup" : "group");
        set(target, "aria-labelledby", label.id);
        target.querySelectorAll("label[role=option], label[aria-selected]").forEach(function (o) {
          unset(o, "role");
          unset(o, "aria-selected");
        });
      }
    });
  }

  var queued = false;
  function mend() {
    queued = false;
    tables();
    labels();
  }
  function queue() {
    if (!queued) {
      queued = true;
      window.requestAnimationFrame(mend);
    }
  }
  new MutationObserver(queue).observe(document.documentElement, {
    childList: true, subtree: true, attributes: true,
    attributeFilter: ["class", "role", "aria-selected", "aria-labelledby", "data-icon"]
  });
  queue();
})();
"""
