"""A masked classifier as a plain Hugging Face folder: the mask written into the weights, FFN neurons removed where
every layer allows, ``config.json``, the tokenizer, ``model.safetensors``, a model card (README.md) and
``maskbench_export.json`` (what was removed, the mask's sha256, the fingerprints). The folder loads with
``AutoModelForSequenceClassification.from_pretrained`` alone and predicts what the masked model predicts.

What is removed. A ``BertConfig`` (transformers 5) describes every layer with one ``num_attention_heads`` and one
``intermediate_size``, and transformers 5 no longer reads ``pruned_heads``. So:

* heads the mask empties whole stay as zeros (a smaller head count would change the head size, hidden / heads);
  the card and ``maskbench_export.json`` list them per layer;
* FFN neurons: every layer loses the same number r = the fewest removable neurons of any layer
  (``bert_units.dead_neurons``: a zero input row or a zero output column), its exactly-zero ones first, then those
  whose constant output is folded into the next bias; ``intermediate_size`` becomes I - r. The other removable
  neurons stay as zeros.

With nothing removed (r = 0, or ``remove_units=False``) the exported weights are the masked weights, bit for bit, and
so are the logits; with neurons removed the matrix products are shorter and the logits agree to float rounding.

Bad input stops the export before any model is loaded: a non-empty output folder without ``overwrite``, a damaged
mask file, an evaluation record without its fields; a mask of another model stops it before anything is written
(``MaskSwitch.check``). The folder is written under a temporary name beside the target and renamed at the end, so an
interrupted export leaves no folder that looks complete."""

from __future__ import annotations

import hashlib
import json
import math
import shutil
import statistics
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch

from maskbench.masking.apply import MaskSet, MaskSwitch, model_fingerprint
from maskbench.masking.engine import remove_parametrizations
from maskbench.masking.module_kinds import module_kind
from maskbench.text.bert_units import dead_heads, dead_neurons, remove_neurons
from maskbench.text.models import input_view, load_classifier

RECORD_FILE = "maskbench_export.json"
CARD_FILE = "README.md"


class ExportError(ValueError):
    """A bad export request: the output folder, an evaluation record; the message names the file, field and value."""


@dataclass
class LayerUnits:
    """One encoder layer: heads the mask empties whole (kept as zeros), removable FFN neurons, and those removed."""

    layer: int
    heads_emptied: list[int] = field(default_factory=list)
    ffn_removable: int = 0
    ffn_removed: list[int] = field(default_factory=list)
    ffn_folded: list[int] = field(default_factory=list)


@dataclass
class ExportResult:
    folder: Path
    mask_sha256: str
    density: float
    intermediate_size: tuple[int, int] | None  # (before, after); None for a model without BERT layers
    layers: list[LayerUnits]
    bit_exact: bool  # no unit removed: the weights are the masked weights, bit for bit


# ------------------------------------------------------------------------------------------------ checks
def check_output_dir(output_dir: Path, overwrite: bool) -> None:
    """Refuse an existing non-empty folder (or a file) unless ``overwrite``."""
    if output_dir.exists() and not output_dir.is_dir():
        raise ExportError(f"{output_dir}: field --output-dir is a file, not a folder")
    if output_dir.is_dir() and any(output_dir.iterdir()) and not overwrite:
        raise ExportError(f"{output_dir}: field --output-dir names a folder that is not empty "
                          f"({sum(1 for _ in output_dir.iterdir())} entries); pass --overwrite to replace it")


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def read_evaluation(path: Path) -> dict:
    """One evaluation JSON (``maskbench evaluate`` or the workflow's ``nlu.evaluate[_masks]``): checked for
    ``eval_set`` and ``metrics.accuracy``."""
    try:
        record = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ExportError(f"{path}: not a readable evaluation JSON ({type(err).__name__}: {err})") from err
    if not isinstance(record, dict) or not isinstance(record.get("eval_set"), str):
        value = record.get("eval_set") if isinstance(record, dict) else record
        raise ExportError(f"{path}: field 'eval_set' must be a string, got {value!r:.80}")
    accuracy = (record.get("metrics") or {}).get("accuracy") if isinstance(record.get("metrics"), dict) else None
    if isinstance(accuracy, bool) or not isinstance(accuracy, int | float):
        raise ExportError(f"{path}: field 'metrics.accuracy' must be a number, got {accuracy!r}")
    return record


