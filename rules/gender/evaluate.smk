# SEAT of every run and of the pre-trained model itself (paper B's "original" row).


rule gender_seat:
    input:
        run=seat_run_input,
        tests=SEAT_FILES,
        encoder=GENCODER_INPUT,
    output:
        f"{GBASE}/{{grun}}/seed~{{seed}}.seat.json",
    wildcard_constraints:
        grun=r"(frozen|unfrozen)/(block\d+|head)/layers~[a-z]+/mode~[a-z]+|debias_only/layers~[a-z]+/mode~[a-z]+(/objective~[a-z0-9_]+)?",
    params:
        model=encoder_of_input,
        run=lambda wildcards, input: input.run if input.run.endswith(".mask") else os.path.dirname(input.run),
        n_samples=GCFG["seat"].get("n_samples", 100000),
        seed=GCFG["seat"].get("seed", 0),
    log:
        f"{R}/logs/gender_seat/{GMODEL}/{{grun}}/seed~{{seed}}.log",
    benchmark:
        f"{R}/benchmarks/rules/gender_seat/{GMODEL}/{{grun}}/seed~{{seed}}.tsv"
    threads: 1
    resources:
        mem_mb=COMPUTE["eval_mem_mb"],
        runtime=COMPUTE["eval_runtime_min"],
    conda:
        "../../envs/maskbench.yaml"
    shell:
        "python -m maskbench.steps gender.seat --model {params.model:q} --run {params.run:q}"
        " --tests {input.tests:q} --n-samples {params.n_samples} --seed {params.seed} --threads {threads}"
        " --out {output:q} > {log:q} 2>&1"


rule gender_seat_original:
    input:
        tests=SEAT_FILES,
        encoder=GENCODER_INPUT,
    output:
        GENDER_ORIGINAL_SEAT,
    params:
        model=encoder_of_input,
        n_samples=GCFG["seat"].get("n_samples", 100000),
        seed=GCFG["seat"].get("seed", 0),
    log:
        f"{R}/logs/gender_seat/{GMODEL}/original.log",
    benchmark:
        f"{R}/benchmarks/rules/gender_seat/{GMODEL}/original.tsv"
    threads: 1
    resources:
        mem_mb=COMPUTE["eval_mem_mb"],
        runtime=COMPUTE["eval_runtime_min"],
    conda:
        "../../envs/maskbench.yaml"
    shell:
        "python -m maskbench.steps gender.seat --model {params.model:q} --tests {input.tests:q}"
        " --n-samples {params.n_samples} --seed {params.seed} --threads {threads} --out {output:q} > {log:q} 2>&1"


# Paper B's GLUE column: a run's encoder under a new head, fine-tuned on a task with its pruned weights held at
# zero (gender.performance); the pre-trained encoder likewise, once per seed.


rule gender_task:
    input:
        unpack(task_data_input),
        run=seat_run_input,
        encoder=GENCODER_INPUT,
    output:
        f"{GBASE}/{{grun}}/seed~{{seed}}.task~{{gtask}}.json",
    wildcard_constraints:
        grun=r"(frozen|unfrozen)/(block\d+|head)/layers~[a-z]+/mode~[a-z]+|debias_only/layers~[a-z]+/mode~[a-z]+(/objective~[a-z0-9_]+)?",
    params:
        model=encoder_of_input,
        run=lambda wildcards, input: input.run if input.run.endswith(".mask") else os.path.dirname(input.run),
        hparams=as_json(GPERF.get("hparams", {})),
        metric=lambda wildcards: gender_task_metric(wildcards.gtask),
    log:
        f"{R}/logs/gender_task/{GMODEL}/{{grun}}/seed~{{seed}}.task~{{gtask}}.log",
    benchmark:
        f"{R}/benchmarks/rules/gender_task/{GMODEL}/{{grun}}/seed~{{seed}}.task~{{gtask}}.tsv"
    threads: COMPUTE["train_threads"]
    resources:
        mem_mb=COMPUTE["train_mem_mb"],
        runtime=COMPUTE["train_runtime_min"],
        gpu=training_gpus(),
    conda:
        "../../envs/maskbench.yaml"
    shell:
        "python -m maskbench.steps gender.task --model {params.model:q} --run {params.run:q} --task {wildcards.gtask}"
        " --train {input.train:q} --dev {input.dev:q} --hparams {params.hparams} --seed {wildcards.seed}"
        " --metric {params.metric}"
        " --threads {threads} --out {output:q} > {log:q} 2>&1"


