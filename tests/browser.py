"""Headless Chromium for tests that look at rendered pages: Debian's `chromium` and
`chromium-driver` packages (tools/setup.sh installs them), driven by selenium. Nothing
is downloaded: the driver is named explicitly, so selenium never fetches one."""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ARTIFACTS = Path(__file__).resolve().parent.parent / "tmp" / "artifacts"


def _binaries() -> tuple[str, str] | None:
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver")
    return (browser, driver) if browser and driver else None


def chromium() -> Iterator[Any]:
    """One headless browser; skipped (failed under REGISTRY_REQUIRE_BROWSER) without one."""
    found = _binaries()
    if found is None:
        if os.environ.get("REGISTRY_REQUIRE_BROWSER"):
            pytest.fail("chromium and chromedriver are not installed (tools/setup.sh)")
        pytest.skip("chromium and chromedriver are not installed")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = found[0]
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--window-size=1300,1000", "--allow-file-access-from-files"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(found[1]), options=options)
    try:
        yield driver
    finally:
        driver.quit()


def open_page(driver: Any, path: Path, *, timeout: float = 20) -> list[dict[str, Any]]:
    """Load a page from the file system, wait until its charts are drawn (or it has none);
    returns the console messages it logged."""
    driver.get(path.resolve().as_uri())
    deadline = time.monotonic() + timeout
    state = None
    while time.monotonic() < deadline:
        state = driver.execute_script("return document.body && document.body.dataset.charts")
        if state in ("drawn", "none", "error"):
            break
        time.sleep(0.05)
    logs: list[dict[str, Any]] = driver.get_log("browser")
    assert state in ("drawn", "none"), f"{path.name}: charts {state}; console: {logs}"
    return logs


def errors(logs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e for e in logs if e["level"] in ("SEVERE", "ERROR") or "WARN" in e["level"]]


def screenshot(driver: Any, name: str) -> Path:
    """A full-page screenshot kept as a test artifact under tmp/artifacts/."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    height = driver.execute_script("return document.documentElement.scrollHeight")
    driver.set_window_size(1300, min(int(height) + 40, 6000))
    path = ARTIFACTS / f"{name}.png"
    driver.save_screenshot(str(path))
    driver.set_window_size(1300, 1000)
    return path


def count(driver: Any, css: str) -> int:
    return int(driver.execute_script(f"return document.querySelectorAll({css!r}).length"))
