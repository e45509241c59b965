"""`snakemake --report` of every config: the workflow's description (rules/captions/workflow.rst: each track's data
banner, what each paper's rows mean) renders for every config with the banners maskbench.report.captions gives, and
the smoke run's report, opened in headless Chromium, shows a page and lists every table and figure the run wrote."""

from __future__ import annotations

import html
import re
import shutil
import subprocess
from pathlib import Path

import jinja2
import pandas as pd
import pytest
import yaml
from docutils.core import publish_parts
from PIL import Image
from snakemake.utils import update_config
from test_workflow import REPO

from maskbench.report.captions import nli_data_caption
from maskbench.tracks.gender.report.readme_sections import data_caption as gender_caption
from maskbench.tracks.vision.report.readme_sections import data_caption as vision_caption

DESCRIPTION = REPO / "rules" / "captions" / "workflow.rst"
CONFIGS = ["config.yaml", *sorted(str(p.relative_to(REPO)) for p in (REPO / "configs").glob("*.yaml"))]
BANNER = re.compile(r"\*\*On [^*]+\.\*\*")


def described(config: dict) -> str:
    """The description's rst for a config, rendered as `snakemake --report` renders it (its Jinja settings)."""
    env = jinja2.Environment(trim_blocks=True, lstrip_blocks=True, undefined=jinja2.StrictUndefined)

    class Snakemake:
        pass

    Snakemake.config = config
    return env.from_string(DESCRIPTION.read_text()).render(snakemake=Snakemake)


@pytest.mark.parametrize("configfile", CONFIGS)
def test_the_workflow_description_gives_each_tracks_banner_as_its_captions_do(configfile):
    config = yaml.safe_load((REPO / configfile).read_text())
    if configfile.endswith("paper-miniature.yaml"):  # an overlay on the paper config
        base = yaml.safe_load((REPO / "configs/paper.yaml").read_text())
        update_config(base, config)
        config = base
    text = described(config)
    body = publish_parts(text, writer="html", settings_overrides={"report_level": 2})["html_body"]
    assert "system-message" not in body, body  # valid rst: no docutils warning
    lines = {line.split(" (the ")[0]: BANNER.search(line).group(0) for line in text.splitlines()
             if line.startswith("Paper")}
    expected = {}
    if config.get("datasets"):
        datasets = pd.DataFrame([{"dataset": name, "task": spec.get("task", ""), "source": spec["source"],
                                  "n_examples": 0} for name, spec in config["datasets"].items()])
        expected["Papers A and C"] = BANNER.search(nli_data_caption(datasets, config, configfile)).group(0)
        assert all(f"- ``{name}``" in text for name in config["datasets"])
    if config.get("gender"):
        expected["Paper B"] = BANNER.search(gender_caption(config, configfile)).group(0)
    if config.get("vision"):
        expected["Paper D"] = BANNER.search(vision_caption(config, configfile)).group(0)
    assert lines == expected
    assert f"under ``{config['results']}/``" in text and ("**The matrix**" in text) == ("matrix" in config)


def chromium() -> str | None:
    return shutil.which("chromium-headless-shell") or shutil.which("chromium")


# run in the report's page once it has loaded: open every category's list of results in turn, as a reader clicks
# through them, and write what the page shows into a <pre> that --dump-dom returns
LIST_EVERY_CATEGORY = """<script>
window.addEventListener("load", () => setTimeout(async () => {
  const pause = () => new Promise(done => setTimeout(done, 200));
  const shown = [];
  for (const category of Object.keys(categories)) {
    for (const subcategory of Object.keys(categories[category])) {
      app.setView({navbarMode: "menu"});
      await pause();
      app.setView({navbarMode: "subcategory", category: category, subcategory: subcategory});
      await pause();
      shown.push("== " + category + "\\n" + document.querySelector("nav").innerText);
    }
  }
  const out = document.createElement("pre");
  out.id = "shown";
  out.textContent = shown.join("\\n");
  document.body.appendChild(out);
}, 500));
</script>"""


def browse(browser: str, page: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([browser, "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--window-size=1400,1000",
                           "--virtual-time-budget=30000", *args, page.as_uri()], capture_output=True, text=True,
                          timeout=180)


@pytest.mark.slow
def test_the_smoke_report_shows_a_page_listing_every_table_and_figure_the_run_wrote(smoke_run, smoke_report,
                                                                                      tmp_path):
    browser = chromium()
    if browser is None:
        pytest.skip("no headless Chromium (Debian's chromium-headless-shell; .ci/run installs it as root)")
    shot = tmp_path / "report.png"
    result = browse(browser, smoke_report, f"--screenshot={shot}")
    assert result.returncode == 0 and shot.exists(), result.stderr[-2000:]
    pixels = Image.open(shot).convert("RGB")
    colours = pixels.getcolors(maxcolors=1 << 20)
    white = sum(n for n, rgb in colours if min(rgb) > 245)
    # a drawn page, not a blank one: many colours, and not all of it white (a drawn report is 65-85 % white as its
    # panels and the workflow's graph happen to be laid out when the shot is taken; 0.8 failed once in CI at 84.7 %)
    assert len(colours) > 100 and white < 0.95 * pixels.width * pixels.height, (len(colours), white)

    page = tmp_path / "report_listed.html"
    text = smoke_report.read_text()
    page.write_text(text[:text.rindex("</body>")] + LIST_EVERY_CATEGORY + text[text.rindex("</body>"):])
    dumped = browse(browser, page, "--dump-dom")
    assert dumped.returncode == 0, dumped.stderr[-2000:]
    shown = html.unescape(re.search(r'<pre id="shown">(.*?)</pre>', dumped.stdout, re.S).group(1))
    results = yaml.safe_load((REPO / "configs/smoke.yaml").read_text())["results"]
    listed = set(re.findall(rf"(?m)^({re.escape(results)}/\S+)", shown))
    wrote = {str(p.relative_to(smoke_run)) for pattern in ("tables/**/*.csv", "figures/**/*.png", "figures/**/*.csv")
             for p in (smoke_run / results).glob(pattern)}
    assert len(wrote) > 40 and f"{results}/tables/matrix.csv" in wrote and f"{results}/figures/matrix.png" in wrote
    # every table and figure is listed (and a few Markdown renderings beside them); everything listed exists
    assert not wrote - listed, sorted(wrote - listed)
    assert all((smoke_run / path).is_file() for path in listed), sorted(listed - wrote)
    assert "== Matrix" in shown and "On real and synthetic data." in dumped.stdout
