# The gender track's corpus (paper B's cut of sentences holding the attribute and stereotype words).


rule gender_corpus:
    input:
        male=GWORDS["male"],
        female=GWORDS["female"],
        stereotype=GWORDS["stereotype"],
        local=gender_corpus_file,
    output:
        GENDER_CORPUS,
    params:
        source=lambda wildcards, input: input.local if GCFG["corpus"]["source"].startswith("local:")
        else GCFG["corpus"]["source"],
        dataset=gender_corpus_dataset_options,
        heldout=GCFG["corpus"].get("heldout", 1000),
        seed=GCFG["corpus"].get("seed", 0),
        mixed=GCFG["corpus"].get("mixed", 0),
    log:
        f"{R}/logs/gender_corpus/corpus.log",
    benchmark:
        f"{R}/benchmarks/rules/gender_corpus/corpus.tsv"
    threads: 1
    resources:
        mem_mb=COMPUTE["eval_mem_mb"],
        runtime=COMPUTE["eval_runtime_min"],
    conda:
        "../../envs/maskbench.yaml"
    shell:
        "python -m maskbench.steps gender.corpus --source {params.source:q} --male {input.male:q}"
        " --female {input.female:q} --stereotype {input.stereotype:q} --heldout {params.heldout}"
        " --seed {params.seed} --mixed {params.mixed}{params.dataset} --out {output:q} > {log:q} 2>&1"


rule gender_scratch_encoder:
    input:
        corpus=GENDER_CORPUS,
        tests=SEAT_FILES,
    output:
        f"{GBASE}/encoder/train_summary.json",
    params:
        out_dir=lambda wildcards, output: os.path.dirname(output[0]),
        bert_config=as_json(GCFG["model"].get("bert_config", {})),
        seed=GCFG["model"].get("seed", 0),
    log:
        f"{R}/logs/gender_scratch_encoder/{GMODEL}.log",
    threads: 1
    resources:
        mem_mb=COMPUTE["eval_mem_mb"],
        runtime=COMPUTE["eval_runtime_min"],
    conda:
        "../../envs/maskbench.yaml"
    shell:
        "python -m maskbench.steps gender.encoder --corpus {input.corpus:q} --tests {input.tests:q}"
        " --bert-config {params.bert_config} --seed {params.seed} --out-dir {params.out_dir:q} > {log:q} 2>&1"


rule gender_task_data:
    input:
        local=gender_task_local_file,
    output:
        data=f"{R}/{GENDER}/data/tasks/{{gtask}}/{{gsplit}}.parquet",
        summary=f"{R}/{GENDER}/data/tasks/{{gtask}}/{{gsplit}}.summary.json",
    params:
        spec=lambda wildcards: as_json(gender_task_spec(wildcards.gtask, wildcards.gsplit)),
        local=lambda wildcards, input: f" --local-file {quoted(input.local)}" if input.local else "",
    log:
        f"{R}/logs/gender_task_data/{{gtask}}/{{gsplit}}.log",
    benchmark:
        f"{R}/benchmarks/rules/gender_task_data/{{gtask}}/{{gsplit}}.tsv"
    threads: 1
    resources:
        mem_mb=4000,
        runtime=30,
    conda:
        "../../envs/maskbench.yaml"
    shell:
        "python -m maskbench.steps prepare --name {wildcards.gtask}_{wildcards.gsplit} --spec {params.spec}"
        "{params.local} --out {output.data:q} --summary {output.summary:q} > {log:q} 2>&1"
