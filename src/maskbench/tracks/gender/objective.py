"""Kaneko & Bollegala's (2021) gender-debiasing objective, in paper B's code's form and in the original code's.

Notation: H_l(x) is layer l's hidden state of sentence x (l = 0 the embedding output); a sentence's *keyword
embedding* at layer l is the mean of H_l over its keyword positions (sub-tokens of its attribute or target words).
The chosen layers (``layers``): ``first`` = {0}, ``last`` = {L}, ``all`` = {0..L}, ``intermediate`` = {1..4}.

Both forms are ``alpha * L_debias + beta * L_reg`` (paper B: alpha 0.2, beta 0.8) with attribute vectors computed
from the model being trained, in eval mode without gradient, at the start of every epoch
(``AttributeVectors.refresh``), and the regulariser against the original model's hidden states (``original``: the
same network with its masks bypassed — no second copy — or a frozen copy when the weights train).

``paper_b`` (kainoj/pruning-bias ``src/models/debiaser.py``):
  * v_m, v_f: the mean keyword embedding over every male (female) training attribute sentence and the chosen
    layers — two vectors;
  * target rows r: ``token`` mode, one keyword embedding per target sentence and chosen layer; ``sentence`` mode,
    every position of the padded target sentence (padding, [CLS] and [SEP] included) at every chosen layer;
  * L_debias = mean_r (r . v_m + r . v_f)^2;
  * L_reg = mean over attribute sentences and all L+1 layers of ||e - e0||^2 (keyword embeddings, sum over the
    hidden dimension).

``kaneko`` (kanekomasahiro/context-debias ``src/run_debias_mlm.py``):
  * v_g^l: one vector per gender *and chosen layer* (the mean keyword embedding at layer l);
  * L_debias = sum_g (mean over rows and chosen layers of r^l . v_g^l)^2 — the square of a mean, per gender;
    ``sentence`` rows are the sentence's real tokens (its attention mask);
  * L_reg = mean over every real token of the attribute sentences and all L+1 layers of the *mean* over the hidden
    dimension of (h - h0)^2.
  The original computes v at every epoch's start from floor(min(|male|, |female|) / batch) random batches of each
  gender (``create_dataloader``); here both forms use the whole training set.

``attention_mask`` False (``DebiasSpec.batching`` ``context_debias``): every forward pass — targets, attributes, the
original model, the attribute vectors — gets the token ids alone, each batch padded to its longest sentence
(``encoding.trim_padding``), as context-debias does; the kaneko variant's ``sentence`` rows and regulariser then
count every position of the batch, padding included (context-debias's means run over the padded batch).
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from maskbench.tracks.gender.encoding import Encoded, hidden_states, trim_padding

VARIANTS = ("paper_b", "kaneko")
LAYER_MODES = ("first", "last", "all", "intermediate")
MODES = ("token", "sentence")


def layer_indices(layers: str, n_states: int) -> list[int]:
    """The hidden-state indices of a layer mode for a model with ``n_states`` = layers + 1 states."""
    if layers == "first":
        return [0]
    if layers == "last":
        return [n_states - 1]
    if layers == "all":
        return list(range(n_states))
    if layers == "intermediate":
        if n_states < 6:
            raise ValueError(f"layers 'intermediate' (layers 1-4) needs at least 5 layers, the model has "
                             f"{n_states - 1}")
        return [1, 2, 3, 4]
    raise ValueError(f"layers {layers!r} is unknown; choose one of {LAYER_MODES}")


def keyword_embeddings(states: torch.Tensor, keyword_mask: torch.Tensor) -> torch.Tensor:
    """(S, B, T, H) states and a (B, T) 0/1 mask -> (S, B, H): the mean over each sentence's keyword positions."""
    counts = keyword_mask.sum(dim=1)
    if bool((counts < 1).any()):
        raise ValueError("keyword_embeddings: a sentence has no keyword position")
    weights = keyword_mask.to(states.dtype) / counts.to(states.dtype).unsqueeze(1)
    return torch.einsum("sbth,bt->sbh", states, weights.to(states.device))


def debias_paper_b(rows: torch.Tensor, vectors: torch.Tensor) -> torch.Tensor:
    """rows (N, H), vectors (2, H): mean_r (r . v_m + r . v_f)^2."""
    return (rows @ vectors.T).sum(dim=1).pow(2).mean()


def debias_kaneko(rows: torch.Tensor, vectors: torch.Tensor) -> torch.Tensor:
    """rows (S, N, H) per chosen layer, vectors (2, S, H): sum_g (mean_{s, n} r_{s,n} . v_{g,s})^2."""
    return torch.einsum("snh,gsh->gsn", rows, vectors).mean(dim=(1, 2)).pow(2).sum()


def regulariser_paper_b(embeddings: torch.Tensor, original: torch.Tensor) -> torch.Tensor:
    """(S, B, H) keyword embeddings of the trained and the original model: mean of ||e - e0||^2."""
    return (embeddings - original).pow(2).sum(dim=-1).mean()


