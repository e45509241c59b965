"""Entry points of the NLU track: paper A (data, bias models, fine-tuning, mask search, evaluation, Table 1,
the trade-off) and paper C (sparse and robust subnetworks)."""
