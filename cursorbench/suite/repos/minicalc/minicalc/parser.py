"""A recursive-descent parser.

Grammar, loosest binding first::

    statement := NAME "=" expr | expr
    expr      := term (("+" | "-") term)*
    term      := unary (("*" | "/" | "%") unary)*
    unary     := ("-" | "+") unary | power
    power     := primary ("^" unary)?
    primary   := NUMBER | NAME | NAME "(" [expr ("," expr)*] ")" | "(" expr ")"

So ``+ - * / %`` associate to the left, ``^`` to the right, and ``^`` binds
tighter than a unary minus on its left: ``-2 ^ 2`` is ``-(2 ^ 2)``.
"""

from __future__ import annotations

from .errors import ParseError
from .nodes import Assign, BinOp, Call, Node, Num, UnaryOp, Var
from .tokens import COMMA, EOF, LPAREN, NAME, NUMBER, RPAREN, Token, tokenize


class Parser:
    def __init__(self, tokens: list[Token]) -> None:
        self.tokens = tokens
        self.index = 0

    def peek(self, offset: int = 0) -> Token:
        return self.tokens[min(self.index + offset, len(self.tokens) - 1)]

    def advance(self) -> Token:
        token = self.peek()
        self.index += 1
        return token

    def expect(self, kind: str, what: str) -> Token:
        token = self.peek()
        if token.kind != kind:
            found = "end of input" if token.kind == EOF else repr(token.value)
            raise ParseError(f"expected {what}, found {found}", token.pos)
        return self.advance()

    def parse_statement(self) -> Node:
        if self.peek().kind == NAME and self.peek(1).is_op("="):
            name = self.advance().value
            self.advance()
            node: Node = Assign(name, self.expr())
        else:
            node = self.expr()
        self.expect(EOF, "end of input")
        return node

    def expr(self) -> Node:
        node = self.term()
        while self.peek().is_op("+", "-"):
            op = self.advance().value
            right = self.term()
            node = BinOp(op, node, right)
        return node

    def term(self) -> Node:
        node = self.unary()
        while self.peek().is_op("*", "/", "%"):
            op = self.advance().value
            right = self.unary()
            node = BinOp(op, node, right)
        return node

    def unary(self) -> Node:
        if self.peek().is_op("-", "+"):
            op = self.advance().value
            return UnaryOp(op, self.unary())
        return self.power()

    def power(self) -> Node:
        base = self.primary()
        if self.peek().is_op("^"):
            self.advance()
            exponent = self.unary()
            return BinOp("^", base, exponent)
        return base

    def primary(self) -> Node:
        token = self.peek()
        if token.kind == NUMBER:
            self.advance()
            return Num(float(token.value))
        if token.kind == NAME:
            self.advance()
            if self.peek().kind == LPAREN:
                return Call(token.value, self.arguments())
            return Var(token.value)
        if token.kind == LPAREN:
            self.advance()
            node = self.expr()
            self.expect(RPAREN, "')'")
            return node
        found = "end of input" if token.kind == EOF else repr(token.value)
        raise ParseError(f"expected a number, name or '(', found {found}", token.pos)

    def arguments(self) -> tuple[Node, ...]:
        self.expect(LPAREN, "'('")
        args: list[Node] = []
        if self.peek().kind != RPAREN:
            args.append(self.expr())
            while self.peek().kind == COMMA:
                self.advance()
                args.append(self.expr())
        self.expect(RPAREN, "')' or ','")
        return tuple(args)


def parse(source: str) -> Node:
    """Parse one statement (an expression or an assignment) into a syntax tree."""
    return Parser(tokenize(source)).parse_statement()
