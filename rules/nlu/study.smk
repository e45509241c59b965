# The budget study's rules (config `budget_study:`; names and inputs: rules/nlu/study_common.smk).


rule study_finetune:
    input:
        train=lambda wildcards: prepared_path(wildcards.train_set),
        dev=prepared_path(config["tasks"][STUDY_TASK]["dev"]),
    output:
        model=f"{study_baseline_dir('{train_set}', '{seed}')}/model.safetensors",
        summary=f"{study_baseline_dir('{train_set}', '{seed}')}/train_summary.json",
    wildcard_constraints:
        train_set=alternation(STUDY_TRAIN_SETS),
    params:
        args=lambda wildcards, input, output: finetune_args(
            wildcards, input, output, hparams={**finetune_hparams(STUDY_TASK), "epochs": STUDY["baseline"]["epochs"],
                                               "early_stop_patience": 0, "eval_every_epoch": True}),
    log:
        f"{R}/logs/study_finetune/train~{{train_set}}/seed~{{seed}}.log",
    benchmark:
        f"{R}/benchmarks/rules/study_finetune/train~{{train_set}}/seed~{{seed}}.tsv"
    threads: COMPUTE["train_threads"]
    resources:
        mem_mb=COMPUTE["train_mem_mb"],
        runtime=COMPUTE["train_runtime_min"],
        gpu=training_gpus(),
    conda:
        "../../envs/maskbench.yaml"
    shell:
        "python -m maskbench.steps nlu.finetune {params.args} --threads {threads} > {log:q} 2>&1"


rule study_search_mask:
    input:
        unpack(lambda wildcards: mask_search_inputs(study_mask_wildcards(wildcards))),
    output:
        mask=f"{study_mask_stem('{row}', '{lr}', '{epochs}', '{seed}')}.mask",
        summary=f"{study_mask_stem('{row}', '{lr}', '{epochs}', '{seed}')}.search.json",
    wildcard_constraints:
        row=alternation(STUDY_ROWS),
        lr=alternation(sorted({lr for lr, _ in STUDY_POINTS})),
        epochs=r"\d+",
    params:
        args=lambda wildcards, input, output: mask_search_args(
            wildcards, input, output, P.mask_search_spec(),
            {**P.mask_search_hparams(), "learning_rate": float(wildcards.lr), "epochs": int(wildcards.epochs)},
            MD[wildcards.row]["loss"], P.loss_hparams(MD, MD[wildcards.row]["loss"], P.mask_source(wildcards.row))),
    log:
        f"{R}/logs/study_search_mask/{{row}}/lr~{{lr}}/epochs~{{epochs}}/seed~{{seed}}.log",
    benchmark:
        f"{R}/benchmarks/rules/study_search_mask/{{row}}/lr~{{lr}}/epochs~{{epochs}}/seed~{{seed}}.tsv"
    threads: COMPUTE["train_threads"]
    resources:
        mem_mb=COMPUTE["train_mem_mb"],
        runtime=COMPUTE["train_runtime_min"],
        gpu=training_gpus(),
    conda:
        "../../envs/maskbench.yaml"
    shell:
        "python -m maskbench.steps nlu.mask_search {params.args} --threads {threads} > {log:q} 2>&1"


rule study_evaluate_masks:
    input:
        model=f"{checkpoint_dir(STUDY_TASK, '{seed}')}/model.safetensors",
        masks=[f"{study_mask_stem(r, lr, ep, '{seed}')}.mask" for r in STUDY_ROWS for lr, ep in STUDY_POINTS],
        data=[prepared_path(e) for e in eval_set_names(STUDY_TASK)],
    output:
        metrics=P.evaluation_outputs(STUDY_TASK, STUDY_EVAL_ROWS, "{seed}", "metrics"),
        predictions=P.evaluation_outputs(STUDY_TASK, STUDY_EVAL_ROWS, "{seed}", "predictions"),
    params:
        args=evaluate_args(STUDY_TASK, STUDY_EVAL_ROWS, masks_of("masks")),
    log:
        f"{R}/logs/study_evaluate_masks/seed~{{seed}}.log",
    benchmark:
        f"{R}/benchmarks/rules/study_evaluate_masks/seed~{{seed}}.tsv"
    threads: 1
    resources:
        mem_mb=COMPUTE["eval_mem_mb"],
        runtime=COMPUTE["eval_runtime_min"],
    conda:
        "../../envs/maskbench.yaml"
    shell:
        "python -m maskbench.steps nlu.evaluate_masks {params.args} --threads {threads} > {log:q} 2>&1"


