"""Differential fuzz against real NumPy: seeded random programs of array
operations, run by arr (the binary given as argv[1]) and by a NumPy reference
that applies JAX's semantics. Prints every mismatch and a summary; exits
non-zero if there is any.

    numpy_fuzz.py ARR [--seed S] [--programs N] [--batch B] [--show]

The reference. Each program is one expression tree, built bottom-up while its
NumPy value is computed, so that the generator knows every operand's shape
and dtype. The tree's text goes to arr; its value is computed here with
NumPy under these rules, which are JAX's:

* dtypes are bool, int32, int64, float32, float64; literals without a dtype
  are int32 / float32. Promotion is JAX's lattice, which over these dtypes
  is the chain bool < weak int < int32 < int64 < weak float < float32 <
  float64 (Python scalars are the weak ones; a weak float with any int
  gives float32). `/` of ints gives float32.
* reductions keep 32-bit ints (NumPy would sum int32 in int64); bools sum
  and cumsum in int32; mean of ints is float32; argmax/argsort give int32.
  Overflow wraps, as in both libraries.
* sort and argsort are stable (JAX's); nan sorts last.

Comparison: dtype and shape exactly; ints and bools exactly; floats within a
tolerance: 8 times the difference between this program evaluated in float32
and in float64 (an estimate of how much float32 rounding moves this
program's result, which covers summation order and cancellation), plus
a few ulps per inexact operation (transcendental functions, sums, products),
with -0.0 equal to 0.0 and nan equal to nan. An element that is nan in
float32 but not in float64 came from float32's range (a product or sum that
overflowed, inf - inf, or 0 / 0 after an underflow): which of inf, -inf or nan
it becomes depends on the order of accumulation and on fused multiply-adds
(dot of [-6e38, 1e39] products is -inf with an FMA, nan without), so any value
is accepted there. Errors: both raise, or neither.
Operations that are discontinuous (floor, comparisons, argmax, //, astype to
int, ...) are only applied to operands computed exactly, so that an ulp of
difference upstream cannot flip them.

Exclusions, each with its reason (a program hitting one is counted, not
compared):

* integer `//` and `%` by zero: NumPy gives 0, XLA's integer division by
  zero is -1 and JAX adjusts it further; no value is the right one.
* float to int conversion of nan, inf or out-of-range values: undefined in
  C, NumPy gives INT_MIN, XLA saturates.
* float `//` and `%` where NumPy and JAX disagree (a zero or infinite
  operand: NumPy 1.0 // 0.0 is inf, JAX's is nan): either value is accepted.
* negative integer powers of ints are not generated: NumPy raises, JAX
  computes 1 / x**n in integers.
* out-of-bounds integer-array indices are not generated: JAX clamps, NumPy
  raises.
* sort and argsort of 0-d arrays are not generated: arr returns the value
  (sort) and [0] (argsort, as NumPy does); NumPy's sort and JAX's raise.
* round of bools is not generated: NumPy gives float16.
"""
import argparse
import math
import random
import subprocess
import sys
import warnings

import numpy as np

warnings.simplefilter("ignore")
np.seterr(all="ignore")

BOOL, I32, I64, F32, F64 = "bool", "int32", "int64", "float32", "float64"
NP = {BOOL: np.bool_, I32: np.int32, I64: np.int64, F32: np.float32, F64: np.float64}
RANK = {BOOL: 0, "wint": 1, I32: 2, I64: 3, "wfloat": 4, F32: 5, F64: 6}
INTS, FLOATS = (I32, I64), (F32, F64)

I32_EDGES = [0, 1, -1, 2, -2, 3, 7, 100, -100, 46341, 65535, 2**31 - 1, -(2**31), 2**31 - 2, -(2**31) + 1]
I64_EDGES = I32_EDGES + [2**40, 2**63 - 1, -(2**63)]
F_EDGES = [0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 1.5, 3.0, 0.1, 1e-30, -1e-30, 1e30, 3.4e38, -3.4e38, 1e-45,
           float("nan"), float("inf"), float("-inf"), 100.0, 2.0**24 + 1]


# The absolute error a program's sums and products may add (their terms'
# magnitudes times the count and the float's epsilon), reset per program.
BUDGET = [0.0]


