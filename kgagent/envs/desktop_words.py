"""What the desktop env tells the user in words: its target, and notes at a run's end.

Why a module of its own: the lines are read by people (the run's first line, its
summary, the notes after it) and their wording is tested as such, apart from the
environment's X machinery (:mod:`kgagent.envs.desktop`).
"""

from __future__ import annotations

from kgagent.envs.points import Box, visible_part


def target_line(
    what: str, box: Box, screen: tuple[int, int], whole_screen: bool, region: bool = False
) -> str:
    """``what`` the agent acts on (its kind and name) with its ``box`` on the ``screen``,
    and what the user must know of it: which part of a target reaching past the screen's
    edge is used, and, for the ``whole_screen`` or a ``region``, that every window in it
    is captured and read and gets the agent's input, whatever program it belongs to."""
    x, y, w, h = box
    line = f"{what} {w}x{h}+{x}+{y}"
    sw, sh = screen
    on = visible_part(box, screen)
    if on is None:
        return f"{line}; it lies wholly off the {sw}x{sh} screen: nothing of it can be seen"
    if on != box:
        vx, vy, vw, vh = on
        return (
            f"{line}; it reaches past the edge of the {sw}x{sh} screen: the agent sees and "
            f"acts on its {vw}x{vh}+{vx}+{vy} part on the screen"
        )
    if region:
        return (
            f"{line}; every window in the region, of any program, is captured and read and "
            "gets the agent's input, and what it reads there (crops, text) is kept in its "
            "memory: --window or --launch narrows it to one program"
        )
    if whole_screen:
        return (
            f"{line}; every window on it is captured and read, and what the agent reads there "
            "(crops, text) is kept in its memory: --window, --launch or --region narrows it"
        )
    return line


def end_notes(put_backs: int, gone: str | None, face: Box | None) -> list[str]:
    """The notes of the target's own doings: moved partly off the screen by an input and
    put back ``put_backs`` times; the window ``gone`` (its name) closed while the program
    reacted to an input; a full screen of its own program (``face``) lay over it."""
    out = []
    if put_backs:
        out.append(
            "desktop: an input moved the target partly off the screen "
            + ("once" if put_backs == 1 else f"{put_backs} times")
            + " (a drag on a title bar the program draws itself, or the program's own "
            "move); it was put back where it was"
        )
    if gone is not None:
        out.append(
            f"desktop: the target window {gone} closed while the program reacted to "
            "the agent's input (that input closed it, or something outside the agent did "
            "meanwhile): the run ended there"
        )
    if face is not None:
        out.append(
            f"desktop: a {face[2]}x{face[3]} window of the target's own program lay over it "
            "(a full screen); while it did, the agent saw and acted on that window"
        )
    return out
