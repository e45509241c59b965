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


# training jobs (models, FFW gates) ask for the training compute and a GPU; the others for the evaluation compute
TRAINING = {"mem_mb": COMPUTE["train_mem_mb"], "runtime": COMPUTE["train_runtime_min"], "gpu": training_gpus()}
LIGHT = {"mem_mb": COMPUTE["eval_mem_mb"], "runtime": COMPUTE["eval_runtime_min"]}


def vision_prepare_inputs(wildcards):
    return VISION.prepare_inputs(wildcards.vdataset)


def vision_eval_inputs(wildcards):
    return VISION.evaluate_inputs(wildcards.vdataset, wildcards.level, wildcards.seed)


for _target, _files in VISION.targets().items():
    TARGETS[_target] += _files
