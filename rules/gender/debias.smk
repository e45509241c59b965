# Paper B's runs: pruning with frozen weights (a mask file each), pruning with the weights training and the
# debias-only runs (a checkpoint folder each), all on the Kaneko-Bollegala objective.


rule gender_prune_frozen:
    input:
        corpus=GENDER_CORPUS,
        encoder=GENCODER_INPUT,
    output:
        mask=f"{GBASE}/frozen/{{granularity}}/layers~{{glayers}}/mode~{{gmode}}/seed~{{seed}}.mask",
        summary=f"{GBASE}/frozen/{{granularity}}/layers~{{glayers}}/mode~{{gmode}}/seed~{{seed}}.json",
    params:
        model=encoder_of_input,
        spec=lambda wildcards: as_json(gender_spec("frozen", wildcards.granularity, wildcards.glayers, wildcards.gmode)),
        hparams=as_json(gender_hparams("frozen")),
        checkpoint_every=COMPUTE.get("checkpoint_every", 0),
    log:
        f"{R}/logs/gender_prune_frozen/{GMODEL}/{{granularity}}/layers~{{glayers}}/mode~{{gmode}}/seed~{{seed}}.log",
    benchmark:
        f"{R}/benchmarks/rules/gender_prune_frozen/{GMODEL}/{{granularity}}/layers~{{glayers}}/mode~{{gmode}}/seed~{{seed}}.tsv"
    threads: COMPUTE["train_threads"]
    resources:
        mem_mb=COMPUTE["train_mem_mb"],
        runtime=COMPUTE["train_runtime_min"],
        gpu=training_gpus(),
    conda:
        "../../envs/maskbench.yaml"
    shell:
        "python -m maskbench.steps gender.debias --model {params.model:q} --corpus {input.corpus:q}"
        " --spec {params.spec} --hparams {params.hparams} --seed {wildcards.seed} --threads {threads}"
        " --checkpoint-every {params.checkpoint_every} --out {output.mask:q} --summary {output.summary:q}"
        " > {log:q} 2>&1"


rule gender_train_weights:
    input:
        corpus=GENDER_CORPUS,
        encoder=GENCODER_INPUT,
    output:
        marker=f"{GBASE}/{{gdir}}/seed~{{seed}}/train_summary.json",
        summary=f"{GBASE}/{{gdir}}/seed~{{seed}}.json",
    wildcard_constraints:
        gdir=r"unfrozen/(block\d+|head)/layers~[a-z]+/mode~[a-z]+|debias_only/layers~[a-z]+/mode~[a-z]+(/objective~[a-z0-9_]+)?",
    params:
        model=encoder_of_input,
        out=folder_of_output("marker"),
        spec=lambda wildcards: as_json(gender_spec(*gender_dir_parts(wildcards.gdir))),
        hparams=lambda wildcards: as_json(gender_hparams(gender_dir_parts(wildcards.gdir)[0])),
        checkpoint_every=COMPUTE.get("checkpoint_every", 0),
    log:
        f"{R}/logs/gender_train_weights/{GMODEL}/{{gdir}}/seed~{{seed}}.log",
    benchmark:
        f"{R}/benchmarks/rules/gender_train_weights/{GMODEL}/{{gdir}}/seed~{{seed}}.tsv"
    threads: COMPUTE["train_threads"]
    resources:
        mem_mb=COMPUTE["train_mem_mb"],
        runtime=COMPUTE["train_runtime_min"],
        gpu=training_gpus(),
    conda:
        "../../envs/maskbench.yaml"
    shell:
        "python -m maskbench.steps gender.debias --model {params.model:q} --corpus {input.corpus:q}"
        " --spec {params.spec} --hparams {params.hparams} --seed {wildcards.seed} --threads {threads}"
        " --checkpoint-every {params.checkpoint_every} --out {params.out:q} --summary {output.summary:q}"
        " > {log:q} 2>&1"
