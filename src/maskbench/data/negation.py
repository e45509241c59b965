"""Negation words in NLI hypotheses (paper A's MNLI negation subset)."""

from __future__ import annotations

import re
from functools import lru_cache

import pandas as pd

from maskbench.data.schema import DataError

# Paper A, appendix footnote (the notebook's list without its duplicated "don't").
NEGATION_WORDS = (
    "no", "not", "don't", "none", "nothing", "never", "aren't", "isn't", "weren't",
    "neither", "didn't", "doesn't", "cannot", "hasn't", "won't",
)

_APOSTROPHES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'"})


def _normalise(text: str) -> str:
    return text.translate(_APOSTROPHES).lower()


def _word_pattern(word: str) -> str:
    word = _normalise(word.strip())
    if word.endswith("n't") and len(word) > 3:
        # Tokenisers split "didn't" into "did n't"; accept both spellings.
        return re.escape(word[:-3]) + r"\s*n't"
    return re.escape(word)


@lru_cache(maxsize=32)
def _compile(words: tuple[str, ...]) -> re.Pattern:
    alternatives = "|".join(sorted((_word_pattern(w) for w in words), key=len, reverse=True))
    return re.compile(rf"(?<!\w)(?:{alternatives})(?!\w)")


def has_negation(text: str, words=NEGATION_WORDS) -> bool:
    """True if text contains one of words as a whole word (case-insensitive, either apostrophe)."""
    if not isinstance(text, str):
        return False
    return _compile(tuple(words)).search(_normalise(text)) is not None


def negation_subset(
    df: pd.DataFrame, labels, entailment_label: str = "entailment", words=NEGATION_WORDS
) -> pd.DataFrame:
    """Gold-entailment rows whose hypothesis (text_b) contains a negation word; all columns kept."""
    if entailment_label not in labels:
        raise DataError(f"negation subset: field 'labels' has no {entailment_label!r} (labels {list(labels)})")
    pattern = _compile(tuple(words))
    gold_entailment = df["label"].to_numpy() == list(labels).index(entailment_label)
    negated = df["text_b"].map(lambda t: isinstance(t, str) and pattern.search(_normalise(t)) is not None)
    keep = gold_entailment & negated.to_numpy(dtype=bool)
    return df.loc[keep].reset_index(drop=True)
