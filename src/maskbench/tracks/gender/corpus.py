"""The gender track's training corpus (paper B, after Kaneko & Bollegala 2021): sentences that hold the attribute or
stereotype words, cut into three sets, each with a held-out part.

A line is split into lower-cased words (letters, digits, English contractions and punctuation runs, the split paper
B's code borrows from GPT-2's encoder) and kept when its words meet exactly one category, as paper B's code decides
it:

* ``male``: at least one male attribute word and no female one;
* ``female``: at least one female attribute word and no male one;
* ``stereotype``: at least one stereotype target word and no attribute word of either gender.

A line with both genders is dropped; a line with one gender keeps only that gender's words as keywords even when a
stereotype word is in it too. Each set is then split at random into a training part and ``heldout`` sentences
(paper B: 1,000 of each), seeded.

Offline, ``generate_sentences`` writes a corpus from neutral templates over the real word lists (one keyword slot
per template, a few lines with words of both genders that the cut must drop): the sentences are plain, the words
are Kaneko & Bollegala's.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

CATEGORIES = ("male", "female", "stereotype")
# words of letters, runs of digits, English contractions, runs of other non-space characters
_WORDS = re.compile(r"'s|'t|'re|'ve|'m|'ll|'d|[^\W\d_]+|\d+|[^\s\w]+", re.UNICODE)


class CorpusError(ValueError):
    """A corpus that cannot be used, named by its file or setting."""


@dataclass(frozen=True)
class Keyed:
    """One kept line: its text, its category and the keywords that put it there (sorted)."""

    text: str
    category: str
    keywords: tuple[str, ...]


def line_words(line: str) -> set[str]:
    return {w.lower() for w in _WORDS.findall(line.strip())}


def categorize(line: str, male: set[str], female: set[str], stereotype: set[str]) -> Keyed | None:
    """The category of one line and its keywords, or None when it has none or both genders."""
    words = line_words(line)
    has_male, has_female = words & male, words & female
    if has_male and not has_female:
        return Keyed(line.strip(), "male", tuple(sorted(has_male)))
    if has_female and not has_male:
        return Keyed(line.strip(), "female", tuple(sorted(has_female)))
    has_stereotype = words & stereotype
    if has_stereotype and not has_male and not has_female:
        return Keyed(line.strip(), "stereotype", tuple(sorted(has_stereotype)))
    return None


def cut_corpus(lines: Iterable[str], male: Iterable[str], female: Iterable[str], stereotype: Iterable[str],
               heldout: int, seed: int, where: str = "corpus") -> dict[str, dict[str, list[Keyed]]]:
    """``{category: {"train": [...], "heldout": [...]}}``; every category must keep more than ``heldout`` lines.

    The same line twice counts once (a corpus repeats boilerplate lines). The held-out part is a seeded random
    choice per category, the rest stays in corpus order."""
    male, female, stereotype = ({w.lower() for w in ws} for ws in (male, female, stereotype))
    overlap = male & female
    if overlap:
        raise CorpusError(f"{where}: words {sorted(overlap)[:5]} are in both the male and the female list")
    kept: dict[str, list[Keyed]] = {c: [] for c in CATEGORIES}
    seen: set[str] = set()
    for line in lines:
        if not line.strip() or line.strip() in seen:
            continue
        seen.add(line.strip())
        keyed = categorize(line, male, female, stereotype)
        if keyed is not None:
            kept[keyed.category].append(keyed)
    rng = np.random.default_rng(seed)
    out = {}
    for category in CATEGORIES:
        rows = kept[category]
        if len(rows) <= heldout:
            raise CorpusError(f"{where}: only {len(rows)} {category} sentences, not more than the {heldout} to hold "
                              "out; use a larger corpus or a smaller heldout")
        chosen = set(rng.choice(len(rows), size=heldout, replace=False).tolist())
        out[category] = {"train": [r for i, r in enumerate(rows) if i not in chosen],
                         "heldout": [r for i, r in enumerate(rows) if i in chosen]}
    return out


# ------------------------------------------------------------------------------------------------ offline corpus
# neutral frames with one slot; "{w}" is an attribute or stereotype word
_TEMPLATES = (
    "the {w} walked into the room and sat down .",
    "yesterday i talked to the {w} about the weather .",
    "everyone in the village knows the {w} .",
    "the {w} said that the meeting would start late .",
    "we waited for the {w} near the station .",
    "a photo of the {w} was printed in the newspaper .",
    "it was the {w} who answered the phone .",
    "the letter was addressed to the {w} .",
    "after lunch the {w} went back to work .",
    "nobody expected the {w} to arrive so early .",
    "the {w} looked at the map for a long time .",
    "there was a {w} standing by the door .",
    "the story is about a {w} and a long journey .",
    "someone asked whether the {w} had finished .",
    "a neighbour wrote a short note about the {w} .",
    "in the morning the {w} opened the windows .",
)
_BOTH = "the {m} and the {f} arrived together ."


def usable_words(male: list[str], female: list[str], stereotype: list[str]) -> dict[str, list[str]]:
    """The words a sentence can carry into their category: a word the split cuts apart (``mr.``, ``ma'am``,
    ``male_host``) never matches a line's words, and a stereotype word that is also an attribute word (``tailor``,
    ``waiter`` are male words too) makes its sentence male or female."""
    attributes = set(male) | set(female)
    single = {name: [w for w in words if line_words(w) == {w.lower()}]
              for name, words in (("male", male), ("female", female), ("stereotype", stereotype))}
    single["stereotype"] = [w for w in single["stereotype"] if w.lower() not in attributes]
    return single


def generate_sentences(male: list[str], female: list[str], stereotype: list[str], per_category: int,
                       seed: int, mixed: int = 0) -> list[str]:
    """``per_category`` distinct sentences for each category (a seeded choice among templates x words) and
    ``mixed`` sentences with a word of each gender (which ``cut_corpus`` drops), in a seeded random order, over
    ``usable_words``."""
    rng = np.random.default_rng(seed)
    lines: list[str] = []
    usable = usable_words(male, female, stereotype)
    for name, words in usable.items():
        pool = [frame.format(w=word) for word in words for frame in _TEMPLATES]
        if per_category > len(pool):
            raise CorpusError(f"generate_sentences: {per_category} {name} sentences asked for, but its "
                              f"{len(words)} words x {len(_TEMPLATES)} templates make only {len(pool)}")
        lines += [pool[i] for i in rng.choice(len(pool), size=per_category, replace=False)]
    for _ in range(mixed):
        he, she = usable["male"], usable["female"]
        lines.append(_BOTH.format(m=he[rng.integers(len(he))], f=she[rng.integers(len(she))]))
    return [lines[i] for i in rng.permutation(len(lines))]


# ------------------------------------------------------------------------------------------------ files
COLUMNS = ("text", "category", "keywords", "split")


def read_text_lines(path) -> list[str]:
    """The lines of a plain or gzip-compressed text file (News Commentary v15 ships as .gz)."""
    import gzip
    from pathlib import Path

    path = Path(path)
    if not path.is_file():
        raise CorpusError(f"{path}: the corpus file does not exist")
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8", errors="replace") as handle:
        return handle.read().splitlines()


def corpus_frame(cut: dict[str, dict[str, list[Keyed]]]):
    """The cut corpus as one long table: text, category, keywords (space-separated), split (train / heldout)."""
    import pandas as pd

    rows = [{"text": r.text, "category": category, "keywords": " ".join(r.keywords), "split": split}
            for category, parts in cut.items() for split, items in parts.items() for r in items]
    return pd.DataFrame(rows, columns=list(COLUMNS))


def read_corpus(path, split: str = "train") -> dict[str, list[Keyed]]:
    """``{category: [Keyed]}`` of one split of a corpus table written by ``corpus_frame``; a table that lacks a
    column, a category or holds an unknown one stops with the file and the field named."""
    from pathlib import Path

    import pandas as pd

    path = Path(path)
    frame = pd.read_parquet(path)
    missing = [c for c in COLUMNS if c not in frame.columns]
    if missing:
        raise CorpusError(f"{path}: field(s) {missing} missing (a corpus table has {list(COLUMNS)})")
    unknown = sorted(set(frame["category"]) - set(CATEGORIES))
    if unknown:
        raise CorpusError(f"{path}: field 'category' has value {unknown[0]!r}; allowed: {list(CATEGORIES)}")
    part = frame[frame["split"] == split]
    out = {}
    for category in CATEGORIES:
        rows = part[part["category"] == category]
        if rows.empty:
            raise CorpusError(f"{path}: no {category} sentences in split {split!r}")
        out[category] = [Keyed(t, category, tuple(k.split())) for t, k in zip(rows["text"], rows["keywords"],
                                                                              strict=True)]
    return out
