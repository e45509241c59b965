"""Entry point: paper C's mask training (Liu et al., "A Win-win Deal", 2022, Algorithm 2) — learn a binary mask on
frozen weights. On a fine-tuned start checkpoint this is paradigm (a), on a pre-trained/initial one paradigm (c)::

    python -m maskbench.steps nlu.srnet_mask_train --start-dir results/.../method~finetune/loss~ce/seed~1 \
        --train T.parquet --dev D.parquet --seed 1 --loss poe --bias-probs B.parquet --hparams JSON \
        --spec '{"sparsity": 0.5, "select_after": 0.7}' --tag a_mask_poe --out-mask M.mask --summary M.json

``--spec`` holds the run's settings (``tracks.nlu.srnets.spec.MaskTrainingSpec``: sparsity, initialisation,
schedule, threshold resets, evaluation and selection). Writes the best mask (ID dev accuracy every ``eval_every``
steps, candidates from step ``select_after`` x total on; thresholds reset to the sparsity before saving, so the
mask meets it per matrix), then ``--summary`` last. The weights never change; the mask records the start model's
fingerprint.

Sweeps run several of these in one process (start-up paid once), each into its own folder below ``--sweep-dir``:
``--sparsities 0.2 0.5 ...`` (``sparsity~0.2/``) and ``--runs JSON`` (``<name>/``, each entry overriding the start
checkpoint or spec fields: Table 5's variants, the timing study's snapshots); each run writes ``mask.mask`` and
``search.json``.

The OOD-informed upper bound (paper C section 4.5) trains on ``--train`` with other prepared sets mixed in,
``--mix-train '[{"path": "hans_train.parquet", "label_map": {"non-entailment": "contradiction"}}]'``, minus every
pair that occurs in ``--mix-exclude`` (the OOD test sets); see ``maskbench.data.mixing``.

Every argument is checked, and every input file read, before any training starts.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import time
from dataclasses import dataclass, field
from pathlib import Path

from maskbench import runtime
from maskbench.masking.apply import MaskSet, masked_modules_fingerprint, model_fingerprint
from maskbench.resume import run_key
from maskbench.steps import run_step, step_main
from maskbench.tracks.nlu.paths import level_name
from maskbench.tracks.nlu.srnets import run as srnets
from maskbench.tracks.nlu.srnets.methods import MASK_TRAIN, mask_sparsity, train_mask
from maskbench.tracks.nlu.srnets.spec import MaskTrainingSpec
from maskbench.workflow import staging

PRICED_AS = "training"  # how the cost sheet prices a job of this step (maskbench.workflow.cost.sheet)
log = logging.getLogger("maskbench.steps.nlu.srnet_mask_train")

MASK_FILE, SUMMARY_FILE = "mask.mask", "search.json"


@dataclass
class MaskTrainArgs(srnets.SrnetArgs):
    out_mask: Path | None = field(default=None, metadata={"help": "mask file to write (.mask)"})
    summary: Path | None = field(default=None, metadata={"help": "JSON summary, written last"})
    sparsities: list[float] = field(default_factory=list, metadata={
        "help": "sweep: one run per sparsity, written to <--sweep-dir>/sparsity~<s>/{mask.mask,search.json} "
                "(instead of the spec's sparsity, --out-mask and --summary)"})
    runs: str = field(default="", metadata={
        "help": "sweep: JSON list of runs, each {\"name\": N, \"start_dir\": D, ...spec fields}, written to "
                "<--sweep-dir>/<N>/{mask.mask,search.json} (Table 5's schedules, the timing study's start "
                "checkpoints)"})
    sweep_dir: Path | None = field(default=None, metadata={"help": "the folder of a sweep's runs"})


def parse_runs(args: MaskTrainArgs) -> dict[str, dict]:
    """``--runs``: name -> overrides (start_dir and spec fields; a name is one folder level of plain characters)."""
    try:
        items = json.loads(args.runs)
    except json.JSONDecodeError as err:
        raise ValueError(f"--runs: not JSON ({err}): {args.runs[:80]!r}") from err
    if not isinstance(items, list) or not items:
        raise ValueError(f"--runs must be a non-empty JSON list of objects, got {args.runs[:80]!r}")
    allowed = {"start_dir", *(f.name for f in dataclasses.fields(MaskTrainingSpec))}
    runs: dict[str, dict] = {}
    for i, item in enumerate(items):
        name = item.get("name") if isinstance(item, dict) else None
        if (not isinstance(name, str) or name.strip(".") == "" or
                not all(c.isalnum() or c in "._~-" for c in name)):
            raise ValueError(f"--runs[{i}]: field 'name' must be a folder name of letters, digits and ._~-, got "
                             f"{name!r}")
        if name in runs:
            raise ValueError(f"--runs[{i}]: field 'name' {name!r} is given twice")
        unknown = sorted(set(item) - {"name", *allowed})
        if unknown:
            raise ValueError(f"--runs[{i}] ({name}): {unknown} cannot be set per run; choose from {sorted(allowed)}")
        runs[name] = {k: v for k, v in item.items() if k != "name"}
    return runs


def expand(args: MaskTrainArgs) -> list[tuple[MaskTrainArgs, MaskTrainingSpec]]:
    """The runs of the command, each (its arguments, its spec); every run is checked before the first starts."""
    srnets.check_common(args)
    kinds = [name for name in ("sparsities", "runs") if getattr(args, name)]
    if not kinds:
        if args.sweep_dir is not None:
            raise ValueError("--sweep-dir is only used with --sparsities or --runs")
        for name in ("dev", "out_mask", "summary"):
            if getattr(args, name) is None:
                raise ValueError(f"mask training needs --{name.replace('_', '-')}")
        runs = [(args, srnets.parse_spec(args, MaskTrainingSpec))]
    else:
        if len(kinds) > 1:
            raise ValueError("one sweep per process: --sparsities and --runs given together")
        if args.sweep_dir is None:
            raise ValueError(f"a sweep (--{kinds[0]}) needs --sweep-dir")
        if args.dev is None:
            raise ValueError("mask training needs --dev (checkpoint selection)")
        if args.out_mask is not None or args.summary is not None:
            raise ValueError(f"--{kinds[0]} replaces --out-mask and --summary")
        plain = {"sparsities": [], "runs": "", "sweep_dir": None}
        if args.runs:
            named = {name: (overrides.pop("start_dir", None), overrides)
                     for name, overrides in parse_runs(args).items()}
            specs = {name: (start, srnets.parse_spec(args, MaskTrainingSpec, **overrides))
                     for name, (start, overrides) in named.items()}
        else:
            if "sparsity" in json.loads(args.spec):
                raise ValueError("--sparsities replaces the spec's sparsity")
            specs = {level_name(s): (None, srnets.parse_spec(args, MaskTrainingSpec, sparsity=float(s)))
                     for s in args.sparsities}
        runs = []
        for name, (start, spec) in specs.items():
            folder = args.sweep_dir / name
            runs.append((dataclasses.replace(args, **plain, start_dir=Path(start) if start else args.start_dir,
                                             spec=srnets.spec_json(spec), out_mask=folder / MASK_FILE,
                                             summary=folder / SUMMARY_FILE), spec))
    srnets.unique_folders([run_args.out_mask.parent for run_args, _ in runs])
    return runs


def run(args: MaskTrainArgs, spec: MaskTrainingSpec) -> int:
    """One mask-training run."""
    common = srnets.check_common(args)
    inputs = srnets.read_inputs(args)
    model, tokenizer, device = srnets.load_start(args, inputs)
    modules = srnets.chosen_modules(args, MASK_TRAIN, spec.modules, model)
    hp = common.hp
    prepared = srnets.prepare(model, tokenizer, inputs, hp, device)
    fingerprint, steps = prepared.fingerprint, prepared.steps
    meta = srnets.common_meta(args, MASK_TRAIN, common, inputs)
    provenance = runtime.provenance(args, args.seed)
    started = time.perf_counter()
    args.summary.unlink(missing_ok=True)  # a crash below must not leave an old summary beside a new mask
    log.info("mask training on %s: %d steps, sparsity %.3f (%s, %s init), loss %s, select from %.2f x total",
             args.start_dir, steps, spec.sparsity, spec.schedule, spec.init, args.loss, spec.select_after)
    result = train_mask(model, prepared.data, common.loss_fn, hp, args.seed, device, prepared.evaluate, spec,
                        modules=modules, example_tensors=inputs.example_tensors,
                        resume=srnets.resume_of(args, args.out_mask))
    seconds = time.perf_counter() - started
    after = model_fingerprint(model)
    if after != fingerprint:
        raise RuntimeError(f"mask training changed the weights of {args.start_dir} (fingerprint {after[:16]}… "
                           f"!= {fingerprint[:16]}…); no mask written")
    per_module, overall = mask_sparsity(result.masks)
    mask_set = MaskSet(result.masks, {
        **meta, "sparsity": spec.sparsity, "exact_sparsity": overall, "init": spec.init, "alpha": spec.alpha,
        "phi": spec.phi, "schedule": spec.schedule, "initial_sparsity": spec.initial_sparsity,
        "gradual_end": spec.gradual_end, "reset_every": spec.reset_every, "eval_every": spec.eval_every,
        "select_after": spec.select_after, "modules": list(modules), "total_steps": result.total_steps,
        "selected_step": result.selected_step, "dev_accuracy": result.selected_dev_accuracy,
        "saved_mask_dev_accuracy": result.saved_dev_accuracy, "model_fingerprint": fingerprint,
        "masked_fingerprint": masked_modules_fingerprint(model, result.masks), "provenance": provenance})
    stats = mask_set.save(args.out_mask)
    runtime.atomic_write_json(args.summary, {
        "mask": str(args.out_mask), "method": MASK_TRAIN, "tag": args.tag, "sparsity": spec.sparsity,
        "exact_sparsity": overall, "module_sparsity": per_module, "total_steps": result.total_steps,
        "first_candidate_step": result.first_candidate_step, "selected_step": result.selected_step,
        "selected_dev_accuracy": result.selected_dev_accuracy,
        "saved_mask_dev_accuracy": result.saved_dev_accuracy,
        "dev_accuracies": result.evals, "sparsity_history": result.history, "curve": result.curve,
        "weights_unchanged": True, "model_fingerprint": fingerprint, "file": stats, "seconds": seconds,
        "device": str(device), "meta": {k: v for k, v in mask_set.meta.items() if k != "provenance"},
        "provenance": provenance})
    if args.checkpoint_every > 0:
        srnets.resume_of(args, args.out_mask).done()
    log.info("wrote %s: step %d selected (dev %.2f, saved mask %.2f), sparsity %.6f, %.1fs", args.out_mask,
             result.selected_step, result.selected_dev_accuracy, result.saved_dev_accuracy, overall, seconds)
    return 0


@step_main(MaskTrainArgs)
def main(args: MaskTrainArgs) -> int:
    runs = expand(args)
    sweep = bool(args.sparsities or args.runs)
    # a sweep cut off by the cluster's time limit: the runs it finished are staged outside the declared outputs
    # (which snakemake deletes) and put back when the job runs again; the run it was in resumes from its state
    parts = [([run_args.out_mask, run_args.summary], staging.part_key(
        run_key(run_args), staging.inputs_stamp([run_args.start_dir, run_args.train, run_args.dev])))
        for run_args, _ in runs]
    for (run_args, spec), (files, key) in zip(runs, parts, strict=True):
        if sweep and staging.restore(files, key):
            continue
        run(run_args, spec)
        if sweep:
            staging.keep(files, key)
    for files, key in parts if sweep else []:
        staging.discard(files, key)
    return 0


if __name__ == "__main__":
    run_step(main)