# paper C's part: one job per (method, epochs, seed) sweeps the levels in one process, as rules/nlu/srnets.smk's jobs
for _method in STUDY_SRN_METHODS:

    rule:
        name:
            f"study_srnet_{_method}"
        input:
            train=prepared_path(config["tasks"][STUDY_TASK]["train"]),
            dev=prepared_path(config["tasks"][STUDY_TASK]["dev"]),
            start=f"{checkpoint_dir(STUDY_TASK, '{seed}')}/train_summary.json",
        output:
            [f"{study_srnet_dir(_method, '{epochs}', '{seed}')}/{level_name(s)}/{name}" for s in study_srnet_levels(_method)
             for name in (["mask.mask", "search.json"] if _method == "mask_train" else
                          ["model.safetensors", "mask.mask", "train_summary.json"])],
        wildcard_constraints:
            epochs=alternation(STUDY_SRN_EPOCHS[_method]),
        params:
            step=f"srnet_{_method}",
            run=STUDY_SRN_RUNS[_method],
            spec=lambda wildcards, _method=_method: as_json(study_srnet_settings(_method, wildcards.epochs)[0]),
            hparams=lambda wildcards, _method=_method: as_json(study_srnet_settings(_method, wildcards.epochs)[1]),
            sparsities=f" --sparsities {' '.join(map(str, STUDY_SRN['sparsities']))}" if _method == "mask_train" else "",
            sweep_dir=lambda wildcards, _method=_method: study_srnet_dir(_method, wildcards.epochs, wildcards.seed),
            start_dir=lambda wildcards: checkpoint_dir(STUDY_TASK, wildcards.seed),
            checkpoint_every=COMPUTE["checkpoint_every"],
            deterministic=int(COMPUTE["deterministic"]),
            precision=precision_args("srnets"),
        log:
            f"{R}/logs/study_srnet/{_method}/epochs~{{epochs}}/seed~{{seed}}.log",
        benchmark:
            f"{R}/benchmarks/rules/study_srnet/{_method}/epochs~{{epochs}}/seed~{{seed}}.tsv"
        threads: COMPUTE["train_threads"]
        resources:
            mem_mb=COMPUTE["train_mem_mb"],
            runtime=COMPUTE.get("srnet_runtime_min", COMPUTE["train_runtime_min"]),
            gpu=training_gpus(),
        conda:
            "../../envs/maskbench.yaml"
        shell:
            "python -m maskbench.steps nlu.{params.step} --start-dir {params.start_dir:q}{params.sparsities}"
            " --train {input.train:q} --dev {input.dev:q} --seed {wildcards.seed} --tag {params.run} --loss ce"
            " --spec {params.spec} --hparams {params.hparams} --sweep-dir {params.sweep_dir:q} --threads {threads}"
            " --checkpoint-every {params.checkpoint_every} --deterministic {params.deterministic} {params.precision}"
            " > {log:q} 2>&1"


if STUDY_SRN_METHODS:

    rule study_evaluate_srnets:
        # every study subnetwork of a seed: masks switched in on the start, IMP's checkpoints as they are
        input:
            start=f"{checkpoint_dir(STUDY_TASK, '{seed}')}/train_summary.json",
            subnetworks=lambda wildcards: [f"{model}/model.safetensors" if mask == "none" else mask
                                           for model, mask, _, _ in study_srnet_items(wildcards.seed)],
            data=[prepared_path(e) for e in eval_set_names(STUDY_TASK)],
        output:
            [f"{where}/{e}.json" for *_, where in study_srnet_items("{seed}") for e in eval_set_names(STUDY_TASK)],
        params:
            subnetworks=lambda wildcards: study_srnet_options(wildcards.seed),
            eval_sets=as_json(eval_set_specs(STUDY_TASK)),
            task=STUDY_TASK,
            max_length=config["finetune"]["max_length"],
            batch_size=config["finetune"]["eval_batch_size"],
            length_sorted=shell_args(length_sorted=LENGTH_SORTED_EVAL),
            precision=precision_args("srnets"),
        log:
            f"{R}/logs/study_evaluate_srnets/seed~{{seed}}.log",
        benchmark:
            f"{R}/benchmarks/rules/study_evaluate_srnets/seed~{{seed}}.tsv"
        threads: 1
        resources:
            mem_mb=COMPUTE["eval_mem_mb"],
            runtime=COMPUTE.get("srnet_eval_runtime_min", COMPUTE["eval_runtime_min"]),
        conda:
            "../../envs/maskbench.yaml"
        shell:
            "python -m maskbench.steps nlu.evaluate_srnets {params.subnetworks} --data {input.data:q}"
            " --eval-sets {params.eval_sets} --task {params.task} --seed {wildcards.seed}"
            " --max-length {params.max_length} --batch-size {params.batch_size} {params.length_sorted} {params.precision}"
            " --threads {threads} > {log:q} 2>&1"


rule budget_study_report:
    """A, C: budget study"""
    input:
        study_inputs(),
    output:
        csv=report(P.table("budget_study.csv"), caption="captions/budget_study.rst", category="Budget study"),
        md=P.table("budget_study.md"),
        figure=report(P.figure("budget_study.png"), caption="captions/budget_study.rst", category="Budget study"),
        svg=svg_beside(P.figure("budget_study.png")),
    params:
        args=lambda wildcards, output: shell_args(
            runs=Json(study_runs()), dev_set=config["tasks"][STUDY_TASK]["dev"],
            id_cost_max=STUDY.get("id_cost_max", 5.0), plateau=STUDY.get("plateau", 1.0), out_csv=output.csv,
            out_md=output.md, figure=output.figure, label=config.get("label")),
    log:
        f"{R}/logs/budget_study/budget_study.log",
    localrule: True
    conda:
        "../../envs/maskbench.yaml"
    shell:
        "python -m maskbench.steps nlu.budget_study {params.args} > {log:q} 2>&1"


TARGETS["all"] += rules.budget_study_report.output
PAPER_TARGETS["budget_study"] = rules.budget_study_report.output