def budget(terms, count, dtype):
    """Add the error budget of a sum of `count` of the finite `terms`."""
    if np.dtype(dtype).kind == "f":
        t = np.abs(np.asarray(terms, dtype=np.float64))
        finite = t[np.isfinite(t)]
        BUDGET[0] = max(BUDGET[0], 2 * count * np.finfo(dtype).eps * float(finite.sum()))


class Excluded(Exception):
    """The program reaches a documented exclusion; it is counted, not compared."""


class RefError(Exception):
    """The reference raises on this expression: arr must raise too."""

    def __init__(self, text, cause):
        super().__init__(f"{type(cause).__name__}: {cause}")
        self.text = text


# Set while the alternative value is computed: float // and % as NumPy's.
NUMPY_FLOOR = [False]


class Node:
    """One expression: its arr text, its value as a function of the float
    precision (`hi`: float32 computed as float64), its dtype and shape, and
    how many inexact operations it contains (`inexact` 0: computed exactly)."""

    def __init__(self, text, fn, inexact=0, weak=None, alt=False):
        self.text, self.fn, self.inexact, self.weak = text, fn, inexact, weak
        # Whether the tree has a float // or %, whose NumPy value is accepted too.
        # Whether the tree may have a float // or %, whose NumPy value is accepted too.
        self.alt = " // " in text or " % " in text
        try:
            self.value = fn(False)
        except Excluded:
            raise
        except Exception as e:
            raise RefError(text, e) from None
        self.dtype = "wint" if weak == "int" else "wfloat" if weak == "float" else self.value.dtype.name
        self.shape = self.value.shape


def hi_dtype(dt, hi):
    return np.float64 if hi and dt == F32 else NP[dt]


def cast(v, dt, hi):
    return np.asarray(v).astype(hi_dtype(dt, hi))


def promote(*dts):
    top = max(dts, key=RANK.get)
    return {"wint": I32, "wfloat": F32}.get(top, top)


def lit_text(v):
    if v == -(2**63) and isinstance(v, int):
        # arr's literals are int64: the negation of 2**63 cannot be written.
        return "(-9223372036854775807 - 1)"
    if isinstance(v, bool):
        return repr(v)
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
    return repr(v)


def nested(values, shape):
    if not shape:
        return values[0]
    if shape[0] == 0:
        return []
    step = len(values) // shape[0] if shape[0] else 0
    return [nested(values[i * step:(i + 1) * step], shape[1:]) for i in range(shape[0])]


def nested_text(x):
    if isinstance(x, list):
        return "[" + ", ".join(nested_text(e) for e in x) + "]"
    return lit_text(x)


