# The gender track's corpus (paper B's cut of sentences holding the attribute and stereotype words), the scratch
# encoder of smoke runs, and the task splits of the GLUE column.


rule gender_corpus:
    input:
        **GPLAN.words,
        local=gender_corpus_file,
    output:
        GPLAN.corpus,
    params:
        args=lambda wildcards, input, output: shell_args(
            source=GPLAN.corpus_source_arg(gender_corpus_path()), male=input.male, female=input.female,
            stereotype=input.stereotype, **GPLAN.corpus_settings(gender_corpus_path()), out=output[0]),
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
        "python -m maskbench.steps gender.corpus {params.args} > {log:q} 2>&1"


if GPLAN.corpus_download:

    # the corpus URL (paper B: News Commentary v15) is downloaded here, on the login node (a localrule), or
    # beforehand by `python -m maskbench.steps fetch`; the gender_corpus job reads the file and never the network
    rule gender_corpus_download:
        output:
            GPLAN.corpus_download,
        params:
            args=lambda wildcards, output: shell_args(url=config["gender"]["corpus"]["source"], out=output[0]),
        log:
            f"{R}/logs/gender_corpus_download/download.log",
        localrule: True
        shell:
            "python -m maskbench.steps download {params.args} > {log:q} 2>&1"


rule gender_scratch_encoder:
    input:
        corpus=GPLAN.corpus,
        tests=GPLAN.seat_files,
    output:
        f"{GBASE}/encoder/train_summary.json",
    params:
        args=lambda wildcards, input, output: shell_args(
            corpus=input.corpus, tests=input.tests, **GPLAN.encoder_settings(), out_dir=os.path.dirname(output[0])),
    log:
        f"{R}/logs/gender_scratch_encoder/{GMODEL}.log",
    threads: 1
    resources:
        mem_mb=COMPUTE["eval_mem_mb"],
        runtime=COMPUTE["eval_runtime_min"],
    conda:
        "../../envs/maskbench.yaml"
    shell:
        "python -m maskbench.steps gender.encoder {params.args} > {log:q} 2>&1"


rule gender_task_data:
    input:
        local=gender_task_local_file,
    output:
        data=f"{GPLAN.data}/tasks/{{gtask}}/{{gsplit}}.parquet",
        summary=f"{GPLAN.data}/tasks/{{gtask}}/{{gsplit}}.summary.json",
    params:
        args=lambda wildcards, input, output: shell_args(
            name=f"{wildcards.gtask}_{wildcards.gsplit}", spec=GPLAN.task_split(wildcards.gtask, wildcards.gsplit),
            local_file=local_path(GPLAN.task_split_source(wildcards.gtask, wildcards.gsplit)[0]), out=output.data,
            summary=output.summary),
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
        "python -m maskbench.steps prepare {params.args} > {log:q} 2>&1"
