# The vision track (paper D): its plan (levels, runs, paths and each step's settings, read from the config by
# src/maskbench/tracks/vision/workflow_plan.py), its wildcards, the compute of its jobs and the files each Snakefile
# target builds. Module-level code only reads the config: it re-runs inside every cluster job.
from maskbench.tracks.vision.workflow_plan import FFW_METHODS, SPLITS, VisionPlan

VISION = VisionPlan.of(config)


wildcard_constraints:
    vdataset=alternation(list(VISION.datasets)),
    level=r"[A-Za-z0-9_.-]+",
    split=alternation(SPLITS),
    ffw_method=alternation(FFW_METHODS),
    gamma=r"[0-9.e+-]+",
    start=r"final|epoch~\d+",
    mask_method=alternation(VISION.masks["methods"] if VISION.masks else []),
    sparsity=r"[0-9.e+-]+",


# training jobs (models, FFW gates) ask for the training compute and a GPU; the others for the evaluation compute
VISION_TRAINING = {"mem_mb": COMPUTE["train_mem_mb"], "runtime": COMPUTE["train_runtime_min"],
                   "gpu": training_gpus()}
VISION_LIGHT = {"mem_mb": COMPUTE["eval_mem_mb"], "runtime": COMPUTE["eval_runtime_min"]}


# an FFW run's files (.mask, .json); the wildcards of a model's jobs and of an FFW job in the log folders
FFW_RUN = VISION.ffw_stem("{vdataset}", "{level}", "{ffw_method}", "{gamma}", "{start}", "{seed}")
SEED_JOB = "{vdataset}/{level}/seed~{seed}"
FFW_JOB = "{vdataset}/{level}/{ffw_method}/gamma~{gamma}/start~{start}/seed~{seed}"


def ffw_args(wildcards, input, output):
    """The FFW run its mask's path names, looked up in the plan: its start model, typed gamma and settings."""
    job = VISION.ffw_job(wildcards.vdataset, wildcards.level, wildcards.ffw_method, wildcards.gamma, wildcards.start,
                         wildcards.seed)
    return shell_args(**job, train=input.train, val=input.val, seed=wildcards.seed,
                      out=output.mask, summary=output.summary, **late_resume_options(),
                      **precision_options(config, "vision"))


def vision_prepare_inputs(wildcards):
    return VISION.prepare_inputs(wildcards.vdataset)


def vision_eval_inputs(wildcards):
    return VISION.evaluate_inputs(wildcards.vdataset, wildcards.level, wildcards.seed)


for _target, _files in VISION.targets().items():
    TARGETS[_target] += _files
# paper D's targets: each of its tables' runs and evaluations (the datasets whose `table:` it is; the tables are
# rendered together by vision_report, target paper_d), and the whole paper
for _table in sorted({spec["table"] for spec in VISION.datasets.values() if spec.get("table")}):
    PAPER_TARGETS[f"paper_d_table{_table}"] = [VISION.eval_json(*lv, seed) for lv, seed in VISION.grid
                                               if VISION.datasets[lv.dataset].get("table") == _table]
PAPER_TARGETS["paper_d"] = VISION.targets()["all"]
# the cross-paper matrix's vision cells (vision.masks; rules/vision/masks.smk), when the config has a matrix
if VISION.masks and config.get("matrix"):
    MATRIX_CELLS.append(VISION.matrix_cells)
