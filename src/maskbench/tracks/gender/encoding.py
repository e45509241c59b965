"""Sentences of the gender track as model inputs, and the hidden states the objective and SEAT read.

``encode_keyed`` tokenizes corpus sentences padded to one fixed length (paper B pads to 128) and marks their
keyword positions as paper B's code does: every position whose token id is one of the keywords' sub-token ids. A
sentence whose keywords were cut off by the length limit has no marked position and is dropped (and counted).

``hidden_states`` runs an encoder (a ``BertModel`` or the ``.bert`` of a classifier) and stacks its hidden states,
embedding output first: shape (layers + 1, batch, length, hidden). With ``attention_mask=False`` the encoder gets the
token ids alone, as kanekomasahiro/context-debias feeds it (``run_debias_mlm.py``: ``model.bert(inputs)``); its
batches are padded to their longest sentence (``trim_padding``), not to a fixed length.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from maskbench.tracks.gender.corpus import Keyed


@dataclass
class Encoded:
    """Token ids, attention mask and keyword mask of a set of sentences, each (n, length)."""

    input_ids: torch.Tensor
    attention_mask: torch.Tensor
    keyword_mask: torch.Tensor
    dropped: int = 0

    def __len__(self) -> int:
        return int(self.input_ids.shape[0])

    def rows(self, index) -> dict[str, torch.Tensor]:
        return {"input_ids": self.input_ids[index], "attention_mask": self.attention_mask[index],
                "keyword_mask": self.keyword_mask[index]}


def keyword_token_ids(tokenizer, keywords) -> set[int]:
    ids = tokenizer(" ".join(keywords), add_special_tokens=False)["input_ids"]
    return set(ids)


def encode_keyed(tokenizer, rows: list[Keyed], max_length: int) -> Encoded:
    """Every sentence padded (or cut) to ``max_length`` tokens with its keyword mask."""
    if not rows:
        raise ValueError("encode_keyed: no sentences")
    batch = tokenizer([r.text for r in rows], padding="max_length", truncation=True, max_length=max_length,
                      return_tensors="pt")
    ids = batch["input_ids"]
    marks = torch.zeros_like(ids)
    for i, row in enumerate(rows):
        wanted = torch.tensor(sorted(keyword_token_ids(tokenizer, row.keywords)), dtype=ids.dtype)
        marks[i] = torch.isin(ids[i], wanted).to(ids.dtype) * batch["attention_mask"][i]
    keep = marks.sum(dim=1) > 0
    return Encoded(ids[keep], batch["attention_mask"][keep], marks[keep], dropped=int((~keep).sum()))


def encoder_of(model):
    """The BERT encoder of a bare ``BertModel`` or of a model with a ``.bert`` (a classifier, a masked LM)."""
    return getattr(model, "bert", model)


def trim_padding(batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """The batch cut after its last column that holds a real token of some sentence (right padding): padded to
    its longest sentence, as torch's ``pad_sequence`` pads context-debias's batches."""
    real = batch["attention_mask"].bool().any(dim=0).nonzero()
    length = int(real.max()) + 1 if len(real) else 0
    return {key: value[:, :length] for key, value in batch.items()}


def hidden_states(model, batch: dict, device, attention_mask: bool = True) -> torch.Tensor:
    """(layers + 1, batch, length, hidden): the embedding output, then every layer's output. ``attention_mask``
    False: the encoder gets no attention mask (every position, padding too, attends and is attended to)."""
    mask = {"attention_mask": batch["attention_mask"].to(device)} if attention_mask else {}
    out = encoder_of(model)(input_ids=batch["input_ids"].to(device), **mask, output_hidden_states=True)
    return torch.stack(out.hidden_states)


def cls_vectors(model, tokenizer, sentences: list[str], device, batch_size: int = 64,
                max_length: int = 128) -> torch.Tensor:
    """The last layer's [CLS] vector of every sentence (paper B's SEAT encoder), no gradient, eval mode."""
    was_training = model.training
    model.eval()
    out = []
    with torch.no_grad():
        for start in range(0, len(sentences), batch_size):
            batch = tokenizer(sentences[start:start + batch_size], padding=True, truncation=True,
                              max_length=max_length, return_tensors="pt")
            states = encoder_of(model)(input_ids=batch["input_ids"].to(device),
                                       attention_mask=batch["attention_mask"].to(device))
            out.append(states.last_hidden_state[:, 0, :].float().cpu())
    model.train(was_training)
    return torch.cat(out)
