# FFW (paper D): gates trained on each model with the MI loss, one job per (dataset, level, method, gamma, start
# model, seed); and the magnitude-pruning baseline (figure 6), all sparsities of a model in one job.


rule ffw:
    input:
        model=VISION.model_marker("{vdataset}", "{level}", "{seed}"),
        train=VISION.split("{vdataset}", "{level}", "unbiased_train"),
        val=VISION.split("{vdataset}", "{level}", "unbiased_val"),
    output:
        mask=f"{FFW_RUN}.mask",
        summary=f"{FFW_RUN}.json",
    params:
        args=ffw_args,
    log:
        f"{R}/logs/ffw/{FFW_JOB}.log",
    benchmark:
        f"{R}/benchmarks/rules/ffw/{FFW_JOB}.tsv"
    threads: COMPUTE["train_threads"]
    resources:
        **VISION_TRAINING,
    conda:
        "../../envs/maskbench.yaml"
    shell:
        "python -m maskbench.steps vision.ffw {params.args} --threads {threads} > {log:q} 2>&1"


rule magnitude_vision:
    input:
        model=VISION.model_marker("{vdataset}", "{level}", "{seed}"),
    output:
        masks=[VISION.magnitude_mask("{vdataset}", "{level}", "{seed}", s) for s in VISION.magnitude_sparsities],
    params:
        args=lambda wildcards: shell_args(
            model_dir=VISION.model_dir(wildcards.vdataset, wildcards.level, wildcards.seed),
            sparsities=VISION.magnitude_sparsities or None,
            out_dir=VISION.magnitude_dir(wildcards.vdataset, wildcards.level, wildcards.seed)),
    log:
        f"{R}/logs/magnitude_vision/{SEED_JOB}.log",
    benchmark:
        f"{R}/benchmarks/rules/magnitude_vision/{SEED_JOB}.tsv"
    threads: 1
    resources:
        **VISION_LIGHT,
    conda:
        "../../envs/maskbench.yaml"
    shell:
        "python -m maskbench.steps vision.magnitude {params.args} > {log:q} 2>&1"


rule shrink_vision:
    """D: shrunk nets"""
    input:
        masks=VISION.structured_masks,
        test=VISION.split(*VISION.figure_level, "test"),
    output:
        benchmark=VISION.shrink_benchmark,
    params:
        args=lambda wildcards, input, output: shell_args(
            masks=VISION.structured_masks, test=input.test, out=output.benchmark),
    log:
        f"{R}/logs/shrink_vision/shrink.log",
    threads: 1
    resources:
        **VISION_LIGHT,
    conda:
        "../../envs/maskbench.yaml"
    shell:
        "python -m maskbench.steps vision.shrink {params.args} --threads {threads} > {log:q} 2>&1"
