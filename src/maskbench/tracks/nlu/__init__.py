"""The nlu track (papers A and C): sentence-pair classifiers (BERT family), text-pair batches, bias sources,
evaluation sets, and paper C's sparse-subnetwork methods."""
