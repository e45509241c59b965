# ID-OOD trade-off curves (config `tradeoff:`): each swept Table 1 row re-run at every value of its strength knobs.
# A point is a normal run with files of its own (sweeps/<row>/<knob>~<value>/seed~<seed>...), evaluated like the
# row's own run under the name <row>@<knob>~<value>; the row's configured value is its Table 1 run, not re-run.
# tradeoff_report draws the curves and applies the selection rule; Table 1 then shows a "selected" row per swept row.
# Helpers: rules/nlu/tradeoff_common.smk.


if SWEEPS:
    wildcard_constraints:
        knob=alternation({k for knobs in SWEEPS.values() for k in knobs}),
        value=r"[0-9.e+-]+",

    rule search_mask_sweep:
        input:
            unpack(lambda wildcards: mask_search_inputs(sweep_row_args(wildcards))),
        output:
            mask=f"{P.sweep_stem('{task}', '{row}', '{knob}', '{value}', '{seed}')}.mask",
            summary=f"{P.sweep_stem('{task}', '{row}', '{knob}', '{value}', '{seed}')}.search.json",
        wildcard_constraints:
            row=alternation([r for r in SWEEPS if r in MD]),
        params:
            args=lambda wildcards, input, output: mask_search_args(
                wildcards, input, output, swept(P.mask_search_spec(), wildcards, ("l1_lambda",)),
                swept(P.mask_search_hparams(), wildcards, ("learning_rate", "epochs")), MD[wildcards.row]["loss"],
                sweep_loss_hparams(wildcards)),
        log:
            f"{R}/logs/search_mask_sweep/{{task}}/{{row}}/{{knob}}~{{value}}/seed~{{seed}}.log",
        benchmark:
            f"{R}/benchmarks/rules/search_mask_sweep/{{task}}/{{row}}/{{knob}}~{{value}}/seed~{{seed}}.tsv"
        threads: COMPUTE["train_threads"]
        resources:
            mem_mb=COMPUTE["train_mem_mb"],
            runtime=COMPUTE["train_runtime_min"],
            gpu=training_gpus(),
        conda:
            "../../envs/maskbench.yaml"
        shell:
            "python -m maskbench.steps nlu.mask_search {params.args} --threads {threads} > {log:q} 2>&1"

    use rule finetune_baseline as finetune_sweep with:
        input:
            unpack(lambda wildcards: debiased_inputs(sweep_row_args(wildcards))),
        output:
            model=scored_checkpoint(f"{P.sweep_stem('{task}', '{row}', '{knob}', '{value}', '{seed}')}/model.safetensors"),
            summary=f"{P.sweep_stem('{task}', '{row}', '{knob}', '{value}', '{seed}')}/train_summary.json",
        wildcard_constraints:
            row=alternation([r for r in SWEEPS if r in SD]),
        params:
            args=lambda wildcards, input, output: finetune_args(
                wildcards, input, output, loss=SD[wildcards.row]["loss"],
                hparams=swept(finetune_hparams(wildcards.task), wildcards, ("learning_rate", "epochs")),
                loss_hparams=sweep_loss_hparams(wildcards)),
            extra="",
        log:
            f"{R}/logs/finetune_sweep/{{task}}/{{row}}/{{knob}}~{{value}}/seed~{{seed}}.log",
        benchmark:
            f"{R}/benchmarks/rules/finetune_sweep/{{task}}/{{row}}/{{knob}}~{{value}}/seed~{{seed}}.tsv"

    for _task in TASKS:
        for _kind in ("mask", "model"):
            _points = SW.run_points(_task, _kind)
            if not _points:
                continue
            _names = [p["point"] for p in _points]

            rule:
                name:
                    f"evaluate_sweep_{_kind}s_{_task}"
                input:
                    unpack(sweep_eval_inputs_of(_task, _kind, _points)),
                output:
                    metrics=P.evaluation_outputs(_task, _names, "{seed}", "metrics"),
                    predictions=P.evaluation_outputs(_task, _names, "{seed}", "predictions"),
                params:
                    step="nlu.evaluate_masks" if _kind == "mask" else "nlu.evaluate",
                    args=evaluate_args(_task, _names, masks_of("points") if _kind == "mask" else checkpoints_of("points")),
                log:
                    f"{R}/logs/evaluate_sweep_{_kind}s/{_task}/seed~{{seed}}.log",
                benchmark:
                    f"{R}/benchmarks/rules/evaluate_sweep_{_kind}s/{_task}/seed~{{seed}}.tsv"
                threads: 1
                resources:
                    mem_mb=COMPUTE["eval_mem_mb"],
                    runtime=COMPUTE["eval_runtime_min"],
                conda:
                    "../../envs/maskbench.yaml"
                shell:
                    "python -m maskbench.steps {params.step} {params.args} --threads {threads} > {log:q} 2>&1"

    rule tradeoff_report:
        """A: trade-off curves"""
        input:
            evals=SW.evals(),
        output:
            csv=report(P.table("tradeoff.csv"), caption="captions/tradeoff.rst", category="Trade-off curves"),
            summary=report(P.table("tradeoff_summary.csv"), caption="captions/tradeoff_summary.rst",
                           category="Trade-off curves"),
            summary_md=P.table("tradeoff_summary.md"),
            selection=report(P.table("tradeoff_selection.csv"), caption="captions/tradeoff_selection.rst",
                             category="Trade-off curves"),
            figures=[report(f, caption="captions/tradeoff_figure.rst", category="Trade-off curves")
                     for f in SW.figures().values()],
            svg=svg_beside(list(SW.figures().values())),
        params:
            args=lambda wildcards, input, output: shell_args(
                evals=input.evals, points=Json([{k: v for k, v in p.items() if k != "run"} for p in SW.points()]),
                lines=Json(SW.lines()), id_sets={t: config["tasks"][t]["dev"] for t in TASKS},
                columns=paper_a_columns(), delta=TRADEOFF.get("delta", 1.0),
                drops=TRADEOFF.get("id_drops", [1, 2, 5]), out_csv=output.csv, out_summary=output.summary,
                out_summary_md=output.summary_md, out_selection=output.selection,
                figures_dir=os.path.dirname(output.figures[0]), figures=list(SW.figures())),
        log:
            f"{R}/logs/tradeoff_report/tradeoff.log",
        localrule: True
        conda:
            "../../envs/maskbench.yaml"
        shell:
            "python -m maskbench.steps nlu.tradeoff_report {params.args} > {log:q} 2>&1"
