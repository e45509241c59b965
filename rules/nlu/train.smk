# Baseline fine-tuning (Table 1 "Baseline"), one job per task and seed: the one definition of a fine-tuning job,
# which the bias models, the debiased models and the sweep points reuse (`use rule finetune_baseline as ...`).


rule finetune_baseline:
    input:
        unpack(task_train_data),
    output:
        model=f"{checkpoint_dir('{task}', '{seed}')}/model.safetensors",
        summary=f"{checkpoint_dir('{task}', '{seed}')}/train_summary.json",
        # the baseline's own training-set probabilities: the teacher of confidence regularisation
        probs=f"{checkpoint_dir('{task}', '{seed}')}/train_probs.parquet",
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
