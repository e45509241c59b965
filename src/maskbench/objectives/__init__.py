"""Training objectives, in three modules by what importing them costs.

* ``needs``: what each loss reads besides logits and labels, and its hyper-parameters with their defaults — no torch,
  so the workflow plans a rule's inputs from it at parse time;
* ``losses``: the losses, each a pure function of logits and labels with its formula (``get_loss(name, **hparams)``);
* ``logits``: ``logits_objective``, the one adapter that turns a loss into the training loop's
  ``objective(model, batch) -> (loss, logs)``.

This file imports nothing, so that importing ``needs`` stays free of torch.
"""
