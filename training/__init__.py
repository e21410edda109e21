"""The training pipeline: a consumer of the harness that trains, serves and gates checkpoints."""
