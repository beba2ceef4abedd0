"""A tiny Tk app for the desktop tests: counts clicks per button and key presses.

Usage: python desktop_app.py COUNTS.json [TITLE] [animate]. Every event rewrites
the JSON file, so a test can check exactly what the app received. With
``animate`` a "spinner" label changes on its own every 20 ms, as a busy
program's screen does. F2 opens a second window of the app over its first, with a
button C (as a program's dialog would). F3 opens a screen-sized window of the app over
everything, with a button D in its middle that closes it (as an SDL 1.2 game's full
screen does on a display that cannot change its mode). A drag on the bar at the bottom
moves the window with the pointer, as a program that draws its own title bar does; F4
moves it 180 px to the left.
"""

from __future__ import annotations

import json
import sys
import tkinter as tk

out = sys.argv[1]
title = sys.argv[2] if len(sys.argv) > 2 else "kgagent-test-app"
counts: dict = {"A": 0, "B": 0, "C": 0, "D": 0, "keys": {}}

root = tk.Tk()
root.title(title)
root.geometry("400x300+100+120")
label = tk.Label(root, text="A=0 B=0 keys=0", font=("TkDefaultFont", 14))
label.place(x=20, y=200, width=360, height=40)


def save() -> None:
    label.config(text=f"A={counts['A']} B={counts['B']} keys={sum(counts['keys'].values())}")
    with open(out + ".tmp", "w") as f:
        json.dump(counts, f)
    import os

    os.replace(out + ".tmp", out)


def press(name: str) -> None:
    counts[name] += 1
    save()


def key(event: tk.Event) -> None:
    counts["keys"][event.keysym] = counts["keys"].get(event.keysym, 0) + 1
    save()
    if event.keysym == "F2":
        dialog = tk.Toplevel(root)
        dialog.title(title + " dialog")
        dialog.geometry("200x100+110+130")
        tk.Button(dialog, text="C", command=lambda: press("C")).place(
            x=10, y=10, width=120, height=60
        )
    if event.keysym == "F4":
        root.geometry(f"+{root.winfo_x() - 180}+{root.winfo_y()}")
    if event.keysym == "F3":
        full = tk.Toplevel(root, bg="black")
        full.overrideredirect(True)
        sw, sh = root.winfo_screenwidth(), root.winfo_screenheight()
        full.geometry(f"{sw}x{sh}+0+0")

        def close() -> None:
            press("D")
            full.destroy()

        tk.Button(full, text="D", command=close).place(
            x=sw // 2 - 60, y=sh // 2 - 30, width=120, height=60
        )


tk.Button(root, text="A", command=lambda: press("A")).place(x=20, y=20, width=120, height=60)
tk.Button(root, text="B", command=lambda: press("B")).place(x=200, y=20, width=120, height=60)
root.bind_all("<Key>", key)
bar = tk.Label(root, text="drag to move", bg="#9ab")
bar.place(x=20, y=250, width=360, height=40)
grip: list[int] = []


def hold(event: tk.Event) -> None:
    grip[:] = [event.x_root, event.y_root, root.winfo_x(), root.winfo_y()]


def move(event: tk.Event) -> None:
    px, py, wx, wy = grip
    root.geometry(f"+{wx + event.x_root - px}+{wy + event.y_root - py}")


bar.bind("<ButtonPress-1>", hold)
bar.bind("<B1-Motion>", move)
if len(sys.argv) > 3 and sys.argv[3] == "animate":
    # eight greys 32 levels apart, one every 20 ms: any two screenshots taken more
    # than one tick apart differ by more than the 30-level change threshold
    greys = [f"#{g:02x}{g:02x}{g:02x}" for g in range(0, 256, 32)]
    spinner = tk.Label(root, text="", bg=greys[0])
    spinner.place(x=20, y=100, width=60, height=60)

    def spin(i: int = 0) -> None:
        spinner.config(bg=greys[i % len(greys)])
        root.after(20, spin, i + 1)

    spin()
root.after(50, save)
root.mainloop()
