"""docs/your-model.md, run as written: its command block on a fresh clone's layout (`git clone` of this repository),
with a checkpoint saved by plain transformers (a tiny BERT from `BertConfig`: nothing downloads) and the shipped
example file as the user's data. Only the paths the page tells the user to replace (`/path/to/your/...`) are
substituted; step 1 is the environment this test runs in, and is checked to be the README's set-up, line for line.
It also holds what tests/test_own_config.py's run of the template checked: the model taken in bit for bit, its row
its own accuracy, the bias read row for row, the config's own table, the export equal to the masked evaluation."""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import background
import numpy as np
import pandas as pd
import pytest
from test_workflow import REPO

LABELS = ["supported", "refuted", "not_enough_info"]


def read_jsonl(path: Path) -> pd.DataFrame:
    """The rows as json reads them (pandas' own JSON reader rounds some floats in their last bit)."""
    return pd.DataFrame([json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()])


def code_block(text: str, after: str) -> list[str]:
    """The first ```bash block after the heading ``after``: its commands, continuation lines joined, comments and
    comment-only lines left out."""
    block = re.search(r"```bash\n(.*?)```", text[text.index(after):], re.S).group(1)
    joined = re.sub(r"\\\n\s*", "", block)
    return [line.split("  #")[0].rstrip() for line in joined.splitlines() if line.strip() and not line.startswith("#")]


def readme_setup() -> list[str]:
    return code_block((REPO / "README.md").read_text(encoding="utf-8"), "## Set up")


def test_the_pages_commands_are_read_as_written():
    commands = code_block((REPO / "docs/your-model.md").read_text(encoding="utf-8"), "## From a fresh clone")
    assert commands[:2] == readme_setup(), "step 1 is not the README's set-up"
    assert any(c.startswith("mkdir -p models") for c in commands) and commands[-1].startswith("maskbench export ")
    placeholders = {w for c in commands for w in c.split() if w.startswith("/path/to/your/")}
    assert placeholders == {"/path/to/your/checkpoint", "/path/to/your/train.jsonl"}


def test_the_pages_checkpoint_recipe_writes_a_classifier_the_plan_takes(tmp_path):
    """The page's "no fine-tuned classifier at hand" block, run as written: MiniLM-L6 under a head for the labels,
    saved where step 2 puts a checkpoint; the planning check reads its labels, and it loads for the template's task."""
    from transformers import AutoModelForSequenceClassification

    from maskbench.tracks.nlu.given_model import check_checkpoint_labels

    page = (REPO / "docs/your-model.md").read_text(encoding="utf-8")
    recipe = re.search(r"```python\n(.*?)```", page[page.index("No fine-tuned classifier at hand"):], re.S).group(1)
    subprocess.run([sys.executable, "-c", recipe], cwd=tmp_path, check=True, capture_output=True)
    folder = tmp_path / "models/your-model"
    check_checkpoint_labels(folder, LABELS, "the template's labels")
    assert json.loads((folder / "config.json").read_text())["label2id"] == {n: i for i, n in enumerate(LABELS)}
    model = AutoModelForSequenceClassification.from_pretrained(str(folder))
    assert model.config.num_hidden_layers == 6 and model.classifier.out_features == 3


def tiny_checkpoint(folder: Path, texts: list[str]) -> None:
    """A sequence classifier as a user's training script would save it, untrained: BertConfig, save_pretrained."""
    import torch
    from transformers import BertConfig, BertForSequenceClassification, BertTokenizerFast

    folder.mkdir(parents=True)
    words = sorted({w for text in texts for w in re.findall(r"\w+|[^\w\s]", text.lower())})
    (folder / "vocab.txt").write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *words]) + "\n")
    tokenizer = BertTokenizerFast.from_pretrained(str(folder), do_lower_case=True)
    torch.manual_seed(0)
    config = BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                        intermediate_size=32, max_position_embeddings=160, num_labels=len(LABELS),
                        id2label=dict(enumerate(LABELS)), label2id={n: i for i, n in enumerate(LABELS)})
    BertForSequenceClassification(config).save_pretrained(str(folder))
    tokenizer.save_pretrained(str(folder))


