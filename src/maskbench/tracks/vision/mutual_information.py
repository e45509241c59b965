"""Paper D's empirical mutual information, now shared by every track's FFW: ``maskbench.ffw.mutual_information``
(this name stays for the vision code and tests that import it from here)."""

from maskbench.ffw.mutual_information import CLAMP, empirical_mi  # noqa: F401 (re-exported)
