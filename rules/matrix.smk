# The cross-paper matrix (config `matrix:`): every track that plans matrix cells adds its records file to
# MATRIX_CELLS (rules/<track>/common.smk; one `matrix_cells_<track>` rule per track turns its evaluations into
# records, maskbench.matrix.cells); this rule builds the methods x benchmarks table and figure from them.

if not MATRIX_CELLS:
    raise WorkflowError("matrix: the config has a `matrix:` section, but none of its tracks plans a matrix cell "
                        "(nlu: `ffw`; gender: `gender.ffw`; vision: `vision.masks`)")


rule matrix_report:
    """cross-paper matrix"""
    input:
        cells=MATRIX_CELLS,
    output:
        table=report(f"{R}/tables/matrix.csv", caption="captions/matrix.rst", category="Matrix"),
        markdown=f"{R}/tables/matrix.md",
        figure=report(f"{R}/figures/matrix.png", caption="captions/matrix.rst", category="Matrix"),
        svg=svg_beside(f"{R}/figures/matrix.png"),
    params:
        args=lambda wildcards, input, output: shell_args(
            cells=input.cells, delta=config["matrix"]["delta"], table=output.table, markdown=output.markdown,
            figure=output.figure, label=config.get("label") or None),
    log:
        f"{R}/logs/matrix_report/matrix.log",
    localrule: True
    threads: 1
    resources:
        **LIGHT_RESOURCES,
    conda:
        "../envs/maskbench.yaml"
    shell:
        "python -m maskbench.steps matrix.report {params.args} > {log:q} 2>&1"


# the four papers' verdict table (one row a paper: claim, the paper's figure, ours paired by seed, engagement, the
# word): maskbench.matrix.verdict
rule verdict_table:
    """four papers: verdict table"""
    input:
        cells=MATRIX_CELLS,
        prices=os.path.join(PROJECT_DIR, "docs", "facts.json"),
    output:
        table=report(f"{R}/tables/verdict.csv", caption="captions/verdict.rst", category="Matrix"),
        markdown=f"{R}/tables/verdict.md",
    params:
        args=lambda wildcards, input, output: shell_args(
            cells=input.cells, delta=config["matrix"]["delta"], table=output.table, markdown=output.markdown,
            prices=input.prices, label=config.get("label") or None),
    log:
        f"{R}/logs/verdict_table/verdict.log",
    localrule: True
    threads: 1
    resources:
        **LIGHT_RESOURCES,
    conda:
        "../envs/maskbench.yaml"
    shell:
        "python -m maskbench.steps matrix.verdict {params.args} > {log:q} 2>&1"
