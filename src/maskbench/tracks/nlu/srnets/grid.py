"""Paper C's run grid and every run's settings, read off config ``srnets`` (rules/nlu/srnets*.smk plan with them).

Without torch, so that planning imports it in milliseconds. The settings are what the steps take as typed JSON
(``--spec``: ``srnets.spec``'s dataclasses, where the methods' defaults are written; ``--hparams``: TrainHParams),
never option strings.
"""

from __future__ import annotations

from collections.abc import Mapping

from maskbench.tracks.nlu.search_section import split_search_section

# Figure 1's paradigms: (a) subnetworks of the fine-tuned model, (b) the masks of other runs fine-tuned in
# isolation from theta_pt, (c) subnetworks of theta_pt. One row per kind of run, expanded once over its losses
# (`{loss}` in the name and the start). start: ft (theta_ft), ft_<loss> (figure 3's debiased start), init
# (theta_pt); paradigm None: a run that only feeds another (IMP-rewind, the source of a paradigm (b) mask).
# A loss other than ce reads the sweep's bias model (srnets.debias.bias).
#       name                      paradigm  method        start        losses (a key of _losses)  other
GRID = (("a_mask_{loss}",          "a",      "mask_train", "ft",        "ce+losses",       {}),
        ("a_imp_{loss}",           "a",      "imp",        "ft",        "ce+imp_losses",   {}),
        ("c_mask_{loss}",          "c",      "mask_train", "init",      "ce+init_losses",  {}),
        ("b_mask_retrain_{loss}",  "b",      "retrain",    "init",      "retrain_mask",    {"source": "a_mask_{first}"}),
        ("b_imprw_retrain_{loss}", "b",      "retrain",    "init",      "retrain_imprw",   {"source": "b_imprw_{first}"}),
        ("b_imprw_{loss}",         None,     "imp_rewind", "init",      "first_imprw",     {}),
        ("a_{loss}ft_mask_{loss}", "a",      "mask_train", "ft_{loss}", "debiased_start",  {}),
        ("a_{loss}ft_imp_{loss}",  "a",      "imp",        "ft_{loss}", "debiased_start",  {}),
        # section 4.5: CE on the training set with OOD training data mixed in
        ("a_mask_ood",             "a",      "mask_train", "ft",        "ood_a",           {"ood": True}),
        ("c_mask_ood",             "c",      "mask_train", "init",      "ood_c",           {"ood": True}))

NAMED_SWEEPS = ("t5", "timing")  # one job per (task, seed): Table 5's schedules, the timing study's starts
SECTION = {"mask_train": "mask_training", "imp": "imp", "imp_rewind": "imp", "retrain": "retrain"}
METHOD_NAMES = {"mask_train": "mask train", "imp": "IMP", "imp_rewind": "IMP-rewind", "retrain": "retrain"}


def _losses(srn: Mapping) -> dict[str, list[str]]:
    """What each row of GRID runs with."""
    debias = srn.get("debias") or {}
    first, sources = debias.get("losses", [])[:1], debias.get("retrain_from", [])
    retrain = ["ce", *debias.get("retrain_losses", [])] if first else []
    paradigms = (srn.get("ood_informed") or {}).get("paradigms", [])
    return {"ce+losses": ["ce", *debias.get("losses", [])], "ce+imp_losses": ["ce", *debias.get("imp_losses", [])],
            "ce+init_losses": ["ce", *debias.get("init_mask_losses", [])],
            "retrain_mask": retrain if "mask_train" in sources else [],
            "retrain_imprw": retrain if "imp_rewind" in sources else [],
            "first_imprw": first if "imp_rewind" in sources else [],
            "debiased_start": [debias["debiased_start"]] if debias.get("debiased_start") else [],
            "ood_a": ["ce"] if "a" in paradigms else [], "ood_c": ["ce"] if "c" in paradigms else []}


def grid(srn: Mapping) -> dict[str, dict]:
    """run name -> {paradigm, method, loss, start[, source][, ood]}: every run of config ``srnets``."""
    if not srn:
        return {}
    losses = _losses(srn)
    first = ((srn.get("debias") or {}).get("losses") or [""])[0]
    return {name.format(loss=loss): {"paradigm": paradigm, "method": method, "loss": loss,
                                     "start": start.format(loss=loss),
                                     **{k: v.format(first=first) if isinstance(v, str) else v for k, v in other.items()}}
            for name, paradigm, method, start, row, other in GRID for loss in losses[row]}


def named_sweeps(srn: Mapping) -> list[str]:
    return [run for run, key in zip(NAMED_SWEEPS, ("table5", "timing"), strict=True)
            if (srn.get(key) or {}).get("variants" if run == "t5" else "steps")]


def settings(srn: Mapping, section: str | None, task: str) -> dict:
    """``srnets.<section>`` for one task: its ``tasks.<task>`` entry merged in, ``hparams`` key by key (paper C
    trains MNLI 5 epochs at 5e-5, QQP and FEVER 7 at 2e-5, FEVER evaluating every 500 steps)."""
    base = dict(srn.get(section) or {}) if section else {}
    override = (base.pop("tasks", None) or {}).get(task, {})
    merged = {**base, **{k: v for k, v in override.items() if k != "hparams"}}
    merged["hparams"] = {**base.get("hparams", {}), **override.get("hparams", {})}
    return merged


