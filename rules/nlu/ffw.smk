# Paper D's FFW on the task's fine-tuned baseline (config `ffw:`; maskbench.tracks.nlu.ffw): one gate run per
# (method, attribute, gamma, seed), the masks of a seed scored on one loaded model by nlu.evaluate_masks as paper A's
# are, and the nlu track's records of the cross-paper matrix (the FFW runs beside the native rows: the baseline,
# paper A's masks and, with `srnets:`, paper C's subnetworks on the task, maskbench.tracks.nlu.srnets.matrix).

if FFW:

    wildcard_constraints:
        ffw_method=alternation(FFW_METHODS),
        attribute=alternation(FFW_ATTRIBUTES),
        gamma=r"[0-9][0-9.e+-]*",

    rule ffw_nlu:
        input:
            unpack(ffw_inputs),
        output:
            mask=FFW.mask("{ffw_method}", "{attribute}", "{gamma}", "{seed}"),
            summary=FFW.summary("{ffw_method}", "{attribute}", "{gamma}", "{seed}"),
        params:
            args=lambda wildcards, input, output: shell_args(
                model_dir=os.path.dirname(input.model), train=input.train, attribute=wildcards.attribute,
                bias_probs=input.get("bias"), task=FFW.task,
                settings=Json(FFW.settings(wildcards.ffw_method, wildcards.gamma)), examples=Json(FFW.examples()),
                max_length=FFW.spec.get("max_length", 128), length_grouped=FFW.spec.get("length_grouped", 0),
                method=wildcards.ffw_method, seed=int(wildcards.seed),
                out=output.mask, summary=output.summary, **late_resume_options(), **precision_options(config)),
        log:
            f"{R}/logs/ffw_nlu/{FFW.task}/{{ffw_method}}/{{attribute}}/gamma~{{gamma}}/seed~{{seed}}.log",
        benchmark:
            f"{R}/benchmarks/rules/ffw_nlu/{FFW.task}/{{ffw_method}}/{{attribute}}/gamma~{{gamma}}/seed~{{seed}}.tsv"
        threads: COMPUTE["train_threads"]
        resources:
            mem_mb=COMPUTE["train_mem_mb"],
            runtime=COMPUTE["train_runtime_min"],
            gpu=training_gpus(),
        conda:
            "../../envs/maskbench.yaml"
        shell:
            "python -m maskbench.steps nlu.ffw {params.args} --threads {threads} > {log:q} 2>&1"

    rule evaluate_ffw_nlu:
        input:
            model=f"{checkpoint_dir(FFW.task, '{seed}')}/model.safetensors",
            masks=FFW.masks_of_seed("{seed}"),
            data=[prepared_path(e) for e in eval_set_names(FFW.task)],
        output:
            metrics=P.evaluation_outputs(FFW.task, FFW.rows(), "{seed}", "metrics"),
            predictions=P.evaluation_outputs(FFW.task, FFW.rows(), "{seed}", "predictions"),
        params:
            args=evaluate_args(FFW.task, FFW.rows(), masks_of("masks")),
        log:
            f"{R}/logs/evaluate_ffw_nlu/{FFW.task}/seed~{{seed}}.log",
        benchmark:
            f"{R}/benchmarks/rules/evaluate_ffw_nlu/{FFW.task}/seed~{{seed}}.tsv"
        threads: 1
        resources:
            mem_mb=COMPUTE["eval_mem_mb"],
            runtime=COMPUTE["eval_runtime_min"],
        conda:
            "../../envs/maskbench.yaml"
        shell:
            "python -m maskbench.steps nlu.evaluate_masks {params.args} --threads {threads} > {log:q} 2>&1"

    rule matrix_cells_nlu:
        input:
            evaluations=FFW.native_evaluations() + FFW.ffw_evaluations() + FFW.srnets.evaluations(),
            summaries=FFW.cost_files(),
        output:
            cells=FFW.cells_file(),
        params:
            args=lambda wildcards, input, output: shell_args(records=Json(FFW.records()), out=output.cells),
        log:
            f"{R}/logs/matrix_cells_nlu/cells.log",
        benchmark:
            f"{R}/benchmarks/rules/matrix_cells_nlu/cells.tsv"
        localrule: True
        threads: 1
        resources:
            **LIGHT_RESOURCES,
        conda:
            "../../envs/maskbench.yaml"
        shell:
            "python -m maskbench.steps nlu.matrix_cells {params.args} > {log:q} 2>&1"
