"""How a sweep point of the trade-off is named in paths and evaluation JSONs: standard library only, so that the
rules can import it when the Snakefile is parsed (no pandas, no report code at parse time)."""

from __future__ import annotations

from collections.abc import Mapping


def point_name(row: str, knob: str, value: float) -> str:
    """The name a sweep point's files and evaluation JSONs carry."""
    return f"{row}@{knob}~{value_text(value)}"


def value_text(value: float) -> str:
    """A knob value as it appears in paths: 0.03, 1e-05, 2 (``format(v, "g")``)."""
    return format(float(value), "g")


class SweepPlan:
    """The trade-off curves' points (config `tradeoff.sweeps`): every swept Table 1 row re-run at every value of
    its strength knobs. A point is a run with files of its own, evaluated under the name <row>@<knob>~<value>; the
    row's configured value is its Table 1 run, not re-run. `plan` is the track's NluPlan."""

    def __init__(self, plan, hyperparameters: Mapping[str, Mapping[str, float]]):
        self.plan = plan
        self.tradeoff = plan.config.get("tradeoff") or {}
        self.sweeps = self.tradeoff.get("sweeps") or {}
        self.hyperparameters = hyperparameters
        self.loss_knobs = {name for spec in {**plan.sd, **plan.md}.values() for name in hyperparameters[spec["loss"]]}
        # (row, knob, value as in paths) -> the value as the config wrote it: a job finds its value by lookup
        self.values = {(row, knob, value_text(v)): float(v)
                       for row, knobs in self.sweeps.items() for knob, values in knobs.items() for v in values}

    def knob_current(self, task: str, row: str, knob: str) -> float:
        """The value the row's own Table 1 run uses for `knob` (on `task`)."""
        spec = self.plan.md.get(row) or self.plan.sd[row]
        if knob in self.loss_knobs:
            return float((spec.get("loss_hparams") or {}).get(knob, self.hyperparameters[spec["loss"]][knob]))
        if row in self.plan.md:
            return float(self.plan.mask_search[knob] if knob == "l1_lambda" else self.plan.mask_search_hparams()[knob])
        return float(self.plan.finetune_hparams(task)[knob])

    def points(self, kind: str | None = None) -> list[dict]:
        """Every point: {point, task, method, knob, value, run} — run False for the row's own Table 1 run; `kind`
        "mask" or "model" keeps the points of mask rows or of fine-tuned rows."""
        found = []
        for row, knobs in self.sweeps.items():
            if kind is not None and (row in self.plan.md) != (kind == "mask"):
                continue
            for task in self.plan.tasks:
                for knob, values in knobs.items():
                    current = self.knob_current(task, row, knob)
                    for value in sorted({float(v) for v in values} | {current}):
                        own = value == current
                        found.append({"point": row if own else point_name(row, knob, value), "task": task,
                                      "method": row, "knob": knob, "value": value, "run": not own})
        return found

    def run_points(self, task: str, kind: str) -> list[dict]:
        return [p for p in self.points(kind) if p["task"] == task and p["run"]]

    def point_file(self, point: Mapping, seed, kind: str) -> str:
        stem = self.plan.sweep_stem(point["task"], point["method"], point["knob"], value_text(point["value"]), seed)
        return f"{stem}.mask" if kind == "mask" else f"{stem}/model.safetensors"

    def point_evals(self) -> list[str]:
        """The evaluation JSONs of the points that are runs of their own (Table 1's "selected" rows read them)."""
        return sorted(self.plan.evaluation_json(p["task"], p["point"], s, e) for p in self.points() if p["run"]
                      for s in self.plan.seeds for e in self.plan.eval_set_names(p["task"]))

    def engagement_runs(self) -> list[dict]:
        """The points that are runs of their own, as the engagement table's {row, task, seed, kind, path} under their
        point names (a mask point by its search's summary, a fine-tuned one by its train_summary.json): Table 1's
        "selected" row is labelled by its point's runs."""
        runs = []
        for point in (p for p in self.points() if p["run"]):
            mask = point["method"] in self.plan.md
            for seed in self.plan.seeds:
                stem = self.plan.sweep_stem(point["task"], point["method"], point["knob"], value_text(point["value"]), seed)
                runs.append({"row": point["point"], "task": point["task"], "seed": int(seed),
                             "kind": "mask_search" if mask else "fine_tuning",
                             "path": f"{stem}.search.json" if mask else f"{stem}/train_summary.json"})
        return runs

    def lines(self) -> list[dict]:
        return [{"task": t, "method": row, "knob": knob} for row, knobs in self.sweeps.items()
                for t in self.plan.tasks for knob in knobs]

    def evals(self) -> list[str]:
        names = {("baseline", t) for t in self.plan.tasks} | {(p["point"], p["task"]) for p in self.points()}
        return sorted(self.plan.evaluation_json(t, name, s, e) for name, t in names for s in self.plan.seeds
                      for e in self.plan.eval_set_names(t))

    def figures(self) -> dict[str, str]:
        return {f"{t}:{e}": self.plan.figure(f"tradeoff/{t}_{e}.png") for t in self.plan.tasks
                for e in self.plan.eval_set_names(t) if e != self.plan.config["tasks"][t]["dev"]}

    def with_knob(self, values: Mapping, row: str, knob: str, value: str, keys) -> dict:
        """`values` with the point's knob set, when the knob is one of `keys` (`value` as in the point's path)."""
        out = dict(values)
        if knob in keys:
            number = self.values[(row, knob, value)]
            out[knob] = int(number) if knob == "epochs" else number
        return out

    def row_settings(self, row: str) -> tuple[str, str]:
        """(loss, bias folder name) of a swept row's runs."""
        spec = self.plan.md.get(row) or self.plan.sd[row]
        return spec["loss"], (self.plan.mask_source(row) if row in self.plan.md else spec["bias"])

    def outputs(self) -> list[str]:
        return [self.plan.table("tradeoff.csv"), self.plan.table("tradeoff_summary.md"),
                self.plan.table("tradeoff_selection.csv"), *self.figures().values()]
