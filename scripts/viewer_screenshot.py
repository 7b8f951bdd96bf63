"""Make docs/results/viewer.png: scripted teams' episodes, viewed with `flexmg view` in headless Chromium.

The episodes are real: math-2agent played by the scripted oracle, random and empty
agents, and relay-2agent by a reader that passes the problem on (with a solver that
reads the answer from the env, as the oracle does) and by a silent reader. They are
saved with flexmg.transcripts, the page is written by `flexmg view`, and the
screenshot shows the oracle and the random team side by side on the same prompts.

Needs Debian's chromium and chromium-driver and selenium (the dev extra):

    .venv/bin/python scripts/viewer_screenshot.py [--out docs/results/viewer.png] [--keep DIR]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import flexmg
from flexmg.baselines.scripted import make_scripted
from flexmg.cli import view as view_cli
from flexmg.episodes import rollout
from flexmg.io import atomic_write_bytes
from flexmg.transcripts import episode_record, write_transcripts
from flexmg.view.browser import browser_missing, headless_chromium

EPISODES = 16
SEED = 1000


def episodes() -> list[dict]:
    """The records of every team's episodes (see the module docs)."""
    records = []
    for team in ("oracle", "random", "empty"):
        vec = flexmg.make_vec("math-2agent", num_envs=8, split="eval")
        try:
            agent = make_scripted(team, vec, seed=0, label="math-2agent")
            result = rollout(vec, agent, episodes=EPISODES, seed=SEED)
        finally:
            vec.close()
        source = {"entry": f"scripted:{team}", "env": "math-2agent"}
        records += [episode_record(ep, "math-2agent", source=source) for ep in result.episodes]
    env = flexmg.make("relay-2agent", split="eval")
    teams = {
        "relay: reader passes it on": {
            "reader": lambda o: o["task"],
            "solver": lambda o: f"\\boxed{{{env.task.answer}}}",
        },
        "relay: silent reader": {"reader": lambda o: "", "solver": lambda o: "\\boxed{0}"},
    }
    for name, team in teams.items():
        result = rollout(env, team, episodes=EPISODES, seed=SEED)
        source = {"entry": name, "env": "relay-2agent"}
        records += [episode_record(ep, "relay-2agent", source=source) for ep in result.episodes]
    return records


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="docs/results/viewer.png")
    parser.add_argument("--keep", help="folder to keep episodes.jsonl and episodes.html in")
    args = parser.parse_args(argv)
    why = browser_missing()
    if why is not None:
        print(f"viewer_screenshot: {why}", file=sys.stderr)
        return 1
    folder = Path(args.keep or tempfile.mkdtemp(prefix="flexmg-viewer-"))
    folder.mkdir(parents=True, exist_ok=True)
    data = write_transcripts(folder / "episodes.jsonl", episodes())
    page = folder / "episodes.html"
    view_parser = argparse.ArgumentParser(prog="flexmg view")
    view_cli.add_arguments(view_parser)
    title = "flexmg view: scripted teams"
    if view_cli.run(view_parser.parse_args([str(data), "--out", str(page), "--title", title])):
        return 1
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    with headless_chromium(1280, 1100) as driver:
        driver.get(page.resolve().as_uri())
        driver.find_element(By.ID, "tab-compare").click()
        Select(driver.find_element(By.ID, "c-which")).select_by_index(0)  # oracle vs random
        pair = driver.find_elements(By.CSS_SELECTOR, ".pair .ep-head")[1]
        pair.click()
        driver.execute_script("window.scrollTo(0, arguments[0].offsetTop - 300)", pair)
        atomic_write_bytes(args.out, driver.get_screenshot_as_png())
    print(f"wrote {args.out} (episodes in {folder})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
