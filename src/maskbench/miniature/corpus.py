"""Paper B's corpus in miniature: a gzip'd text file of one sentence a line, as News Commentary v15's monolingual
file is, with sentences that hold a male word, a female word or a stereotype word of the project's word lists
(`data/gender/`), so that the corpus cut (`maskbench.tracks.gender.corpus`) finds every category."""

from __future__ import annotations

import gzip
import random
from pathlib import Path

from maskbench.miniature.hub_cache import NOUNS, VERBS

WORD_LISTS = ("male.txt", "female.txt", "stereotype.txt")


def write_corpus(path: Path, word_lists: Path, per_list: int = 24, seed: int = 0) -> Path:
    """``per_list`` sentences for each word list (its first words, in turn), then as many without a list word;
    written gzip'd (News Commentary's ``.en.gz``) with a fixed modification time, so the bytes are the seed's."""
    rng = random.Random(seed)
    lines = []
    for name in WORD_LISTS:
        words = [w.strip() for w in (word_lists / name).read_text(encoding="utf-8").splitlines() if w.strip()]
        for i in range(per_list):
            lines.append(f"the {rng.choice(NOUNS)} {rng.choice(VERBS)} the {words[i % len(words)]} in the city .")
    lines += [f"the {rng.choice(NOUNS)} {rng.choice(VERBS)} a book ." for _ in range(per_list)]
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as out:
        out.write(("\n".join(lines) + "\n").encode("utf-8"))
    return path
