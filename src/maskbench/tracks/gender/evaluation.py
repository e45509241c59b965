"""Evaluating a (pruned, debiased) encoder on the gender track: the model as a run left it, and SEAT."""

from __future__ import annotations

from pathlib import Path

from maskbench.masking.apply import MaskSet, MaskSwitch
from maskbench.masking.engine import remove_parametrizations
from maskbench.progress import Progress
from maskbench.tracks.gender.encoding import cls_vectors
from maskbench.tracks.gender.models import load_encoder
from maskbench.tracks.gender.seat import SeatTest, effect_size, p_value


def load_run(model: str, run: str | Path | None = None):
    """The encoder a run produced: the pre-trained ``model`` itself (``run`` None), ``model`` with a frozen run's
    mask file applied and its masked values written into the weights (``*.mask``; refused if it was searched on
    another model), or a checkpoint folder."""
    if run is None:
        return load_encoder(model)
    run = Path(run)
    if run.suffix == ".mask":
        encoder, tokenizer = load_encoder(model)
        MaskSwitch(encoder).apply(MaskSet.load(run))
        for module in encoder.modules():  # evaluation only: write the masked values in once, not every forward
            remove_parametrizations(module, keep_values=True)
        return encoder, tokenizer
    if not (run / "train_summary.json").is_file():
        raise FileNotFoundError(f"{run}: no train_summary.json — is this a finished gender_debias run?")
    return load_encoder(run)


def seat_scores(model, tokenizer, tests: list[SeatTest], device, n_samples: int = 100_000, seed: int = 0,
                max_length: int = 128) -> list[dict]:
    """Effect size and one-sided permutation p-value of every test on the last layer's [CLS] (paper B)."""
    rows, encoded = [], {}

    def vectors(examples: tuple[str, ...]):
        # tests share attribute sets (6 / 6b, 7 / 8, 7b / 8b): each set is encoded once, in the same batches
        if examples not in encoded:
            encoded[examples] = cls_vectors(model, tokenizer, list(examples), device,
                                            max_length=max_length).double().numpy()
        return encoded[examples]

    progress = Progress("SEAT", len(tests), "test")
    for test in tests:
        X, Y, A, B = (vectors(part.examples) for part in (test.targ1, test.targ2, test.attr1, test.attr2))
        p, exact = p_value(X, Y, A, B, n_samples=n_samples, seed=seed)
        rows.append({"test": test.name, "effect_size": effect_size(X, Y, A, B), "p_value": p, "p_exact": exact,
                     "n_targets": len(X) + len(Y), "n_attributes": len(A) + len(B),
                     "targets": f"{test.targ1.category} vs {test.targ2.category}",
                     "attributes": f"{test.attr1.category} vs {test.attr2.category}"})
        progress.update(1)
    progress.close()
    return rows