def run_the_page(factory) -> Path:
    """The page's commands run as written in a fresh clone, with the user's files outside it (in the background
    lane, tests/conftest.py); the folder holding both."""
    tmp_path = factory.mktemp("your-model")
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(REPO), str(clone)], check=True)
    commands = code_block((clone / "docs/your-model.md").read_text(encoding="utf-8"), "## From a fresh clone")
    assert commands[:2] == readme_setup()
    examples = clone / "data/your-model"
    train = read_jsonl(examples / "train.jsonl")
    mine = tmp_path / "mine"  # the user's files, outside the clone
    # in a process of its own: its seed must not move the random generators of the tests running meanwhile
    subprocess.run([sys.executable, "-c", "import json, sys; from pathlib import Path; sys.path.insert(0, sys.argv[1]); "
                    "from test_your_model_page import tiny_checkpoint; tiny_checkpoint(Path(sys.argv[2]), "
                    "json.loads(sys.argv[3]))", str(Path(__file__).parent), str(mine / "checkpoint"),
                    json.dumps([*train.claim, *train.evidence])], check=True)
    (mine / "train.jsonl").write_bytes((examples / "train.jsonl").read_bytes())
    paths = {"/path/to/your/checkpoint": str(mine / "checkpoint"), "/path/to/your/train.jsonl": str(mine / "train.jsonl")}
    env = {**os.environ, "PATH": os.pathsep.join([os.path.dirname(sys.executable), os.environ.get("PATH", "")]),
           "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    started = time.perf_counter()
    for command in commands[2:]:
        for placeholder, path in paths.items():
            command = command.replace(placeholder, path)
        done = subprocess.run(["bash", "-c", command], cwd=clone, env=env, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, f"`{command}` failed:\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
    print(f"docs/your-model.md steps 2-4: {time.perf_counter() - started:.1f} s")
    return tmp_path


@pytest.fixture
def your_model_run(tmp_path_factory):
    return background.result("your_model_run", lambda: run_the_page(tmp_path_factory))


@pytest.mark.slow
def test_the_page_runs_verbatim_on_a_fresh_clone(your_model_run):
    import torch
    from safetensors.torch import load_file
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    from maskbench.masking.codec import read_mask_header
    from maskbench.tracks.nlu.bias.probs import read_probs

    clone, mine = your_model_run / "clone", your_model_run / "mine"
    examples = clone / "data/your-model"
    train = read_jsonl(examples / "train.jsonl")
    out = clone / "results/your-model"
    # taken in bit for bit: the model every search starts from is the user's, never trained again
    given = load_file(str(out / "nlu/claims/your-model/models/method~given/model.safetensors"))
    saved = AutoModelForSequenceClassification.from_pretrained(str(mine / "checkpoint")).eval()
    assert set(given) <= set(saved.state_dict()) and all(torch.equal(given[k], saved.state_dict()[k]) for k in given)
    # its row is its own accuracy on the dev file, computed here with plain transformers, once (one model: one seed)
    dev = read_jsonl(examples / "dev.jsonl")
    tokenizer = AutoTokenizer.from_pretrained(str(mine / "checkpoint"))
    batch = tokenizer(list(dev.evidence), list(dev.claim), truncation=True, max_length=128, padding=True,
                      return_tensors="pt")
    with torch.no_grad():
        predicted = saved(**batch).logits.argmax(1).numpy()
    long = pd.read_csv(out / "tables/table1.csv")
    base = long[(long.row == "baseline") & (long.column == "dev")].iloc[0]
    accuracy = 100 * float(np.mean(predicted == np.array([LABELS.index(y) for y in dev.label])))
    assert base["mean"] == pytest.approx(accuracy, abs=1e-9) and base["n_seeds"] == 1
    # the bias the searches read is the user's columns, row for row
    columns = [f"bias_{label}" for label in LABELS]
    probs = read_probs(out / "nlu/claims/your-model/bias/yours/seed~0/train_probs.parquet", train.id.astype(str),
                       LABELS, "claims")
    assert np.array_equal(probs, train[columns].to_numpy(dtype=np.float64))
    mask = out / "nlu/claims/your-model/masks/method~movement_sigmoid/loss~poe/bias~yours/seed~1.mask"
    assert read_mask_header(mask)["meta"]["loss"] == "poe"
    # the table: the config's column and row labels as written, no published figure; only the jobs its tables need
    assert long["paper"].isna().all() and set(long["column"]) == {"dev", "challenge"}
    md = (out / "tables/table1.md").read_text(encoding="utf-8")
    # a row whose run did not act on the tiny model is labelled so (maskbench.report.engagement)
    assert re.search(r"^\| Your model( \(not engaged[^)]*\))? \|", md, re.M)
    assert re.search(r"^\| Mask search, PoE( \(not engaged[^)]*\))? \|", md, re.M)
    # no paper's figure in brackets beside a cell (an engagement label on a row is not one)
    table = re.sub(r" \(not engaged[^)]*\)", "", md.split("| Method |")[1])
    assert "| Method | Dev acc. | Challenge acc. |" in md and "(" not in table
    assert not (out / "benchmarks/masks.json").exists() and not (out / "logs/mask_benchmark").exists()
    # the export loads in plain transformers and predicts what the masked evaluation predicted
    exported = clone / "exported/your-model-debiased"
    model = AutoModelForSequenceClassification.from_pretrained(str(exported)).eval()
    with torch.no_grad():
        probs = torch.softmax(model(**batch).logits, dim=-1).numpy()
    masked = pd.read_parquet(out / "nlu/claims/your-model/eval/md_poe/seed~1/claims_dev.predictions.parquet")
    masked = masked.set_index("id").loc[dev.id.astype(str), [f"prob_{n}" for n in LABELS]].to_numpy()
    assert np.abs(probs - masked).max() < 1e-5
    # the card names the inputs the user gave, not the workflow's results paths
    card = (exported / "README.md").read_text(encoding="utf-8")
    base = re.search(r"^\| base model \| (.*) \|$", card, re.M).group(1)
    data = re.search(r"^\| data \| (.*) \|$", card, re.M).group(1)
    assert base == "models/your-model" and "data/your-model/train.jsonl" in data and "results/" not in base + data
    assert hashlib.sha256(mask.read_bytes()).hexdigest() in card and "poe" in card
