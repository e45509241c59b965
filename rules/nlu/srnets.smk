# Paper C (sparse and robust subnetworks), planned only when the config has `srnets:` (helpers: rules/nlu/srnets_common.smk).
# Each srnet job runs one sweep of one (task, seed) in one process (`maskbench.steps.nlu.srnet --sparsities/--masks/--runs`);
# evaluate_srnets scores every subnetwork of a (task, seed), srnet_report draws the curves and Table 5.

if SRN:

    # paper C's own fine-tuned model (its recipe per task), which writes theta_pt and the timing study's snapshots,
    # and with `debiased_start` the model fine-tuned with that loss the same way (figure 3)
    _theta_ft_losses = ["ce", *([SRN_DEBIAS["debiased_start"]] if SRN_DEBIAS.get("debiased_start") else [])]
    for _loss in _theta_ft_losses if SRN_THETA_FT is not None else []:
        _name = "finetune_theta_ft" if _loss == "ce" else f"finetune_theta_ft_{_loss}"

        rule:
            name:
                _name
            input:
                unpack(theta_ft_inputs(_loss)),
            output:
                model=f"{theta_ft_dir('{task}', '{seed}', _loss)}/model.safetensors",
                summary=f"{theta_ft_dir('{task}', '{seed}', _loss)}/train_summary.json",
                probs=f"{theta_ft_dir('{task}', '{seed}', _loss)}/train_probs.parquet",
                **finetune_extra_outputs(_name),
            params:
                checkpoint_every=COMPUTE["checkpoint_every"],
                deterministic=int(COMPUTE["deterministic"]),
                model_spec=as_json(config["model"]),
                hparams=theta_ft_hparams_of(_loss),
                head=theta_ft_head,
                loss=_loss,
                loss_inputs=theta_ft_loss_options,
                out_dir=folder_of_output("model"),
                extra=finetune_extra_options,
            log:
                f"{R}/logs/{_name}/{{task}}/seed~{{seed}}.log",
            benchmark:
                f"{R}/benchmarks/rules/{_name}/{{task}}/seed~{{seed}}.tsv"
            threads: COMPUTE["train_threads"]
            resources:
                mem_mb=COMPUTE["train_mem_mb"],
                runtime=COMPUTE["train_runtime_min"],
                gpu=training_gpus(),
            conda:
                "../../envs/maskbench.yaml"
            shell:
                "python -m maskbench.steps nlu.finetune --train {input.train:q} --dev {input.dev:q}"
                " --model-spec {params.model_spec} --hparams {params.hparams} --loss {params.loss}{params.loss_inputs} {params.head}"
                " --seed {wildcards.seed} --threads {threads} --checkpoint-every {params.checkpoint_every} --deterministic {params.deterministic} --out-dir {params.out_dir:q}"
                " --train-probs-out {output.probs:q} {params.extra} > {log:q} 2>&1"

    for _run in list(SRN_RUNS) + list(SRN_FEEDERS) + SRN_NAMED_SWEEPS:

        rule:
            name:
                f"srnet_{_run}"
            input:
                unpack(srn_inputs_of(_run)),
            output:
                srn_outputs(_run),
            params:
                checkpoint_every=COMPUTE["checkpoint_every"],
                deterministic=int(COMPUTE["deterministic"]),
                options=srn_options_of(_run),
            log:
                f"{R}/logs/srnet/{_run}/{{task}}/seed~{{seed}}.log",
            benchmark:
                f"{R}/benchmarks/rules/srnet/{_run}/{{task}}/seed~{{seed}}.tsv"
            threads: COMPUTE["train_threads"]
            resources:
                mem_mb=COMPUTE["train_mem_mb"],
                runtime=COMPUTE.get("srnet_runtime_min", COMPUTE["train_runtime_min"]),
                gpu=training_gpus(),
            conda:
                "../../envs/maskbench.yaml"
            shell:
                "python -m maskbench.steps nlu.srnet {params.options} --threads {threads} --checkpoint-every {params.checkpoint_every} --deterministic {params.deterministic} > {log:q} 2>&1"

    for _task in SRN_TASKS:

        rule:
            # every subnetwork of one (task, seed): masks switched in on their start model, checkpoints as they are
            name:
                f"evaluate_srnets_{_task}"
            input:
                unpack(srn_eval_inputs_of(_task)),
            output:
                srn_eval_outputs(_task, "{seed}"),
            params:
                subnetworks=srn_eval_options_of(_task),
                eval_sets=as_json(eval_set_specs(_task)),
                task=_task,
                max_length=config["finetune"]["max_length"],
                batch_size=config["finetune"]["eval_batch_size"],
                length_sorted=LENGTH_SORTED_EVAL,
            log:
                f"{R}/logs/evaluate_srnets/{_task}/seed~{{seed}}.log",
            benchmark:
                f"{R}/benchmarks/rules/evaluate_srnets/{_task}/seed~{{seed}}.tsv"
            threads: 1
            resources:
                mem_mb=COMPUTE["eval_mem_mb"],
                runtime=COMPUTE["eval_runtime_min"],
            conda:
                "../../envs/maskbench.yaml"
            shell:
                "python -m maskbench.steps nlu.evaluate_srnets {params.subnetworks} --data {input.data:q}"
                " --eval-sets {params.eval_sets} --task {params.task} --seed {wildcards.seed}"
                " --max-length {params.max_length} --batch-size {params.batch_size} --length-sorted {params.length_sorted} --threads {threads} > {log:q} 2>&1"

    rule srnet_report:
        # paper C's curves (ID and OOD metric vs sparsity, std bands over seeds), Table 5 and the timing study
        input:
            evals=srn_all_evals(),
            reference=srn_reference_jsons(),
        output:
            srn_report_outputs(captioned=True),
        params:
            runs=as_json(srn_report_runs()),
            metrics=as_json(SRN.get("metrics", {})),
            table5=as_json(SRN.get("table5", {})),
            # the results folder, read off the first output ({R}/tables/sparsity_curves.csv)
            out_dir=lambda wildcards, output: os.path.dirname(os.path.dirname(output[0])),
        log:
            f"{R}/logs/srnet_report/srnet_report.log",
        localrule: True
        conda:
            "../../envs/maskbench.yaml"
        shell:
            "python -m maskbench.steps nlu.srnet_report --evals {input.evals:q} --reference {input.reference:q}"
            " --runs {params.runs} --metrics {params.metrics} --table5 {params.table5}"
            " --results {params.out_dir:q} > {log:q} 2>&1"
