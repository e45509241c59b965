"""The gender attribute of a corpus sentence, the bias label paper D's FFW hides on the gender track.

The corpus (``corpus.py``) keeps a sentence as ``male`` when it holds at least one of Kaneko & Bollegala's male
attribute words and no female one, ``female`` the other way round (a sentence with both is dropped, one with
neither is a ``stereotype`` sentence or not kept). A kept male or female sentence's *gender attribute* is the list
its attribute words come from: class 0 male, class 1 female (``ATTRIBUTES``). Stereotype sentences have none and
are refused here.

``attribute_sentences`` encodes one corpus split's male and female sentences as ``encoding.encode_keyed`` does
(a sentence whose keywords fall beyond ``max_length`` is dropped, counted), then keeps the same number of each
(a seeded choice of the larger side, file order kept), so the attribute is balanced: chance is 50 %, and the
normalised MI is 1 exactly when a head reads the attribute perfectly.
"""

from __future__ import annotations

import numpy as np
import torch
from torch.utils.data import Dataset

from maskbench.tracks.gender.corpus import Keyed
from maskbench.tracks.gender.encoding import Encoded, encode_keyed

ATTRIBUTES = ("male", "female")  # class index = position


def attribute_of(row: Keyed) -> int:
    """The gender attribute class of a kept corpus sentence: 0 male, 1 female."""
    if row.category not in ATTRIBUTES:
        raise ValueError(f"sentence {row.text[:60]!r}: category {row.category!r} has no gender attribute; "
                         f"only {list(ATTRIBUTES)} sentences do")
    return ATTRIBUTES.index(row.category)


class AttributeSentences(Dataset):
    """Encoded sentences with their gender attribute; a batch (``collate``) holds ``input_ids``,
    ``attention_mask``, ``keyword_mask`` (n, length) and ``bias`` (n, 1), one attribute column."""

    def __init__(self, encoded: Encoded, attribute: torch.Tensor, dropped: dict[str, int] | None = None):
        if len(encoded) != len(attribute):
            raise ValueError(f"AttributeSentences: {len(encoded)} sentences but {len(attribute)} attributes")
        self.encoded, self.attribute = encoded, attribute.long()
        self.dropped = dropped or {}

    def __len__(self) -> int:
        return len(self.encoded)

    def __getitem__(self, i):
        return i

    def collate(self, indices):
        idx = torch.as_tensor(indices)
        return {**self.encoded.rows(idx), "bias": self.attribute[idx].unsqueeze(1)}

    def counts(self) -> dict[str, int]:
        return {name: int((self.attribute == k).sum()) for k, name in enumerate(ATTRIBUTES)}


def balanced_choice(n_each: dict[str, int], seed: int) -> dict[str, np.ndarray]:
    """Per attribute, the sorted indices kept: all of the smaller side, a seeded choice of as many of the larger."""
    n = min(n_each.values())
    rng = np.random.default_rng(seed)
    return {name: np.sort(rng.permutation(n_each[name])[:n]) for name in ATTRIBUTES}


def attribute_sentences(tokenizer, corpus: dict[str, list[Keyed]], max_length: int, seed: int) -> AttributeSentences:
    """The male and female sentences of one corpus split (``corpus.read_corpus``), encoded, balanced, male first."""
    encoded, dropped = {}, {}
    for name in ATTRIBUTES:
        rows = corpus[name]
        labels = {attribute_of(row) for row in rows}
        if labels != {ATTRIBUTES.index(name)}:
            raise ValueError(f"corpus set {name!r} holds sentences of category {sorted(labels)}")
        encoded[name] = encode_keyed(tokenizer, rows, max_length)
        dropped[name] = encoded[name].dropped
    chosen = balanced_choice({name: len(enc) for name, enc in encoded.items()}, seed)
    parts = [encoded[name].rows(torch.from_numpy(chosen[name])) for name in ATTRIBUTES]
    merged = Encoded(*(torch.cat([p[key] for p in parts]) for key in ("input_ids", "attention_mask",
                                                                         "keyword_mask")))
    attribute = torch.cat([torch.full((len(chosen[name]),), k, dtype=torch.long)
                           for k, name in enumerate(ATTRIBUTES)])
    return AttributeSentences(merged, attribute, dropped)
