# The cross-paper matrix's vision cells (config vision.masks): papers A's and C's masks on the vanilla model with a
# debiasing loss against a colour-only bias model, one job per (dataset, level, method, sparsity, seed); a biased
# dev split per level (id_dev) and its scores for the vanilla model and FFW's masks; the records file of the matrix.


rule vision_biased_dev:
    input:
        unpack(vision_prepare_inputs),
        train=VISION.split("{vdataset}", "{level}", "train"),
    output:
        split=VISION.biased_dev("{vdataset}", "{level}"),
    params:
        args=lambda wildcards, input, output: shell_args(
            **VISION.prepare_settings(wildcards.vdataset), train=input.train, level=wildcards.level,
            size=VISION.masks["dev_size"], dev_from=VISION.masks["dev_from"], out=output.split),
    log:
        f"{R}/logs/vision_biased_dev/{{vdataset}}/{{level}}.log",
    benchmark:
        f"{R}/benchmarks/rules/vision_biased_dev/{{vdataset}}/{{level}}.tsv"
    threads: 1
    resources:
        **VISION_LIGHT,
    conda:
        "../../envs/maskbench.yaml"
    shell:
        "python -m maskbench.steps vision.biased_dev {params.args} > {log:q} 2>&1"


rule vision_colour_bias:
    input:
        train=VISION.split("{vdataset}", "{level}", "train"),
        test=VISION.split("{vdataset}", "{level}", "test"),
        biased_test=VISION.split("{vdataset}", "{level}", "biased_test"),
    output:
        probs=VISION.colour_bias("{vdataset}", "{level}", "probs"),
        summary=VISION.colour_bias("{vdataset}", "{level}", "summary"),
    params:
        args=lambda wildcards, input, output: shell_args(
            train=input.train, test=input.test, biased_test=input.biased_test,
            settings=VISION.masks.get("colour_model", {}), probs=output.probs, summary=output.summary),
    log:
        f"{R}/logs/vision_colour_bias/{{vdataset}}/{{level}}.log",
    benchmark:
        f"{R}/benchmarks/rules/vision_colour_bias/{{vdataset}}/{{level}}.tsv"
    threads: 1
    resources:
        **VISION_LIGHT,
    conda:
        "../../envs/maskbench.yaml"
    shell:
        "python -m maskbench.steps vision.colour_bias {params.args} > {log:q} 2>&1"


MASK_RUN = VISION.mask_stem("{vdataset}", "{level}", "{mask_method}", "{sparsity}", "{seed}")


rule vision_debias_mask:
    input:
        model=VISION.model_marker("{vdataset}", "{level}", "{seed}"),
        train=VISION.split("{vdataset}", "{level}", "train"),
        bias_probs=VISION.colour_bias("{vdataset}", "{level}", "probs"),
        test=VISION.split("{vdataset}", "{level}", "test"),
        biased_test=VISION.split("{vdataset}", "{level}", "biased_test"),
        biased_dev=VISION.biased_dev("{vdataset}", "{level}"),
        head_train=VISION.split("{vdataset}", "{level}", "unbiased_train"),
    output:
        mask=f"{MASK_RUN}.mask",
        record=f"{MASK_RUN}.json",
    params:
        args=lambda wildcards, input, output: shell_args(
            **VISION.mask_job(wildcards.vdataset, wildcards.level, wildcards.mask_method, wildcards.sparsity),
            model_dir=os.path.dirname(input.model), train=input.train, bias_probs=input.bias_probs,
            test=input.test, biased_test=input.biased_test, biased_dev=input.biased_dev,
            head_train=input.head_train, head_settings=VISION.head_settings, seed=wildcards.seed,
            out=output.mask, record=output.record, **precision_options(config, "vision")),
    log:
        f"{R}/logs/vision_debias_mask/{{vdataset}}/{{level}}/{{mask_method}}/sparsity~{{sparsity}}/seed~{{seed}}.log",
    benchmark:
        f"{R}/benchmarks/rules/vision_debias_mask/{{vdataset}}/{{level}}/{{mask_method}}/sparsity~{{sparsity}}/seed~{{seed}}.tsv"
    threads: COMPUTE["train_threads"]
    resources:
        **VISION_TRAINING,
    conda:
        "../../envs/maskbench.yaml"
    shell:
        "python -m maskbench.steps vision.debias_mask {params.args} --threads {threads} > {log:q} 2>&1"


rule vision_dev_scores:
    input:
        model=VISION.model_marker("{vdataset}", "{level}", "{seed}"),
        masks=lambda wildcards: [run.mask for run in VISION.dev_runs(wildcards.vdataset, wildcards.level,
                                                                       wildcards.seed) if run.mask],
        biased_dev=VISION.biased_dev("{vdataset}", "{level}"),
    output:
        scores=VISION.dev_scores("{vdataset}", "{level}", "{seed}"),
    params:
        args=lambda wildcards, input, output: shell_args(
            runs=Json([run.record() for run in VISION.dev_runs(wildcards.vdataset, wildcards.level,
                                                               wildcards.seed)]),
            biased_dev=input.biased_dev, seed=wildcards.seed, out=output.scores),
    log:
        f"{R}/logs/vision_dev_scores/{SEED_JOB}.log",
    benchmark:
        f"{R}/benchmarks/rules/vision_dev_scores/{SEED_JOB}.tsv"
    threads: 1
    resources:
        **VISION_LIGHT,
    conda:
        "../../envs/maskbench.yaml"
    shell:
        "python -m maskbench.steps vision.dev_scores {params.args} --threads {threads} > {log:q} 2>&1"


rule matrix_cells_vision:
    input:
        **VISION.matrix_inputs(),
    output:
        cells=VISION.matrix_cells,
    params:
        args=lambda wildcards, output: shell_args(manifest=VISION.matrix_manifest(), out=output.cells),
    log:
        f"{R}/logs/matrix_cells_vision/cells.log",
    benchmark:
        f"{R}/benchmarks/rules/matrix_cells_vision/cells.tsv"
    localrule: True
    threads: 1
    resources:
        **LIGHT_RESOURCES,
    conda:
        "../../envs/maskbench.yaml"
    shell:
        "python -m maskbench.steps vision.matrix_cells {params.args} > {log:q} 2>&1"
