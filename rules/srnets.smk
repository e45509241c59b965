# Paper C (sparse and robust subnetworks), planned only when the config has `srnets:`. Each job sweeps every
# sparsity of one run (task, seed) in one process (`maskbench.srnet --sparsities/--masks`); evaluation scores the
# sweep's masks on their start model (switching masks) or its checkpoints; srnet_report draws the curves.

if SRN:

    rule initial_model:
        # theta_pt: the model a seed's fine-tuning starts from (from scratch: its seeded initialisation)
        input:
            train=lambda wildcards: prepared_path(config["tasks"][wildcards.task]["train"]),
        output:
            model=f"{R}/{TRACK}/{{task}}/{MODEL}/models/init/seed~{{seed}}/model.safetensors",
            summary=f"{R}/{TRACK}/{{task}}/{MODEL}/models/init/seed~{{seed}}/train_summary.json",
        params:
            model_spec=as_json(config["model"]),
            out_dir=folder_of_output("model"),
        log:
            f"{R}/logs/initial_model/{{task}}/seed~{{seed}}.log",
        benchmark:
            f"{R}/benchmarks/rules/initial_model/{{task}}/seed~{{seed}}.tsv"
        threads: 1
        resources:
            mem_mb=COMPUTE["train_mem_mb"],
            runtime=COMPUTE["train_runtime_min"],
        conda:
            "../envs/maskbench.yaml"
        shell:
            "python -m maskbench.initial_model --train {input.train} --model-spec {params.model_spec}"
            " --seed {wildcards.seed} --out-dir {params.out_dir} > {log} 2>&1"

    for _run in list(SRN_RUNS) + list(SRN_FEEDERS) + [f"t5_{v}" for v in SRN_T5]:

        rule:
            name:
                f"srnet_{_run}"
            input:
                unpack(srn_inputs_of(_run)),
            output:
                srn_outputs("{task}", _run, "{seed}") if not _run.startswith("t5_") else
                [f"{srn_dir('{task}', _run, '{seed}')}/{sparsity_name(SRN_T5_SPARSITY)}/mask.mask"],
            params:
                options=srn_options_of(_run),
            log:
                f"{R}/logs/srnet/{_run}/{{task}}/seed~{{seed}}.log",
            benchmark:
                f"{R}/benchmarks/rules/srnet/{_run}/{{task}}/seed~{{seed}}.tsv"
            threads: COMPUTE["train_threads"]
            resources:
                mem_mb=COMPUTE["train_mem_mb"],
                runtime=COMPUTE["train_runtime_min"],
                gpu=training_gpus(),
            conda:
                "../envs/maskbench.yaml"
            shell:
                "python -m maskbench.srnet {params.options} --threads {threads} > {log} 2>&1"

        for _task in TASKS:

            rule:
                name:
                    f"evaluate_srnet_{_run}_{_task}"
                input:
                    unpack(srn_eval_inputs_of(_task, _run)),
                output:
                    srn_eval_outputs(_task, _run, "{seed}"),
                params:
                    options=srn_eval_options_of(_task, _run),
                    eval_sets=as_json(eval_set_specs(_task)),
                    task=_task,
                    max_length=config["finetune"]["max_length"],
                    batch_size=config["finetune"]["eval_batch_size"],
                log:
                    f"{R}/logs/evaluate_srnet/{_run}/{_task}/seed~{{seed}}.log",
                threads: 1
                resources:
                    mem_mb=COMPUTE["eval_mem_mb"],
                    runtime=COMPUTE["eval_runtime_min"],
                conda:
                    "../envs/maskbench.yaml"
                shell:
                    "python -m maskbench.{params.options} --data {input.data} --eval-sets {params.eval_sets}"
                    " --task {params.task} --seed {wildcards.seed} --max-length {params.max_length}"
                    " --batch-size {params.batch_size} --threads {threads} > {log} 2>&1"

    rule srnet_report:
        # paper C's curves (ID and OOD metric vs sparsity, std bands over seeds) and Table 5
        input:
            evals=srn_all_evals(),
            reference=[evaluation_json(t, "baseline", s, e) for t in TASKS for s in SRN_SEEDS for e in eval_set_names(t)],
        output:
            srn_report_outputs(),
        params:
            runs=as_json(SRN_RUNS),
            metrics=as_json(SRN.get("metrics", {})),
            table5=as_json(SRN.get("table5", {})),
            out_dir=R,
        log:
            f"{R}/logs/srnet_report/srnet_report.log",
        localrule: True
        conda:
            "../envs/maskbench.yaml"
        shell:
            "python -m maskbench.srnet_report --evals {input.evals} --reference {input.reference}"
            " --runs {params.runs} --metrics {params.metrics} --table5 {params.table5}"
            " --results {params.out_dir} > {log} 2>&1"
