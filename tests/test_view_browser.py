"""flexmg view end to end: the page opened in a real headless Chromium, checked as a user sees it.

Needs Debian's ``chromium`` and ``chromium-driver`` and ``selenium`` (the dev extra);
without them the tests skip, and with ``FLEXMG_REQUIRE_BROWSER=1`` (CI) they fail.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from flexmg.cli import main as flexmg_main
from flexmg.transcripts import write_transcripts
from flexmg.view.browser import browser_missing, headless_chromium
from view_data import INJECTION, fake_training_run, hostile_records, relay_records, team_records


@pytest.fixture(scope="module")
def driver() -> Iterator[Any]:
    why = browser_missing()
    if why is not None:
        if os.environ.get("FLEXMG_REQUIRE_BROWSER") == "1":
            pytest.fail(f"FLEXMG_REQUIRE_BROWSER=1 but no headless browser: {why}")
        pytest.skip(f"no headless browser: {why}")
    with headless_chromium() as d:
        yield d


@pytest.fixture(scope="module")
def page(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("view")
    records = team_records("math-2agent", "oracle", 6) + team_records("math-2agent", "empty", 6)
    records += relay_records(3) + hostile_records()
    write_transcripts(folder / "episodes.jsonl", records)
    out = folder / "page.html"
    assert flexmg_main(["view", str(folder / "episodes.jsonl"), "--out", str(out)]) == 0
    return out


def by_css(d: Any, css: str) -> list[Any]:
    from selenium.webdriver.common.by import By

    return d.find_elements(By.CSS_SELECTOR, css)


def open_page(d: Any, path: Path) -> None:
    d.get(path.resolve().as_uri())
    assert d.execute_script("return document.body.dataset.ready") == "1"


def choose(d: Any, select_id: str, value: str) -> None:
    from selenium.webdriver.support.ui import Select

    Select(d.find_element("id", select_id)).select_by_value(value)


def expand(d: Any, card: Any) -> None:
    head = card.find_element("css selector", ".ep-head")
    d.execute_script("arguments[0].scrollIntoView({block: 'center'})", head)
    head.click()


def count(d: Any) -> str:
    return d.find_element("id", "count").text


def test_the_page_shows_every_episode_and_a_roles_messages(driver, page):
    open_page(driver, page)
    assert count(driver).startswith("16 of 16 episodes")
    cards = by_css(driver, ".episode")
    assert len(cards) == 16
    expand(driver, cards[0])
    turns = cards[0].find_elements("css selector", ".turn")
    assert [t.find_element("css selector", ".role").text for t in turns] == ["solver", "verifier"]
    verifier = turns[1]
    assert "The answer is \\boxed{" in verifier.find_element("css selector", ".action").text
    flags = [f.text for f in verifier.find_elements("css selector", ".flag")]
    assert flags == ["format \u2713", "correct \u2713", "own \u2713"]
    assert "gold answer" in cards[0].text


def test_the_outcome_filter_hides_failing_episodes(driver, page):
    open_page(driver, page)
    choose(driver, "f-outcome", "success")
    cards = by_css(driver, ".episode")
    assert count(driver).startswith("9 of 16 episodes")
    assert len(cards) == 9 and {c.get_attribute("data-success") for c in cards} == {"true"}
    choose(driver, "f-outcome", "fail")
    assert {c.get_attribute("data-success") for c in by_css(driver, ".episode")} == {"false"}


def test_the_role_and_search_filters(driver, page):
    open_page(driver, page)
    choose(driver, "f-role", "reader")
    assert count(driver).startswith("3 of 16 episodes")
    choose(driver, "f-role", "verifier")
    choose(driver, "f-check", "wrong")  # the verifier's answer graded wrong
    assert count(driver).startswith("7 of 16 episodes")  # the empty team and the hostile one
    expand(driver, by_css(driver, ".episode")[0])
    assert {t.get_attribute("data-role") for t in by_css(driver, ".turn")} == {"verifier"}
    open_page(driver, page)
    search = driver.find_element("id", "f-search")
    search.send_keys("flexmgPwned")
    driver.implicitly_wait(0)
    assert _wait(lambda: count(driver).startswith("0 of 16"))  # not in any prompt
    driver.find_element("id", "f-in-messages").click()
    assert _wait(lambda: count(driver).startswith("1 of 16"))


def test_injected_markup_is_shown_as_text_and_never_runs(driver, page):
    open_page(driver, page)
    choose(driver, "f-group", "3")  # the hostile team
    (card,) = by_css(driver, ".episode")
    expand(driver, card)
    action = card.find_element("css selector", ".turn .action pre")
    assert action.get_attribute("textContent") == INJECTION
    assert driver.execute_script("return window.__flexmgPwned") is None
    assert card.find_elements("css selector", "img, b, script") == []
    assert len(by_css(driver, "script")) == 2  # the data block and the page's own script
    huge = card.find_elements("css selector", ".turn")[1]
    assert re.search(r"show all \(20,\d{3} characters\)", huge.text)  # capped, behind an expander
    button = huge.find_element("css selector", "button.expand")
    driver.execute_script("arguments[0].click()", button)
    shown = huge.find_element("css selector", ".action pre").get_attribute("textContent")
    assert shown.startswith("\u00e9\u4e2d\U0001f600" * 6_666) and shown.endswith("episodes file]")


def test_start_and_end_of_training_side_by_side(driver, tmp_path):
    run = fake_training_run(tmp_path / "run", episodes=6, limit=4)
    assert flexmg_main(["view", str(run)]) == 0
    open_page(driver, run / "view.html")
    choose(driver, "f-group", "1")  # the episodes tab's source filter does not hide pairs
    assert count(driver).startswith("4 of 8 episodes")
    driver.find_element("id", "tab-compare").click()
    assert count(driver).startswith("4 of 4 pairs")
    pair = by_css(driver, ".pair")[0]
    expand(driver, pair)
    left = pair.find_element("css selector", ".side-a")
    right = pair.find_element("css selector", ".side-b")
    assert left.find_element("css selector", "h3").text == "eval @ update 0"
    assert right.find_element("css selector", "h3").text == "eval @ update 40"
    assert "fail" in left.find_element("css selector", ".outcome").text
    assert "success" in right.find_element("css selector", ".outcome").text
    task = left.find_element("css selector", ".task .prompt").text
    assert task == right.find_element("css selector", ".task .prompt").text
    choose(driver, "c-change", "regressed")
    assert count(driver).startswith("0 of 4 pairs")


def test_a_few_thousand_episodes_stay_usable(driver, tmp_path):
    base = team_records("math-2agent", "oracle", 8) + team_records("math-2agent", "empty", 8)
    records = [dict(r, seed=k) for k in range(200) for r in base]
    write_transcripts(tmp_path / "many.jsonl", records)
    assert flexmg_main(["view", str(tmp_path / "many.jsonl")]) == 0
    open_page(driver, tmp_path / "many.html")
    assert count(driver).startswith("3200 of 3200 episodes")
    assert len(by_css(driver, ".episode")) == 50  # one page at a time
    choose(driver, "f-outcome", "fail")
    assert count(driver).startswith("1600 of 3200 episodes")


def _wait(check, seconds: float = 5.0) -> bool:
    """Poll ``check`` until it holds; an element re-rendered while read counts as not yet."""
    import time

    from selenium.common.exceptions import StaleElementReferenceException

    def holds() -> bool:
        try:
            return bool(check())
        except StaleElementReferenceException:  # the page redrew it between find and read
            return False

    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if holds():
            return True
        time.sleep(0.05)
    return holds()


@pytest.mark.slow
def test_the_docs_screenshot_script_makes_its_figure(driver, tmp_path):
    import importlib.util

    path = Path(__file__).resolve().parents[1] / "scripts" / "viewer_screenshot.py"
    spec = importlib.util.spec_from_file_location("viewer_screenshot", path)
    assert spec is not None and spec.loader is not None
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    out = tmp_path / "viewer.png"
    assert script.main(["--out", str(out), "--keep", str(tmp_path / "pages")]) == 0
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    open_page(driver, tmp_path / "pages" / "episodes.html")
    assert count(driver).startswith("80 of 80 episodes")
