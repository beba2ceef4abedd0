"""The desktop env's launching and safety settings (:class:`DesktopOptions`)."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from kgagent.errors import ConfigError


@dataclass
class DesktopOptions:
    """Launching and safety settings, with their defaults.

    :meth:`of` reads each from the :class:`DesktopConfig` when it has a field of that
    name, so the config section can grow them one by one.
    """

    launch: str | None = None  # command to start; the env binds to its first window
    display: str | None = None  # None: $DISPLAY (a private Xvfb if unset and launching); "new"
    screen_size: tuple[int, int] = (1280, 800)  # the private Xvfb's screen
    launch_timeout_s: float = 20.0  # wait this long for the launched program's first window
    stop_timeout_s: float = 5.0  # SIGTERM, then SIGKILL after this long
    start_failures: int = 3  # the program exiting at start-up this many times in a row: error
    program_log: str | None = None  # the launched program's stdout/stderr (appended)
    allow_closing_keys: bool = False  # send alt+f4, ctrl+q, ctrl+w, ctrl+alt+..., super

    def check(self, config: Any) -> None:
        """Refuse, in one line, settings that cannot go together (for library callers;
        the CLI refuses the options as the user typed them first)."""
        if self.start_failures < 1 or self.launch_timeout_s <= 0:
            raise ConfigError("need desktop start_failures >= 1 and launch_timeout_s > 0")
        if self.launch and config.region:
            raise ConfigError("desktop.region and desktop.launch exclude each other")
        if config.window and config.region:
            raise ConfigError(
                "desktop.window and desktop.region exclude each other: bind to a window or "
                "to a region of the screen, not both"
            )
        if self.display == "new" and not self.launch:
            raise ConfigError(
                "desktop.display=new starts an empty private X server, where only a program "
                "kgagent launches has a window: give desktop.launch (--launch COMMAND), or "
                "name the display the program is on (--display :N)"
            )

    @classmethod
    def of(cls, config: Any) -> DesktopOptions:
        return cls(
            **{f.name: getattr(config, f.name) for f in fields(cls) if hasattr(config, f.name)}
        )
