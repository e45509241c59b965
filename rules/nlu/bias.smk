# Bias sources and standard debiasing (Table 1 "SD" rows).


rule train_bias_model:
    # a weak learner (undertrained / underparameterised) or a hypothesis-only model, and its probabilities
    # on the whole training set
    input:
        unpack(task_train_data),
    output:
        model=f"{R}/{NLU}/{{task}}/{MODEL}/bias/{{source}}/seed~{{seed}}/model.safetensors",
        summary=f"{R}/{NLU}/{{task}}/{MODEL}/bias/{{source}}/seed~{{seed}}/train_summary.json",
        probs=f"{R}/{NLU}/{{task}}/{MODEL}/bias/{{source}}/seed~{{seed}}/train_probs.parquet",
    wildcard_constraints:
        source=alternation(NEURAL_SOURCES),
    params:
        checkpoint_every=COMPUTE["checkpoint_every"],
        deterministic=int(COMPUTE["deterministic"]),
        model_spec=weak_learner_model,
        hparams=weak_learner_hparams,
        options=weak_learner_options,
        out_dir=folder_of_output("model"),
    log:
        f"{R}/logs/train_bias_model/{{task}}/{{source}}/seed~{{seed}}.log",
    benchmark:
        f"{R}/benchmarks/rules/train_bias_model/{{task}}/{{source}}/seed~{{seed}}.tsv"
    threads: COMPUTE["train_threads"]
    resources:
        mem_mb=COMPUTE["train_mem_mb"],
        runtime=COMPUTE["train_runtime_min"],
        gpu=training_gpus(),
    conda:
        "../../envs/maskbench.yaml"
    shell:
        "python -m maskbench.steps nlu.finetune --train {input.train:q} --dev {input.dev:q}"
        " --model-spec {params.model_spec} --hparams {params.hparams} --loss ce {params.options}"
        " --seed {wildcards.seed} --threads {threads} --checkpoint-every {params.checkpoint_every} --deterministic {params.deterministic} --out-dir {params.out_dir:q}"
        " --train-probs-out {output.probs:q} > {log:q} 2>&1"


# the logistic-regression bias model scores itself on the task's evaluation sets: one rule per task, as the
# evaluate_<task> rules, because each task has its own list of sets
for _task in TASKS:

    rule:
        name:
            f"bias_overlap_{_task}"
        input:
            unpack(overlap_inputs_of(_task)),
        output:
            probs=f"{R}/{NLU}/{_task}/{MODEL}/bias/overlap/seed~{{seed}}/train_probs.parquet",
            metrics=[evaluation_json(_task, "bias_overlap", "{seed}", e) for e in eval_set_names(_task)],
        params:
            options=overlap_options_of(_task),
            eval_sets=as_json(eval_set_specs(_task)),
            eval_dir=folder_of_output("metrics"),
            task=_task,
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
            "python -m maskbench.steps nlu.bias_overlap --train {input.train:q} --eval-data {input.data:q}"
            " --eval-sets {params.eval_sets} {params.options} --task {params.task} --seed {wildcards.seed}"
            " --out {output.probs:q} --eval-dir {params.eval_dir:q} > {log:q} 2>&1"


rule finetune_debiased:
    # standard debiasing: fine-tune from the initial model with a debiasing loss and a bias source
    input:
        unpack(debiased_inputs),
    output:
        model=f"{R}/{NLU}/{{task}}/{MODEL}/models/method~finetune/loss~{{loss}}/bias~{{source}}/seed~{{seed}}/model.safetensors",
        summary=f"{R}/{NLU}/{{task}}/{MODEL}/models/method~finetune/loss~{{loss}}/bias~{{source}}/seed~{{seed}}/train_summary.json",
    params:
        checkpoint_every=COMPUTE["checkpoint_every"],
        deterministic=int(COMPUTE["deterministic"]),
        model_spec=as_json(config["model"]),
        hparams=finetune_hparams_of,
        head=classifier_option,
        loss_hparams=debiased_loss_hparams,
        teacher=teacher_option,
        out_dir=folder_of_output("model"),
    log:
        f"{R}/logs/finetune_debiased/{{task}}/loss~{{loss}}/bias~{{source}}/seed~{{seed}}.log",
    benchmark:
        f"{R}/benchmarks/rules/finetune_debiased/{{task}}/loss~{{loss}}/bias~{{source}}/seed~{{seed}}.tsv"
    threads: COMPUTE["train_threads"]
    resources:
        mem_mb=COMPUTE["train_mem_mb"],
        runtime=COMPUTE["train_runtime_min"],
        gpu=training_gpus(),
    conda:
        "../../envs/maskbench.yaml"
    shell:
        "python -m maskbench.steps nlu.finetune --train {input.train:q} --dev {input.dev:q}"
        " --bias-probs {input.bias:q} --model-spec {params.model_spec} --hparams {params.hparams} --loss {wildcards.loss} {params.head}"
        " --loss-hparams {params.loss_hparams} {params.teacher} --seed {wildcards.seed} --threads {threads} --checkpoint-every {params.checkpoint_every} --deterministic {params.deterministic}"
        " --out-dir {params.out_dir:q} > {log:q} 2>&1"


rule bias_models_table:
    # how biased each bias model is: its accuracy on the ID and OOD sets
    input:
        evals=evaluation_jsons(BIAS_ROWS),
    output:
        csv=report(f"{R}/tables/bias_models.csv", caption="captions/bias_models.rst", category="Bias models"),
    log:
        f"{R}/logs/bias_models_table/bias_models.log",
    localrule: True
    conda:
        "../../envs/maskbench.yaml"
    shell:
        "python -m maskbench.steps nlu.bias_models_table --evals {input.evals:q} --out {output.csv:q}"
        " > {log:q} 2>&1"
