# Paper B's runs: pruning with frozen weights (a mask file each), pruning with the weights training and the
# debias-only runs (a checkpoint folder each), all on the Kaneko-Bollegala objective; each job's settings are its
# planned run's (found by the summary it writes).


rule gender_prune_frozen:
    input:
        corpus=GPLAN.corpus,
        encoder=GPLAN.encoder_input,
    output:
        mask=f"{GBASE}/frozen/{{granularity}}/layers~{{glayers}}/mode~{{gmode}}/seed~{{seed}}.mask",
        summary=f"{GBASE}/frozen/{{granularity}}/layers~{{glayers}}/mode~{{gmode}}/seed~{{seed}}.json",
    params:
        args=debias_args,
    log:
        f"{R}/logs/gender_prune_frozen/{GMODEL}/{{granularity}}/layers~{{glayers}}/mode~{{gmode}}/seed~{{seed}}.log",
    benchmark:
        f"{R}/benchmarks/rules/gender_prune_frozen/{GMODEL}/{{granularity}}/layers~{{glayers}}/mode~{{gmode}}/seed~{{seed}}.tsv"
    threads: COMPUTE["train_threads"]
    resources:
        mem_mb=COMPUTE["train_mem_mb"],
        runtime=COMPUTE.get("gender_runtime_min", COMPUTE["train_runtime_min"]),
        gpu=training_gpus(),
    conda:
        "../../envs/maskbench.yaml"
    shell:
        "python -m maskbench.steps gender.debias {params.args} --threads {threads} > {log:q} 2>&1"


use rule gender_prune_frozen as gender_train_weights with:
    output:
        marker=f"{GBASE}/{{gdir}}/seed~{{seed}}/train_summary.json",
        summary=f"{GBASE}/{{gdir}}/seed~{{seed}}.json",
    wildcard_constraints:
        gdir=alternation(GPLAN.folders("unfrozen", "debias_only")),
    log:
        f"{R}/logs/gender_train_weights/{GMODEL}/{{gdir}}/seed~{{seed}}.log",
    benchmark:
        f"{R}/benchmarks/rules/gender_train_weights/{GMODEL}/{{gdir}}/seed~{{seed}}.tsv"
