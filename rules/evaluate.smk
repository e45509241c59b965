# Evaluation: each model (task, Table 1 row, seed) is loaded once and scored on every evaluation set of its
# task, writing one metrics JSON and one predictions parquet per set. One rule per task (evaluate_<task>),
# because each task has its own list of evaluation sets.

for _task in TASKS:

    rule:
        name:
            f"evaluate_{_task}"
        input:
            unpack(eval_inputs_of(_task)),
        wildcard_constraints:
            row=alternation(NEURAL_ROWS),
        output:
            metrics=[evaluation_json(_task, "{row}", "{seed}", e) for e in eval_set_names(_task)],
            predictions=[evaluation_predictions(_task, "{row}", "{seed}", e) for e in eval_set_names(_task)],
        params:
            model_dir=model_dir_of,
            eval_sets=as_json(eval_set_specs(_task)),
            out_dir=folder_of_output("metrics"),
            task=_task,
            max_length=config["finetune"]["max_length"],
            batch_size=config["finetune"]["eval_batch_size"],
        log:
            f"{R}/logs/evaluate/{_task}/{{row}}/seed~{{seed}}.log",
        benchmark:
            f"{R}/benchmarks/rules/evaluate/{_task}/{{row}}/seed~{{seed}}.tsv"
        threads: 1
        resources:
            mem_mb=COMPUTE["eval_mem_mb"],
            runtime=COMPUTE["eval_runtime_min"],
        conda:
            "../envs/maskbench.yaml"
        shell:
            "python -m maskbench.evaluate --model-dir {params.model_dir} --data {input.data}"
            " --eval-sets {params.eval_sets} --task {params.task} --row {wildcards.row} --seed {wildcards.seed}"
            " --max-length {params.max_length} --batch-size {params.batch_size} --threads {threads}"
            " --out-dir {params.out_dir} > {log} 2>&1"
