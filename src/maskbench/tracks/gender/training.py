"""One gender-debiasing run (paper B): the Kaneko-Bollegala objective through the shared loop, with block or head
movement pruning on frozen weights (paper B Table 1), the same with the weights training too (Table 2), or no
pruning at all — the whole model fine-tuned on the objective (the debias-only runs of Table 4).

Batches pair target (stereotype) sentences with attribute sentences: the training attribute set is balanced once
(the same number of male and female sentences, a seeded choice; paper B redraws it every epoch) and target i is
paired with attribute i modulo its size, so every shuffled batch holds random targets and random attributes. The
attribute vectors are recomputed from the model at the start of every epoch (``RefreshVectors``).

``batching`` (config ``gender.objective.batching``): ``paired`` (ours, the default) — an epoch is every target once,
ceil(targets / batch) batches, the model given the attention mask; ``context_debias`` — as
kanekomasahiro/context-debias ``src/run_debias_mlm.py::create_dataloader``: floor(min(|male|, |female|) / batch)
batches an epoch (the attribute sets' sizes, not the targets'), each a seeded random draw of the targets (with their
paired attributes), and no attention mask reaches the model, each batch padded to its longest sentence. Its code
takes each set's batches in separate steps (target steps the debias term, attribute steps the regulariser, the order
shuffled) and redraws every batch from a fresh loader; here a step still holds both terms.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

import numpy as np
import torch
from torch.utils.data import Dataset

from maskbench.masking.deciders import MovementSigmoid
from maskbench.masking.engine import MaskedModules, attach
from maskbench.masking.selectors import ATTENTION_KINDS, ENCODER_KINDS
from maskbench.resume import Resume
from maskbench.tracks.gender.encoding import Encoded, hidden_states
from maskbench.tracks.gender.objective import LAYER_MODES, MODES, VARIANTS, AttributeVectors, KanekoBollegala
from maskbench.tracks.gender.pruning import GRANULARITIES, HEAD_MATRICES, frozen_kinds, granularity_plan
from maskbench.training.hooks import Hook
from maskbench.training.hparams import TrainHParams, total_steps
from maskbench.training.loop import fit
from maskbench.training.optim import trainable_groups

BATCHINGS = ("paired", "context_debias")


@dataclass
class DebiasSpec:
    """What a run optimises and prunes (config ``gender.debias`` and the run's wildcards)."""

    variant: str = "paper_b"        # objective form: paper_b (its code) or kaneko (context-debias's code)
    layers: str = "all"             # first | last | all | intermediate
    mode: str = "token"             # token | sentence
    alpha: float = 0.2              # weight of the debiasing term
    beta: float = 0.8               # weight of the regulariser to the original model
    granularity: str = "block"      # block | head | none (debias only: the weights train, nothing is pruned)
    block: int = 32                 # block size for granularity block
    freeze_weights: bool = True     # paper B Table 1: only scores train; False: Table 2's unfrozen variant
    threshold_start: float = 0.0    # tau rises from here ...
    threshold_end: float = 0.1      # ... to here (paper B: 0 -> 0.1)
    threshold_schedule: str = "linear"
    score_learning_rate: float = 0.01  # learning rate of the pruning scores (paper B 0.01)
    l1_lambda: float = 1.0          # nn_pruning's L1 on sigmoid(S), added unweighted by paper B's code
    # granularity head: the matrices whose head scores train (the others keep score 0, sigmoid 0.5 > tau: kept)
    head_matrices: tuple[str, ...] = HEAD_MATRICES
    batching: str = "paired"        # paired (ours) | context_debias (its batches per epoch, no attention mask)

    def check(self) -> None:
        for key, value, allowed in (("variant", self.variant, VARIANTS), ("layers", self.layers, LAYER_MODES),
                                    ("mode", self.mode, MODES), ("batching", self.batching, BATCHINGS),
                                    ("granularity", self.granularity, (*GRANULARITIES, "none"))):
            if value not in allowed:
                raise ValueError(f"debias spec: {key} {value!r} is unknown; choose one of {allowed}")
        matrices = list(self.head_matrices)
        if not matrices or len(set(matrices)) != len(matrices) or any(m not in HEAD_MATRICES for m in matrices):
            raise ValueError(f"debias spec: head_matrices {matrices!r} must name some of {list(HEAD_MATRICES)}, "
                             "each once")
        if self.granularity == "head" and len(matrices) < len(HEAD_MATRICES) and \
                max(self.threshold_start, self.threshold_end) >= 0.5:
            raise ValueError(f"debias spec: head_matrices {matrices!r} leaves scores at 0 (sigmoid 0.5), which a "
                             f"threshold of 0.5 or more would prune; threshold_end is {self.threshold_end}")
        if self.granularity == "none" and self.freeze_weights:
            raise ValueError("debias spec: granularity 'none' (debias only) trains the weights; set "
                             "freeze_weights false")

    @property
    def prunes(self) -> bool:
        return self.granularity != "none"


class PairedSentences(Dataset):
    """Item i: target i and attribute (i mod n_attributes); ``collate`` stacks a batch of them."""

    def __init__(self, targets: Encoded, attributes: Encoded):
        self.targets, self.attributes = targets, attributes

    def __len__(self) -> int:
        return len(self.targets)

    def __getitem__(self, i):
        return i

    def collate(self, indices):
        idx = torch.tensor(indices)
        return {"targets": self.targets.rows(idx), "attributes": self.attributes.rows(idx % len(self.attributes))}


def batches_per_epoch(batching: str, n_targets: int, n_male: int, n_female: int, batch_size: int) -> int:
    """paired: every target once, the last batch possibly short; context_debias: floor(min(|male|, |female|) /
    batch), as context-debias's ``create_dataloader`` counts (``int(min_size / train_batch_size)`` over the data sets
    other than 'neutral', the targets)."""
    if batching == "paired":
        return -(-n_targets // batch_size)
    if batching == "context_debias":
        n = min(n_male, n_female) // batch_size
        if n < 1:
            raise ValueError(f"batching context_debias: {min(n_male, n_female)} sentences of the smaller gender make "
                             f"no whole batch of {batch_size}")
        return n
    raise ValueError(f"batching {batching!r} is unknown; choose one of {BATCHINGS}")


def balanced_attributes(male: Encoded, female: Encoded, seed: int) -> Encoded:
    """The same number of male and female sentences (a seeded choice of the larger set), male first."""
    n = min(len(male), len(female))
    rng = np.random.default_rng(seed)
    parts = [enc.rows(torch.from_numpy(np.sort(rng.permutation(len(enc))[:n]))) for enc in (male, female)]
    return Encoded(*(torch.cat([p[key] for p in parts]) for key in ("input_ids", "attention_mask", "keyword_mask")))


class RefreshVectors(Hook):
    """Recompute the attribute vectors from the model before the first step of every epoch."""

    def __init__(self, vectors: AttributeVectors, steps_per_epoch: int, model):
        self.vectors, self.per_epoch, self.model = vectors, max(1, int(steps_per_epoch)), model
        self.history: list[dict] = []

    def before_step(self, step, total):
        if step % self.per_epoch == 0:
            value = self.vectors.refresh(self.model)
            self.history.append({"step": step, "norm": float(value.norm())})


def head_size_of(model) -> int:
    config = model.config
    return config.hidden_size // config.num_attention_heads


def debias_groups(model, masked: MaskedModules | None, spec: DebiasSpec, hp: TrainHParams) -> list[dict]:
    """Scores at ``spec.score_learning_rate`` (no decay); with trainable weights, every other parameter at the run's
    rate, decayed alike."""
    return trainable_groups(model, hp.learning_rate, hp.weight_decay, scores=masked,
                            score_lr=spec.score_learning_rate, weights=not spec.freeze_weights, decay_by_name=False)


def run_debias(model, sets: dict[str, Encoded], spec: DebiasSpec, hp: TrainHParams, seed: int, device,
               resume_path=None, checkpoint_every: int = 0) -> dict:
    """Train in place; return the masks (if pruning), the curve and the vectors' history.

    ``sets``: ``Encoded`` training sentences for "male", "female" and "stereotype"."""
    spec.check()
    attributes = balanced_attributes(sets["male"], sets["female"], seed)
    data = PairedSentences(sets["stereotype"], attributes)
    per_epoch = batches_per_epoch(spec.batching, len(data), len(sets["male"]), len(sets["female"]), hp.batch_size)
    # context_debias: a seeded draw of per_epoch whole batches of targets every epoch (fit's samples_per_epoch)
    samples = per_epoch * hp.batch_size if spec.batching == "context_debias" else None
    masks_on = spec.batching != "context_debias"  # context-debias feeds the model no attention mask
    steps = total_steps(samples if samples is not None else len(data), hp)
    masked = None
    original_copy = None
    if not spec.freeze_weights:
        original_copy = copy.deepcopy(model).to(device)  # the weights move: the original needs its own copy
        for param in original_copy.parameters():
            param.requires_grad_(False)
    if spec.prunes:
        decider = MovementSigmoid(steps, spec.threshold_start, spec.threshold_end, score_init=0.0,
                                  l1_lambda=spec.l1_lambda, schedule=spec.threshold_schedule,
                                  groups={kind: "attention" for kind in ATTENTION_KINDS})
        plan = granularity_plan(spec.granularity, spec.block, head_size_of(model))
        masked = attach(model, decider, ENCODER_KINDS, plan, train_weights=not spec.freeze_weights,
                        zero_bias_of_empty_rows=True)
        if spec.granularity == "head":
            # as paper B's code freezes the scores of what a variant leaves alone (nn_pruning patches every matrix):
            # a frozen score stays 0, kept at every threshold below 0.5, and enters the L1 term as a constant
            fixed = frozen_kinds(spec.head_matrices)
            for mask in masked.masks.values():
                if mask.kind in fixed:
                    mask.scores.requires_grad_(False)
    model.to(device)

    def original(batch):
        if original_copy is not None:
            original_copy.train(model.training)
            return hidden_states(original_copy, batch, device, masks_on)
        with masked.bypass():  # frozen weights: the unmasked network is the original model
            return hidden_states(model, batch, device, masks_on)

    vectors = AttributeVectors(sets["male"], sets["female"], spec.layers, spec.variant, device,
                               **({} if masks_on else {"batch_size": hp.batch_size, "attention_mask": False}))
    objective = KanekoBollegala(vectors, original, spec.layers, spec.mode, spec.variant, device, spec.alpha,
                                spec.beta, masked.regularization if (masked is not None and spec.l1_lambda > 0)
                                else None, attention_mask=masks_on)
    refresh = RefreshVectors(vectors, per_epoch, model)
    resume = None
    if resume_path is not None and checkpoint_every > 0:
        resume = Resume(resume_path, checkpoint_every, key=f"{spec}{hp}{seed}",
                        extra=lambda: {"vectors": vectors.value, "history": refresh.history},
                        restore=lambda extra: (setattr(vectors, "value", extra["vectors"]),
                                               setattr(refresh, "history", extra["history"])))
    curve = fit(model, data, objective, hp, seed, device, groups=debias_groups(model, masked, spec, hp),
                step_hook=masked.set_step if masked is not None else None, hooks=[refresh], resume=resume,
                samples_per_epoch=samples)
    return {"masked": masked, "curve": curve, "vectors": refresh.history, "steps": steps,
            "n_targets": len(data), "n_attributes": len(attributes), "resume": resume}
