"""maskbench's public Python API: load a mask, apply / switch / remove it on a model, search one, evaluate, predict,
inspect and export — a thin facade over the library the workflow's steps use (``from maskbench import ...``).

    >>> from maskbench import load_model, load_mask, apply_mask, remove_mask, export_model
    >>> model, tokenizer = load_model("results/.../method~finetune/loss~ce/seed~1")
    >>> switch = apply_mask(model, load_mask("md.mask"))   # refused for a mask of another model
    >>> switch.apply(load_mask("other.mask"))               # switch masks without reloading the weights
    >>> remove_mask(switch)                                 # the original weights, bit for bit
    >>> export_model("results/.../seed~1", "md.mask", "exported/")   # a plain Hugging Face folder

Errors on bad input are the library's named classes (``MaskFileError``, ``MaskMismatchError``, ``ExportError``,
``DataError``, ``CheckpointError``), each with a one-line message naming the file, field and value.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from maskbench import runtime
from maskbench.masking.apply import MaskMismatchError, MaskSet, MaskSwitch
from maskbench.masking.codec import MaskFileError
from maskbench.text.hf_export import ExportError, ExportResult, export_masked_model
from maskbench.text.models import load_classifier, model_labels
from maskbench.text.pair_predictions import predict_records, read_pairs
from maskbench.tracks.nlu.evaluation import load_eval_sets, parse_eval_sets, score_all
from maskbench.tracks.nlu.mask_search_run import MaskSearchArgs, run_mask_search, search_settings
from maskbench.tracks.nlu.report.pruning_rates import pruning_rates

__all__ = [
    "ExportError", "ExportResult", "MaskFileError", "MaskMismatchError", "MaskSet", "MaskSwitch", "apply_mask",
    "evaluate_model", "export_model", "inspect_mask", "load_mask", "load_model", "predict", "remove_mask",
    "search_mask",
]

PathLike = str | Path


def load_model(path: PathLike):
    """``(model, tokenizer)`` of a sequence-classification checkpoint folder (``model.safetensors``, config,
    tokenizer); a cut or damaged checkpoint is a ``CheckpointError`` naming the file."""
    return load_classifier(path)


def load_mask(path: PathLike) -> MaskSet:
    """A ``.mask`` file (checksums verified, every module decoded): its bool arrays by module name and its meta
    (method, loss, the fingerprint of the model it was searched on)."""
    return MaskSet.load(path)


def apply_mask(model, mask: MaskSet | PathLike, prefix_map: dict[str, str] | None = None) -> MaskSwitch:
    """Make ``model`` compute with ``mask`` (its weights untouched, a parametrization zeroes the pruned ones) and
    return the ``MaskSwitch``: ``switch.apply(other)`` switches masks, ``remove_mask(switch)`` removes it. A mask
    searched on another model (fingerprint, module names or shapes) is a ``MaskMismatchError``. ``prefix_map`` moves a
    mask between heads of one encoder (``{"encoder.": "bert.encoder."}``)."""
    switch = MaskSwitch(model, prefix_map=prefix_map)
    switch.apply(mask if isinstance(mask, MaskSet) else MaskSet.load(mask))
    return switch


def remove_mask(switch: MaskSwitch) -> None:
    """Back to the unmasked model: the original weight tensors, bit-identical."""
    switch.revert()


def search_mask(model: PathLike, train: PathLike, output: PathLike, *, dev: PathLike | None = None,
                loss: str = "ce", bias_probs: PathLike | None = None, teacher_probs: PathLike | None = None,
                seed: int = 1, mask_search: dict | None = None, loss_hparams: dict | None = None,
                summary: PathLike | None = None, threads: int = 0, device: str = "auto") -> tuple[MaskSet, dict]:
    """Search a pruning mask on the frozen checkpoint ``model`` with the workflow's engine and objectives (paper A's
    movement scores) and write it to ``output`` (and a JSON summary beside it, ``<output>.search.json`` unless
    ``summary`` names one). ``train`` / ``dev``: prepared parquets (``maskbench.data.schema``); ``loss``: an objective
    of ``maskbench.objectives.losses`` (``reweight``/``poe`` read ``bias_probs``, a prepared probability parquet);
    ``mask_search``: a workflow config's ``mask_search`` section (method, modules, thresholds, ``hparams``,
    ``score_learning_rate``), the embedded defaults where left out. Returns the mask and the summary."""
    spec, hparams = search_settings(mask_search)
    output = Path(output)
    args = MaskSearchArgs(
        model_dir=Path(model), train=Path(train), out=output, seed=seed,
        summary=Path(summary) if summary else output.with_name(output.name + ".search.json"),
        dev=Path(dev) if dev else None, spec=json.dumps(spec), hparams=json.dumps(hparams), loss=loss,
        loss_hparams=json.dumps(loss_hparams or {}), bias_probs=Path(bias_probs) if bias_probs else None,
        teacher_probs=Path(teacher_probs) if teacher_probs else None, threads=threads, device=device)
    return run_mask_search(args)


@dataclass
class _ScoreSettings:
    """What ``score_all`` reads of an evaluation's arguments (and records as its provenance)."""

    model: str
    mask: str | None
    data: list[str]
    eval_sets: str
    max_length: int
    batch_size: int
    length_sorted: bool
    threads: int
    device: str


