"""Bounded proof that no context-control step breaks provider validity (CLOSE-8).

A symbolic transcript of at most `max_len` messages: per message its role,
its calls and results (ids from a small domain, so ids repeat within a
message and across turns), text, image and thinking counts, and whether its
results come first. `_valid` is `metis_model._context.provider_valid`
written as a formula. For each step and each length L <= max_len, the solver
looks for a valid transcript of length L, and a choice the step's rule admits
(the cut point, the number of recent messages), whose output is invalid:

- `fold` (collapse, compaction, retry): cut at any k with message k an
  assistant message; the output is a user summary followed by messages k..;
- `prune`: thinking and images dropped from messages before the last
  `recent`; an emptied message gets a placeholder text;
- `snip` / `offload`: result sizes capped; the skeleton is copied.

Unsatisfiable at every length means `bounded` (no counterexample up to
`max_len`); satisfiable is `refuted`, with the transcript decoded. The
ablations (`naive_cut`: cut anywhere; `prune_no_placeholder`) must be refuted:
they show that the check can find what the cut rules prevent.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from collections.abc import Sequence

import attrs
import z3

from metis_model._context import BlockKind
from metis_model._context import Msg

from ._sorts import timed

__all__ = ["CONTEXT_PROPERTIES", "ContextProof", "prove_context", "valid_concrete"]


@attrs.frozen
class _Msg:
    user: z3.BoolRef
    nc: z3.ArithRef  # calls
    c: tuple[z3.ArithRef, ...]
    nr: z3.ArithRef  # results
    r: tuple[z3.ArithRef, ...]
    rs: tuple[z3.ArithRef, ...]  # result sizes
    text: z3.ArithRef
    image: z3.ArithRef
    think: z3.ArithRef
    rfirst: z3.BoolRef  # results precede the other blocks


@attrs.frozen
class _Shape:
    max_len: int
    max_calls: int
    ids: int


def _fresh(name: str, shape: _Shape) -> _Msg:
    b = range(shape.max_calls)
    return _Msg(
        user=z3.Bool(f"{name}.user"),
        nc=z3.Int(f"{name}.nc"),
        c=tuple(z3.Int(f"{name}.c{j}") for j in b),
        nr=z3.Int(f"{name}.nr"),
        r=tuple(z3.Int(f"{name}.r{j}") for j in b),
        rs=tuple(z3.Int(f"{name}.rs{j}") for j in b),
        text=z3.Int(f"{name}.text"),
        image=z3.Int(f"{name}.image"),
        think=z3.Int(f"{name}.think"),
        rfirst=z3.Bool(f"{name}.rfirst"),
    )


def _domain(m: _Msg, shape: _Shape) -> z3.BoolRef:
    """Ranges of the input variables."""
    parts = [
        m.nc >= 0,
        m.nc <= shape.max_calls,
        m.nr >= 0,
        m.nr <= shape.max_calls,
        *(z3.And(x >= 0, x < shape.ids) for x in (*m.c, *m.r)),
        *(z3.And(s >= 0, s <= 1000) for s in m.rs),
        *(z3.And(x >= 0, x <= 1) for x in (m.text, m.image, m.think)),
    ]
    return z3.And(*parts)


def _count(v: int, xs: Sequence[z3.ArithRef], n: z3.ArithRef) -> z3.ArithRef:
    return z3.Sum([z3.If(z3.And(j < n, x == v), 1, 0) for j, x in enumerate(xs)])


def _same_multiset(calls: _Msg | None, results: _Msg, shape: _Shape) -> z3.BoolRef:
    if calls is None:
        return results.nr == 0
    return z3.And(
        calls.nc == results.nr,
        *(
            _count(v, calls.c, calls.nc) == _count(v, results.r, results.nr)
            for v in range(shape.ids)
        ),
    )


def _valid(ms: Sequence[_Msg], n: z3.ArithRef, shape: _Shape) -> z3.BoolRef:
    """`provider_valid` for the first `n` of `ms`."""
    parts: list[z3.BoolRef] = [n >= 1, ms[0].user]
    for i, m in enumerate(ms):
        here = i < n
        rules = [
            m.nc + m.nr + m.text + m.image + m.think > 0,
            z3.Implies(m.user, z3.And(m.nc == 0, m.think == 0)),
            z3.Implies(z3.Not(m.user), m.nr == 0),
            z3.Implies(z3.And(m.nr > 0, m.text + m.image > 0), m.rfirst),
            z3.Implies(z3.And(z3.Not(m.user), m.nc > 0), i + 1 < n),
            z3.Implies(m.user, _same_multiset(ms[i - 1] if i else None, m, shape)),
        ]
        if i + 1 < len(ms):
            rules.append(z3.Implies(i + 1 < n, m.user != ms[i + 1].user))
        parts.append(z3.Implies(here, z3.And(*rules)))
    return z3.And(*parts)


def _pick(k: z3.ArithRef, options: Sequence[tuple[int, _Msg | None]], default: _Msg) -> _Msg:
    """The message options[c] when k == c (a symbolic index into the input)."""
    out = default
    for c, m in options:
        if m is None:
            continue
        out = _Msg(
            user=z3.If(k == c, m.user, out.user),
            nc=z3.If(k == c, m.nc, out.nc),
            c=tuple(z3.If(k == c, a, b) for a, b in zip(m.c, out.c, strict=True)),
            nr=z3.If(k == c, m.nr, out.nr),
            r=tuple(z3.If(k == c, a, b) for a, b in zip(m.r, out.r, strict=True)),
            rs=tuple(z3.If(k == c, a, b) for a, b in zip(m.rs, out.rs, strict=True)),
            text=z3.If(k == c, m.text, out.text),
            image=z3.If(k == c, m.image, out.image),
            think=z3.If(k == c, m.think, out.think),
            rfirst=z3.If(k == c, m.rfirst, out.rfirst),
        )
    return out


def _const(shape: _Shape, *, user: bool, text: int) -> _Msg:
    zero = z3.IntVal(0)
    zs = tuple(zero for _ in range(shape.max_calls))
    return _Msg(
        z3.BoolVal(user), zero, zs, zero, zs, zs, z3.IntVal(text), zero, zero, z3.BoolVal(True)
    )


def valid_concrete(t: Sequence[Msg], max_calls: int = 3) -> bool:
    """`_valid` evaluated on a concrete transcript of the pure model (for the
    test that the formula and `provider_valid` agree)."""
    ids = sorted({b.id for m in t for b in m.blocks})
    shape = _Shape(max(len(t), 1), max_calls, max(len(ids), 1))
    ms: list[_Msg] = []
    for m in t:
        kinds = [b.kind for b in m.blocks]
        calls = [ids.index(b.id) for b in m.blocks if b.kind is BlockKind.CALL]
        results = [ids.index(b.id) for b in m.blocks if b.kind is BlockKind.RESULT]
        if len(calls) > max_calls or len(results) > max_calls:
            raise ValueError(f"more than {max_calls} calls or results in one message")
        pad = [0] * max_calls
        nres = len(results)
        ms.append(
            _Msg(
                user=z3.BoolVal(m.role == "user"),
                nc=z3.IntVal(len(calls)),
                c=tuple(z3.IntVal(x) for x in (calls + pad)[:max_calls]),
                nr=z3.IntVal(nres),
                r=tuple(z3.IntVal(x) for x in (results + pad)[:max_calls]),
                rs=tuple(z3.IntVal(0) for _ in range(max_calls)),
                text=z3.IntVal(kinds.count(BlockKind.TEXT)),
                image=z3.IntVal(kinds.count(BlockKind.IMAGE)),
                think=z3.IntVal(kinds.count(BlockKind.THINKING)),
                rfirst=z3.BoolVal(all(k is BlockKind.RESULT for k in kinds[:nres])),
            )
        )
    if not ms:
        ms.append(_fresh("empty", shape))
    formula = _valid(ms, z3.IntVal(len(t)), shape)
    return bool(z3.is_true(z3.simplify(formula)))


# --- the steps -------------------------------------------------------------------

_Built = tuple[list[_Msg], z3.ArithRef, z3.BoolRef]  # output messages, its length, the rule


def _fold(ms: Sequence[_Msg], n: z3.ArithRef, shape: _Shape, naive: bool) -> _Built:
    k = z3.Int("k")
    at_k = _pick(k, list(enumerate(ms)), ms[0])
    blank = _const(shape, user=True, text=0)
    summary = _const(shape, user=True, text=1)
    out: list[_Msg] = []
    if not naive:
        out.append(summary)
        for j in range(1, shape.max_len):
            out.append(
                _pick(
                    k,
                    [
                        (c, ms[j - 1 + c] if j - 1 + c < len(ms) else None)
                        for c in range(1, shape.max_len)
                    ],
                    blank,
                )
            )
        rule = z3.And(k >= 1, k < n, z3.Not(at_k.user))
        return out, n - k + 1, rule
    # Ablation: cut anywhere; a kept user message absorbs the summary text.
    merged = attrs.evolve(at_k, text=at_k.text + 1)
    first = _pick(
        z3.If(at_k.user, z3.IntVal(1), z3.IntVal(0)), [(1, merged), (0, summary)], summary
    )
    out.append(first)
    for j in range(1, shape.max_len):
        shifted = _pick(
            k,
            [(c, ms[j - 1 + c] if j - 1 + c < len(ms) else None) for c in range(1, shape.max_len)],
            blank,
        )
        kept = _pick(
            k, [(c, ms[j + c] if j + c < len(ms) else None) for c in range(1, shape.max_len)], blank
        )
        out.append(
            _pick(z3.If(at_k.user, z3.IntVal(1), z3.IntVal(0)), [(1, kept), (0, shifted)], shifted)
        )
    length = z3.If(at_k.user, n - k, n - k + 1)
    return out, length, z3.And(k >= 1, k < n)


def _prune(ms: Sequence[_Msg], n: z3.ArithRef, shape: _Shape, placeholder: bool) -> _Built:
    recent = z3.Int("recent")
    out: list[_Msg] = []
    for i, m in enumerate(ms):
        old = i < n - recent
        think = z3.If(old, 0, m.think)
        image = z3.If(old, 0, m.image)
        emptied = z3.And(old, m.nc + m.nr + m.text == 0)
        text = z3.If(emptied, 1, m.text) if placeholder else m.text
        out.append(attrs.evolve(m, think=think, image=image, text=text))
    return out, n, recent >= 0


def _cap(ms: Sequence[_Msg], n: z3.ArithRef, shape: _Shape, everywhere: bool) -> _Built:
    limit, recent = z3.Int("limit"), z3.Int("recent")
    out: list[_Msg] = []
    for i, m in enumerate(ms):
        old = z3.BoolVal(True) if everywhere else i < n - recent
        sizes = tuple(z3.If(z3.And(old, s > limit), limit, s) for s in m.rs)
        out.append(attrs.evolve(m, rs=sizes))
    return out, n, z3.And(limit >= 0, recent >= 0)


_Step = Callable[[Sequence[_Msg], z3.ArithRef, _Shape], _Built]

CONTEXT_PROPERTIES: dict[str, tuple[_Step, bool]] = {
    # name: (encoding, expected to hold)
    "fold (collapse, compaction, retry)": (lambda ms, n, s: _fold(ms, n, s, naive=False), True),
    "prune": (lambda ms, n, s: _prune(ms, n, s, placeholder=True), True),
    "snip": (lambda ms, n, s: _cap(ms, n, s, everywhere=False), True),
    "offload": (lambda ms, n, s: _cap(ms, n, s, everywhere=True), True),
    "ablation: naive_cut": (lambda ms, n, s: _fold(ms, n, s, naive=True), False),
    "ablation: prune_no_placeholder": (lambda ms, n, s: _prune(ms, n, s, placeholder=False), False),
}


@attrs.frozen
class ContextProof:
    """`verdict`: bounded (no counterexample up to `max_len` messages),
    refuted (`counterexample` at `depth` messages) or unknown (timeout)."""

    name: str
    invariant: str
    expected_to_hold: bool
    verdict: str
    depth: int | None
    max_len: int
    seconds: float
    counterexample: str | None = None

    @property
    def label(self) -> str:
        """As the loop's results read: `bounded(N msgs)`, `refuted` or `unknown`."""
        return f"bounded({self.max_len} msgs)" if self.verdict == "bounded" else self.verdict

    @property
    def as_expected(self) -> bool:
        want = "bounded" if self.expected_to_hold else "refuted"
        return self.verdict == want