class Gen:
    def __init__(self, rng):
        self.r = rng

    # ---- leaves -------------------------------------------------------
    def shape(self, ndim=None):
        r = self.r
        ndim = r.choice([0, 1, 1, 2, 2, 3]) if ndim is None else ndim
        return tuple(r.choice([0, 1, 1, 2, 3, 3, 4, 5]) if r.random() < 0.9 else 0 for _ in range(ndim))

    def scalar(self, dt):
        r = self.r
        if dt == BOOL:
            return r.random() < 0.5
        if dt in INTS:
            if r.random() < 0.3:
                return r.choice(I64_EDGES if dt == I64 else I32_EDGES)
            return r.randint(-10, 10)
        if r.random() < 0.3:
            return r.choice(F_EDGES)
        return r.choice([float(r.randint(-10, 10)), round(r.uniform(-10, 10), 2), r.uniform(-3, 3)])

    def leaf(self, dt=None, shape=None):
        r = self.r
        dt = dt or r.choice([BOOL, I32, I32, I32, I64, F32, F32, F32, F32, F64])
        shape = self.shape() if shape is None else shape
        size = int(np.prod(shape))
        kind = r.random()
        dts = "bool" if dt == BOOL else dt
        if kind < 0.15 and dt != BOOL:
            v = self.scalar(dt) if r.random() < 0.5 else r.randint(-3, 3)
            text = f"full({shape!r}, {lit_text(v)}, dtype={dts})"
            return Node(text, lambda hi: np.full(shape, v, hi_dtype(dt, hi)))
        if kind < 0.25:
            one = r.random() < 0.5
            text = f"{'ones' if one else 'zeros'}({shape!r}, dtype={dts})"
            return Node(text, lambda hi: (np.ones if one else np.zeros)(shape, hi_dtype(dt, hi)))
        if kind < 0.4 and len(shape) <= 3 and dt != BOOL:
            start = r.randint(-5, 5)
            step = r.choice([1, 1, 2, -1, 3])
            stop = start + step * size
            shape_text = "" if len(shape) == 1 else f".reshape({shape!r})"
            if dt == I32:
                text = f"arange({start}, {stop}, {step}){shape_text}"
            else:
                text = f"arange({start}, {stop}, {step}, dtype={dts}){shape_text}"
            return Node(text, lambda hi: np.arange(start, stop, step).astype(hi_dtype(dt, hi)).reshape(shape))
        values = [self.scalar(dt) for _ in range(size)]
        if 0 in shape[:-1] or not shape:
            # A literal cannot spell (0, 3): an empty list then a reshape.
            text = f"array({nested_text(nested(values, shape)) if not shape else '[]'}, dtype={dts})"
            if shape:
                text += f".reshape({shape!r})"
        else:
            text = f"array({nested_text(nested(values, shape))}, dtype={dts})"
        return Node(text, lambda hi: np.array(values, dtype=np.float64 if dt in FLOATS else object)
                    .astype(hi_dtype(dt, hi)).reshape(shape))

    def weak(self, kind=None):
        r = self.r
        kind = kind or r.choice(["int", "float"])
        v = self.scalar(I32 if kind == "int" else F32)
        if kind == "int" and r.random() < 0.7:
            v = r.randint(-4, 4)
        t = lit_text(v)
        if t.startswith("-"):
            t = f"({t})"
        return Node(t, lambda hi: np.asarray(v), weak=kind)

    # ---- expressions --------------------------------------------------
    def expr(self, depth):
        r = self.r
        if depth <= 0 or r.random() < 0.25:
            return self.leaf()
        op = r.choices(
            [self.binary, self.compare, self.unary, self.math, self.reduce, self.argreduce, self.shape_op,
             self.join, self.where, self.clip, self.cumsum, self.sort, self.index, self.matmul, self.astype],
            [6, 2, 3, 3, 4, 2, 4, 2, 2, 1, 1, 2, 4, 2, 2])[0]
        return op(depth - 1)

    def exact(self, depth):
        """An operand computed exactly, for a discontinuous operation."""
        for _ in range(8):
            n = self.expr(depth)
            if not n.inexact:
                return n
        return self.leaf()

    def operand_pair(self, depth, exact=False):
        r = self.r
        get = self.exact if exact else self.expr
        a = get(depth)
        if r.random() < 0.3:
            b = self.weak()
        elif r.random() < 0.85:
            # A broadcastable partner: a suffix of a's shape with some dims 1.
            shape = a.shape[r.randint(0, len(a.shape)):] if a.shape else ()
            shape = tuple(1 if r.random() < 0.3 else d for d in shape)
            if r.random() < 0.2:
                shape = (r.choice([1, 2]),) + shape
            b = self.leaf(shape=shape) if r.random() < 0.6 else get(depth)
        else:
            b = get(depth)
        return (a, b) if r.random() < 0.5 else (b, a)

    def binary(self, depth):
        r = self.r
        op = r.choice(["+", "-", "*", "/", "//", "%", "**", "&", "|", "^"])
        a, b = self.operand_pair(depth, exact=op in ("//", "%"))
        dt = promote(a.dtype, b.dtype)
        if op in ("&", "|", "^") and dt not in (BOOL,) + INTS:
            a, b = self.leaf(BOOL), self.leaf(BOOL) if r.random() < 0.5 else self.weak("int")
            dt = promote(a.dtype, b.dtype)
        if dt == BOOL and op in ("-", "//", "%", "**"):
            op = "+"
        if op == "**" and dt in (BOOL,) + INTS:
            # Small non-negative exponents only (see the exclusions), of an array.
            if a.weak:
                a = self.leaf(I32)
            if r.random() < 0.5:
                k = r.randint(0, 3)
                b = Node(str(k), lambda hi: np.asarray(k), weak="int")
            else:
                inner = self.exact(depth) if r.random() < 0.5 else self.leaf(I32)
                if inner.dtype not in INTS:
                    inner = self.leaf(I32)
                b = Node(f"(({inner.text}) % 4)", lambda hi, i=inner: np.mod(i.fn(hi), 4), inexact=0)
            dt = promote(a.dtype, b.dtype)
        out = F32 if op == "/" and dt not in FLOATS else dt
        inexact = a.inexact + b.inexact + (op == "**" and dt in FLOATS)
        pow_int = op == "**" and b.weak == "int" and dt in FLOATS

        def fn(hi):
            x, y = cast(a.fn(hi), out if op == "/" else dt, hi), cast(b.fn(hi), out if op == "/" else dt, hi)
            if op == "+":
                return np.logical_or(x, y) if dt == BOOL else x + y
            if op == "*":
                return np.logical_and(x, y) if dt == BOOL else x * y
            if op == "-":
                return x - y
            if op == "/":
                return x / y
            if op in ("//", "%"):
                if dt in INTS:
                    if np.any(y == 0):
                        raise Excluded("integer division by zero")
                    return x // y if op == "//" else x % y
                if NUMPY_FLOOR[0]:
                    return (np.floor_divide if op == "//" else np.remainder)(x, y)
                return jax_floor_divmod(x, y, op)
            if op == "**":
                if pow_int:
                    return integer_pow(x, int(b.fn(False)))
                return np.power(x, y)
            return {"&": np.bitwise_and, "|": np.bitwise_or, "^": np.bitwise_xor}[op](x, y)

        return Node(f"({a.text} {op} {b.text})", fn, inexact=inexact)

    def compare(self, depth):
        op = self.r.choice(["==", "!=", "<", "<=", ">", ">="])
        a, b = self.operand_pair(depth, exact=True)
        dt = promote(a.dtype, b.dtype)
        f = {"==": np.equal, "!=": np.not_equal, "<": np.less, "<=": np.less_equal, ">": np.greater,
             ">=": np.greater_equal}[op]
        return Node(f"({a.text} {op} {b.text})", lambda hi: f(cast(a.fn(hi), dt, hi), cast(b.fn(hi), dt, hi)))

    def unary(self, depth):
        r = self.r
        name = r.choice(["negative", "abs", "sign", "floor", "ceil", "round", "square", "logical_not", "isnan",
                         "isfinite", "neg"])
        x = self.exact(depth) if name in ("sign", "floor", "ceil", "round", "isnan", "isfinite") else self.expr(depth)
        if x.dtype == BOOL and name in ("negative", "neg", "sign", "abs", "square", "round"):
            name = "logical_not"
        f = {"negative": np.negative, "neg": np.negative, "abs": np.abs, "sign": np.sign, "floor": np.floor,
             "ceil": np.ceil, "round": np.round, "square": np.square, "logical_not": np.logical_not,
             "isnan": np.isnan, "isfinite": np.isfinite}[name]
        text = f"(-{x.text})" if name == "neg" else f"{name}({x.text})"
        return Node(text, lambda hi: f(x.fn(hi)), inexact=x.inexact)

    def math(self, depth):
        name = self.r.choice(["sqrt", "exp", "log", "sin", "cos", "tanh", "arctan", "log1p", "expm1"])
        x = self.expr(depth)
        f = getattr(np, name)
        # Ints and bools become the default float first.
        return Node(f"{name}({x.text})",
                    lambda hi: f(x.fn(hi) if x.dtype in FLOATS else cast(x.fn(hi), F32, hi)),
                    inexact=x.inexact + 1)

    def axes(self, ndim, tuple_ok=True):
        r = self.r
        c = r.random()
        if c < 0.3 or ndim == 0:
            return None
        if c < 0.75 or not tuple_ok:
            return r.randint(-ndim, ndim - 1)
        k = r.randint(1, ndim)
        return tuple(r.sample(range(ndim), k))

    def reduce(self, depth):
        r = self.r
        name = r.choice(["sum", "prod", "max", "min", "mean", "any", "all"])
        x = self.expr(depth)
        axis = self.axes(len(x.shape))
        keep = r.random() < 0.3
        args = ("" if axis is None else f", axis={axis!r}") + (", keepdims=True" if keep else "")
        text = f"{name}({x.text}{args})" if r.random() < 0.7 else f"{x.text}.{name}({args[2:]})"
        dt = x.dtype

        def fn(hi):
            v = x.fn(hi)
            if name in ("sum", "prod"):
                acc = I32 if dt == BOOL else dt
                return getattr(np, name)(v, axis=axis, keepdims=keep, dtype=hi_dtype(acc, hi))
            if name == "mean":
                acc = dt if dt in FLOATS else F32
                return np.mean(v.astype(hi_dtype(acc, hi)), axis=axis, keepdims=keep)
            if name in ("max", "min"):
                if (v.size == 0 and axis is None) or (axis is not None and any(v.shape[a] == 0 for a in np.atleast_1d(axis))):
                    raise ValueError("zero-size reduction")
                return getattr(np, name)(v, axis=axis, keepdims=keep)
            return getattr(np, name)(v, axis=axis, keepdims=keep)

        inexact = x.inexact + (name in ("sum", "prod", "mean") and (dt in FLOATS or name == "mean"))
        node = Node(text, fn, inexact=inexact)
        if name in ("sum", "mean"):
            budget(x.value, max(x.value.size, 1), node.value.dtype)
        return node

    def argreduce(self, depth):
        r = self.r
        name = r.choice(["argmax", "argmin"])
        x = self.exact(depth)
        axis = self.axes(len(x.shape), tuple_ok=False)
        text = f"{name}({x.text}" + ("" if axis is None else f", axis={axis}") + ")"

        def fn(hi):
            v = x.fn(hi)
            if v.size == 0 and (axis is None or v.shape[axis] == 0):
                raise ValueError("empty")
            return getattr(np, name)(v, axis=axis).astype(np.int32)

        return Node(text, fn)

    def shape_op(self, depth):
        r = self.r
        x = self.expr(depth)
        nd = len(x.shape)
        name = r.choice(["reshape", "transpose", "swapaxes", "expand_dims", "squeeze", ".T", "flip"])
        if name == "reshape":
            size = int(np.prod(x.shape))
            dims = [d for d in range(1, size + 1) if size % d == 0] or [0]
            a = r.choice(dims)
            shape = r.choice([(size,), (a, size // a if a else 0), (a, -1), (-1,), (1, size), (size, 1, 1)])
            if r.random() < 0.1:
                shape = (size + 1,)
            return Node(f"{x.text}.reshape({shape!r})", lambda hi: x.fn(hi).reshape(shape), x.inexact)
        if name == "transpose":
            perm = tuple(r.sample(range(nd), nd)) if r.random() < 0.6 else None
            text = f"transpose({x.text}" + ("" if perm is None else f", {perm!r}") + ")"
            return Node(text, lambda hi: np.transpose(x.fn(hi), perm), x.inexact)
        if name == ".T":
            return Node(f"{x.text}.T", lambda hi: x.fn(hi).T, x.inexact)
        if name == "swapaxes":
            a, b = r.randint(-nd - 1, nd), r.randint(-nd, nd)
            return Node(f"swapaxes({x.text}, {a}, {b})", lambda hi: np.swapaxes(x.fn(hi), a, b), x.inexact)
        if name == "expand_dims":
            a = r.randint(-nd - 1, nd)
            return Node(f"expand_dims({x.text}, {a})", lambda hi: np.expand_dims(x.fn(hi), a), x.inexact)
        if name == "flip":
            a = r.randint(-nd, nd - 1) if nd and r.random() < 0.6 else None
            text = f"flip({x.text}" + ("" if a is None else f", axis={a}") + ")"
            return Node(text, lambda hi: np.flip(x.fn(hi), a), x.inexact)
        ones = [i for i, d in enumerate(x.shape) if d == 1]
        a = r.choice(ones + [r.randint(-nd, nd)]) if r.random() < 0.6 and nd else None
        text = f"squeeze({x.text}" + ("" if a is None else f", axis={a}") + ")"
        return Node(text, lambda hi: np.squeeze(x.fn(hi), a), x.inexact)

    def join(self, depth):
        r = self.r
        name = r.choice(["concatenate", "stack"])
        a = self.expr(depth)
        parts = [a] + [self.leaf(shape=a.shape) if r.random() < 0.7 else self.expr(depth)
                       for _ in range(r.randint(0, 2))]
        nd = len(a.shape) + (name == "stack")
        axis = r.randint(-nd, max(nd - 1, 0)) if nd else 0
        if name == "concatenate" and r.random() < 0.5 and a.shape:
            ax = axis % len(a.shape)
            parts = [a] + [self.leaf(shape=a.shape[:ax] + (r.randint(0, 3),) + a.shape[ax + 1:])]
        dt = promote(*[p.dtype for p in parts])
        text = f"{name}([{', '.join(p.text for p in parts)}], axis={axis})"
        f = getattr(np, name)
        return Node(text, lambda hi: f([cast(p.fn(hi), dt, hi) for p in parts], axis=axis),
                    sum(p.inexact for p in parts))

    def where(self, depth):
        c = self.exact(depth)
        a, b = self.operand_pair(depth)
        dt = promote(a.dtype, b.dtype)
        return Node(f"where({c.text}, {a.text}, {b.text})",
                    lambda hi: np.where(c.fn(hi).astype(bool), cast(a.fn(hi), dt, hi), cast(b.fn(hi), dt, hi)),
                    a.inexact + b.inexact)

    def clip(self, depth):
        x = self.expr(depth)
        lo, hi_ = self.weak(), self.weak()
        dt = promote(x.dtype, lo.dtype, hi_.dtype)
        return Node(f"clip({x.text}, {lo.text}, {hi_.text})",
                    lambda hi: np.minimum(np.maximum(cast(x.fn(hi), dt, hi), cast(lo.fn(hi), dt, hi)),
                                          cast(hi_.fn(hi), dt, hi)), x.inexact)

    def cumsum(self, depth):
        x = self.expr(depth)
        axis = self.axes(len(x.shape), tuple_ok=False)
        acc = I32 if x.dtype == BOOL else x.dtype
        text = f"cumsum({x.text}" + ("" if axis is None else f", axis={axis}") + ")"
        node = Node(text, lambda hi: np.cumsum(x.fn(hi), axis=axis, dtype=hi_dtype(acc, hi)),
                    x.inexact + (acc in FLOATS))
        budget(x.value, max(x.value.size, 1), node.value.dtype)
        return node

    def sort(self, depth):
        r = self.r
        name = r.choice(["sort", "argsort"])
        x = self.exact(depth)
        if not x.shape:
            # Not generated for 0-d arrays (see the exclusions).
            x = Node(f"{x.text}.reshape((1,))", lambda hi, x=x: x.fn(hi).reshape((1,)))
        axis = r.randint(-len(x.shape), len(x.shape) - 1) if x.shape and r.random() < 0.5 else None
        text = f"{name}({x.text}" + ("" if axis is None else f", axis={axis}") + ")"
        ax = -1 if axis is None else axis

        def fn(hi):
            v = x.fn(hi)
            if v.ndim == 0:
                raise ValueError("0-d")
            out = np.sort(v, axis=ax, kind="stable") if name == "sort" else np.argsort(v, axis=ax, kind="stable")
            return out if name == "sort" else out.astype(np.int32)

        return Node(text, fn)

    def index(self, depth):
        r = self.r
        x = self.expr(depth)
        nd = len(x.shape)
        c = r.random()
        if c < 0.45 or nd == 0:
            parts = []
            for d in x.shape[: r.randint(0, nd)]:
                k = r.random()
                if k < 0.35:
                    parts.append(str(r.randint(-d, d - 1) if d and r.random() < 0.9 else r.randint(-d - 2, d + 2)))
                elif k < 0.85:
                    start = r.choice(["", str(r.randint(-d - 1, d + 1))])
                    stop = r.choice(["", str(r.randint(-d - 1, d + 1))])
                    step = r.choice(["", "", "1", "2", "-1", "-2"])
                    parts.append(f"{start}:{stop}" + (f":{step}" if step else ""))
                else:
                    parts.append("None")
            if r.random() < 0.2:
                parts.append("...")
            key = ", ".join(parts) if parts else "..."
            return Node(f"{x.text}[{key}]", lambda hi: x.fn(hi)[eval(f"np.s_[{key}]", {"np": np})], x.inexact)
        if c < 0.75:
            d = x.shape[0]
            idx = [r.randint(-d, d - 1) for _ in range(r.randint(0, 4))] if d else []
            shape = (len(idx),)
            if r.random() < 0.3 and len(idx) == 4:
                shape = (2, 2)
            it = f"array({idx!r}, dtype=int32)" + (".reshape((2, 2))" if shape == (2, 2) else "")
            return Node(f"{x.text}[{it}]", lambda hi: x.fn(hi)[np.array(idx, np.int64).reshape(shape)], x.inexact)
        mask = self.leaf(BOOL, shape=x.shape[: r.randint(1, nd)])
        if r.random() < 0.3:
            mask = self.compare(0)
            if mask.shape != x.shape[: len(mask.shape)] or not mask.shape:
                mask = self.leaf(BOOL, shape=x.shape)
        return Node(f"{x.text}[{mask.text}]", lambda hi: x.fn(hi)[mask.fn(hi).astype(bool)], x.inexact)

    def matmul(self, depth):
        r = self.r
        n, k, m = r.randint(0, 4), r.randint(0, 4), r.randint(0, 4)
        dt = r.choice([I32, F32, F32, F64])
        sa = r.choice([(n, k), (k,)])
        sb = r.choice([(k, m), (k,)])
        if r.random() < 0.1:
            sb = (k + 1, m)
        a = self.leaf(dt, sa)
        b = self.leaf(r.choice([dt, F32]), sb)
        name = r.choice(["@", "matmul", "dot"])
        text = f"({a.text} @ {b.text})" if name == "@" else f"{name}({a.text}, {b.text})"
        out = promote(a.dtype, b.dtype)

        def fn(hi):
            x, y = cast(a.fn(hi), out, hi), cast(b.fn(hi), out, hi)
            return np.matmul(x, y) if name != "dot" else np.dot(x, y)

        node = Node(text, fn, inexact=a.inexact + b.inexact + (out in FLOATS))
        if out in FLOATS and node.value.size:
            terms = np.abs(a.value.astype(np.float64)) @ np.abs(b.value.astype(np.float64))
            budget(terms, k, node.value.dtype)
        return node

    def astype(self, depth):
        r = self.r
        x = self.exact(depth)
        dt = r.choice([BOOL, I32, I64, F32, F64])
        dts = "bool" if dt == BOOL else dt

        def fn(hi):
            v = x.fn(hi)
            if dt in INTS and v.dtype.kind == "f":
                info = np.iinfo(NP[dt])
                ok = np.isfinite(v) & (v >= info.min) & (v < -float(info.min))
                if not np.all(ok):
                    raise Excluded("float to int out of range")
            return v.astype(hi_dtype(dt, hi))

        return Node(f"{x.text}.astype({dts})", fn, x.inexact)


def jax_floor_divmod(x, y, op):
    """JAX's float floor division and remainder (CPython's float_divmod)."""
    mod = np.fmod(x, y)
    if op == "%":
        plus = ((mod < 0) != (y < 0)) & (mod != 0)
        return np.where(plus, mod + y, mod)
    div = (x - mod) / y
    ind = (mod != 0) & (np.sign(y) != np.sign(mod))
    div = np.where(ind, div - 1, div)
    return np.round(div).astype(div.dtype)


def integer_pow(x, n):
    """`x ** n` for a Python int n, as JAX's integer_pow: repeated squaring."""
    if n == 0:
        return np.ones_like(x)
    acc, base, e = None, x, abs(n)
    while e:
        if e & 1:
            acc = base if acc is None else acc * base
        e >>= 1
        if e:
            base = base * base
    return (np.ones_like(x) / acc).astype(x.dtype) if n < 0 else acc


def make_program(rng, stats):
    """One program: ("value", node) or ("error", text) where the reference raises."""
    g = Gen(rng)
    for _ in range(100):
        depth = rng.choice([1, 2, 2, 3, 3, 4])
        BUDGET[0] = 0.0
        try:
            node = g.expr(depth)
            node.budget = BUDGET[0]
            return ("value", node)
        except Excluded as e:
            stats[str(e)] = stats.get(str(e), 0) + 1
        except RefError as e:
            # Keep some failing programs, to check that arr raises too.
            if rng.random() < 0.3:
                return ("error", e.text, str(e))
    return ("value", g.leaf())


def close(got, want, tol):
    """Whether got equals want within tol (elementwise), nan equal to nan."""
    got, want = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
    if got.shape != want.shape:
        return False
    with np.errstate(invalid="ignore"):
        ok = (np.isnan(got) & np.isnan(want)) | (got == want) | (np.isfinite(want) & (np.abs(got - want) <= tol)) | np.isposinf(tol)
    return bool(np.all(ok))


def tolerance(node, want):
    """The allowed difference for a float result (see the module docs)."""
    if want.dtype.kind != "f":
        return 0.0
    try:
        wide = np.asarray(node.fn(True), dtype=np.float64)
    except Exception:
        wide = np.asarray(want, dtype=np.float64)
    w = np.asarray(want, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        spread = np.where(np.isfinite(w) & np.isfinite(wide), np.abs(w - wide), 0.0)
    eps = np.finfo(want.dtype).eps
    tiny = np.finfo(want.dtype).tiny
    # nan only in float32: decided by the evaluation order (see the module docs).
    ordered = np.where(np.isnan(w) & ~np.isnan(wide), np.inf, 0.0)
    return ordered + getattr(node, "budget", 0.0) + 8 * spread + (2 + 4 * node.inexact) * eps * np.abs(np.where(np.isfinite(w), w, 0)) + 4 * tiny * (node.inexact > 0)


def agrees(node, got):
    """None if arr's (dtype, shape, values) agree with the reference, else why not."""
    want = np.asarray(node.value)
    dtype, shape, values = got
    if dtype != want.dtype.name:
        return f"dtype {dtype}, reference {want.dtype.name}"
    if tuple(shape) != want.shape:
        return f"shape {tuple(shape)}, reference {want.shape}"
    values = np.asarray(values, dtype=object if want.dtype.kind in "iub" else np.float64).reshape(want.shape)
    if want.dtype.kind in "iub":
        if values.size and not np.array_equal(values.astype(want.dtype), want):
            return "values"
        return None
    if close(values, want, tolerance(node, want)):
        return None
    if node.alt:
        NUMPY_FLOOR[0] = True
        try:
            other = np.asarray(node.fn(False))
        except Exception:
            other = None
        finally:
            NUMPY_FLOOR[0] = False
        if other is not None and other.shape == want.shape and close(values, other, tolerance(node, want)):
            return None
    return "values"


PRELUDE = 'def out(r):\n    print("R", str(r.dtype), r.shape, r.tolist())\n\n'


def run_arr(arr, texts):
    """arr's results of the expressions `texts`, one entry each on stdin (an
    error ends only its entry): a list of (dtype, shape, values) or None for
    an error. None for the whole batch if the process died (a crash)."""
    lines = []
    for i, t in enumerate(texts):
        lines.append(f'print("B", {i})')
        lines.append(f"out({t})")
    src = PRELUDE + "\n".join(lines) + "\n"
    p = subprocess.run([arr], input=src, capture_output=True, text=True, timeout=600)
    if p.returncode not in (0, 1) or "panicked" in p.stderr:
        return None, p.stderr[-2000:]
    results = [None] * len(texts)
    current = None
    env = {"nan": float("nan"), "inf": float("inf"), "True": True, "False": False}
    for line in p.stdout.splitlines():
        if line.startswith("B "):
            current = int(line[2:])
        elif line.startswith("R ") and current is not None:
            _, dtype, rest = line.split(" ", 2)
            # "(2, 3) [[...]]": the shape is the text up to the first ") ".
            cut = rest.index(") ") + 1
            results[current] = (dtype, eval(rest[:cut], env), eval(rest[cut + 1:], env))
    return results, p.stderr


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("arr")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--programs", type=int, default=1000)
    ap.add_argument("--batch", type=int, default=200)
    ap.add_argument("--show", action="store_true", help="print every program")
    a = ap.parse_args()
    rng = random.Random(a.seed)
    stats, bad, compared, errors = {}, 0, 0, 0
    programs = [make_program(rng, stats) for _ in range(a.programs)]
    for start in range(0, len(programs), a.batch):
        batch = programs[start:start + a.batch]
        texts = [p[1].text if p[0] == "value" else p[1] for p in batch]
        results, stderr = run_arr(a.arr, texts)
        if results is None:
            # A crash: find the program that takes the process down.
            for t in texts:
                one, err = run_arr(a.arr, [t])
                if one is None:
                    bad += 1
                    print(f"CRASH {t}\n   {err.strip().splitlines()[-1] if err.strip() else ''}")
            continue
        for p, got in zip(batch, results):
            compared += 1
            if a.show:
                print(p[1].text if p[0] == "value" else p[1])
            if p[0] == "error":
                errors += 1
                if got is not None:
                    bad += 1
                    print(f"MISMATCH {p[1]}\n   arr:       {got}\n   reference: raises {p[2]}")
                continue
            node = p[1]
            if got is None:
                bad += 1
                print(f"MISMATCH {node.text}\n   arr:       raises\n   reference: {node.value.dtype} "
                      f"{node.value.shape} {node.value.tolist()}")
                continue
            why = agrees(node, got)
            if why:
                bad += 1
                print(f"MISMATCH ({why}) {node.text}\n   arr:       {got}\n   reference: {node.value.dtype} "
                      f"{node.value.shape} {node.value.tolist()}")
    skipped = ", ".join(f"{k}: {v}" for k, v in sorted(stats.items()))
    print(f"{compared} programs (seed {a.seed}; {errors} where both must raise), {bad} mismatches; "
          f"excluded draws regenerated: {skipped or 'none'}")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
