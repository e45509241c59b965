"""The vision track (paper D, FFW): biased image datasets, conv nets and temperature gates."""
