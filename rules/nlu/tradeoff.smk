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
            mask=f"{R}/{NLU}/{{task}}/{MODEL}/sweeps/{{row}}/{{knob}}~{{value}}/seed~{{seed}}.mask",
            summary=f"{R}/{NLU}/{{task}}/{MODEL}/sweeps/{{row}}/{{knob}}~{{value}}/seed~{{seed}}.search.json",
        wildcard_constraints:
            row=alternation([r for r in SWEEPS if r in MD]),
        params:
            checkpoint_every=COMPUTE["checkpoint_every"],
            deterministic=int(COMPUTE["deterministic"]),
            model_dir=model_dir_of,
            spec=lambda wildcards: as_json(with_knob({k: v for k, v in MASK_SEARCH.items()
                                                      if k not in ("hparams", "score_learning_rate")},
                                                     wildcards, ("l1_lambda",))),
            hparams=lambda wildcards: as_json(with_knob(mask_search_hparams(), wildcards, ("learning_rate", "epochs"))),
            loss=lambda wildcards: MD[wildcards.row]["loss"],
            loss_hparams=sweep_loss_hparams,
            bias=bias_option,
            teacher=teacher_option,
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
            "python -m maskbench.steps nlu.mask_search --model-dir {params.model_dir:q}"
            " --train {input.train:q} --dev {input.dev:q} --spec {params.spec} --hparams {params.hparams} --loss {params.loss}"
            " --loss-hparams {params.loss_hparams} {params.bias} {params.teacher} --seed {wildcards.seed}"
            " --threads {threads} --checkpoint-every {params.checkpoint_every} --deterministic {params.deterministic} --out {output.mask:q} --summary {output.summary:q} > {log:q} 2>&1"

    rule finetune_sweep:
        input:
            unpack(lambda wildcards: debiased_inputs(sweep_row_args(wildcards))),
        output:
            model=f"{R}/{NLU}/{{task}}/{MODEL}/sweeps/{{row}}/{{knob}}~{{value}}/seed~{{seed}}/model.safetensors",
            summary=f"{R}/{NLU}/{{task}}/{MODEL}/sweeps/{{row}}/{{knob}}~{{value}}/seed~{{seed}}/train_summary.json",
        wildcard_constraints:
            row=alternation([r for r in SWEEPS if r in SD]),
        params:
            checkpoint_every=COMPUTE["checkpoint_every"],
            deterministic=int(COMPUTE["deterministic"]),
            model_spec=as_json(config["model"]),
            hparams=lambda wildcards: as_json(with_knob(finetune_hparams(wildcards.task), wildcards,
                                                        ("learning_rate", "epochs"))),
            head=classifier_option,
            loss=lambda wildcards: SD[wildcards.row]["loss"],
            loss_hparams=sweep_loss_hparams,
            teacher=teacher_option,
            out_dir=folder_of_output("model"),
        log:
            f"{R}/logs/finetune_sweep/{{task}}/{{row}}/{{knob}}~{{value}}/seed~{{seed}}.log",
        benchmark:
            f"{R}/benchmarks/rules/finetune_sweep/{{task}}/{{row}}/{{knob}}~{{value}}/seed~{{seed}}.tsv"
        threads: COMPUTE["train_threads"]
        resources:
            mem_mb=COMPUTE["train_mem_mb"],
            runtime=COMPUTE["train_runtime_min"],
            gpu=training_gpus(),
        conda:
            "../../envs/maskbench.yaml"
        shell:
            "python -m maskbench.steps nlu.finetune --train {input.train:q} --dev {input.dev:q}"
            " --bias-probs {input.bias:q} --model-spec {params.model_spec} --hparams {params.hparams} --loss {params.loss} {params.head}"
            " --loss-hparams {params.loss_hparams} {params.teacher} --seed {wildcards.seed} --threads {threads} --checkpoint-every {params.checkpoint_every} --deterministic {params.deterministic}"
            " --out-dir {params.out_dir:q} > {log:q} 2>&1"

    for _task in TASKS:
        for _kind in ("mask", "model"):
            _points = run_points(_task, _kind)
            if not _points:
                continue
            _names = [p["point"] for p in _points]

            rule:
                name:
                    f"evaluate_sweep_{_kind}s_{_task}"
                input:
                    unpack(sweep_eval_inputs_of(_task, _kind, _points)),
                output:
                    metrics=evaluation_rule_outputs(_task, _names, "metrics"),
                    predictions=evaluation_rule_outputs(_task, _names, "predictions"),
                params:
                    # the step and what it loads (a shell directive is formatted when the job runs, after the loop
                    # has moved on: what differs per loop turn goes through params, bound here)
                    head=lambda wildcards, input, _kind=_kind: sweep_eval_head(_kind, input),
                    rows=" ".join(_names),
                    out_dirs=eval_dirs_of(_task, _names),
                    eval_sets=as_json(eval_set_specs(_task)),
                    task=_task,
                    max_length=config["finetune"]["max_length"],
                    batch_size=config["finetune"]["eval_batch_size"],
                    length_sorted=LENGTH_SORTED_EVAL,
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
                    "{params.head} --rows {params.rows} --out-dirs {params.out_dirs} --data {input.data:q} --eval-sets {params.eval_sets}"
                    " --task {params.task} --seed {wildcards.seed} --max-length {params.max_length}"
                    " --batch-size {params.batch_size} --length-sorted {params.length_sorted} --threads {threads} > {log:q} 2>&1"

    rule tradeoff_report:
        input:
            evals=tradeoff_evals(),
        output:
            csv=report(f"{R}/tables/tradeoff.csv", caption="captions/tradeoff.rst", category="Trade-off curves"),
            summary=report(f"{R}/tables/tradeoff_summary.csv", caption="captions/tradeoff_summary.rst",
                           category="Trade-off curves"),
            summary_md=f"{R}/tables/tradeoff_summary.md",
            selection=report(f"{R}/tables/tradeoff_selection.csv", caption="captions/tradeoff_selection.rst",
                             category="Trade-off curves"),
            figures=[report(f, caption="captions/tradeoff_figure.rst", category="Trade-off curves")
                     for f in tradeoff_figures().values()],
        params:
            points=as_json([{k: v for k, v in p.items() if k != "run"} for p in sweep_points()]),
            lines=as_json(sweep_lines()),
            id_sets=as_json({t: config["tasks"][t]["dev"] for t in TASKS}),
            columns=as_json((config["report"].get("table1") or {}).get("columns", {})),
            delta=TRADEOFF.get("delta", 1.0),
            drops=" ".join(str(d) for d in TRADEOFF.get("id_drops", [1, 2, 5])),
            figures_dir=folder_of_output("figures"),
            figures=quoted(list(tradeoff_figures())),
        log:
            f"{R}/logs/tradeoff_report/tradeoff.log",
        localrule: True
        conda:
            "../../envs/maskbench.yaml"
        shell:
            "python -m maskbench.steps nlu.tradeoff_report --evals {input.evals:q} --points {params.points}"
            " --lines {params.lines} --id-sets {params.id_sets} --columns {params.columns} --delta {params.delta}"
            " --drops {params.drops} --out-csv {output.csv:q} --out-summary {output.summary:q}"
            " --out-summary-md {output.summary_md:q} --out-selection {output.selection:q}"
            " --figures-dir {params.figures_dir:q} --figures {params.figures} > {log:q} 2>&1"
