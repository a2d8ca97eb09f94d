"""z3's SMT-LIB printout made strict SMT-LIB 2.6.

z3 prints the terms it holds: `z3.And(x)` of one conjunct as `(and x)`, an
empty `z3.Or()` as `(or)`. SMT-LIB 2.6 declares `and`, `or`, `+` and `*`
`:left-assoc` and `=`/`distinct` `:chainable`/`:pairwise` (The SMT-LIB
Standard 2.6, section 3.7.2 and the Core and Ints theory declarations,
https://smt-lib.org/papers/smt-lib-reference-v2.6-r2021-05-12.pdf): each needs
two arguments at least. `cvc5 --strict-parsing` refuses fewer (issue 24: 27
of the 39 files `metis prove --out` wrote).

`strict_smt2(text)` rewrites those applications by their meaning: `(and x)`
and `(or x)` to `x`, `(and)` to `true`, `(or)` to `false`, `(+ x)`/`(* x)` to
`x`, `(= x)`/`(distinct x)` to `true`; an `and` or `or` that is an argument
(z3 prints an empty `(and)` so) to `true` or `false`. Everything else is copied as it is:
comments, `|quoted symbols|`, string literals (`""` escapes a quote).
"""

from __future__ import annotations

import re

__all__ = ["strict_smt2"]

# A token: a comment, a quoted symbol, a string literal, a parenthesis, or a
# run of anything else up to whitespace or one of those.
_TOKEN = re.compile(r';[^\n]*|\|[^|]*\||"(?:[^"]|"")*"|[()]|[^\s()|";]+|\s+|[\s\S]')
_ONE_ARGUMENT_IS_IT = frozenset({"and", "or", "+", "*"})
_EMPTY = {"and": "true", "or": "false"}
_ONE_ARGUMENT_HOLDS = frozenset({"=", "distinct"})


def strict_smt2(text: str) -> str:
    """`text` with the applications strict SMT-LIB refuses rewritten (module doc)."""
    # Each open list: its tokens so far (with the whitespace between them).
    stack: list[list[str]] = [[]]
    for m in _TOKEN.finditer(text):
        token = m.group()
        if token == "(":
            stack.append(["("])
        elif token == ")" and len(stack) > 1:
            items = stack.pop()
            items.append(")")
            stack[-1].append(_rewrite(items))
        elif token in _EMPTY and _is_argument(stack[-1]):
            stack[-1].append(_EMPTY[token])  # z3 prints an empty `(and)` as `and`
        else:
            stack[-1].append(token)
    while len(stack) > 1:  # unbalanced input: left as it was
        items = stack.pop()
        stack[-1].append("".join(items))
    return "".join(stack[0])


def _is_argument(items: list[str]) -> bool:
    """Whether a word appended to this open list is past its head."""
    return any(not t.isspace() and not t.startswith(";") for t in items[1:])


def _rewrite(items: list[str]) -> str:
    """One closed list (`(`, its tokens, `)`) as text, rewritten when it is one
    of the module doc's applications."""
    words = [t for t in items[1:-1] if not t.isspace() and not t.startswith(";")]
    if words:
        head, args = words[0], words[1:]
        if head in _EMPTY and not args:
            return _EMPTY[head]
        if head in _ONE_ARGUMENT_IS_IT and len(args) == 1:
            return args[0]
        if head in _ONE_ARGUMENT_HOLDS and len(args) == 1:
            return "true"
    return "".join(items)
