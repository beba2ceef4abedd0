"""A tiny SDL (pygame) program for the desktop tests.

Usage: python pygame_app.py TITLE [--out FILE] [--exit-after N] [--linger S] [--die CODE]
                            [--blank-for S]

It shows a 320x240 window whose colour changes with every key press, appends each
key's name to FILE, and exits with code 7 after N inputs (key presses and clicks); with
``--linger`` its window closes first and the process exits S seconds later. With ``--die`` it
writes an error and exits with CODE at once, before any window, as a program with a
broken installation does. With ``--blank-for`` the window stays black for S seconds
before its first frame, as a program still loading does. Only the display is
initialised (no audio).
"""

from __future__ import annotations

import argparse
import sys
import time

ap = argparse.ArgumentParser()
ap.add_argument("title")
ap.add_argument("--out", default=None)
ap.add_argument("--exit-after", type=int, default=0)
ap.add_argument("--linger", type=float, default=0.0)
ap.add_argument("--die", type=int, default=None)
ap.add_argument("--blank-for", type=float, default=0.0)
args = ap.parse_args()
if args.die is not None:
    print("pygame_app: fatal: cannot open the game data", file=sys.stderr)
    print("pygame_app: giving up", file=sys.stderr)  # the reason is not the last line
    sys.exit(args.die)

import pygame  # noqa: E402 - after the early exit, as a real program fails before its window

pygame.display.init()
screen = pygame.display.set_mode((320, 240))
pygame.display.set_caption(args.title)
print(f"pygame_app: window {args.title!r} open", flush=True)
if args.blank_for > 0:
    screen.fill((0, 0, 0))
    pygame.display.flip()
    time.sleep(args.blank_for)
presses = 0
colours = [(200, 40, 40), (40, 200, 40), (40, 40, 200), (200, 200, 40)]
while True:
    for event in pygame.event.get():
        if event.type == pygame.QUIT:
            sys.exit(0)
        if event.type in (pygame.KEYDOWN, pygame.MOUSEBUTTONDOWN):
            presses += 1
            if args.out and event.type == pygame.KEYDOWN:
                with open(args.out, "a") as f:
                    f.write(pygame.key.name(event.key) + "\n")
            if args.exit_after and presses >= args.exit_after:
                print(f"pygame_app: {presses} inputs, exiting", flush=True)
                if args.linger > 0:
                    pygame.display.quit()  # the window goes; the process ends later
                    time.sleep(args.linger)
                sys.exit(7)
    screen.fill(colours[presses % len(colours)])
    pygame.draw.rect(screen, (255, 255, 255), (10 + 20 * (presses % 10), 100, 16, 16))
    pygame.display.flip()
    time.sleep(0.02)
