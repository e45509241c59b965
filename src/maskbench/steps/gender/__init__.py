"""Entry points of the gender track (paper B): corpus, encoders, debiasing, SEAT, StereoSet and CrowS-Pairs,
downstream tasks, shrinking, the report."""