def method_of(runs: Mapping, run: str) -> str:
    return "mask_train" if run in NAMED_SWEEPS else runs[run]["method"]


def hparams(srn: Mapping, runs: Mapping, run: str, task: str) -> dict:
    """The run's TrainHParams: ``srnets.<its method's section>.hparams`` (mask training at its
    ``score_learning_rate``), with the OOD-informed and Table 5 overrides."""
    extra = "ood_informed" if runs.get(run, {}).get("ood") else "table5" if run == "t5" else None
    _, optimiser = split_search_section(settings(srn, SECTION[method_of(runs, run)], task))
    return {**optimiser, **settings(srn, extra, task)["hparams"]}


def spec(srn: Mapping, runs: Mapping, run: str, task: str) -> dict:
    """The run's ``--spec``: mask training's settings as the config gives them (unset keys: the spec's defaults),
    checkpoints selected from ``srnets.select_after`` on a fine-tuned start and from 0 on theta_pt, a named sweep's
    sparsity; IMP's last level (``imp_levels``) and rewinding; nothing for retraining (the spec's defaults)."""
    method = method_of(runs, run)
    if method in ("imp", "imp_rewind"):
        return {"rewind": method == "imp_rewind", "final_sparsity": imp_levels(srn)[-1]}
    if method == "retrain":
        return {}
    out, _ = split_search_section(settings(srn, "mask_training", task))
    out.update({"select_after": srn["select_after"]} if "select_after" in srn else {})
    if runs.get(run, {}).get("start") == "init":
        out["select_after"] = 0.0
    if run in NAMED_SWEEPS:
        sparsity = srn["table5"]["sparsity"] if run == "t5" else srn["timing"]["sparsity"]
        out["sparsity"] = float(sparsity[task] if isinstance(sparsity, Mapping) else sparsity)
    return out


def named_runs(srn: Mapping, run: str) -> dict[str, tuple[str, int | None, dict]]:
    """The runs of a named sweep: name -> (start, snapshot step, spec overrides). t5: Table 5's variants on
    theta_ft; timing: theta_pt (step 0), theta_ft's fine-tuning snapshots and its end."""
    if run == "t5":
        return {name: ("ft", None, {"init": variant["init"], "schedule": "fixed", **(
                    {"schedule": "gradual", "initial_sparsity": variant["initial_sparsity"]}
                    if variant.get("initial_sparsity") is not None else {})})
                for name, variant in srn["table5"]["variants"].items()}
    return {"step~0": ("init", None, {}), **{f"step~{n}": ("snapshot", n, {}) for n in srn["timing"]["steps"]},
            "step~end": ("ft", None, {})}


def loss_of(srn: Mapping, runs: Mapping, run: str) -> str:
    return srn["table5"]["loss"] if run == "t5" else "ce" if run == "timing" else runs[run]["loss"]


def report_labels(runs: Mapping) -> dict[str, dict]:
    """run -> what the report labels it with (paradigm, method, loss); retrain runs name their mask's method."""
    labels = {}
    for run, spec_ in runs.items():
        if not spec_["paradigm"]:
            continue
        method = METHOD_NAMES[spec_["method"]]
        if spec_.get("source"):
            method = f"{METHOD_NAMES[runs[spec_['source']]['method']]} mask → retrain"
        if spec_["start"].startswith("ft_"):
            method = f"{method} of the {spec_['start'][len('ft_'):]}-fine-tuned model"
        loss = f"{spec_['loss']} + OOD data" if spec_.get("ood") else spec_["loss"]
        labels[run] = {"paradigm": spec_["paradigm"], "method": method, "loss": loss}
    return labels


def tasks_of(srn: Mapping, runs: Mapping, run: str, tasks: list[str]) -> list[str]:
    """The tasks (of ``tasks``, the swept ones) a run covers: the timing study's and the OOD-informed runs' own."""
    if run == "timing":
        return [t for t in tasks if t in srn["timing"].get("tasks", tasks)]
    if run in runs and runs[run].get("ood"):
        return [t for t in tasks if t in srn["ood_informed"]["train"]]
    return list(tasks)


def imp_levels(srn: Mapping) -> list[float]:
    """IMP writes every 10% level up to the largest swept sparsity."""
    return [round(0.1 * k, 1) for k in range(1, int(round(max(srn["sparsities"]) * 10)) + 1)]


def theta_ft_hparams(srn: Mapping, finetune: Mapping, task: str, loss: str) -> dict:
    """theta_ft's fine-tuning: ``finetune``'s hyper-parameters with ``srnets.theta_ft.hparams`` and its
    ``tasks.<task>.hparams`` merged in, key by key; a debiased start also takes ``debiased_epochs.<task>`` (paper C:
    PoE and conf-reg fine-tune MNLI for 5 epochs, not 3)."""
    merged = {**finetune, **settings(srn, "theta_ft", task)["hparams"]}
    epochs = (srn["theta_ft"].get("debiased_epochs") or {}).get(task)
    return {**merged, "epochs": epochs} if loss != "ce" and epochs else merged


def mix_train(srn: Mapping, task: str, paths: list[str]) -> list[dict]:
    """The OOD-informed runs' ``--mix-train``: each mixed-in set (its prepared ``paths``) with its repeat and label
    map."""
    return [{"path": path, "repeat": m["repeat"], "label_map": m.get("label_map", {})}  # repeat: the schema's default
            for path, m in zip(paths, srn["ood_informed"]["train"][task], strict=True)]
