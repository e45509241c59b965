# Paper D's tables and figures, rebuilt from the evaluation JSONs (and, for the samples figure, a few prepared
# splits); no model runs here.


rule vision_report:
    """D: Tables 2-5, figures"""
    input:
        evals=VISION.eval_jsons,
        samples=VISION.sample_splits,
    output:
        runs=report(VISION.tables[0], caption="captions/vision_runs.rst", category="Paper D"),
        tables=[report(path, caption="captions/vision_tables.rst", category="Paper D") for path in VISION.tables[1:]],
        magnitude=report(VISION.figure("magnitude_vs_ffw"), caption="captions/vision_magnitude.rst",
                         category="Paper D"),
        layers=report(VISION.figure("layer_sparsity"), caption="captions/vision_layers.rst", category="Paper D"),
        samples=report(VISION.figure("samples"), caption="captions/vision_samples.rst", category="Paper D"),
        svg=svg_beside(VISION.figures),
    params:
        args=lambda wildcards, output: shell_args(
            evals=VISION.eval_jsons, samples=VISION.sample_splits, config=VISION.vision,
            tables_dir=os.path.dirname(output.runs), figures_dir=os.path.dirname(output.magnitude),
            label=config.get("label")),
    log:
        f"{R}/logs/vision_report/report.log",
    localrule: True
    conda:
        "../../envs/maskbench.yaml"
    shell:
        "python -m maskbench.steps vision.report {params.args} > {log:q} 2>&1"
