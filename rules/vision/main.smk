# The vision track: paper D (FFW gates on vision models, the real MNIST digits offline). Included by the Snakefile
# when the config's `track:` names vision; helpers first, then the rules.

include: "common.smk"
include: "data.smk"
include: "train.smk"
include: "ffw.smk"
include: "evaluate.smk"
if VISION.masks:

    include: "masks.smk"

include: "report.smk"
