# One evaluation job per (dataset, level, seed): the vanilla model and every mask found on it (and on its
# snapshots), each model and split loaded once.


rule evaluate_vision:
    input:
        unpack(vision_eval_inputs),
    output:
        # one JSON with a record per run (the runs of a level are config-derived and differ between levels)
        evals=VISION.eval_json("{vdataset}", "{level}", "{seed}"),
    params:
        args=lambda wildcards, input, output: shell_args(
            **VISION.evaluate_settings(wildcards.vdataset, wildcards.level, wildcards.seed),
            head_train=input.unbiased_train, test=input.test, biased_test=input.biased_test,
            out=output.evals, **precision_options(config, "vision")),
    log:
        f"{R}/logs/evaluate_vision/{SEED_JOB}.log",
    benchmark:
        f"{R}/benchmarks/rules/evaluate_vision/{SEED_JOB}.tsv"
    threads: 1
    resources:
        **VISION_LIGHT,
    conda:
        "../../envs/maskbench.yaml"
    shell:
        "python -m maskbench.steps vision.evaluate {params.args} --threads {threads} > {log:q} 2>&1"
