"""`python -m training.sft --config FILE [--out DIR]`: one sft stage (training/train.py)."""

import sys

from training.train import stage_main

if __name__ == "__main__":
    sys.exit(stage_main("sft"))
