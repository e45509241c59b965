# FFW (paper D): gates trained on each model with the MI loss, one job per (dataset, level, method, gamma, start
# model, seed); and the magnitude-pruning baseline (figure 6), all sparsities of a model in one job.


rule ffw:
    input:
        model=vmodel_marker("{vdataset}", "{level}", "{seed}"),
        train=split_path("{vdataset}", "{level}", "unbiased_train"),
        val=split_path("{vdataset}", "{level}", "unbiased_val"),
    output:
        mask=f"{R}/{VISION}/{{vdataset}}/{{level}}/masks/{{ffw_method}}/gamma~{{gamma}}/start~{{start}}/seed~{{seed}}.mask",
        summary=f"{R}/{VISION}/{{vdataset}}/{{level}}/masks/{{ffw_method}}/gamma~{{gamma}}/start~{{start}}/seed~{{seed}}.json",
    params:
        model_dir=lambda wildcards: vmodel_dir(wildcards.vdataset, wildcards.level, wildcards.seed, wildcards.start),
        settings=ffw_settings,
    log:
        f"{R}/logs/ffw/{{vdataset}}/{{level}}/{{ffw_method}}/gamma~{{gamma}}/start~{{start}}/seed~{{seed}}.log",
    benchmark:
        f"{R}/benchmarks/rules/ffw/{{vdataset}}/{{level}}/{{ffw_method}}/gamma~{{gamma}}/start~{{start}}/seed~{{seed}}.tsv"
    threads: COMPUTE["train_threads"]
    resources:
        mem_mb=COMPUTE["train_mem_mb"],
        runtime=COMPUTE["train_runtime_min"],
        gpu=training_gpus(),
    conda:
        "../../envs/maskbench.yaml"
    shell:
        "python -m maskbench.steps vision.ffw --model-dir {params.model_dir:q} --train {input.train:q}"
        " --val {input.val:q} --settings {params.settings} --method {wildcards.ffw_method} --seed {wildcards.seed}"
        " --threads {threads} --out {output.mask:q} --summary {output.summary:q} > {log:q} 2>&1"


rule magnitude_vision:
    input:
        model=vmodel_marker("{vdataset}", "{level}", "{seed}"),
    output:
        masks=[magnitude_mask("{vdataset}", "{level}", "{seed}", s) for s in VCFG["magnitude"]["sparsities"]]
        if VCFG.get("magnitude") else [],
    params:
        model_dir=lambda wildcards: vmodel_dir(wildcards.vdataset, wildcards.level, wildcards.seed),
        sparsities=" ".join(str(s) for s in VCFG["magnitude"]["sparsities"]) if VCFG.get("magnitude") else "",
        out_dir=lambda wildcards: magnitude_dir(wildcards.vdataset, wildcards.level, wildcards.seed),
    log:
        f"{R}/logs/magnitude_vision/{{vdataset}}/{{level}}/seed~{{seed}}.log",
    benchmark:
        f"{R}/benchmarks/rules/magnitude_vision/{{vdataset}}/{{level}}/seed~{{seed}}.tsv"
    threads: 1
    resources:
        mem_mb=COMPUTE["eval_mem_mb"],
        runtime=COMPUTE["eval_runtime_min"],
    conda:
        "../../envs/maskbench.yaml"
    shell:
        "python -m maskbench.steps vision.magnitude --model-dir {params.model_dir:q} --sparsities {params.sparsities}"
        " --out-dir {params.out_dir:q} > {log:q} 2>&1"


rule shrink_vision:
    input:
        masks=structured_masks(),
        test=structured_test_split(),
    output:
        benchmark=f"{R}/benchmarks/vision_structured.json",
    log:
        f"{R}/logs/shrink_vision/shrink.log",
    threads: 1
    resources:
        mem_mb=COMPUTE["eval_mem_mb"],
        runtime=COMPUTE["eval_runtime_min"],
    conda:
        "../../envs/maskbench.yaml"
    shell:
        "python -m maskbench.steps vision.shrink --masks {input.masks:q} --test {input.test:q} --threads {threads}"
        " --out {output.benchmark:q} > {log:q} 2>&1"
