"""A headless Chromium for checking pages (tests, the docs screenshot): offline, throwaway profile.

Needs Debian's ``chromium`` and ``chromium-driver`` packages and ``selenium`` (the
``dev`` extra). The browser starts with every background service off (no
network: without these flags it stalls on a machine with no network) and a fresh
profile folder, removed when the driver quits.

Example::

    from flexmg.view.browser import browser_missing, headless_chromium
    if browser_missing() is None:
        with headless_chromium() as driver:
            driver.get("file:///tmp/page.html")
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from collections.abc import Iterator
from typing import Any

__all__ = ["CHROMIUM_FLAGS", "browser_missing", "headless_chromium"]

CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)
BROWSERS = ("chromium", "chromium-browser", "google-chrome")


def _binaries() -> tuple[str | None, str | None]:
    browser = next((p for p in map(shutil.which, BROWSERS) if p), None)
    return browser, shutil.which("chromedriver")


def browser_missing() -> str | None:
    """Why no headless browser can run here (``None`` when one can).

    >>> browser_missing() is None or "install" in browser_missing()
    True
    """
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (pip install -e '.[dev]')"
    browser, driver = _binaries()
    if browser is None or driver is None:
        return "chromium or chromedriver is not on PATH (apt-get install chromium chromium-driver)"
    return None


@contextlib.contextmanager
def headless_chromium(width: int = 1280, height: int = 900) -> Iterator[Any]:
    """A selenium Chrome driver on headless Chromium, quit (and its profile removed) on exit."""
    why = browser_missing()
    if why is not None:
        raise RuntimeError(f"no headless browser: {why}")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    browser, driver_path = _binaries()
    profile = tempfile.mkdtemp(prefix="flexmg-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = str(browser)
    for flag in (*CHROMIUM_FLAGS, f"--user-data-dir={profile}", f"--window-size={width},{height}"):
        options.add_argument(flag)
    driver = None
    try:
        driver = webdriver.Chrome(service=Service(executable_path=driver_path), options=options)
        driver.set_page_load_timeout(60)
        yield driver
    finally:
        if driver is not None:
            driver.quit()
        shutil.rmtree(profile, ignore_errors=True)