def read_evaluations(paths: list[Path]) -> list[dict]:
    """The records of one side (masked or unmasked model): one per evaluation set and seed."""
    records, seen = [], {}
    for path in paths:
        record = read_evaluation(path)
        key = (record["eval_set"], record.get("seed"))
        if key in seen:
            raise ExportError(f"{path}: field 'seed' is {key[1]!r} for evaluation set {key[0]!r}, as in {seen[key]}; "
                              "give one record per seed (maskbench evaluate --seed)")
        seen[key] = path
        records.append(record)
    return records


# ------------------------------------------------------------------------------------------------ the model
def bake_mask(model, mask_set: MaskSet, prefix_map: dict[str, str] | None = None) -> None:
    """Write ``mask_set`` into ``model``'s weights (and the biases of rows it empties, as the masked evaluation
    does): refused for a mask of another model; afterwards the model carries no parametrization."""
    switch = MaskSwitch(model, prefix_map=prefix_map)
    switch.apply(mask_set)
    for module in model.modules():
        remove_parametrizations(module, keep_values=True)


def encoder_layers(model) -> list | None:
    """The BERT-style layers (``attention.self``, ``intermediate.dense``, ``output.dense``) of a classifier, or
    None when the model has none (its mask is then only written into the weights)."""
    encoder = getattr(getattr(model, "base_model", None), "encoder", None)
    layers = getattr(encoder, "layer", None)
    if layers is None or not hasattr(model.config, "intermediate_size"):
        return None
    if not all(hasattr(layer, "intermediate") and hasattr(getattr(layer, "attention", None), "self")
               for layer in layers):
        return None
    return list(layers)


@torch.no_grad()
def remove_units(model, remove: bool = True) -> tuple[list[LayerUnits], tuple[int, int] | None]:
    """Record the emptied heads of every layer and remove the FFN neurons every layer can lose (module docstring);
    update ``config.intermediate_size``."""
    layers = encoder_layers(model)
    if layers is None:
        return [], None
    config = model.config
    head_size = config.hidden_size // config.num_attention_heads
    found = []
    for i, layer in enumerate(layers):
        removable, folded = dead_neurons(layer.intermediate, layer.output)
        found.append((LayerUnits(i, heads_emptied=dead_heads(layer.attention, head_size)[0],
                                 ffn_removable=len(removable)), removable, folded))
    before = int(config.intermediate_size)
    r = min(units.ffn_removable for units, _, _ in found) if remove else 0
    for (units, removable, folded), layer in zip(found, layers, strict=True):
        if r == 0:
            continue
        constant = set(folded)
        chosen = ([j for j in removable if j not in constant] + [j for j in removable if j in constant])[:r]
        units.ffn_removed = sorted(chosen)
        units.ffn_folded = sorted(set(chosen) & constant)
        remove_neurons(layer, units.ffn_removed, units.ffn_folded)
    config.intermediate_size = before - r
    return [units for units, _, _ in found], (before, before - r)


# ------------------------------------------------------------------------------------------------ the card
def _mean_sd(values: list[float]) -> tuple[float, float | None]:
    return statistics.fmean(values), (statistics.stdev(values) if len(values) > 1 else None)


def _spread(values: list[float]) -> str:
    mean, sd = _mean_sd(values)
    return f"{mean:.2f} ± {sd:.2f} (n={len(values)})" if sd is not None else f"{mean:.2f} (n=1, no spread)"


def effects_table(masked: list[dict], unmasked: list[dict], id_sets: list[str] | None) -> list[str]:
    """Markdown lines: per evaluation set, ID or OOD, the masked model's accuracy (mean ± sd over the records, e.g.
    seeds), the unmasked model's and the change; paired by seed when both sides have the same seeds."""
    by_set: dict[str, dict[str, dict]] = {}
    for side, records in (("masked", masked), ("unmasked", unmasked)):
        for index, record in enumerate(records):
            seeds = by_set.setdefault(record["eval_set"], {"masked": {}, "unmasked": {}})[side]
            seeds[str(record.get("seed", f"record {index}"))] = record
    lines = ["| evaluation set | kind | masked accuracy | unmasked accuracy | change (masked − unmasked) |",
             "|---|---|---|---|---|"]
    for name, sides in by_set.items():
        kind = "ID" if (name in id_sets if id_sets else name == "dev" or name.endswith("_dev")) else "OOD"
        masked_acc = [r["metrics"]["accuracy"] for r in sides["masked"].values()]
        unmasked_acc = [r["metrics"]["accuracy"] for r in sides["unmasked"].values()]
        change = "—"
        if masked_acc and unmasked_acc and set(sides["masked"]) == set(sides["unmasked"]):
            change = _spread([sides["masked"][s]["metrics"]["accuracy"] - sides["unmasked"][s]["metrics"]["accuracy"]
                              for s in sorted(sides["masked"])])
        elif masked_acc and unmasked_acc:
            change = f"{statistics.fmean(masked_acc) - statistics.fmean(unmasked_acc):.2f} (unpaired seeds: no spread)"
        lines.append(f"| {name} | {kind} | {_spread(masked_acc) if masked_acc else '—'} | "
                     f"{_spread(unmasked_acc) if unmasked_acc else '—'} | {change} |")
    return lines


