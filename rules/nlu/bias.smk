# Bias sources and standard debiasing (Table 1 "SD" rows).


use rule finetune_baseline as train_bias_model with:
    # a weak learner (undertrained / underparameterised) or a hypothesis-only model, and its probabilities
    # on the whole training set
    output:
        model=f"{bias_dir('{task}', '{source}', '{seed}')}/model.safetensors",
        summary=f"{bias_dir('{task}', '{source}', '{seed}')}/train_summary.json",
        probs=f"{bias_dir('{task}', '{source}', '{seed}')}/train_probs.parquet",
    wildcard_constraints:
        source=alternation(NEURAL_SOURCES),
    params:
        args=lambda wildcards, input, output: finetune_args(
            wildcards, input, output, model=SOURCES[wildcards.source].get("model", config["model"]),
            hparams=finetune_hparams(wildcards.task, SOURCES[wildcards.source]), train_probs_out=output.probs,
            input_view="text_b_only" if SOURCES[wildcards.source]["kind"] == "hypothesis_only" else None,
            train_subset=SOURCES[wildcards.source].get("train_subset", {}).get(wildcards.task)),
        extra="",
    log:
        f"{R}/logs/train_bias_model/{{task}}/{{source}}/seed~{{seed}}.log",
    benchmark:
        f"{R}/benchmarks/rules/train_bias_model/{{task}}/{{source}}/seed~{{seed}}.tsv"


# the logistic-regression bias model scores itself on the task's evaluation sets: one rule per task, as the
# evaluate_<task> rules, because each task has its own list of sets
for _task in TASKS if "overlap" in SOURCES else []:

    rule:
        name:
            f"bias_overlap_{_task}"
        input:
            train=prepared_path(config["tasks"][_task]["train"]),
            data=[prepared_path(e) for e in eval_set_names(_task)],
            # offline stand-in for fastText: the baseline's input embeddings (the first seed's)
            embeddings=[] if SOURCES["overlap"].get("vectors") else f"{checkpoint_dir(_task, P.seeds[0])}/model.safetensors",
        output:
            probs=f"{bias_dir(_task, 'overlap', '{seed}')}/train_probs.parquet",
            metrics=[evaluation_json(_task, "bias_overlap", "{seed}", e) for e in eval_set_names(_task)],
        params:
            args=lambda wildcards, input, output, _task=_task: shell_args(
                train=input.train, eval_data=input.data, eval_sets=Json(eval_set_specs(_task)),
                **P.overlap_options(_task, checkpoint_dir(_task, P.seeds[0])), task=_task, seed=int(wildcards.seed),
                out=output.probs, eval_dir=os.path.dirname(output.metrics[0])),
        log:
            f"{R}/logs/bias_overlap/{_task}/seed~{{seed}}.log",
        benchmark:
            f"{R}/benchmarks/rules/bias_overlap/{_task}/seed~{{seed}}.tsv"
        threads: 1
        resources:
            mem_mb=4000,
            runtime=30,
        conda:
            "../../envs/maskbench.yaml"
        shell:
            "python -m maskbench.steps nlu.bias_overlap {params.args} > {log:q} 2>&1"


use rule finetune_baseline as finetune_debiased with:
    # standard debiasing: fine-tune from the initial model with a debiasing loss and a bias source
    input:
        unpack(debiased_inputs),
    output:
        model=f"{P.debiased_dir('{task}', '{loss}', '{source}', '{seed}')}/model.safetensors",
        summary=f"{P.debiased_dir('{task}', '{loss}', '{source}', '{seed}')}/train_summary.json",
    params:
        args=lambda wildcards, input, output: finetune_args(
            wildcards, input, output, loss=wildcards.loss,
            loss_hparams=P.loss_hparams(SD, wildcards.loss, wildcards.source)),
        extra="",
    log:
        f"{R}/logs/finetune_debiased/{{task}}/loss~{{loss}}/bias~{{source}}/seed~{{seed}}.log",
    benchmark:
        f"{R}/benchmarks/rules/finetune_debiased/{{task}}/loss~{{loss}}/bias~{{source}}/seed~{{seed}}.tsv"


rule bias_models_table:
    """A: bias models table"""
    # how biased each bias model is: its accuracy on the ID and OOD sets
    input:
        evals=P.evaluation_jsons(BIAS_ROWS),
    output:
        csv=report(f"{R}/tables/bias_models.csv", caption="captions/bias_models.rst", category="Bias models"),
    params:
        args=lambda wildcards, input, output: shell_args(evals=input.evals, out=output.csv),
    log:
        f"{R}/logs/bias_models_table/bias_models.log",
    localrule: True
    conda:
        "../../envs/maskbench.yaml"
    shell:
        "python -m maskbench.steps nlu.bias_models_table {params.args} > {log:q} 2>&1"


# a precomputed bias source: the user's probabilities, columns of the task's training file (checked while planning,
# rules/nlu/common.smk), for the rows the prepared training set kept
if P.precomputed_sources:

    rule precomputed_bias:
        input:
            train=lambda w: prepared_path(config["tasks"][w.task]["train"]),
            file=lambda w: given_train_file(config["tasks"][w.task]["train"]),
        output:
            probs=f"{bias_dir('{task}', '{source}', '{seed}')}/train_probs.parquet",
        wildcard_constraints:
            source=alternation(P.precomputed_sources),
        params:
            args=lambda wildcards, input, output: shell_args(
                train=input.train, file=input.file, source=Json(SOURCES[wildcards.source]), name=wildcards.source,
                task=wildcards.task, out=output.probs,
                format=config["datasets"][config["tasks"][wildcards.task]["train"]].get("format")),
        log:
            f"{R}/logs/precomputed_bias/{{task}}/{{source}}/seed~{{seed}}.log",
        localrule: True
        conda:
            "../../envs/maskbench.yaml"
        shell:
            "python -m maskbench.steps nlu.precomputed_bias {params.args} > {log:q} 2>&1"