def _decode(model: z3.ModelRef, ms: Sequence[_Msg], length: int) -> str:
    def val(x: z3.ExprRef) -> int:
        return model.eval(x, model_completion=True).as_long()  # type: ignore[no-any-return]

    lines = []
    for i, m in enumerate(ms[:length]):
        user = z3.is_true(model.eval(m.user, model_completion=True))
        calls = [f"id{val(x)}" for x in m.c[: val(m.nc)]]
        results = [f"id{val(x)}" for x in m.r[: val(m.nr)]]
        extra = "+text" * val(m.text) + "+image" * val(m.image) + "+thinking" * val(m.think)
        body = f"calls {calls}" if not user else f"results {results}"
        lines.append(f"{i}:{'user' if user else 'assistant'} {body}{extra}")
    return "; ".join(lines)


def prove_context(
    max_len: int = 6, *, max_calls: int = 2, ids: int = 2, timeout_s: float | None = 60.0
) -> tuple[ContextProof, ...]:
    """Check every property of `CONTEXT_PROPERTIES` for lengths 1..max_len."""
    shape = _Shape(max_len, max_calls, ids)
    out: list[ContextProof] = []
    for name, (encode, holds) in CONTEXT_PROPERTIES.items():
        start = time.perf_counter()
        ms = [_fresh(f"m{i}", shape) for i in range(max_len)]
        n = z3.Int("n")
        after, n_after, rule = encode(ms, n, shape)
        solver = timed(z3.Solver(), timeout_s)
        solver.add(*(_domain(m, shape) for m in ms), n <= max_len)
        solver.add(_valid(ms, n, shape), rule, z3.Not(_valid(after, n_after, shape)))
        verdict, depth, witness = "bounded", max_len, None
        for length in range(1, max_len + 1):  # shortest counterexample first
            answer = solver.check(n == length)
            if answer == z3.sat:
                model = solver.model()
                verdict, depth = "refuted", length
                chosen = [
                    f"{v}={model.eval(z3.Int(v), model_completion=True)}"
                    for v in ("k", "recent", "limit")
                    if any(str(d) == v for d in model.decls())
                ]
                witness = f"{_decode(model, ms, length)} ({', '.join(chosen)})"
                break
            if answer == z3.unknown:
                verdict, depth = "unknown", length - 1
                break
        out.append(
            ContextProof(
                name=name,
                invariant="CLOSE-8",
                expected_to_hold=holds,
                verdict=verdict,
                depth=depth,
                max_len=max_len,
                seconds=round(time.perf_counter() - start, 3),
                counterexample=witness,
            )
        )
    return tuple(out)
