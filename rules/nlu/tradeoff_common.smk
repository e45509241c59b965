# The trade-off curves' names and input functions (config `tradeoff:`; the rules are in rules/nlu/tradeoff.smk).
# The points, their files and each point's settings: maskbench.tracks.nlu.sweep_points.SweepPlan.
from types import SimpleNamespace

from maskbench.objectives.needs import HYPERPARAMETERS
from maskbench.tracks.nlu.sweep_points import SweepPlan

SW = SweepPlan(P, HYPERPARAMETERS)
TRADEOFF, SWEEPS = SW.tradeoff, SW.sweeps


def sweep_row_args(wildcards):
    """A sweep point's job as the rules' own input functions read a row's job."""
    loss, source = SW.row_settings(wildcards.row)
    return SimpleNamespace(task=wildcards.task, seed=wildcards.seed, loss=loss, source=source)


def swept(values, wildcards, keys):
    """`values` with the point's knob set, when the knob is one of `keys`."""
    return SW.with_knob(values, wildcards.row, wildcards.knob, wildcards.value, keys)


def sweep_loss_hparams(wildcards):
    spec = MD.get(wildcards.row) or SD[wildcards.row]
    return swept(spec.get("loss_hparams") or {}, wildcards, SW.loss_knobs)


def sweep_eval_inputs_of(task, kind, points):
    """Inputs of evaluate_sweep_<kind>s_<task>: the points' masks (with the frozen baseline they apply to) or
    checkpoints for the job's seed, and the task's evaluation sets."""

    def inputs(wildcards):
        found = {"points": [SW.point_file(p, wildcards.seed, kind) for p in points],
                 "data": [prepared_path(e) for e in eval_set_names(task)]}
        if kind == "mask":
            found["model"] = f"{checkpoint_dir(task, wildcards.seed)}/model.safetensors"
        return found

    return inputs


if SWEEPS:
    TARGETS["all"] += SW.outputs()
    TARGETS["evaluate"] += SW.evals()
