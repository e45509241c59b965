# Paper C (sparse and robust subnetworks), planned only when the config has `srnets:` (helpers: rules/nlu/srnets_common.smk,
# the run grid: src/maskbench/tracks/nlu/srnets/grid.py). Each srnet job runs one sweep of one (run, task, seed) in one
# process, one rule per method (steps nlu.srnet_mask_train / nlu.srnet_imp / nlu.srnet_retrain, settings as a typed
# `--spec`); evaluate_srnets scores every subnetwork of a (task, seed), srnet_report draws the curves and Table 5.

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
                args=lambda wildcards, input, output, _loss=_loss: finetune_args(
                    wildcards, input, output, loss=_loss, hparams=theta_ft_hparams(wildcards.task, _loss),
                    train_classifier=None if SRN_THETA_FT["train_classifier"] else 0, train_probs_out=output.probs,
                    precision_section="srnets"),
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
                "python -m maskbench.steps nlu.finetune {params.args} --threads {threads} {params.extra} > {log:q} 2>&1"

    # one rule per method, the run a wildcard; the t5 and timing sweeps (mask training, named runs) one rule each
    _SRN_RULES = {"srnet_mask_train": ("srnet_mask_train", srn_runs_of("mask_train"), srn_level_outputs(SRN_SPARSITIES, ["mask.mask", "search.json"])),
                  "srnet_imp": ("srnet_imp", srn_runs_of("imp", "imp_rewind"), srn_level_outputs(srnet_grid.imp_levels(SRN))),
                  "srnet_retrain": ("srnet_retrain", srn_runs_of("retrain"), srn_level_outputs(SRN_SPARSITIES)),
                  **{f"srnet_{_run}": ("srnet_mask_train", [_run], [f"{SRN_DIR}/{_name}/mask.mask" for _name in srnet_grid.named_runs(SRN, _run)])
                     for _run in SRN_NAMED_SWEEPS}}
    for _name, (_step, _runs, _outputs) in _SRN_RULES.items():

        rule:
            name:
                _name
            input:
                unpack(srn_inputs),
            output:
                _outputs,
            wildcard_constraints:
                run=alternation(_runs),
            params:
                step=_step,
                checkpoint_every=COMPUTE["checkpoint_every"],
                deterministic=int(COMPUTE["deterministic"]),
                precision=precision_args("srnets"),
                spec=lambda wildcards: as_json(srnet_grid.spec(SRN, SRN_ALL, wildcards.run, wildcards.task)),
                hparams=lambda wildcards: as_json(srnet_grid.hparams(SRN, SRN_ALL, wildcards.run, wildcards.task)),
                loss=lambda wildcards: srnet_grid.loss_of(SRN, SRN_ALL, wildcards.run),
                loss_inputs=loss_input_options,
                sweep=srn_sweep_options,
                sweep_dir=lambda wildcards: srn_dir(wildcards.task, wildcards.run, wildcards.seed),
            log:
                f"{R}/logs/srnet/{{run}}/{{task}}/seed~{{seed}}.log",
            benchmark:
                f"{R}/benchmarks/rules/srnet/{{run}}/{{task}}/seed~{{seed}}.tsv"
            threads: COMPUTE["train_threads"]
            resources:
                mem_mb=COMPUTE["train_mem_mb"],
                runtime=COMPUTE.get("srnet_runtime_min", COMPUTE["train_runtime_min"]),
                gpu=training_gpus(),
            conda:
                "../../envs/maskbench.yaml"
            shell:
                "python -m maskbench.steps nlu.{params.step} {params.sweep} --train {input.train:q} --dev {input.dev:q} --seed {wildcards.seed} --tag {wildcards.run}"
                " --loss {params.loss}{params.loss_inputs} --spec {params.spec} --hparams {params.hparams}"
                " --sweep-dir {params.sweep_dir:q} --threads {threads} --checkpoint-every {params.checkpoint_every}"
                " --deterministic {params.deterministic} {params.precision} > {log:q} 2>&1"

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
                length_sorted=shell_args(length_sorted=LENGTH_SORTED_EVAL),  # the bare flag, or nothing
                precision=precision_args("srnets"),
            log:
                f"{R}/logs/evaluate_srnets/{_task}/seed~{{seed}}.log",
            benchmark:
                f"{R}/benchmarks/rules/evaluate_srnets/{_task}/seed~{{seed}}.tsv"
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

    rule srnet_report:
        """C: sparsity curves, Table 5, timing"""
        # paper C's curves (ID and OOD metric vs sparsity, std bands over seeds), Table 5 and the timing study
        input:
            evals=srn_all_evals(),
            reference=srn_reference_jsons(),
        output:
            srn_report_outputs(captioned=True),
        params:
            # the results folder: read off the first output ({R}/tables/sparsity_curves.csv)
            args=lambda wildcards, input, output: shell_args(
                evals=input.evals, reference=input.reference, runs=Json(srnet_grid.report_labels(SRN_ALL)),
                metrics=Json(SRN.get("metrics", {})), table5=Json(SRN.get("table5", {})),
                results=os.path.dirname(os.path.dirname(output[0])), label=config.get("label") or None),
        log:
            f"{R}/logs/srnet_report/srnet_report.log",
        localrule: True
        conda:
            "../../envs/maskbench.yaml"
        shell:
            "python -m maskbench.steps nlu.srnet_report {params.args} > {log:q} 2>&1"
