"""Paper C's sparse and robust subnetworks, one module per concern: ``grid`` (the run grid and each run's settings,
read off config ``srnets:``, torch-free for planning), ``spec`` (the typed settings the steps take), ``methods``
(mask training, iterative magnitude pruning, retraining under a mask), ``pruning`` (the mask-training scores, the
sparsity controller, magnitude masks, rewinding), ``run`` (what the three steps share: inputs, start checkpoint,
resume) and ``matrix`` (its runs in the cross-paper matrix's records)."""