def density_by_kind(mask_set: MaskSet) -> dict[str, float]:
    kept: dict[str, list[int]] = {}
    for name, mask in mask_set.masks.items():
        counts = kept.setdefault(module_kind(name), [0, 0])
        counts[0] += int(mask.sum())
        counts[1] += int(mask.size)
    return {kind: k / n if n else math.nan for kind, (k, n) in kept.items()}


def model_card(mask_set: MaskSet, result: ExportResult, *, base_model: str, data: str, bias: str,
               view: str, masked: list[dict], unmasked: list[dict], id_sets: list[str] | None) -> str:
    meta = mask_set.meta
    spec = meta.get("spec") or {}
    method = meta.get("method", "unknown")
    layers_with_heads = [f"layer {u.layer}: {u.heads_emptied}" for u in result.layers if u.heads_emptied]
    size = result.intermediate_size
    lines = [
        "---", "library_name: transformers", "pipeline_tag: text-classification",
        "tags: [maskbench, pruning, debiasing]", "---", "",
        f"# {result.folder.name}", "",
        "A sequence classifier with a binary pruning mask written into its weights by maskbench (`maskbench export`). "
        "It loads with `AutoModelForSequenceClassification.from_pretrained` alone.", "",
        "| | |", "|---|---|",
        f"| base model | {base_model} |",
        f"| data | {data} |",
        f"| bias | {bias} |",
        f"| method | {method} (loss `{meta.get('loss', '?')}`, seed {meta.get('seed', '?')}, granularity "
        f"{spec.get('granularity') or spec.get('block', '?')}) |",
        f"| density | {result.density:.4f} of the masked weights kept ({100 * (1 - result.density):.2f}% pruned) |",
        f"| mask sha256 | `{result.mask_sha256}` |",
        f"| input | {'sentence pairs' if view == 'pair' else view} |", "",
        "## Density by module kind", "", "| kind | density |", "|---|---|",
        *[f"| {kind} | {value:.4f} |" for kind, value in density_by_kind(mask_set).items()], "",
        "## Units", "",
        (f"FFN width {size[0]} → {size[1]}: {size[0] - size[1]} neurons removed from every layer (the fewest any "
         "layer could lose); other emptied neurons stay as zeros." if size and size[0] != size[1] else
         "No unit removed: the weights are the masked weights, bit for bit."),
        ("Attention heads emptied whole (kept as zeros; one head count describes every layer): "
         + "; ".join(layers_with_heads) + "." if layers_with_heads else "No attention head is emptied whole."), "",
        "## Measured effects", "",
    ]
    if masked or unmasked:
        lines += ["Accuracy in percent, mean ± standard deviation over the evaluation records given to the export "
                  "(one per seed); ID = the task's own dev set, OOD = the others.", "",
                  *effects_table(masked, unmasked, id_sets)]
    else:
        lines.append("No evaluation record was given to the export: no effect is stated.")
    return "\n".join(lines) + "\n"


def recorded_meta(path: str | Path | None) -> dict:
    """The JSON metadata a workflow parquet (a prepared set, bias probabilities) carries in its schema; {} when the
    file is not there (an export on another machine) or carries none."""
    if not path or not Path(path).is_file():
        return {}
    import pyarrow.parquet as pq

    out: dict = {}
    for value in (pq.read_schema(str(path)).metadata or {}).values():
        try:
            loaded = json.loads(value)
        except (ValueError, UnicodeDecodeError):
            continue
        out.update(loaded if isinstance(loaded, dict) else {})
    return out


