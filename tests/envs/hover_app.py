"""A Tk toy whose buttons light up under the pointer, and only one of which does anything.

Usage: python hover_app.py COUNTS.json TITLE. ``Idle`` turns dark blue under the pointer
(its ``activebackground``) and does nothing; ``Paint`` (the same hover colour) paints
the strip below the buttons another colour at each click. Every click on ``Paint``
rewrites the JSON file (``{"paint": N}``), so a test knows the app is up and what it got.
"""

from __future__ import annotations

import json
import os
import sys
import tkinter as tk

out, title = sys.argv[1], sys.argv[2]
paints = 0
root = tk.Tk()
root.title(title)
root.geometry("300x200+100+100")
strip = tk.Frame(root, bg="#404040")
strip.place(x=20, y=110, width=260, height=60)


def save() -> None:
    with open(out + ".tmp", "w") as f:
        json.dump({"paint": paints}, f)
    os.replace(out + ".tmp", out)


def paint() -> None:
    global paints
    paints += 1
    strip.config(bg=("#404040", "#909090", "#e0e0e0")[paints % 3])  # greys apart by > 30
    save()


hover = {"activebackground": "#3050c0", "bg": "#d9d9d9"}
tk.Button(root, text="Idle", **hover).place(x=20, y=20, width=120, height=60)
tk.Button(root, text="Paint", command=paint, **hover).place(x=160, y=20, width=120, height=60)
root.after(100, save)
root.mainloop()
