# Baseline fine-tuning (Table 1 "Baseline"), one job per task and seed.


rule finetune_baseline:
    input:
        unpack(task_train_data),
    output:
        model=f"{R}/{NLU}/{{task}}/{MODEL}/models/method~finetune/loss~ce/seed~{{seed}}/model.safetensors",
        summary=f"{R}/{NLU}/{{task}}/{MODEL}/models/method~finetune/loss~ce/seed~{{seed}}/train_summary.json",
        # the baseline's own training-set probabilities: the teacher of confidence regularisation
        probs=f"{R}/{NLU}/{{task}}/{MODEL}/models/method~finetune/loss~ce/seed~{{seed}}/train_probs.parquet",
        # with `srnets:` also paper C's theta_pt (the untrained start) and the timing study's snapshots
        **finetune_extra_outputs(),
    params:
        checkpoint_every=COMPUTE["checkpoint_every"],
        deterministic=int(COMPUTE["deterministic"]),
        model_spec=as_json(config["model"]),
        hparams=finetune_hparams_of,
        head=classifier_option,
        out_dir=folder_of_output("model"),
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
        "python -m maskbench.steps nlu.finetune --train {input.train:q} --dev {input.dev:q}"
        " --model-spec {params.model_spec} --hparams {params.hparams} --loss ce {params.head}"
        " --seed {wildcards.seed} --threads {threads} --checkpoint-every {params.checkpoint_every} --deterministic {params.deterministic} --out-dir {params.out_dir:q}"
        " --train-probs-out {output.probs:q} {params.extra} > {log:q} 2>&1"
