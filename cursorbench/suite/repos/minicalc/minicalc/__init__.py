"""minicalc: a tiny calculator language."""

from .errors import CalcError, EvalError, ParseError, TokenizeError
from .evaluator import Calculator
from .formatter import format_expression, to_source
from .nodes import Assign, BinOp, Call, Num, UnaryOp, Var
from .parser import parse
from .tokens import Token, tokenize

__all__ = [
    "Assign",
    "BinOp",
    "CalcError",
    "Calculator",
    "Call",
    "EvalError",
    "Num",
    "ParseError",
    "Token",
    "TokenizeError",
    "UnaryOp",
    "Var",
    "format_expression",
    "parse",
    "to_source",
    "tokenize",
]