rule gender_task_original:
    input:
        unpack(task_data_input),
        encoder=GENCODER_INPUT,
    output:
        f"{GBASE}/original/seed~{{seed}}.task~{{gtask}}.json",
    params:
        model=encoder_of_input,
        hparams=as_json(GPERF.get("hparams", {})),
        metric=lambda wildcards: gender_task_metric(wildcards.gtask),
    log:
        f"{R}/logs/gender_task/{GMODEL}/original/seed~{{seed}}.task~{{gtask}}.log",
    benchmark:
        f"{R}/benchmarks/rules/gender_task/{GMODEL}/original/seed~{{seed}}.task~{{gtask}}.tsv"
    threads: COMPUTE["train_threads"]
    resources:
        mem_mb=COMPUTE["train_mem_mb"],
        runtime=COMPUTE["train_runtime_min"],
        gpu=training_gpus(),
    conda:
        "../../envs/maskbench.yaml"
    shell:
        "python -m maskbench.steps gender.task --model {params.model:q} --task {wildcards.gtask}"
        " --train {input.train:q} --dev {input.dev:q} --hparams {params.hparams} --seed {wildcards.seed}"
        " --metric {params.metric}"
        " --threads {threads} --out {output:q} > {log:q} 2>&1"


# The masked-LM bias measures (gender.lm_bias): CrowS-Pairs' gender score and, when named, StereoSet's SS / LMS /
# ICAT, under one masked-LM head — fitted once on the pre-trained encoder with the encoder frozen, or the model's own.


rule gender_mlm_head:
    input:
        corpus=GENDER_CORPUS,
        encoder=GENCODER_INPUT,
    output:
        head=GLM_HEAD,
        summary=f"{GBASE}/mlm_head.json",
    params:
        model=encoder_of_input,
        source=GLM.get("head", "fit"),
        hparams=" ".join(f"--{key.replace('_', '-')} {value}" for key, value in GLM.get("head_hparams", {}).items()),
    log:
        f"{R}/logs/gender_mlm_head/{GMODEL}.log",
    benchmark:
        f"{R}/benchmarks/rules/gender_mlm_head/{GMODEL}.tsv"
    threads: COMPUTE["train_threads"]
    resources:
        mem_mb=COMPUTE["train_mem_mb"],
        runtime=COMPUTE["train_runtime_min"],
        gpu=training_gpus(),
    conda:
        "../../envs/maskbench.yaml"
    shell:
        "python -m maskbench.steps gender.mlm_head --model {params.model:q} --corpus {input.corpus:q}"
        " --source {params.source} {params.hparams} --threads {threads} --out {output.head:q}"
        " --summary {output.summary:q} > {log:q} 2>&1"


rule gender_lm_bias:
    input:
        run=seat_run_input,
        head=GLM_HEAD,
        crows=[GLM_CROWS] if GLM_CROWS else [],
        encoder=GENCODER_INPUT,
    output:
        f"{GBASE}/{{grun}}/seed~{{seed}}.lm.json",
    wildcard_constraints:
        grun=r"(frozen|unfrozen)/(block\d+|head)/layers~[a-z]+/mode~[a-z]+|debias_only/layers~[a-z]+/mode~[a-z]+(/objective~[a-z0-9_]+)?",
    params:
        model=encoder_of_input,
        run=lambda wildcards, input: input.run if input.run.endswith(".mask") else os.path.dirname(input.run),
        crows=lambda wildcards, input: f"--crows {shlex.quote(input.crows[0])}" if input.crows else "",
        options=lm_bias_options(),
    log:
        f"{R}/logs/gender_lm_bias/{GMODEL}/{{grun}}/seed~{{seed}}.log",
    benchmark:
        f"{R}/benchmarks/rules/gender_lm_bias/{GMODEL}/{{grun}}/seed~{{seed}}.tsv"
    threads: 1
    resources:
        mem_mb=COMPUTE["eval_mem_mb"],
        runtime=COMPUTE["eval_runtime_min"],
    conda:
        "../../envs/maskbench.yaml"
    shell:
        "python -m maskbench.steps gender.lm_bias --model {params.model:q} --run {params.run:q} --head {input.head:q}"
        " {params.crows} {params.options} --threads {threads} --out {output:q} > {log:q} 2>&1"


rule gender_lm_bias_original:
    input:
        head=GLM_HEAD,
        crows=[GLM_CROWS] if GLM_CROWS else [],
        encoder=GENCODER_INPUT,
    output:
        f"{GBASE}/original.lm.json",
    params:
        model=encoder_of_input,
        crows=lambda wildcards, input: f"--crows {shlex.quote(input.crows[0])}" if input.crows else "",
        options=lm_bias_options(),
    log:
        f"{R}/logs/gender_lm_bias/{GMODEL}/original.log",
    benchmark:
        f"{R}/benchmarks/rules/gender_lm_bias/{GMODEL}/original.tsv"
    threads: 1
    resources:
        mem_mb=COMPUTE["eval_mem_mb"],
        runtime=COMPUTE["eval_runtime_min"],
    conda:
        "../../envs/maskbench.yaml"
    shell:
        "python -m maskbench.steps gender.lm_bias --model {params.model:q} --head {input.head:q}"
        " {params.crows} {params.options} --threads {threads} --out {output:q} > {log:q} 2>&1"
