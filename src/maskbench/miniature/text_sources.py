"""Miniature FEVER (NLI-style) and PAWS-QQP files where `configs/paper.yaml` expects the user's.

`write_text_sources(root)` writes, under ``root``:

- ``data/fever/fever.train.jsonl`` and ``fever.dev.jsonl`` in the fields of Schuster et al.'s NLI-style files
  (docs/data.md, "FEVER"): ``id`` (the FEVER claim id, an integer, repeated once per evidence sentence of the
  claim), ``claim``, ``evidence``, ``gold_label``, and in train ``weight``; train has the three labels, dev only
  SUPPORTS and REFUTES, as the real dev file (docs/data.md);
- ``downloads/quora_duplicate_questions.tsv`` (Quora's layout: id, qid1, qid2, question1, question2,
  is_duplicate) and ``downloads/paws_qqp/train.tsv``, ``dev_and_test.tsv`` (PAWS's index layout: id, qid1,
  sentence1, qid2, sentence2, label, sentences as "/"-joined token indices, one "(qid, index):(qid, index)" item);
- ``data/paws_qqp/train.tsv`` and ``dev_and_test.tsv``, built from those by `maskbench.data.paws_qqp.build` (`python -m maskbench.tools.paws_qqp`).
  The questions are written already tokenized (words and "?" apart, by single spaces), where NLTK's
  word_tokenize and a split on spaces give the same tokens, so no NLTK is needed here.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

from maskbench.data.paws_qqp import build

FEVER_LABELS = ("SUPPORTS", "REFUTES", "NOT ENOUGH INFO")
_SUBJECTS = ("Roman Atwood", "Margaret of Valois", "Tylenol", "Nikolaj Coster-Waldau", "Adrienne Bailon",
             "The Bahamas", "Legion", "Fox Broadcasting Company")
_WORDS = ("best", "way", "learn", "cook", "rice", "travel", "cheap", "India", "code", "fast", "sleep", "well",
          "write", "poems", "save", "money")


def _fever_records(n: int, rng: random.Random, first_id: int, labels, weight: bool) -> list[dict]:
    """n records over about 2n/3 claims: every other claim has two evidence sentences (its id twice)."""
    records = []
    claim_id = first_id
    while len(records) < n:
        subject = rng.choice(_SUBJECTS)
        label = labels[len(records) % len(labels)]
        claim = f"{subject} is {rng.choice(('famous', 'a company', 'a person', 'in Europe'))} ."
        for k in range(1 if claim_id % 2 else 2):
            if len(records) == n:
                break
            record = {"id": claim_id, "claim": claim,
                      "evidence": f"{subject} was mentioned in sentence {k} of its page .", "gold_label": label}
            if weight:
                record["weight"] = 1.0
            records.append(record)
        claim_id += rng.randint(1, 97)
    return records


def _write_jsonl(path: Path, records) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def _write_tsv(path: Path, rows) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join("\t".join(map(str, row)) + "\n" for row in rows), encoding="utf-8")
    return path


def _paws_rows(questions: dict[int, list[str]], n: int, first_id: int, rng: random.Random) -> list[tuple]:
    """n PAWS index rows over the questions: sentence1 the question itself, sentence2 two of its tokens swapped
    (label 0) or the question again (label 1); the first row glues two tokens of another question into one."""
    qids = sorted(questions)
    rows = []
    for i in range(n):
        qid = qids[i % len(qids)]
        order = list(range(len(questions[qid])))
        label = i % 2
        swapped = list(order)
        if label == 0:
            a, b = sorted(rng.sample(range(len(order) - 1), 2))  # keep the final "?" in place
            swapped[a], swapped[b] = swapped[b], swapped[a]
        items = [str(k) for k in swapped]
        if i == 0:
            other = qids[1]
            items[0] = f"({other}, 0):({other}, 1)"
        rows.append((first_id + i, qid, "/".join(str(k) for k in order), qid, "/".join(items), label))
    return rows


def write_text_sources(root: Path, n: int = 24, seed: int = 0) -> dict:
    """Write the miniature inputs under ``root`` (see the module's docstring); return name -> path: the
    `configs/paper.yaml` dataset names (fever_train, fever_dev, paws_qqp_train, paws) and the downloads (qqp,
    paws_train_ids, paws_dev_and_test_ids)."""
    if n < 6:
        raise ValueError(f"n={n}: the miniature needs at least 6 examples per file")
    root = Path(root)
    rng = random.Random(seed)
    paths = {
        "fever_train": _write_jsonl(root / "data/fever/fever.train.jsonl",
                                    _fever_records(n, rng, 75397, FEVER_LABELS, weight=True)),
        "fever_dev": _write_jsonl(root / "data/fever/fever.dev.jsonl",
                                  _fever_records(max(n // 2, 6), rng, 91198, FEVER_LABELS[:2], weight=False)),
    }
    questions: dict[int, list[str]] = {}
    qqp_rows = [("id", "qid1", "qid2", "question1", "question2", "is_duplicate")]
    for pair in range(max(n // 2, 3)):
        qid1, qid2 = 2 * pair + 1, 2 * pair + 2
        for qid in (qid1, qid2):
            words = rng.sample(_WORDS, 3)
            questions[qid] = ["What", "is", "the", *words, "?"]
        qqp_rows.append((pair, qid1, qid2, " ".join(questions[qid1]), " ".join(questions[qid2]), pair % 2))
    downloads = root / "downloads"
    paths["qqp"] = _write_tsv(downloads / "quora_duplicate_questions.tsv", qqp_rows)
    header = ("id", "qid1", "sentence1", "qid2", "sentence2", "label")
    for name, ids, size, first in (("paws_qqp_train", "train", n, 1), ("paws", "dev_and_test", max(n // 2, 6), 5001)):
        index_file = _write_tsv(downloads / f"paws_qqp/{ids}.tsv", [header, *_paws_rows(questions, size, first, rng)])
        paths[f"paws_{ids}_ids"] = index_file
        out = root / f"data/paws_qqp/{ids}.tsv"
        build(paths["qqp"], index_file, out, tokenize=str.split)
        paths[name] = out
    return paths
