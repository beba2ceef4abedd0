"""Fixtures for the view tests: a memory made by real plays, a served app, a headless browser.

The browser is Debian's Chromium driven by Selenium through chromedriver; the
browser tests skip (with the reason) when either is missing. Chromium starts
with every network feature off, since the view is served from this machine.
"""

from __future__ import annotations

import shutil
import tempfile
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from kgagent.config import Config

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")


def play_config(steps: int, record: Path | None = None) -> Config:
    c = Config()
    c.perception.encoder = "pixel"
    c.perception.segmenter = "opencv"
    c.brain.kind = "offline"
    c.run.env = "cardgame"
    c.run.seed = 1
    c.run.steps = steps
    if record is not None:
        c.run.record = str(record)
    return c


def play(memory: Path, steps: int, record: Path | None = None):
    from kgagent.agent.runner import Runner

    cfg = play_config(steps, record)
    return Runner(cfg, memory_path=memory, progress=False, log=lambda m: None).run(steps)


@pytest.fixture(scope="session")
def played(tmp_path_factory) -> Path:
    """A memory of two rounds of the card game (the second recorded with --record)."""
    root = tmp_path_factory.mktemp("view")
    mem = root / "mem"
    play(mem, 30)
    play(mem, 30, record=root / "rec")
    return mem


@dataclass
class Served:
    url: str
    app: object
    stop: object


def serve(memory: Path, refresh_s: float = 0.2, token: str | None = None) -> Served:
    """The view of ``memory`` on a free loopback port, in a thread of this process."""
    from kgagent.view.app import create_app, listen

    app = create_app(memory, refresh_s=refresh_s, token=token)
    srv = listen(app, "127.0.0.1", 0)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()

    def stop() -> None:
        srv.shutdown()
        t.join(5)

    return Served(f"http://127.0.0.1:{srv.port}", app, stop)


@pytest.fixture(scope="session")
def browser() -> Iterator[object]:
    if not CHROMIUM or not CHROMEDRIVER:
        pytest.skip(
            "needs Debian's chromium and chromium-driver (apt-get install chromium chromium-driver)"
        )
    pytest.importorskip("selenium.webdriver")
    driver, profile = make_browser()
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def make_browser() -> tuple[object, str]:
    """Headless Chromium with a fresh profile and no network features: (driver, profile dir)."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="kgagent-view-chromium-")
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for arg in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-default-apps",
        "--disable-extensions",
        "--no-first-run",
        "--hide-scrollbars",
        "--window-size=1600,1000",
        "--force-device-scale-factor=1",
        f"--user-data-dir={profile}",
    ):
        opts.add_argument(arg)
    return webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts), profile
