"""The one training loop, one module per concern: ``hparams`` (a run's settings), ``batches`` (length-grouped
batches), ``optim`` (parameter groups, optimiser, schedules), ``hooks`` (evaluation, early stopping, plateau,
finite losses, timing) and ``loop`` (``train_step`` and ``fit``)."""
