# The trade-off curves' helpers (config `tradeoff:`; the rules are in rules/nlu/tradeoff.smk): the sweep points of
# every swept Table 1 row, their paths and the settings of each point's run.
from types import SimpleNamespace

from maskbench.loss_needs import HYPERPARAMETERS
from maskbench.tracks.nlu.sweep_points import point_name, value_text


TRADEOFF = config.get("tradeoff") or {}
SWEEPS = TRADEOFF.get("sweeps") or {}
LOSS_KNOBS = {name for spec in {**SD, **MD}.values() for name in HYPERPARAMETERS[spec["loss"]]}


def knob_current(task, row, knob):
    """The value the row's own Table 1 run uses for `knob` (on `task`)."""
    spec = MD.get(row) or SD[row]
    if knob in LOSS_KNOBS:
        return float((spec.get("loss_hparams") or {}).get(knob, HYPERPARAMETERS[spec["loss"]][knob]))
    if row in MD:
        return float(MASK_SEARCH[knob] if knob == "l1_lambda" else mask_search_hparams()[knob])
    return float(finetune_hparams(task)[knob])


def sweep_points(kind=None):
    """Every point: {point, task, method, knob, value, run} — run False for the row's own Table 1 run."""
    points = []
    for row, knobs in SWEEPS.items():
        if kind is not None and (row in MD) != (kind == "mask"):
            continue
        for task in TASKS:
            for knob, values in knobs.items():
                current = knob_current(task, row, knob)
                listed = sorted({float(v) for v in values} | {current})
                for value in listed:
                    own = value == current
                    points.append({"point": row if own else point_name(row, knob, value), "task": task,
                                   "method": row, "knob": knob, "value": value, "run": not own})
    return points


def run_points(task, kind):
    return [p for p in sweep_points(kind) if p["task"] == task and p["run"]]


def sweep_stem(task, row, knob, value, seed):
    return f"{R}/{NLU}/{task}/{MODEL}/sweeps/{row}/{knob}~{value}/seed~{seed}"


def sweep_point_file(p, seed, kind):
    stem = sweep_stem(p["task"], p["method"], p["knob"], value_text(p["value"]), seed)
    return f"{stem}.mask" if kind == "mask" else f"{stem}/model.safetensors"


def sweep_eval_inputs_of(task, kind, points):
    """Inputs of evaluate_sweep_<kind>s_<task>: the points' masks (with the frozen baseline they apply to) or
    checkpoints for the job's seed, and the task's evaluation sets."""

    def inputs(wildcards):
        found = {"points": [sweep_point_file(p, wildcards.seed, kind) for p in points],
                 "data": [prepared_path(e) for e in eval_set_names(task)]}
        if kind == "mask":
            found["model"] = f"{checkpoint_dir(task, wildcards.seed)}/model.safetensors"
        return found

    return inputs


def sweep_eval_head(kind, input):
    """The start of an evaluate_sweep_<kind>s_<task> command: the masks on the frozen baseline (evaluate_masks, one
    model loaded), or the points' checkpoints (evaluate)."""
    if kind == "mask":
        return (f"python -m maskbench.steps nlu.evaluate_masks --model-dir {quoted(os.path.dirname(input.model))}"
                f" --masks {quoted(list(input.points))}")
    return f"python -m maskbench.steps nlu.evaluate --model-dirs {quoted([os.path.dirname(m) for m in input.points])}"


def sweep_point_evals():
    """The evaluation JSONs of the points that are runs of their own (Table 1's "selected" rows read them)."""
    return sorted(evaluation_json(p["task"], p["point"], s, e) for p in sweep_points() if p["run"] for s in SEEDS
                  for e in eval_set_names(p["task"]))


def sweep_lines():
    return [{"task": t, "method": row, "knob": knob} for row, knobs in SWEEPS.items() for t in TASKS for knob in knobs]


def tradeoff_evals():
    names = {("baseline", t) for t in TASKS} | {(p["point"], p["task"]) for p in sweep_points()}
    return sorted(evaluation_json(t, name, s, e) for name, t in names for s in SEEDS for e in eval_set_names(t))


def tradeoff_figures():
    return {f"{t}:{e}": f"{R}/figures/tradeoff/{t}_{e}.png" for t in TASKS for e in eval_set_names(t)
            if e != config["tasks"][t]["dev"]}


def swept_value(wildcards):
    """The knob's value of a point job (from its path), as the config wrote it."""
    return next(float(v) for v in SWEEPS[wildcards.row][wildcards.knob] if value_text(v) == wildcards.value)


def with_knob(values, wildcards, keys):
    """`values` with the point's knob set, when the knob is one of `keys`."""
    out = dict(values)
    if wildcards.knob in keys:
        value = swept_value(wildcards)
        out[wildcards.knob] = int(value) if wildcards.knob == "epochs" else value
    return out


def sweep_loss_hparams(wildcards):
    spec = MD.get(wildcards.row) or SD[wildcards.row]
    return as_json(with_knob(spec.get("loss_hparams") or {}, wildcards, LOSS_KNOBS))


def sweep_row_args(wildcards):
    """The row's run settings as the rules' own input functions read them."""
    spec = MD.get(wildcards.row) or SD[wildcards.row]
    source = mask_source(wildcards.row) if wildcards.row in MD else spec["bias"]
    return SimpleNamespace(task=wildcards.task, seed=wildcards.seed, loss=spec["loss"], source=source)


if SWEEPS:
    TARGETS["all"] += [f"{R}/tables/tradeoff.csv", f"{R}/tables/tradeoff_summary.md",
                       f"{R}/tables/tradeoff_selection.csv", *tradeoff_figures().values()]
    TARGETS["evaluate"] += tradeoff_evals()
