# Dataset preparation: every registry entry becomes one parquet in the prepared schema, plus a summary.


rule prepare_dataset:
    input:
        # the file of a `local:` source, so that a changed file reruns what reads it (rules/common.smk's local_input:
        # a file not there yet is listed while planning, and a run that executes this job is refused before it starts)
        local=lambda w: local_input(config["datasets"][w.dataset]["source"]),
    output:
        data=f"{R}/{NLU}/data/prepared/{{dataset}}.parquet",
        summary=f"{R}/{NLU}/data/prepared/{{dataset}}.summary.json",
    params:
        args=lambda w, input, output: shell_args(
            name=w.dataset, spec=config["datasets"][w.dataset], local_file=local_path(config["datasets"][w.dataset]["source"]),
            single_text=bool(config["tasks"].get(config["datasets"][w.dataset]["task"], {}).get("single_text")),
            out=output.data, summary=output.summary),
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
        "python -m maskbench.steps prepare {params.args} > {log:q} 2>&1"


rule negation_subset:
    input:
        lambda w: prepared_path(config["negation_subsets"][w.subset]["from"]),
    output:
        data=f"{R}/{NLU}/data/subsets/{{subset}}.parquet",
        summary=f"{R}/{NLU}/data/subsets/{{subset}}.summary.json",
    params:
        args=lambda w, input, output: shell_args(
            input=input[0], out=output.data, summary=output.summary,
            entailment_label=config["negation_subsets"][w.subset].get("entailment_label", "entailment"),
            words=Json(config["negation_subsets"][w.subset]["words"]) if config["negation_subsets"][w.subset].get("words") else None),
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
        "python -m maskbench.steps nlu.negation_subset {params.args} > {log:q} 2>&1"


rule dataset_summary:
    """datasets table"""
    input:
        prepared=[f"{p.removesuffix('.parquet')}.summary.json" for p in P.prepared_datasets()],
    output:
        csv=report(
            f"{R}/tables/datasets.csv",
            caption="captions/datasets.rst",
            category="Datasets",
        ),
    params:
        args=lambda wildcards, input, output: shell_args(summaries=input.prepared, out=output.csv),
    log:
        f"{R}/logs/dataset_summary/datasets.log",
    localrule: True
    conda:
        "../../envs/maskbench.yaml"
    shell:
        "python -m maskbench.steps nlu.dataset_summary {params.args} > {log:q} 2>&1"
