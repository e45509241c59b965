# One evaluation job per (dataset, level, seed): the vanilla model and every mask found on it (and on its
# snapshots), each model and split loaded once.


rule evaluate_vision:
    input:
        unpack(vision_eval_inputs),
    output:
        # one JSON with a record per run (the runs of a level are config-derived and differ between levels)
        evals=f"{R}/{VISION}/{{vdataset}}/{{level}}/eval/seed~{{seed}}.json",
    params:
        runs=lambda wildcards: as_json(vision_runs(wildcards.vdataset, wildcards.level, wildcards.seed)),
        head=as_json(VFFW.get("head", {})),
    log:
        f"{R}/logs/evaluate_vision/{{vdataset}}/{{level}}/seed~{{seed}}.log",
    benchmark:
        f"{R}/benchmarks/rules/evaluate_vision/{{vdataset}}/{{level}}/seed~{{seed}}.tsv"
    threads: 1
    resources:
        mem_mb=COMPUTE["eval_mem_mb"],
        runtime=COMPUTE["eval_runtime_min"],
    conda:
        "../../envs/maskbench.yaml"
    shell:
        "python -m maskbench.steps vision.evaluate --runs {params.runs} --head-train {input.unbiased_train:q}"
        " --test {input.test:q} --biased-test {input.biased_test:q} --head-settings {params.head}"
        " --name {wildcards.vdataset} --level {wildcards.level:q} --seed {wildcards.seed} --threads {threads} --out {output.evals:q} > {log:q} 2>&1"
