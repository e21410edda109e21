"""`python -m training.rl run --config rl.yaml [--out DIR] [--steps N] [--db URL]`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import yaml
from pydantic import ValidationError

from training.rl.run import RLConfig, run_rl


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m training.rl")
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("run", help="RL on micro-tasks through the harness")
    run.add_argument("--config", type=Path, help="YAML with RLConfig fields")
    run.add_argument("--out", type=Path)
    run.add_argument("--steps", type=int)
    run.add_argument("--db", dest="db_url", help="gate each checkpoint into this leaderboard")
    args = parser.parse_args(argv)
    data = yaml.safe_load(args.config.read_text()) if args.config else {}
    for key in ("out", "steps", "db_url"):
        if getattr(args, key) is not None:
            data[key] = getattr(args, key)
    try:
        config = RLConfig.model_validate(data)
    except ValidationError as error:
        print(f"python -m training.rl: bad config:\n{error}", file=sys.stderr)
        return 2
    run_rl(config)
    return 0


if __name__ == "__main__":
    sys.exit(main())
