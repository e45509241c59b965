# Baseline fine-tuning (Table 1 "Baseline"), one job per task and seed: the one definition of a fine-tuning job,
# which the bias models, the debiased models and the sweep points reuse (`use rule finetune_baseline as ...`).


rule finetune_baseline:
    input:
        unpack(task_train_data),
    output:
        model=f"{P.finetune_dir('{task}', '{seed}')}/model.safetensors",
        summary=f"{P.finetune_dir('{task}', '{seed}')}/train_summary.json",
        # the baseline's own training-set probabilities: the teacher of confidence regularisation
        probs=f"{P.finetune_dir('{task}', '{seed}')}/train_probs.parquet",
        # with `srnets:` also paper C's theta_pt (the untrained start) and the timing study's snapshots
        **finetune_extra_outputs(),
    params:
        args=lambda wildcards, input, output: finetune_args(wildcards, input, output,
                                                                     train_probs_out=output.probs),
        extra=finetune_extra_options,
    log:
        f"{R}/logs/finetune_baseline/{{task}}/seed~{{seed}}.log",
    benchmark:
        f"{R}/benchmarks/rules/finetune_baseline/{{task}}/seed~{{seed}}.tsv"
    threads: COMPUTE["train_threads"]
    resources:
        mem_mb=COMPUTE["train_mem_mb"],
        runtime=COMPUTE["train_runtime_min"],
        gpu=training_gpus(),
    conda:
        "../../envs/maskbench.yaml"
    shell:
        "python -m maskbench.steps nlu.finetune {params.args} --threads {threads} {params.extra} > {log:q} 2>&1"


# `model: {init: finetuned}`: the user's classifier, fine-tuned elsewhere, taken in as it is (no training) as the one
# frozen baseline of every seed of its task (checkpoint_dir names it then); with a loss that reads a teacher, also its
# training-set probabilities. Its labels are checked against the task's while planning (rules/nlu/common.smk).
if P.given:

    rule import_given_model:
        input:
            train=lambda w: prepared_path(config["tasks"][w.task]["train"]),
        output:
            model=f"{P.given_dir('{task}')}/model.safetensors",
            summary=f"{P.given_dir('{task}')}/train_summary.json",
            **({"probs": f"{P.given_dir('{task}')}/train_probs.parquet"} if P.given_teacher() else {}),
        params:
            args=lambda wildcards, input, output: shell_args(
                path=config["model"]["path"], train=input.train, out_dir=os.path.dirname(output.model),
                model_spec=Json(config["model"]), train_probs_out=output.get("probs"),
                max_length=config["finetune"]["max_length"], batch_size=config["finetune"]["eval_batch_size"],
                length_sorted=LENGTH_SORTED_EVAL),
        log:
            f"{R}/logs/import_given_model/{{task}}.log",
        benchmark:
            f"{R}/benchmarks/rules/import_given_model/{{task}}.tsv"
        threads: 1
        resources:
            mem_mb=COMPUTE["eval_mem_mb"],
            runtime=COMPUTE["eval_runtime_min"],
            gpu=training_gpus(),
        conda:
            "../../envs/maskbench.yaml"
        shell:
            "python -m maskbench.steps nlu.import_given_model {params.args} --threads {threads} > {log:q} 2>&1"
