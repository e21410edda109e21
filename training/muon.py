"""Muon: momentum SGD whose matrix updates are orthogonalized by Newton-Schulz iterations.

`orthogonalize` works on a batch of matrices `[..., rows, cols]`, so one call orthogonalizes
every attention head (`[n_heads, head_dim, d_model]`) or every expert (`[E, out, in]`) of a
parameter separately. The optimizer built on it lives below this function.
"""

from __future__ import annotations

import torch

# Quintic Newton-Schulz coefficients (Keller Jordan's Muon): fast convergence of the singular
# values toward ~[0.7, 1.2] rather than exactly 1, which is all the update needs.
NS_COEFFICIENTS = (3.4445, -4.7750, 2.0315)
NS_STEPS = 5


def orthogonalize(update: torch.Tensor, steps: int = NS_STEPS, eps: float = 1e-7) -> torch.Tensor:
    """Approximately U V^T of each matrix in `update` (`[..., rows, cols]`), in bfloat16-safe math.

    Each matrix is scaled by its Frobenius norm so all singular values start below 1, then the
    quintic iteration X <- aX + (bA + cA^2)X with A = X X^T pushes them toward 1. Wide matrices
    keep X X^T small; tall ones are transposed first.
    """
    if update.ndim < 2:
        raise ValueError(f"orthogonalize needs matrices, got shape {tuple(update.shape)}")
    a, b, c = NS_COEFFICIENTS
    x = update.float()
    tall = x.shape[-2] > x.shape[-1]
    if tall:
        x = x.transpose(-2, -1)
    x = x / (x.norm(dim=(-2, -1), keepdim=True) + eps)
    for _ in range(steps):
        gram = x @ x.transpose(-2, -1)
        x = a * x + (b * gram + c * gram @ gram) @ x
    if tall:
        x = x.transpose(-2, -1)
    return x.type_as(update)
