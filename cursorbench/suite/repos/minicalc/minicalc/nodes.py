"""The syntax tree: small immutable nodes, compared by value."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Num:
    value: float


@dataclass(frozen=True)
class Var:
    name: str


@dataclass(frozen=True)
class UnaryOp:
    op: str  # "-" or "+"
    operand: Node


@dataclass(frozen=True)
class BinOp:
    op: str  # one of + - * / % ^
    left: Node
    right: Node


@dataclass(frozen=True)
class Call:
    name: str
    args: tuple[Node, ...]


@dataclass(frozen=True)
class Assign:
    name: str
    value: Node


Node = Num | Var | UnaryOp | BinOp | Call | Assign
