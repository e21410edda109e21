"""`python -m training.extend --config FILE [--out DIR]`: one extend stage (training/train.py)."""

import sys

from training.train import stage_main

if __name__ == "__main__":
    sys.exit(stage_main("extend"))
