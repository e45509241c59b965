# Every run scored, and the pre-trained encoder itself (paper B's "original" row): each measure one rule for the
# runs (`grun`: a planned run's folder) and the same rule for the original, which reads no run (no --run).


# SEAT of every run and of the pre-trained model.
rule gender_seat:
    input:
        run=run_marker,
        tests=GPLAN.seat_files,
        encoder=GPLAN.encoder_input,
    output:
        f"{GBASE}/{{grun}}/seed~{{seed}}.seat.json",
    wildcard_constraints:
        grun=GRUNS,
    params:
        args=lambda wildcards, input, output: shell_args(
            model=GPLAN.model, run=run_out(wildcards), tests=input.tests, **GPLAN.seat_settings(),
            out=output[0]),
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
        "python -m maskbench.steps gender.seat {params.args} --threads {threads} > {log:q} 2>&1"


use rule gender_seat as gender_seat_original with:
    input:
        tests=GPLAN.seat_files,
        encoder=GPLAN.encoder_input,
    output:
        GPLAN.original_seat,
    log:
        f"{R}/logs/gender_seat/{GMODEL}/original.log",
    benchmark:
        f"{R}/benchmarks/rules/gender_seat/{GMODEL}/original.tsv"


# Paper B's GLUE column: a run's encoder under a new head, fine-tuned on a task with its pruned weights held at
# zero (gender.performance); the pre-trained encoder likewise, once per seed.
rule gender_task:
    input:
        unpack(task_data_input),
        run=run_marker,
        encoder=GPLAN.encoder_input,
    output:
        f"{GBASE}/{{grun}}/seed~{{seed}}.task~{{gtask}}.json",
    wildcard_constraints:
        grun=GRUNS,
    params:
        args=lambda wildcards, input, output: shell_args(
            model=GPLAN.model, run=run_out(wildcards), task=wildcards.gtask, train=input.train, dev=input.dev,
            hparams=GPLAN.task_hparams(), seed=int(wildcards.seed), metric=GPLAN.task_metric(wildcards.gtask),
            out=output[0], **precision_options(config, "gender"), **late_resume_options()),
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
        "python -m maskbench.steps gender.task {params.args} --threads {threads} > {log:q} 2>&1"


use rule gender_task as gender_task_original with:
    input:
        unpack(task_data_input),
        encoder=GPLAN.encoder_input,
    output:
        f"{GBASE}/original/seed~{{seed}}.task~{{gtask}}.json",
    log:
        f"{R}/logs/gender_task/{GMODEL}/original/seed~{{seed}}.task~{{gtask}}.log",
    benchmark:
        f"{R}/benchmarks/rules/gender_task/{GMODEL}/original/seed~{{seed}}.task~{{gtask}}.tsv"


# The masked-LM bias measures (gender.lm_bias): CrowS-Pairs' gender score and, when named, StereoSet's SS / LMS /
# ICAT, under one masked-LM head — fitted once on the pre-trained encoder with the encoder frozen, or the model's own.
rule gender_mlm_head:
    input:
        corpus=GPLAN.corpus,
        encoder=GPLAN.encoder_input,
    output:
        head=GPLAN.lm_head,
        summary=f"{GBASE}/mlm_head.json",
    params:
        args=lambda wildcards, input, output: shell_args(
            model=GPLAN.model, corpus=input.corpus, **GPLAN.mlm_head_settings(), out=output.head,
            summary=output.summary),
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
        "python -m maskbench.steps gender.mlm_head {params.args} --threads {threads} > {log:q} 2>&1"


rule gender_lm_bias:
    input:
        run=run_marker,
        head=GPLAN.lm_head,
        crows=GPLAN.crows,
        encoder=GPLAN.encoder_input,
    output:
        f"{GBASE}/{{grun}}/seed~{{seed}}.lm.json",
    wildcard_constraints:
        grun=GRUNS,
    params:
        args=lambda wildcards, input, output: shell_args(
            model=GPLAN.model, run=run_out(wildcards), head=input.head, crows=input.crows[0] if input.crows else None,
            **GPLAN.lm_bias_settings(), out=output[0]),
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
        "python -m maskbench.steps gender.lm_bias {params.args} --threads {threads} > {log:q} 2>&1"


use rule gender_lm_bias as gender_lm_bias_original with:
    input:
        head=GPLAN.lm_head,
        crows=GPLAN.crows,
        encoder=GPLAN.encoder_input,
    output:
        f"{GBASE}/original.lm.json",
    log:
        f"{R}/logs/gender_lm_bias/{GMODEL}/original.log",
    benchmark:
        f"{R}/benchmarks/rules/gender_lm_bias/{GMODEL}/original.tsv"
