# Paper D's FFW on the gender track's encoder (gender.ffw): gates trained against the representation term and the
# MI between the sentences' gender attribute and a bias head; each run a mask file, scored by the per-run SEAT,
# task and masked-LM rules (rules/gender/evaluate.smk) like paper B's frozen runs. With `matrix:` in the config,
# one records file of the FFW runs, paper B's pruning runs and the original (rules/matrix.smk reads it).


rule gender_ffw:
    input:
        corpus=GPLAN.corpus,
        encoder=GPLAN.encoder_input,
    output:
        summary=f"{GBASE}/ffw/{{gffw}}/gamma~{{gamma}}/seed~{{seed}}.json",
        mask=f"{GBASE}/ffw/{{gffw}}/gamma~{{gamma}}/seed~{{seed}}.mask",
    params:
        args=gender_ffw_args,
    log:
        f"{R}/logs/gender_ffw/{GMODEL}/{{gffw}}/gamma~{{gamma}}/seed~{{seed}}.log",
    benchmark:
        f"{R}/benchmarks/rules/gender_ffw/{GMODEL}/{{gffw}}/gamma~{{gamma}}/seed~{{seed}}.tsv"
    threads: COMPUTE["train_threads"]
    resources:
        mem_mb=COMPUTE["train_mem_mb"],
        runtime=COMPUTE["train_runtime_min"],
        gpu=training_gpus(),
    conda:
        "../../envs/maskbench.yaml"
    shell:
        "python -m maskbench.steps gender.ffw {params.args} --threads {threads} > {log:q} 2>&1"


if GPLAN.matrix_cells:

    rule matrix_cells_gender:
        input:
            GPLAN.matrix_inputs(),
        output:
            GPLAN.matrix_cells,
        params:
            args=lambda wildcards, input, output: shell_args(
                records=Json(GPLAN.matrix_records()), benchmarks=GPLAN.matrix_benchmarks(), data=GPLAN.matrix_data(),
                model=GPLAN.model_name, out=output[0]),
        log:
            f"{R}/logs/matrix_cells_gender/cells.log",
        benchmark:
            f"{R}/benchmarks/rules/matrix_cells_gender/cells.tsv"
        localrule: True
        threads: 1
        resources:
            **LIGHT_RESOURCES,
        conda:
            "../../envs/maskbench.yaml"
        shell:
            "python -m maskbench.steps gender.matrix_cells {params.args} > {log:q} 2>&1"