def given_inputs(meta: dict, model_dir: str | Path) -> dict[str, str]:
    """What the card names: the model, data and bias source as the user gave them — the checkpoint a workflow took
    in (its ``given``, from the mask's model folder's summary) or the exported model, the training set's source and
    the bias source's file — never only the workflow's results paths (those stay in the record beside the card)."""
    model = str(model_dir)
    summary = Path(str(meta.get("model_dir", ""))) / "train_summary.json"
    if meta.get("model_dir") and summary.is_file():
        model = json.loads(summary.read_text(encoding="utf-8")).get("given") or model
    train = recorded_meta(meta.get("train"))
    source = train.get("source") or meta.get("train", "?")
    name = f"{train['dataset']}: " if train.get("dataset") else ""
    data = f"{name}`{source}` (task {meta.get('task', '?')})"
    loss = f"loss `{meta.get('loss', '?')}`"
    if not meta.get("bias_probs"):
        return {"model": model, "data": data, "bias": f"{loss}, no bias model"}
    probs = recorded_meta(meta["bias_probs"])
    origin = probs.get("source") or meta["bias_probs"]
    named = f"bias source `{probs['bias_source']}`, " if probs.get("bias_source") else ""
    return {"model": model, "data": data, "bias": f"{loss} against {named}`{origin}`"}


# ------------------------------------------------------------------------------------------------ the export
def export_masked_model(model_dir: str | Path, mask: str | Path | MaskSet, output_dir: str | Path, *,
                        overwrite: bool = False, remove: bool = True, evaluations: list[Path] | None = None,
                        baseline_evaluations: list[Path] | None = None, id_sets: list[str] | None = None,
                        base_model: str | None = None, data: str | None = None, bias: str | None = None
                        ) -> ExportResult:
    """Export ``model_dir`` with ``mask`` written in to ``output_dir`` (module docstring)."""
    output_dir = Path(output_dir)
    check_output_dir(output_dir, overwrite)
    mask_set = mask if isinstance(mask, MaskSet) else MaskSet.load(mask)
    if mask_set.path is None:
        raise ExportError("mask: field 'path' is None; save the mask (MaskSet.save) so that its sha256 is recorded")
    masked = read_evaluations(evaluations or [])
    unmasked = read_evaluations(baseline_evaluations or [])
    model, tokenizer = load_classifier(model_dir)
    fingerprint = model_fingerprint(model)
    MaskSwitch(model, fingerprint).check(mask_set)
    bake_mask(model, mask_set)
    layers, widths = remove_units(model.eval(), remove)
    result = ExportResult(output_dir, file_sha256(mask_set.path), mask_set.density(), widths, layers,
                          bit_exact=not any(u.ffn_removed for u in layers))
    meta = mask_set.meta
    given = given_inputs(meta, model_dir)
    card = model_card(
        mask_set, result, base_model=base_model or given["model"], data=data or given["data"],
        bias=bias or given["bias"], view=input_view(model), masked=masked, unmasked=unmasked, id_sets=id_sets)
    record = {"model_dir": str(model_dir), "mask": str(mask_set.path), "mask_sha256": result.mask_sha256,
              "model_fingerprint": fingerprint, "density": result.density, "bit_exact": result.bit_exact,
              "intermediate_size": list(widths) if widths else None, "layers": [asdict(u) for u in layers],
              "mask_meta": {k: v for k, v in meta.items() if k not in ("module_density", "provenance")}}
    write_folder(output_dir, model, tokenizer, card, record)
    return result


def write_folder(output_dir: Path, model, tokenizer, card: str, record: dict) -> None:
    """Write everything under a temporary folder beside ``output_dir``, then rename it into place (an existing
    folder, allowed by ``overwrite``, is moved aside first and removed last)."""
    output_dir.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{output_dir.name}.", suffix=".partial", dir=output_dir.parent))
    try:
        model.save_pretrained(staging)
        tokenizer.save_pretrained(staging)
        (staging / CARD_FILE).write_text(card, encoding="utf-8")
        (staging / RECORD_FILE).write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
        old = None
        if output_dir.exists():
            old = staging.with_name(staging.name.removesuffix(".partial") + ".old")
            output_dir.rename(old)
        staging.rename(output_dir)
        if old is not None:
            shutil.rmtree(old)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
