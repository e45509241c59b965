# Paper D's tables and figures, rebuilt from the evaluation JSONs (and, for the samples figure, a few prepared
# splits); no model runs here.


rule vision_report:
    input:
        evals=vision_eval_jsons(),
        samples=vision_sample_splits(),
    output:
        runs=report(f"{R}/tables/vision/runs.csv", caption="captions/vision_runs.rst", category="Paper D"),
        tables=[report(path, caption="captions/vision_tables.rst", category="Paper D") for path in VISION_TABLES
                if not path.endswith("runs.csv")],
        magnitude=report(f"{R}/figures/vision/magnitude_vs_ffw.png", caption="captions/vision_magnitude.rst",
                         category="Paper D"),
        layers=report(f"{R}/figures/vision/layer_sparsity.png", caption="captions/vision_layers.rst",
                      category="Paper D"),
        samples=report(f"{R}/figures/vision/samples.png", caption="captions/vision_samples.rst", category="Paper D"),
    params:
        config=as_json(VCFG),
        tables_dir=folder_of_output("runs"),
        figures_dir=folder_of_output("magnitude"),
    log:
        f"{R}/logs/vision_report/report.log",
    localrule: True
    conda:
        "../../envs/maskbench.yaml"
    shell:
        "python -m maskbench.steps vision.report --evals {input.evals:q} --samples {input.samples:q}"
        " --config {params.config} --tables-dir {params.tables_dir:q} --figures-dir {params.figures_dir:q}"
        " > {log:q} 2>&1"
