"""docs/your-model.md, run as written: its command block on a fresh clone's layout (`git clone` of this repository),
with a checkpoint saved by plain transformers (a tiny BERT from `BertConfig`: nothing downloads) and the shipped
example file as the user's data. Only the paths the page tells the user to replace (`/path/to/your/...`) are
substituted; step 1 is the environment this test runs in, and is checked to be the README's set-up, line for line."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from test_workflow import REPO

LABELS = ["supported", "refuted", "not_enough_info"]


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


@pytest.mark.slow
def test_the_page_runs_verbatim_on_a_fresh_clone(tmp_path):
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(REPO), str(clone)], check=True)
    commands = code_block((clone / "docs/your-model.md").read_text(encoding="utf-8"), "## From a fresh clone")
    assert commands[:2] == readme_setup()
    examples = clone / "data/your-model"
    train = pd.read_json(examples / "train.jsonl", lines=True)
    mine = tmp_path / "mine"  # the user's files, outside the clone
    tiny_checkpoint(mine / "checkpoint", [*train.claim, *train.evidence])
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

    out = clone / "results/your-model"
    # the table: the config's column labels as written, no published figure; only the jobs its tables need
    md = (out / "tables/table1.md").read_text(encoding="utf-8")
    assert "| Method | Dev acc. | Challenge acc. |" in md and "(" not in md.split("| Method |")[1]
    assert not (out / "benchmarks/masks.json").exists() and not (out / "logs/mask_benchmark").exists()
    # the export loads in plain transformers and predicts what the masked evaluation predicted
    exported = clone / "exported/your-model-debiased"
    model = AutoModelForSequenceClassification.from_pretrained(str(exported)).eval()
    tokenizer = AutoTokenizer.from_pretrained(str(exported))
    dev = pd.read_json(examples / "dev.jsonl", lines=True)
    batch = tokenizer(list(dev.evidence), list(dev.claim), truncation=True, max_length=128, padding=True,
                      return_tensors="pt")
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
    assert json.loads((exported / "maskbench_export.json").read_text())["mask"].startswith("results/your-model/") \
        if (exported / "maskbench_export.json").exists() else True
