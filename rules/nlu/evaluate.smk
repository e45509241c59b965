# Evaluation: one job per (task, seed) loads each checkpoint of that seed in turn and scores it on every
# evaluation set of its task, writing one metrics JSON and one predictions parquet per (row, set). Grouping the
# rows of a seed pays the ~6 s of start-up once instead of once per model. Model rows (baseline, SD) and bias
# models have their own rules, as their seeds differ (bias.seed may share one bias model across seeds); mask
# rows are scored by evaluate_masks_<task> (rules/nlu/masks.smk).


for _task in TASKS:
    for _kind, _rows in (("", MODEL_ROWS), ("bias_", NEURAL_BIAS_ROWS)):
        if not _rows:
            continue

        rule:
            name:
                f"evaluate_{_kind}{_task}"
            input:
                unpack(eval_inputs_of(_task, _rows)),
            output:
                metrics=P.evaluation_outputs(_task, _rows, "{seed}", "metrics"),
                predictions=P.evaluation_outputs(_task, _rows, "{seed}", "predictions"),
            params:
                args=evaluate_args(_task, _rows, checkpoints_of("models")),
            log:
                f"{R}/logs/evaluate_{_kind}{_task}/seed~{{seed}}.log",
            benchmark:
                f"{R}/benchmarks/rules/evaluate_{_kind}{_task}/seed~{{seed}}.tsv"
            threads: 1
            resources:
                mem_mb=COMPUTE["eval_mem_mb"],
                runtime=COMPUTE["eval_runtime_min"],
            conda:
                "../../envs/maskbench.yaml"
            shell:
                "python -m maskbench.steps nlu.evaluate {params.args} --threads {threads} > {log:q} 2>&1"