def regulariser_kaneko(states: torch.Tensor, original: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
    """(S, B, T, H) states of both models: mean over real tokens and layers of mean_h (h - h0)^2."""
    per_token = (states - original).pow(2).mean(dim=-1)  # (S, B, T)
    weights = attention_mask.to(per_token.dtype).to(per_token.device).unsqueeze(0).expand_as(per_token)
    return (per_token * weights).sum() / weights.sum()


class AttributeVectors:
    """The male and female attribute vectors of the model as it is now (``refresh``): (2, H) for ``paper_b``,
    (2, S, H) for ``kaneko``."""

    def __init__(self, male: Encoded, female: Encoded, layers: str, variant: str, device, batch_size: int = 64,
                 attention_mask: bool = True):
        if variant not in VARIANTS:
            raise ValueError(f"objective variant {variant!r} is unknown; choose one of {VARIANTS}")
        self.sets, self.layers, self.variant = (male, female), layers, variant
        self.device, self.batch_size, self.attention_mask = device, batch_size, attention_mask
        self.value: torch.Tensor | None = None

    def refresh(self, model) -> torch.Tensor:
        was_training = model.training
        model.eval()
        vectors = []
        with torch.no_grad():
            for encoded in self.sets:
                total, count = None, 0
                for start in range(0, len(encoded), self.batch_size):
                    batch = encoded.rows(slice(start, start + self.batch_size))
                    if not self.attention_mask:
                        batch = trim_padding(batch)
                    states = hidden_states(model, batch, self.device, self.attention_mask)
                    chosen = states[layer_indices(self.layers, states.shape[0])]
                    emb = keyword_embeddings(chosen, batch["keyword_mask"])  # (S, B, H)
                    part = emb.sum(dim=1)
                    total = part if total is None else total + part
                    count += emb.shape[1]
                per_layer = total / count  # (S, H)
                vectors.append(per_layer.mean(dim=0) if self.variant == "paper_b" else per_layer)
        model.train(was_training)
        self.value = torch.stack(vectors)
        return self.value


class KanekoBollegala:
    """The objective ``(model, batch) -> (loss, logs)`` for ``training.loop.fit``; a batch is ``{"targets": rows,
    "attributes": rows}`` of ``Encoded.rows``. ``original(batch) -> (L+1, B, T, H)`` gives the original model's
    hidden states (no gradient). ``attention_mask`` False: no attention mask reaches the model (nor ``original``,
    which is then called with a batch padded to its longest sentence and must not pass one either)."""

    def __init__(self, vectors: AttributeVectors, original: Callable[[dict], torch.Tensor], layers: str, mode: str,
                 variant: str, device, alpha: float = 0.2, beta: float = 0.8,
                 regularizer: Callable[[], torch.Tensor | None] | None = None, attention_mask: bool = True):
        if mode not in MODES:
            raise ValueError(f"objective mode {mode!r} is unknown; choose one of {MODES}")
        if variant not in VARIANTS:
            raise ValueError(f"objective variant {variant!r} is unknown; choose one of {VARIANTS}")
        self.vectors, self.original = vectors, original
        self.layers, self.mode, self.variant, self.device = layers, mode, variant, device
        self.alpha, self.beta, self.regularizer = alpha, beta, regularizer
        self.attention_mask = attention_mask

    def positions(self, batch: dict) -> torch.Tensor:
        """The positions the kaneko variant's means count: the real tokens, or every position when the model sees
        no attention mask (context-debias)."""
        mask = batch["attention_mask"]
        return mask if self.attention_mask else torch.ones_like(mask)

    def target_rows(self, states: torch.Tensor, batch: dict) -> torch.Tensor:
        chosen = states[layer_indices(self.layers, states.shape[0])]  # (S, B, T, H)
        if self.mode == "token":
            rows = keyword_embeddings(chosen, batch["keyword_mask"])  # (S, B, H)
        elif self.variant == "paper_b":
            rows = chosen.reshape(chosen.shape[0], -1, chosen.shape[-1])  # every padded position
        else:
            real = self.positions(batch).reshape(-1).bool().to(chosen.device)
            rows = chosen.reshape(chosen.shape[0], -1, chosen.shape[-1])[:, real]
        return rows.reshape(-1, rows.shape[-1]) if self.variant == "paper_b" else rows

    def __call__(self, model, batch):
        if self.vectors.value is None:
            raise RuntimeError("the attribute vectors were never computed: call AttributeVectors.refresh first")
        vectors = self.vectors.value.to(self.device)
        targets, attributes = batch["targets"], batch["attributes"]
        if not self.attention_mask:
            targets, attributes = trim_padding(targets), trim_padding(attributes)
        target_states = hidden_states(model, targets, self.device, self.attention_mask)
        rows = self.target_rows(target_states, targets)
        debias = debias_paper_b(rows, vectors) if self.variant == "paper_b" else debias_kaneko(rows, vectors)
        states = hidden_states(model, attributes, self.device, self.attention_mask)
        with torch.no_grad():
            original = self.original(attributes).to(states.device)
        if self.variant == "paper_b":
            regular = regulariser_paper_b(keyword_embeddings(states, attributes["keyword_mask"]),
                                          keyword_embeddings(original, attributes["keyword_mask"]))
        else:
            regular = regulariser_kaneko(states, original, self.positions(attributes))
        loss = self.alpha * debias + self.beta * regular
        # the terms stay on the device: the training loop reads them at its logged steps (no host read a step)
        logs = {"loss_debias": debias.detach(), "loss_regularize": regular.detach()}
        if self.regularizer is not None:
            penalty = self.regularizer()
            if penalty is not None:
                loss = loss + penalty
                logs["mask_penalty"] = penalty.detach()
        return loss, logs
