"""Benchmarks a person runs by hand, no rule: how long `snakemake -n` plans each config (`dag_benchmark`), the peak
memory of reading a CelebA-layout split whole or streamed (`vision_memory_benchmark`), what a text config's training
step costs on this machine (`text_training_profile`) and the prepared check on a GPU machine (`gpu_check`). Each
writes its record under results/benchmarks/ (`python -m maskbench.benchmarks.<benchmark> --help`)."""
