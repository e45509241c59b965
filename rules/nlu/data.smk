# Dataset preparation: every registry entry becomes one parquet in the prepared schema, plus a summary.


rule prepare_dataset:
    input:
        local=local_source_file,
    output:
        data=f"{R}/{NLU}/data/prepared/{{dataset}}.parquet",
        summary=f"{R}/{NLU}/data/prepared/{{dataset}}.summary.json",
    params:
        spec=dataset_spec,
        options=prepare_options,
    log:
        f"{R}/logs/prepare_dataset/{{dataset}}.log",
    benchmark:
        f"{R}/benchmarks/rules/prepare_dataset/{{dataset}}.tsv"
    threads: 1
    resources:
        mem_mb=4000,
        runtime=30,
    conda:
        "../../envs/maskbench.yaml"
    shell:
        "python -m maskbench.steps prepare --name {wildcards.dataset:q} --spec {params.spec}{params.options}"
        " --out {output.data:q} --summary {output.summary:q} > {log:q} 2>&1"


rule negation_subset:
    input:
        subset_source,
    output:
        data=f"{R}/{NLU}/data/subsets/{{subset}}.parquet",
        summary=f"{R}/{NLU}/data/subsets/{{subset}}.summary.json",
    params:
        options=subset_options,
    log:
        f"{R}/logs/negation_subset/{{subset}}.log",
    benchmark:
        f"{R}/benchmarks/rules/negation_subset/{{subset}}.tsv"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    conda:
        "../../envs/maskbench.yaml"
    shell:
        "python -m maskbench.steps nlu.negation_subset --input {input:q} --out {output.data:q}"
        " --summary {output.summary:q} {params.options} > {log:q} 2>&1"


rule dataset_summary:
    input:
        prepared=[f"{p[: -len('.parquet')]}.summary.json" for p in prepared_datasets()],
    output:
        csv=report(
            f"{R}/tables/datasets.csv",
            caption="captions/datasets.rst",
            category="Datasets",
        ),
    log:
        f"{R}/logs/dataset_summary/datasets.log",
    localrule: True
    conda:
        "../../envs/maskbench.yaml"
    shell:
        "python -m maskbench.steps nlu.dataset_summary --summaries {input.prepared:q} --out {output.csv:q}"
        " > {log:q} 2>&1"
