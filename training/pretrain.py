"""`python -m training.pretrain --config FILE [--out DIR]`: one pretraining stage."""

import sys

from training.train import stage_main

if __name__ == "__main__":
    sys.exit(stage_main("pretrain"))