def evaluate_model(model: PathLike, data: list[PathLike], output_dir: PathLike, *, mask: PathLike | None = None,
                   eval_sets: list[dict] | None = None, max_length: int = 128, batch_size: int = 256,
                   length_sorted: bool = False, seed: int = -1, threads: int = 0, device: str = "auto") -> list[str]:
    """Score ``model`` (under ``mask``, if given) on prepared evaluation parquets; write ``<output_dir>/<set>.json``
    (metrics, with the mask's density) and ``<set>.predictions.parquet`` per set, as the workflow's evaluation does;
    return the JSON paths. ``eval_sets``: per file ``{name, metric, merge}`` (default: the file's stem, accuracy)."""
    data = [Path(d) for d in data]
    specs = eval_sets or [{"name": d.name.removesuffix(".parquet")} for d in data]
    settings = _ScoreSettings(str(model), str(mask) if mask else None, [str(d) for d in data], json.dumps(specs),
                              max_length, batch_size, length_sorted, threads, device)
    parsed = parse_eval_sets(settings.eval_sets, data)
    mask_set = MaskSet.load(mask) if mask else None  # a damaged mask file stops it before the model loads
    runtime.set_threads(threads)
    target = runtime.pick_device(device)
    net, tokenizer = load_classifier(model)
    net.to(target)
    record: dict = {"task": "", "row": "masked" if mask_set else "unmasked", "seed": seed}
    switch = MaskSwitch(net)
    if mask_set is not None:  # a mask of another model is refused before anything is scored
        switch.apply(mask_set)
        record.update(mask=str(mask_set.path), mask_density=mask_set.density())
    loaded = load_eval_sets(parsed, model_labels(net))
    try:
        return score_all(net, tokenizer, loaded, settings, target, Path(output_dir), record, Path(model))
    finally:
        switch.revert()


def predict(model: PathLike, input: PathLike, masks: list[PathLike] = (), *, unmasked: bool = True,
            max_length: int = 128, batch_size: int = 64, device: str = "auto") -> list[dict]:
    """Predictions for the text pairs of a JSON Lines file (``text_a``/``text_b`` or ``premise``/``hypothesis``,
    ...): per example its id and, per variant (``none`` = unmasked, then each mask by path), the label and the
    probabilities."""
    ids, text_a, text_b = read_pairs(Path(input))
    mask_sets = [MaskSet.load(m) for m in masks]
    target = runtime.pick_device(device)
    net, tokenizer = load_classifier(model)
    net.to(target)
    return predict_records(net, tokenizer, ids, text_a, text_b, mask_sets, unmasked=unmasked, max_length=max_length,
                           batch_size=batch_size, device=target)


def inspect_mask(mask: MaskSet | PathLike) -> pd.DataFrame:
    """One row per masked module: layer, kind (query ... ffn_out, pooler, classifier), weights, kept, density."""
    mask_set = mask if isinstance(mask, MaskSet) else MaskSet.load(mask)
    rates = pruning_rates(mask_set.masks)
    rates["n_kept"] = rates.n_weights - rates.n_pruned
    rates["density"] = rates.n_kept / rates.n_weights
    return rates[["layer", "kind", "module", "n_weights", "n_kept", "density"]]


def export_model(model: PathLike, mask: MaskSet | PathLike, output_dir: PathLike, *, overwrite: bool = False,
                 remove_units: bool = True, evaluations: list[PathLike] = (),
                 baseline_evaluations: list[PathLike] = (), id_sets: list[str] | None = None,
                 base_model: str | None = None, data: str | None = None, bias: str | None = None) -> ExportResult:
    """Write ``model`` with ``mask`` folded into its weights as a Hugging Face folder that
    ``AutoModelForSequenceClassification.from_pretrained`` loads without maskbench: FFN neurons the mask empties in
    every layer removed, emptied heads kept as zeros (one BertConfig cannot give layers different widths), a model
    card stating base model, data, bias, method, density, the mask's sha256 and — given evaluation JSONs of the masked
    (``evaluations``) and unmasked (``baseline_evaluations``) model, e.g. one per seed — the ID / OOD accuracies and
    their change, mean ± sd. Refuses a non-empty ``output_dir`` unless ``overwrite``; writes under a temporary name
    and renames at the end."""
    return export_masked_model(model, mask, output_dir, overwrite=overwrite, remove=remove_units,
                               evaluations=[Path(p) for p in evaluations],
                               baseline_evaluations=[Path(p) for p in baseline_evaluations], id_sets=id_sets,
                               base_model=base_model, data=data, bias=bias)

