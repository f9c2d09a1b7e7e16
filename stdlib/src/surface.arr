# NumPy, jax.numpy, jax.lax, jax.nn and jax.random functions written in arr
# over the builtins, so that grad, vmap and jit see only primitives.
# Loaded after the prelude. Names that clash with a builtin of another
# meaning carry a prefix: `_lax_X` is jax.lax.X, `_init_X` is
# jax.nn.initializers.X, and `_random_X` becomes `random.X`.

def _axis(axis, ndim):
    """A non-negative axis number."""
    if axis < -ndim or axis >= max(ndim, 1):
        raise ValueError(f"axis {axis} is out of bounds for an array of dimension {ndim}")
    return axis % max(ndim, 1)

def _along(x, axis, start, stop):
    """x[start:stop] along axis."""
    x = moveaxis(x, axis, -1)
    return moveaxis(x[..., start:stop], -1, axis)

def _with_len(v, x, axis, n):
    """v (scalar or array) broadcast to x's shape with n along axis."""
    shape = list(x.shape)
    shape[axis] = n
    v = asarray(v)
    if v.ndim == 0:
        return broadcast_to(v, tuple(shape))
    return v

# ---------------------------------------------------------------------------
# jax.numpy

def copy(a, order=None):
    """A copy of the array (a new array object)."""
    return array(a)

def checkpoint(fun=None, prevent_cse=True, policy=None, static_argnums=()):
    """jax.checkpoint (remat): fun itself. arr keeps what the backward pass
    needs and does not rematerialise, so results are the same."""
    if fun is None:
        return lambda f: f
    return fun

def remat(fun=None, prevent_cse=True, policy=None, static_argnums=()):
    """The same as checkpoint."""
    return checkpoint(fun, prevent_cse, policy, static_argnums)

# typing's names: annotations are kept, never enforced, so a hint only has
# to name itself and take subscripts (`Dict[str, Any]`, `Callable[[int], int]`).

class _typing_Hint:
    def __init__(self, name, args=None):
        self._name = name
        self._args = args

    def __getitem__(self, args):
        return _typing_Hint(self._name, args)

    def __repr__(self):
        if self._args is None:
            return "typing." + self._name
        args = self._args if isinstance(self._args, tuple) else (self._args,)
        return "typing." + self._name + "[" + ", ".join(repr(a) for a in args) + "]"

_typing_Any = _typing_Hint("Any")
_typing_Callable = _typing_Hint("Callable")
_typing_Optional = _typing_Hint("Optional")
_typing_Union = _typing_Hint("Union")
_typing_Sequence = _typing_Hint("Sequence")
_typing_Tuple = _typing_Hint("Tuple")
_typing_List = _typing_Hint("List")
_typing_Dict = _typing_Hint("Dict")
_typing_Iterable = _typing_Hint("Iterable")
_typing_Iterator = _typing_Hint("Iterator")
_typing_Mapping = _typing_Hint("Mapping")

def _lax_shift_right_logical(x, y):
    """lax.shift_right_logical: zeros shifted in, whatever x's sign."""
    x = asarray(x)
    if x.dtype == uint32:
        return right_shift(x, y)
    bits = x.dtype.itemsize * 8
    y = asarray(y, x.dtype)
    # The top y bits of an arithmetic shift copy the sign: clear them.
    mask = left_shift(asarray(1, x.dtype), bits - y) - 1
    out = bitwise_and(right_shift(x, y), where(y == 0, -1, mask))
    return where(y >= bits, zeros_like(x), out)

_dtype_of = dtype

class ShapeDtypeStruct:
    """jax.ShapeDtypeStruct: an array's shape and dtype without its values,
    what eval_shape gives and takes."""

    def __init__(self, shape, dtype, sharding=None):
        self.shape = tuple(shape)
        self.dtype = _dtype_of(dtype)
        self.sharding = sharding

    @classmethod
    def like(cls, x):
        """The shape, dtype (and mesh sharding, if any) of x."""
        s = getattr(x, "sharding", None)
        if type(s).__name__ != "NamedSharding":
            s = None
        return cls(shape(x), x.dtype if hasattr(x, "dtype") else result_type(x), s)

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def size(self):
        n = 1
        for d in self.shape:
            n = n * d
        return n

    def __eq__(self, other):
        return isinstance(other, ShapeDtypeStruct) and self.shape == other.shape and self.dtype == other.dtype

    def __repr__(self):
        if self.sharding is None:
            return f"ShapeDtypeStruct(shape={self.shape}, dtype={self.dtype})"
        return f"ShapeDtypeStruct(shape={self.shape}, dtype={self.dtype}, sharding={self.sharding})"

# jit(f).lower(*args): JAX's ahead-of-time stages. `compile()` gives a
# callable that takes the arguments that were not static at `lower`.

class _stages_Lowered:
    def __init__(self, fun, static_argnums, static_argnames, args, kwargs):
        self._fun = fun
        n = len(args)
        self._static = sorted({i + n if i < 0 else i for i in static_argnums if -n <= i < n})
        self._names = static_argnames
        self._args = args
        self._kwargs = kwargs

    def compile(self):
        return _stages_Compiled(self)

    def as_text(self):
        return str(self._fun.ir(*self._args, **self._kwargs))

    def __repr__(self):
        return "<Lowered " + self._fun.__name__ + ">"


class _stages_Compiled:
    def __init__(self, lowered):
        self._lowered = lowered

    def __call__(self, *args, **kwargs):
        low = self._lowered
        full = list(args)
        for i in low._static:
            full.insert(i, low._args[i])
        for k, v in low._kwargs.items():
            if k in low._names:
                kwargs[k] = v
        return low._fun(*full, **kwargs)

    def as_text(self):
        return self._lowered.as_text()

    def __repr__(self):
        return "<Compiled " + self._lowered._fun.__name__ + ">"

# jax.checkpoint_policies: what a policy would say to keep. checkpoint
# keeps everything, so a policy changes no result; these answer as JAX's do
# for whoever calls them.

def _ckpt_everything_saveable(*_, **__):
    return True

def _ckpt_nothing_saveable(*_, **__):
    return False

def _ckpt_dots_saveable(prim, *_, **__):
    return str(prim) == "dot_general"

def _ckpt_save_only_these_names(*names):
    return lambda prim, *_, name=None, **__: name in names

def _ckpt_save_anything_except_these_names(*names):
    return lambda prim, *_, name=None, **__: name not in names

def print_saved_residuals(f, *args, **kwargs):
    """jax.ad_checkpoint.print_saved_residuals: a line per residual that
    reverse mode keeps (all of them in arr, which never rematerialises)."""
    for ty, what in saved_residuals(f, *args, **kwargs):
        print(ty + " " + what)

def _ckpt_save_and_offload_only_these_names(*, names_which_can_be_saved, names_which_can_be_offloaded, offload_src, offload_dst):
    return lambda prim, *_, name=None, **__: name in names_which_can_be_saved or name in names_which_can_be_offloaded

def _ckpt_offload_dot_with_no_batch_dims(offload_src, offload_dst):
    return _ckpt_dots_saveable

# The JAX release whose semantics and numbers arr follows.
_jax_version = "0.10.2"

def _operator_is(a, b):
    return a is b

def _operator_is_not(a, b):
    return a is not b

def checkpoint_name(x, name):
    """jax.ad_checkpoint.checkpoint_name: x itself, named for a policy."""
    return x

def _broadcastable(a, b):
    """Whether two shapes broadcast together."""
    for i in range(1, min(len(a), len(b)) + 1):
        if a[-i] != b[-i] and a[-i] != 1 and b[-i] != 1:
            return False
    return True

def broadcast_shapes(*shapes):
    """The shape that the given shapes broadcast to."""
    out = []
    for s in shapes:
        s = (s,) if isinstance(s, int) else tuple(s)
        if not _broadcastable(tuple(out), s):
            raise ValueError(f"Incompatible shapes for broadcasting: {shapes}")
        n = _max2(len(out), len(s))
        a = [1] * (n - len(out)) + out
        b = [1] * (n - len(s)) + list(s)
        out = [b[i] if a[i] == 1 else a[i] for i in range(n)]
    return tuple(out)

def diff(a, n=1, axis=-1, prepend=None, append=None):
    """The n-th discrete difference along axis (prepend/append values first)."""
    a = asarray(a)
    axis = _axis(axis, a.ndim)
    parts = [a]
    if prepend is not None:
        parts = [_with_len(prepend, a, axis, 1)] + parts
    if append is not None:
        parts = parts + [_with_len(append, a, axis, 1)]
    if len(parts) > 1:
        a = concatenate(parts, axis=axis)
    for _ in range(n):
        a = _along(a, axis, 1, None) - _along(a, axis, None, -1)
    return a

def ediff1d(ary, to_end=None, to_begin=None):
    """Differences of consecutive elements of the flattened array."""
    d = diff(ravel(asarray(ary)))
    parts = [d]
    if to_begin is not None:
        parts = [ravel(asarray(to_begin)).astype(d.dtype)] + parts
    if to_end is not None:
        parts = parts + [ravel(asarray(to_end)).astype(d.dtype)]
    return concatenate(parts) if len(parts) > 1 else d

def meshgrid(*xi, copy=True, sparse=False, indexing="xy"):
    """Coordinate matrices from coordinate vectors ('xy': the first two axes swapped)."""
    if indexing not in ("xy", "ij"):
        raise ValueError(f"indexing must be 'xy' or 'ij', got '{indexing}'")
    xs = [ravel(asarray(x)) for x in xi]
    n = len(xs)
    shape = [x.size for x in xs]
    if indexing == "xy" and n >= 2:
        shape[0], shape[1] = shape[1], shape[0]
    out = []
    for i, x in enumerate(xs):
        axis = i
        if indexing == "xy" and n >= 2 and i < 2:
            axis = 1 - i
        s = [1] * n
        s[axis] = x.size
        x = reshape(x, tuple(s))
        out.append(x if sparse else broadcast_to(x, tuple(shape)))
    return out

def searchsorted(a, v, side="left", sorter=None, method="scan"):
    """Indices where v's elements would be inserted into the sorted a to keep it sorted."""
    a = ravel(asarray(a))
    if sorter is not None:
        a = a[asarray(sorter)]
    v = asarray(v)
    if side == "left":
        hits = a < v[..., None]
    elif side == "right":
        hits = a <= v[..., None]
    else:
        raise ValueError(f"side must be 'left' or 'right', got '{side}'")
    return sum(hits, axis=-1).astype(int32)

def digitize(x, bins, right=False):
    """The index of the bin each x falls in (bins increasing or decreasing)."""
    x = asarray(x)
    bins = ravel(asarray(bins))
    side = "left" if right else "right"
    up = searchsorted(bins, x, side=side)
    down = bins.shape[0] - searchsorted(bins[::-1], x, side=side)
    return where(bins[-1] >= bins[0], up, down)

def interp(x, xp, fp, left=None, right=None, period=None):
    """Piecewise-linear interpolation of (xp, fp) at x (left/right beyond the ends)."""
    x, xp, fp = asarray(x), asarray(xp), asarray(fp)
    if period is not None:
        x = x % period
        order = argsort(xp)
        xp = concatenate([xp[order][-1:] - period, xp[order], xp[order][:1] + period])
        fp = concatenate([fp[order][-1:], fp[order], fp[order][:1]])
    n = xp.shape[0]
    i = clip(searchsorted(xp, x, side="right"), 1, n - 1)
    df = fp[i] - fp[i - 1]
    dx = xp[i] - xp[i - 1]
    delta = x - xp[i - 1]
    flat = abs(dx) <= 0.0
    f = where(flat, fp[i - 1], fp[i - 1] + (delta / where(flat, 1, dx)) * df)
    if period is None:
        f = where(x < xp[0], fp[0] if left is None else left, f)
        f = where(x > xp[-1], fp[-1] if right is None else right, f)
    return f

def histogram_bin_edges(a, bins=10, range=None, weights=None):
    """The edges of histogram's bins."""
    a = asarray(a)
    dtype = a.dtype if a.dtype in (float32, float64) else result_type(a.dtype, 1.0)
    if not isinstance(bins, int):
        return asarray(bins).astype(dtype)
    if range is None:
        lo, hi = min(a), max(a)
    else:
        lo, hi = asarray(range[0]).astype(dtype), asarray(range[1]).astype(dtype)
    same = hi - lo == 0
    lo, hi = where(same, lo - 0.5, lo), where(same, hi + 0.5, hi)
    return linspace(lo, hi, bins + 1).astype(dtype)

def histogram(a, bins=10, range=None, weights=None, density=None):
    """(counts, edges): how many of a's elements (or their weights) fall in each bin."""
    a = ravel(asarray(a))
    edges = histogram_bin_edges(a, bins, range, weights)
    idx = searchsorted(edges, a, side="right")
    idx = where(a == edges[-1], edges.shape[0] - 1, idx)
    w = ones_like(a) if weights is None else ravel(asarray(weights))
    counts = zeros(edges.shape[0] + 1, w.dtype).at[idx].add(w)[1:-1]
    if density:
        counts = counts / diff(edges) / sum(counts)
    return counts, edges

def bincount(x, weights=None, minlength=0, length=None):
    """How often each value 0, 1, ... occurs in the non-negative ints x (or their weights)."""
    x = ravel(asarray(x))
    if length is None:
        length = _max2(minlength, int(max(x)) + 1 if x.size else 0)
    w = asarray(1, int32) if weights is None else asarray(weights)
    w = broadcast_to(w, x.shape)
    return zeros(length, w.dtype).at[clip(x, 0, None)].add(w, mode="drop")

def _max2(a, b):
    return a if a > b else b

def piecewise(x, condlist, funclist, *args, **kw):
    """Where condlist[k] holds, funclist[k](x) (a function or a constant); a
    spare last entry is the default. Later conditions win, as NumPy's."""
    x = asarray(x)
    if isinstance(condlist, (list, tuple)):
        conds = [asarray(c) for c in condlist]
    else:
        conds = list(asarray(condlist)) if asarray(condlist).ndim > x.ndim else [asarray(condlist)]
    funcs = list(funclist)
    if len(funcs) == len(conds) + 1:
        default = funcs[-1]
        funcs = funcs[:-1]
    elif len(funcs) == len(conds):
        default = 0
    else:
        raise ValueError(f"piecewise: with {len(conds)} condition(s), funclist must have {len(conds)} or {len(conds) + 1} entries, got {len(funcs)}")

    def value(f):
        if callable(f):
            return asarray(f(x, *args, **kw)).astype(x.dtype)
        return asarray(f).astype(x.dtype)

    out = broadcast_to(value(default), x.shape)
    for c, f in zip(conds, funcs):
        out = where(c, value(f), out)
    return out

def select(condlist, choicelist, default=0):
    """choicelist[k] where condlist[k] is the first true condition, else default."""
    if len(condlist) != len(choicelist):
        raise ValueError(f"select: condlist has {len(condlist)} entries but choicelist has {len(choicelist)}")
    if len(condlist) == 0:
        raise ValueError("select: condlist must be non-empty")
    out = default
    for c, v in reversed(list(zip(condlist, choicelist))):
        out = where(c, v, out)
    return asarray(out)

def _pad_pairs(width, ndim, what):
    """((before, after),) * ndim from an int, a pair, or per-axis pairs."""
    if not isinstance(width, (list, tuple)):
        width = width.tolist() if isinstance(width, array) else width
    if not isinstance(width, (list, tuple)):
        return [(width, width)] * ndim
    w = [tuple(p) if isinstance(p, (list, tuple)) else p for p in width]
    if len(w) == 1 and isinstance(w[0], tuple):
        return [(w[0][0], w[0][-1])] * ndim
    if len(w) == 2 and not isinstance(w[0], tuple):
        return [(w[0], w[1])] * ndim
    if len(w) == 1:
        return [(w[0], w[0])] * ndim
    if len(w) != ndim:
        raise ValueError(f"pad: {what} has {len(w)} entries for an array of dimension {ndim}")
    return [(p[0], p[-1]) if isinstance(p, tuple) else (p, p) for p in w]

def pad(array, pad_width, mode="constant", constant_values=0, end_values=0, reflect_type="even", stat_length=None):
    """array padded on each side of each axis: mode 'constant', 'edge', 'reflect',
    'symmetric', 'wrap', 'linear_ramp', 'maximum', 'minimum' or 'mean'."""
    x = asarray(array)
    widths = _pad_pairs(pad_width, x.ndim, "pad_width")
    for before, after in widths:
        if before < 0 or after < 0:
            raise ValueError(f"pad: pad_width must be non-negative, got {pad_width}")
    if mode == "constant":
        values = _pad_pairs(constant_values, x.ndim, "constant_values")
    elif mode == "linear_ramp":
        values = _pad_pairs(end_values, x.ndim, "end_values")
    for axis in range(x.ndim):
        before, after = widths[axis]
        if before == 0 and after == 0:
            continue
        n = x.shape[axis]
        if mode == "constant":
            lo = _with_len(asarray(values[axis][0]).astype(x.dtype), x, axis, before)
            hi = _with_len(asarray(values[axis][1]).astype(x.dtype), x, axis, after)
            x = concatenate([lo, x, hi], axis=axis)
            continue
        if n == 0:
            raise ValueError(f"pad: can't extend an empty axis {axis} with mode '{mode}'")
        if mode in ("linear_ramp", "maximum", "minimum", "mean"):
            first = _along(x, axis, 0, 1)
            last = _along(x, axis, n - 1, n)
            if mode == "linear_ramp":
                shape = [1] * x.ndim
                shape[axis] = before
                t = reshape(arange(before, dtype=float32) / _max2(before, 1), tuple(shape))
                v0 = asarray(values[axis][0]).astype(x.dtype)
                lo = (v0 + (first - v0) * t).astype(x.dtype)
                shape[axis] = after
                t = reshape(arange(1, after + 1, dtype=float32) / _max2(after, 1), tuple(shape))
                v1 = asarray(values[axis][1]).astype(x.dtype)
                hi = (last + (v1 - last) * t).astype(x.dtype)
            else:
                if mode == "maximum":
                    stat = max(x, axis=axis, keepdims=True)
                elif mode == "minimum":
                    stat = min(x, axis=axis, keepdims=True)
                else:
                    stat = mean(x, axis=axis, keepdims=True).astype(x.dtype)
                lo = _with_len(stat, x, axis, before) if before == 0 else concatenate([stat] * before, axis=axis)
                hi = _with_len(stat, x, axis, after) if after == 0 else concatenate([stat] * after, axis=axis)
            x = concatenate([lo, x, hi], axis=axis)
            continue
        j = arange(-before, n + after)
        if mode == "edge":
            idx = clip(j, 0, n - 1)
        elif mode == "wrap":
            idx = j % n
        elif mode == "reflect":
            if n == 1:
                idx = j * 0
            else:
                k = j % (2 * n - 2)
                idx = where(k < n, k, 2 * n - 2 - k)
        elif mode == "symmetric":
            k = j % (2 * n)
            idx = where(k < n, k, 2 * n - 1 - k)
        else:
            raise ValueError(f"pad: unsupported mode '{mode}'")
        x = take(x, idx, axis=axis)
    return x

def tensordot(a, b, axes=2):
    """Sum of products over the given axes of a and b (axes: an int N for a's
    last N and b's first N, or a pair of axis lists)."""
    a, b = asarray(a), asarray(b)
    if isinstance(axes, int):
        if axes < 0:
            raise ValueError(f"tensordot: axes must be non-negative, got {axes}")
        ca = list(range(a.ndim - axes, a.ndim))
        cb = list(range(axes))
    else:
        if len(axes) != 2:
            raise ValueError("tensordot: axes must be an int or a pair of axis sequences")
        ca, cb = axes
        ca = [ca] if isinstance(ca, int) else list(ca)
        cb = [cb] if isinstance(cb, int) else list(cb)
    if len(ca) != len(cb):
        raise ValueError(f"tensordot: {len(ca)} axes of a against {len(cb)} axes of b")
    ca = [_axis(i, a.ndim) for i in ca]
    cb = [_axis(i, b.ndim) for i in cb]
    for i, j in zip(ca, cb):
        if a.shape[i] != b.shape[j]:
            raise ValueError(f"tensordot: shape mismatch: {a.shape} axis {i} against {b.shape} axis {j}")
    fa = [i for i in range(a.ndim) if i not in ca]
    fb = [i for i in range(b.ndim) if i not in cb]
    k = 1
    for i in ca:
        k = k * a.shape[i]
    am = reshape(transpose(a, tuple(fa + ca)), (-1, k))
    bm = reshape(transpose(b, tuple(cb + fb)), (k, -1))
    return reshape(am @ bm, tuple([a.shape[i] for i in fa] + [b.shape[i] for i in fb]))

def kron(a, b):
    """The Kronecker product: blocks a[i, j] * b."""
    a, b = asarray(a), asarray(b)
    n = _max2(a.ndim, b.ndim)
    a = reshape(a, (1,) * (n - a.ndim) + a.shape)
    b = reshape(b, (1,) * (n - b.ndim) + b.shape)
    sa, sb, sab = [], [], []
    for i in range(n):
        sa = sa + [a.shape[i], 1]
        sb = sb + [1, b.shape[i]]
        sab.append(a.shape[i] * b.shape[i])
    return reshape(reshape(a, tuple(sa)) * reshape(b, tuple(sb)), tuple(sab))

def cross(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    """The cross product of 3-vectors (2-vectors give the scalar z component)."""
    if axis is not None:
        axisa, axisb, axisc = axis, axis, axis
    a = moveaxis(asarray(a), axisa, -1)
    b = moveaxis(asarray(b), axisb, -1)
    if a.shape[-1] not in (2, 3) or b.shape[-1] not in (2, 3):
        raise ValueError(f"cross: vectors must have 2 or 3 components, got {a.shape[-1]} and {b.shape[-1]}")
    if a.shape[-1] == 2 and b.shape[-1] == 2:
        return a[..., 0] * b[..., 1] - a[..., 1] * b[..., 0]
    a0, a1 = a[..., 0], a[..., 1]
    a2 = a[..., 2] if a.shape[-1] == 3 else zeros_like(a0)
    b0, b1 = b[..., 0], b[..., 1]
    b2 = b[..., 2] if b.shape[-1] == 3 else zeros_like(b0)
    c = stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], axis=-1)
    return moveaxis(c, -1, axisc)

def array_equal(a1, a2, equal_nan=False):
    """True if a1 and a2 have the same shape and elements."""
    a1, a2 = asarray(a1), asarray(a2)
    if a1.shape != a2.shape:
        return asarray(False)
    same = a1 == a2
    if equal_nan:
        same = same | (isnan(a1) & isnan(a2))
    return all(same)

def quantile(a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False):
    """The q-th quantiles (q in [0, 1]) along axis, interpolating linearly."""
    a = asarray(a)
    if a.dtype not in (float32, float64):
        a = a.astype(float32)
    if axis is None:
        x = ravel(a)
        ax = 0
    else:
        x = a
        ax = _axis(axis, a.ndim)
    s = moveaxis(sort(x, axis=ax), ax, -1)
    n = s.shape[-1]
    q = asarray(q).astype(a.dtype)
    pos = q * (n - 1)
    lo = clip(floor(pos), 0, n - 1)
    hi = clip(ceil(pos), 0, n - 1)
    frac = pos - lo
    lo_i, hi_i = lo.astype(int32), hi.astype(int32)
    vlo = take(s, ravel(lo_i), axis=-1)
    vhi = take(s, ravel(hi_i), axis=-1)
    r = _interpolate(vlo, vhi, ravel(frac), method, "quantile")
    # r has the kept axes then q's (flattened) axis: put q's axes first.
    r = reshape(moveaxis(r, -1, 0), q.shape + s.shape[:-1])
    if keepdims:
        if axis is None:
            r = reshape(r, q.shape + (1,) * a.ndim)
        else:
            r = expand_dims(r, q.ndim + ax)
    return r

def percentile(a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False):
    """The q-th percentiles (q in [0, 100]) along axis."""
    return quantile(a, asarray(q) / 100, axis=axis, method=method, keepdims=keepdims)

def median(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    """The median along axis."""
    return quantile(a, 0.5, axis=axis, keepdims=keepdims)

def nanmean(a, axis=None, keepdims=False):
    """The mean of the non-NaN elements."""
    a = asarray(a)
    ok = ~isnan(a)
    return sum(where(ok, a, 0), axis=axis, keepdims=keepdims) / sum(ok, axis=axis, keepdims=keepdims)

def nansum(a, axis=None, keepdims=False):
    """The sum of the non-NaN elements."""
    a = asarray(a)
    return sum(where(isnan(a), 0, a), axis=axis, keepdims=keepdims)

def _unravel(flat, shape):
    """Per-axis coordinates of flat row-major positions."""
    coords = []
    for d in reversed(shape):
        coords.append(flat % d)
        flat = flat // d
    return tuple(reversed(coords))

def nonzero(a, size=None, fill_value=None):
    """The coordinates of the non-zero elements, one int32 array per axis;
    with size, exactly size of them (padded with fill_value, default 0)."""
    a = asarray(a)
    if a.ndim == 0:
        raise ValueError("nonzero: call it on arrays of at least one dimension")
    m = ravel(a != 0)
    n = m.shape[0]
    if size is None:
        flat = arange(n, dtype=int32)[m]
        return _unravel(flat, a.shape)
    slot = where(m, cumsum(m.astype(int32)) - 1, size)
    flat = zeros(size, int32).at[slot].set(arange(n, dtype=int32), mode="drop")
    count = sum(m.astype(int32))
    valid = arange(size) < count
    fills = fill_value if isinstance(fill_value, (list, tuple)) else [0 if fill_value is None else fill_value] * a.ndim
    return tuple(where(valid, c, asarray(f).astype(int32)) for c, f in zip(_unravel(flat, a.shape), fills))

def flatnonzero(a, size=None, fill_value=None):
    """The flat positions of the non-zero elements."""
    return nonzero(ravel(asarray(a)), size=size, fill_value=fill_value)[0]

def argwhere(a, size=None, fill_value=None):
    """The coordinates of the non-zero elements, one row each: int32[k, ndim]."""
    a = asarray(a)
    if a.ndim == 0:
        a = reshape(a, (1,))
        return reshape(stack(nonzero(a, size=size, fill_value=fill_value), axis=-1), (-1, 0))
    return stack(nonzero(a, size=size, fill_value=fill_value), axis=-1)

def unique(ar, return_index=False, return_inverse=False, return_counts=False, axis=None, equal_nan=True, size=None, fill_value=None, sorted=True):
    """The sorted distinct elements of the flattened array (with size, exactly
    size of them, padded with fill_value, default the smallest), and as asked
    the first index of each, the inverse map and the counts."""
    x = asarray(ar)
    if axis is not None:
        raise ValueError("unique: axis is not supported; flatten the array or use axis=None")
    shape = x.shape
    x = ravel(x)
    n = x.shape[0]
    perm = argsort(x)
    s = x[perm]
    if n == 0:
        first = zeros((0,), bool)
    else:
        first = concatenate([asarray([True]), s[1:] != s[:-1]])
    group = cumsum(first.astype(int32)) - 1
    if size is None:
        vals = s[first]
        k = vals.shape[0]
        starts = arange(n, dtype=int32)[first]
        index = perm[first]
        counts = diff(concatenate([starts, asarray([n], int32)]))
    else:
        k = size
        fill = (s[0] if n else 0) if fill_value is None else fill_value
        slot = where(first, group, size)
        vals = full((size,), fill, x.dtype).at[slot].set(s, mode="drop")
        index = zeros(size, int32).at[slot].set(perm.astype(int32), mode="drop")
        counts = zeros(size, int32).at[group].add(1, mode="drop")
    out = [vals]
    if return_index:
        out.append(index)
    if return_inverse:
        inverse = zeros(n, int32).at[perm].set(group)
        out.append(reshape(inverse, shape) if len(shape) > 0 else inverse)
    if return_counts:
        out.append(counts)
    return out[0] if len(out) == 1 else tuple(out)

def lexsort(keys, axis=-1):
    """Indices that sort by the last key first, then the one before it, ..."""
    keys = list(keys)
    if len(keys) == 0:
        raise TypeError("lexsort: need at least one key")
    perm = arange(asarray(keys[0]).shape[-1], dtype=int32)
    for k in keys:
        perm = perm[argsort(asarray(k)[perm])]
    return perm

def partition(a, kth, axis=-1):
    """a with its kth element (along axis) in sorted position, smaller ones before it, larger after."""
    return sort(asarray(a), axis=axis)

def argpartition(a, kth, axis=-1):
    """Indices that partition a around its kth element."""
    return argsort(asarray(a), axis=axis)

def diag_indices(n, ndim=2):
    """Indices of the main diagonal of an n x ... x n array, one per axis."""
    i = arange(n, dtype=int32)
    return tuple([i] * ndim)

def tril_indices(n, k=0, m=None):
    """Row and column indices of the lower triangle."""
    m = n if m is None else m
    r, c = meshgrid(arange(n, dtype=int32), arange(m, dtype=int32), indexing="ij")
    keep = ravel(c - r <= k)
    return ravel(r)[keep], ravel(c)[keep]

def triu_indices(n, k=0, m=None):
    """Row and column indices of the upper triangle."""
    m = n if m is None else m
    r, c = meshgrid(arange(n, dtype=int32), arange(m, dtype=int32), indexing="ij")
    keep = ravel(c - r >= k)
    return ravel(r)[keep], ravel(c)[keep]

def trace(a, offset=0, axis1=0, axis2=1):
    """The sum along a diagonal."""
    a = asarray(a)
    a = moveaxis(moveaxis(a, axis1, -1), axis2 if axis2 > axis1 else axis2 + 1, -1) if a.ndim > 2 else a
    n, m = a.shape[-2], a.shape[-1]
    r, c = meshgrid(arange(n), arange(m), indexing="ij")
    return sum(where(c - r == offset, a, 0), axis=(-2, -1))

# ---------------------------------------------------------------------------
# jax.numpy: elementwise functions over the primitives

def _is_float(dtype):
    return dtype in (float16, bfloat16, float32, float64)

def _inexact(x):
    """x as an array of a float or complex dtype (ints and bools become float32, as JAX's)."""
    x = asarray(x)
    return x if _is_float(x.dtype) or x.dtype == complex64 else x.astype(float32)

def angle(z, deg=False):
    """The angle of each complex number (of a real one: 0 or pi), in radians or degrees."""
    z = _inexact(z)
    a = arctan2(imag(z), real(z))
    return rad2deg(a) if deg else a

def iscomplexobj(x):
    """Whether x's dtype is complex."""
    return asarray(x).dtype == complex64

def isrealobj(x):
    """Whether x's dtype is not complex."""
    return not iscomplexobj(x)

def iscomplex(x):
    """Whether each element has a non-zero imaginary part."""
    return imag(asarray(x)) != 0

def isreal(x):
    """Whether each element has a zero imaginary part."""
    return imag(asarray(x)) == 0

def positive(x):
    """+x: a copy of x."""
    return array(x)

def fix(x):
    """x rounded toward zero (ints unchanged)."""
    x = asarray(x)
    if not _is_float(x.dtype):
        return x
    return where(x < 0, ceil(x), floor(x))

def trunc(x):
    """The integer part of x, rounding toward zero (ints unchanged)."""
    return fix(x)

def rint(x):
    """x rounded to the nearest integer, halves to even; ints become floats."""
    return round(_inexact(x))

def signbit(x):
    """Whether x's sign bit is set: x < 0, and also for -0.0."""
    x = asarray(x)
    if x.dtype == bool:
        return zeros_like(x, dtype=bool)
    if not _is_float(x.dtype):
        return x < 0
    # -0.0 == 0.0, so only its reciprocal (-inf) tells it from +0.0.
    return (x < 0) | ((x == 0) & (1 / where(x == 0, x, 1) < 0))

def deg2rad(x):
    """Degrees to radians."""
    x = _inexact(x)
    return x * asarray(pi / 180, x.dtype)

def rad2deg(x):
    """Radians to degrees."""
    x = _inexact(x)
    return x * asarray(180 / pi, x.dtype)

def fmod(x1, x2):
    """The remainder of x1 / x2 with the sign of x1 (C's fmod); an integer x2 of 0 gives 0."""
    x1, x2 = asarray(x1), asarray(x2)
    if not _is_float((x1 + x2).dtype):
        x2 = where(x2 == 0, 1, x2)
    return _lax_rem(*_promoted(x1, x2))

def _promoted(*xs):
    """The arrays xs in their common (JAX-promoted) dtype."""
    xs = [asarray(x) for x in xs]
    dtype = result_type(*xs)
    return [x.astype(dtype) for x in xs]

def fmax(x1, x2):
    """The elementwise maximum, ignoring a NaN when the other value is not NaN."""
    x1, x2 = _promoted(x1, x2)
    return where((x1 > x2) | isnan(x2), x1, x2)

def fmin(x1, x2):
    """The elementwise minimum, ignoring a NaN when the other value is not NaN."""
    x1, x2 = _promoted(x1, x2)
    return where((x1 < x2) | isnan(x2), x1, x2)

def float_power(x1, x2):
    """x1 ** x2 computed in floating point."""
    x1, x2 = _promoted(_inexact(x1), x2)
    return power(x1, x2)

def heaviside(x1, x2):
    """0 where x1 < 0, x2 where x1 == 0, 1 where x1 > 0."""
    x1, x2 = _promoted(_inexact(x1), x2)
    return where(x1 < 0, zeros_like(x1), where(x1 > 0, ones_like(x1), x2))

def i0(x):
    """The modified Bessel function of the first kind of order 0: Cephes' Chebyshev
    series on |x| <= 8 and beyond (NumPy's coefficients), in x's floating type."""
    x = _inexact(x)
    ax = abs(x)
    # Each series is evaluated where the other one applies too, on an argument
    # kept in its own range, so neither branch sees inf or nan.
    return exp(ax) * _i0e(ax)

def _i0e(ax):
    """exp(-|x|) i0(x) of ax = |x| (no overflow for large x)."""
    near = _chebyshev(ax / 2.0 - 2.0, _I0_NEAR)
    far = maximum(ax, asarray(8.0, ax.dtype))
    far = _chebyshev(32.0 / far - 2.0, _I0_FAR) / sqrt(far)
    return where(ax <= 8.0, near, far)

def _window(M):
    """The sample positions 0 .. M - 1 of a window of M points (None for M <= 1)."""
    if M <= 1:
        return None
    return arange(M, dtype=float32)

def hamming(M):
    """The Hamming window of M points."""
    n = _window(M)
    return ones(max(M, 0)) if n is None else 0.54 - 0.46 * cos(2 * pi * n / (M - 1))

def hanning(M):
    """The Hann window of M points."""
    n = _window(M)
    return ones(max(M, 0)) if n is None else 0.5 * (1 - cos(2 * pi * n / (M - 1)))

def blackman(M):
    """The Blackman window of M points."""
    n = _window(M)
    if n is None:
        return ones(max(M, 0))
    return 0.42 - 0.5 * cos(2 * pi * n / (M - 1)) + 0.08 * cos(4 * pi * n / (M - 1))

def bartlett(M):
    """The Bartlett (triangular) window of M points."""
    n = _window(M)
    return ones(max(M, 0)) if n is None else 1 - abs(2 * n + 1 - M) / (M - 1)

def kaiser(M, beta):
    """The Kaiser window of M points with shape parameter beta."""
    n = _window(M)
    if n is None:
        return ones(max(M, 0))
    alpha = 0.5 * (M - 1)
    return i0(beta * sqrt(1 - ((n - alpha) / alpha) ** 2)) / i0(beta)

def _chebyshev(x, coefficients):
    """Clenshaw's sum of a Chebyshev series (Cephes' chbevl): coefficients highest first."""
    b0 = zeros_like(x)
    b1 = zeros_like(x)
    b2 = zeros_like(x)
    for c in coefficients:
        b2 = b1
        b1 = b0
        b0 = x * b1 - b2 + c
    return 0.5 * (b0 - b2)

# Cephes' coefficients for i0 (as NumPy's i0): |x| <= 8, then |x| > 8.
_I0_NEAR = [
    -4.41534164647933937950E-18,
    3.33079451882223809783E-17,
    -2.43127984654795469359E-16,
    1.71539128555513303061E-15,
    -1.16853328779934516808E-14,
    7.67618549860493561688E-14,
    -4.85644678311192946090E-13,
    2.95505266312963983461E-12,
    -1.72682629144155570723E-11,
    9.67580903537323691224E-11,
    -5.18979560163526290666E-10,
    2.65982372468238665035E-9,
    -1.30002500998624804212E-8,
    6.04699502254191894932E-8,
    -2.67079385394061173391E-7,
    1.11738753912010371815E-6,
    -4.41673835845875056359E-6,
    1.64484480707288970893E-5,
    -5.75419501008210370398E-5,
    1.88502885095841655729E-4,
    -5.76375574538582365885E-4,
    1.63947561694133579842E-3,
    -4.32430999505057594430E-3,
    1.05464603945949983183E-2,
    -2.37374148058994688156E-2,
    4.93052842396707084878E-2,
    -9.49010970480476444210E-2,
    1.71620901522208775349E-1,
    -3.04682672343198398683E-1,
    6.76795274409476084995E-1,
]

_I0_FAR = [
    -7.23318048787475395456E-18,
    -4.83050448594418207126E-18,
    4.46562142029675999901E-17,
    3.46122286769746109310E-17,
    -2.82762398051658348494E-16,
    -3.42548561967721913462E-16,
    1.77256013305652638360E-15,
    3.81168066935262242075E-15,
    -9.55484669882830764870E-15,
    -4.15056934728722208663E-14,
    1.54008621752140982691E-14,
    3.85277838274214270114E-13,
    7.18012445138366623367E-13,
    -1.79417853150680611778E-12,
    -1.32158118404477131188E-11,
    -3.14991652796324136454E-11,
    1.18891471078464383424E-11,
    4.94060238822496958910E-10,
    3.39623202570838634515E-9,
    2.26666899049817806459E-8,
    2.04891858946906374183E-7,
    2.89137052083475648297E-6,
    6.88975834691682398426E-5,
    3.36911647825569408990E-3,
    8.04490411014108831608E-1,
]

def sinc(x):
    """sin(pi x) / (pi x), 1 at 0."""
    x = _inexact(x)
    zero = x == 0
    # The division runs on 1 where x is 0, so neither the value nor its
    # gradient sees 0 / 0.
    safe = where(zero, ones_like(x), x * asarray(pi, x.dtype))
    return where(zero, ones_like(x), sin(safe) / safe)

def logaddexp2(x1, x2):
    """log2(2**x1 + 2**x2), without overflow."""
    x1, x2 = _promoted(_inexact(x1), x2)
    amax = maximum(x1, x2)
    delta = x1 - x2
    ln2 = asarray(0.6931471805599453, x1.dtype)
    return where(isnan(delta), x1 + x2, amax + log1p(exp2(-abs(delta))) / ln2)

def isposinf(x):
    """Whether x is +inf."""
    x = asarray(x)
    return isinf(x) & (x > 0)

def isneginf(x):
    """Whether x is -inf."""
    x = asarray(x)
    return isinf(x) & (x < 0)

def nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None):
    """x with NaN replaced by nan, and +-inf by posinf / neginf (default: the dtype's largest and smallest)."""
    x = asarray(x)
    if not _is_float(x.dtype):
        return x
    info = finfo(x.dtype)
    posinf = info.max if posinf is None else posinf
    neginf = info.min if neginf is None else neginf
    x = where(isnan(x), asarray(nan, x.dtype), x)
    x = where(isposinf(x), asarray(posinf, x.dtype), x)
    return where(isneginf(x), asarray(neginf, x.dtype), x)

def array_equiv(a1, a2):
    """True if a1 and a2 broadcast together and are equal everywhere."""
    a1, a2 = asarray(a1), asarray(a2)
    if not _broadcastable(a1.shape, a2.shape):
        return asarray(False)
    return all(a1 == a2)

# ---------------------------------------------------------------------------
# jax.numpy: dtypes

# NumPy's abstract scalar types, which issubdtype tests dtypes against.
class generic:
    """The root of NumPy's scalar types (issubdtype(anything, generic) is True)."""

class number(generic):
    """Numeric types: integers and floats."""

class integer(number):
    """Signed and unsigned integer types."""

class signedinteger(integer):
    """Signed integer types (int32, int64)."""

class unsignedinteger(integer):
    """Unsigned integer types (uint32)."""

class inexact(number):
    """Floating and complex types."""

class floating(inexact):
    """Floating types (float16, bfloat16, float32, float64)."""

class complexfloating(inexact):
    """Complex types (complex64)."""

_ABSTRACT_DTYPES = (generic, number, integer, signedinteger, unsignedinteger, inexact, floating, complexfloating)

def _is_abstract(t):
    for c in _ABSTRACT_DTYPES:
        if t is c:
            return True
    return False

def _dtype_of(x):
    """The dtype of an array, a scalar, a dtype, or a dtype's name."""
    if hasattr(x, "dtype"):
        return x.dtype
    if isinstance(x, (bool, int, float)):
        return asarray(x).dtype
    return dtype(x)

def _dtype_class(d):
    """The abstract scalar type that a (concrete) dtype belongs to."""
    if _is_float(d):
        return floating
    if d in (int8, int16, int32, int64):
        return signedinteger
    if d in (uint8, uint16, uint32):
        return unsignedinteger
    if d == complex64:
        return complexfloating
    return generic

class _dtypes_prng_key(generic):
    """The dtypes of typed PRNG keys (key<fry>), as jax.dtypes.prng_key."""

def _is_key_dtype(t):
    return type(t).__name__ == "KeyTy"

def issubdtype(arg1, arg2):
    """Whether dtype arg1 is arg2 or, for an abstract arg2 (floating, integer, ...), of its kind."""
    if _is_key_dtype(arg1):
        return arg2 is _dtypes_prng_key or arg2 is generic or _is_key_dtype(arg2)
    if arg2 is _dtypes_prng_key or _is_key_dtype(arg2):
        return False
    if _is_abstract(arg2):
        if _is_abstract(arg1):
            return issubclass(arg1, arg2)
        return issubclass(_dtype_class(_dtype_of(arg1)), arg2)
    if _is_abstract(arg1):
        return False
    return _dtype_of(arg1) == _dtype_of(arg2)

def result_type(*args):
    """The dtype that JAX's promotion gives to an operation on args (arrays, dtypes or
    Python scalars, which are weakly typed)."""
    if len(args) == 0:
        raise ValueError("at least one array or dtype is required")
    # arr's arithmetic promotes as JAX does, so a sum of 0-d stand-ins has the
    # promoted dtype; Python scalars stay as they are to keep their weak type.
    acc = None
    for a in args:
        v = a if isinstance(a, (bool, int, float)) else zeros((), _dtype_of(a))
        acc = v if acc is None else acc + v
    if isinstance(acc, bool) or all([isinstance(a, bool) for a in args]):
        return bool_
    return asarray(acc).dtype

def promote_types(a, b):
    """The dtype that two dtypes promote to (64-bit kept, as JAX's)."""
    return _promote_types_x64(dtype(a), dtype(b))

# What each dtype casts to without loss ("safe"), and within its kind ("same_kind").
_SAFE_CASTS = {
    "bool": ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "bfloat16", "float16", "float32", "float64", "complex64"),
    "int8": ("int8", "int16", "int32", "int64", "float16", "float32", "float64", "complex64"),
    "int16": ("int16", "int32", "int64", "float32", "float64", "complex64"),
    "uint8": ("uint8", "uint16", "uint32", "int16", "int32", "int64", "float16", "float32", "float64", "complex64"),
    "uint16": ("uint16", "uint32", "int32", "int64", "float32", "float64", "complex64"),
    "int32": ("int32", "int64", "float64"),
    "int64": ("int64", "float64"),
    "uint32": ("uint32", "int64", "float64"),
    "bfloat16": ("bfloat16", "float32", "float64", "complex64"),
    "float16": ("float16", "float32", "float64", "complex64"),
    "float32": ("float32", "float64", "complex64"),
    "float64": ("float64",),
    "complex64": ("complex64",),
}

_KIND_ORDER = {"bool": 0, "int8": 1, "int16": 1, "uint8": 1, "uint16": 1, "uint32": 1, "int32": 1, "int64": 1, "bfloat16": 2, "float16": 2, "float32": 2, "float64": 2, "complex64": 3}

def can_cast(from_, to, casting="safe"):
    """Whether a value of dtype from_ can become dtype to under the casting rule
    ('no', 'equiv', 'safe', 'same_kind' or 'unsafe')."""
    a, b = str(_dtype_of(from_)), str(dtype(to))
    if casting in ("no", "equiv"):
        return a == b
    if casting == "safe":
        return b in _SAFE_CASTS[a]
    if casting == "same_kind":
        if b in _SAFE_CASTS[a]:
            return True
        if a == "uint32" or b != "uint32":
            return _KIND_ORDER[a] <= _KIND_ORDER[b]
        return False
    if casting == "unsafe":
        return True
    raise ValueError(f"casting must be one of 'no', 'equiv', 'safe', 'same_kind', or 'unsafe', got '{casting}'")

class finfo:
    """Machine limits of a float dtype: eps, max, min, tiny, bits, resolution, ..."""

    def __init__(self, dtype):
        d = _dtype_of(dtype)
        if d == complex64:
            d = float32  # a complex type's limits are its parts' (NumPy, JAX)
        if not _is_float(d):
            raise ValueError(f"finfo: data type {d} not inexact")
        # (bits, mantissa bits, min exponent, max, decimal precision)
        bits, mant, minexp, big, precision = {
            "float16": (16, 10, -14, 65504.0, 3),
            "bfloat16": (16, 7, -126, 3.3895313892515355e38, 2),
            "float32": (32, 23, -126, 3.4028234663852886e38, 6),
            "float64": (64, 52, -1022, 1.7976931348623157e308, 15),
        }[str(d)]
        self.dtype = d
        self.bits = bits
        self.nmant = mant
        self.precision = precision
        self.machep = -mant
        self.negep = -mant - 1
        self.minexp = minexp
        self.eps = asarray(2.0 ** -mant, d)
        self.epsneg = asarray(2.0 ** (-mant - 1), d)
        self.max = asarray(big, d)
        self.min = asarray(-big, d)
        self.tiny = asarray(2.0 ** minexp, d)
        self.smallest_normal = self.tiny
        self.smallest_subnormal = asarray(2.0 ** (minexp - mant), d)
        self.resolution = asarray(10.0 ** -precision, d)

    def __repr__(self):
        return f"finfo(resolution={str(self.resolution)}, min={str(self.min)}, max={str(self.max)}, dtype={self.dtype})"

class iinfo:
    """Machine limits of an integer dtype: min, max, bits."""

    def __init__(self, int_type):
        d = _dtype_of(int_type)
        if d not in (int8, int16, int32, int64, uint8, uint16, uint32):
            raise ValueError(f"Invalid integer data type '{d}'.")
        self.dtype = d
        self.bits, self.kind, self.min, self.max = {
            "int8": (8, "i", -128, 127),
            "int16": (16, "i", -32768, 32767),
            "uint8": (8, "u", 0, 255),
            "uint16": (16, "u", 0, 65535),
            "int32": (32, "i", -2147483648, 2147483647),
            "int64": (64, "i", -9223372036854775807 - 1, 9223372036854775807),
            "uint32": (32, "u", 0, 4294967295),
        }[str(d)]

    def __repr__(self):
        return f"iinfo(min={self.min}, max={self.max}, dtype={self.dtype})"

# ---------------------------------------------------------------------------
# jax.numpy: shapes, stacking and splitting

def _one_or_list(xs):
    return xs[0] if len(xs) == 1 else xs

def atleast_1d(*arys):
    """Each array with at least one axis (a list for several arrays)."""
    return _one_or_list([reshape(a, (1,)) if a.ndim == 0 else a for a in map(asarray, arys)])

def atleast_2d(*arys):
    """Each array with at least two axes: a vector v becomes v[None, :]."""
    return _one_or_list([reshape(a, (1,) * (2 - a.ndim) + a.shape) if a.ndim < 2 else a for a in map(asarray, arys)])

def _3d(a):
    if a.ndim == 0:
        return reshape(a, (1, 1, 1))
    if a.ndim == 1:
        return reshape(a, (1, a.shape[0], 1))
    if a.ndim == 2:
        return reshape(a, a.shape + (1,))
    return a

def atleast_3d(*arys):
    """Each array with at least three axes: (N,) becomes (1, N, 1) and (M, N) becomes (M, N, 1)."""
    return _one_or_list([_3d(asarray(a)) for a in arys])

def broadcast_arrays(*args):
    """The arrays broadcast to their common shape."""
    arrays = [asarray(a) for a in args]
    shape = broadcast_shapes(*[a.shape for a in arrays])
    return [broadcast_to(a, shape) for a in arrays]

def append(arr, values, axis=None):
    """arr with values added at the end (both flattened when axis is None)."""
    if axis is None:
        return concatenate([ravel(asarray(arr)), ravel(asarray(values))])
    return concatenate([arr, values], axis=axis)

def column_stack(tup):
    """1-D arrays as columns (and 2-D arrays as they are), side by side."""
    cols = []
    for a in tup:
        a = asarray(a)
        cols.append(reshape(a, (-1, 1)) if a.ndim < 2 else a)
    return concatenate(cols, axis=1)

def dstack(tup, dtype=None):
    """The arrays stacked along a third axis (after atleast_3d)."""
    out = concatenate([_3d(asarray(a)) for a in tup], axis=2)
    return out if dtype is None else out.astype(dtype)

def _sections(s):
    """split's indices_or_sections: an int, or a list of ints (from an array too)."""
    return s if isinstance(s, int) else asarray(s).tolist()

def array_split(ary, indices_or_sections, axis=0):
    """split that allows sections of unequal size: the first n % k get one more element."""
    a = asarray(ary)
    axis = _axis(axis, a.ndim)
    if not isinstance(indices_or_sections, int):
        return split(a, _sections(indices_or_sections), axis=axis)
    k = indices_or_sections
    if k <= 0:
        raise ValueError("number sections must be larger than 0.")
    n = a.shape[axis]
    each, extra = n // k, n % k
    bounds = [0]
    for i in range(k):
        bounds.append(bounds[-1] + each + (1 if i < extra else 0))
    return [_along(a, axis, bounds[i], bounds[i + 1]) for i in range(k)]

def hsplit(ary, indices_or_sections):
    """split along the second axis (the first for 1-D arrays)."""
    a = asarray(ary)
    if a.ndim == 0:
        raise ValueError("hsplit only works on arrays of 1 or more dimensions")
    return split(a, _sections(indices_or_sections), axis=1 if a.ndim > 1 else 0)

def vsplit(ary, indices_or_sections):
    """split along the first axis."""
    a = asarray(ary)
    if a.ndim == 0:
        raise ValueError("vsplit only works on arrays of 1 or more dimensions")
    return split(a, _sections(indices_or_sections), axis=0)

def fliplr(m):
    """m with its second axis reversed."""
    m = asarray(m)
    if m.ndim < 2:
        raise ValueError(f"fliplr requires an array of at least 2 dimensions, got shape {m.shape}")
    return flip(m, axis=1)

def flipud(m):
    """m with its first axis reversed."""
    m = asarray(m)
    if m.ndim < 1:
        raise ValueError("flipud requires an array of at least 1 dimension, got a scalar")
    return flip(m, axis=0)

def rot90(m, k=1, axes=(0, 1)):
    """m rotated by 90 degrees k times, from the first of axes toward the second."""
    m = asarray(m)
    if len(axes) != 2:
        raise ValueError("len(axes) must be 2.")
    a0, a1 = _axis(axes[0], m.ndim), _axis(axes[1], m.ndim)
    if a0 == a1:
        raise ValueError(f"rot90: the axes must differ, got {axes}")
    k = k % 4
    if k == 0:
        return m
    if k == 2:
        return flip(flip(m, axis=a0), axis=a1)
    perm = list(range(m.ndim))
    perm[a0], perm[a1] = a1, a0
    if k == 1:
        return transpose(flip(m, axis=a1), tuple(perm))
    return flip(transpose(m, tuple(perm)), axis=a1)

def diagonal(a, offset=0, axis1=0, axis2=1):
    """The diagonal of a over axis1 and axis2 (offset above, or below if negative),
    as the last axis of the result."""
    a = asarray(a)
    if a.ndim < 2:
        raise ValueError(f"diagonal requires an array of at least two dimensions, got shape {a.shape}")
    a1, a2 = _axis(axis1, a.ndim), _axis(axis2, a.ndim)
    if a1 == a2:
        raise ValueError("axis1 and axis2 must not be equal")
    rest = [i for i in range(a.ndim) if i != a1 and i != a2]
    a = transpose(a, tuple(rest + [a1, a2]))
    n, m = a.shape[-2], a.shape[-1]
    length = _max2(0, min(n, m - offset) if offset >= 0 else min(n + offset, m))
    i = arange(length, dtype=int32)
    rows = i - offset if offset < 0 else i
    cols = i + offset if offset > 0 else i
    return a[..., rows, cols]

def diagflat(v, k=0):
    """A 2-D array with the flattened v on its k-th diagonal."""
    return diag(ravel(asarray(v)), k)

def tri(N, M=None, k=0, dtype=None):
    """An N x M array with ones at and below the k-th diagonal."""
    M = N if M is None else M
    keep = arange(M)[None, :] - arange(N)[:, None] <= k
    return keep.astype(float32 if dtype is None else dtype)

def indices(dimensions, dtype=None, sparse=False):
    """The index grid of an array of shape dimensions: out[i] holds the i-th coordinate
    (with sparse, one array per axis, each broadcastable to the shape)."""
    dims = tuple(dimensions)
    dtype = int32 if dtype is None else dtype
    out = []
    for i, d in enumerate(dims):
        shape = [1] * len(dims)
        shape[i] = d
        idx = reshape(arange(d, dtype=dtype), tuple(shape))
        out.append(idx if sparse else broadcast_to(idx, dims))
    if sparse:
        return tuple(out)
    return stack(out) if len(out) > 0 else zeros((0,), dtype)

def resize(a, new_shape):
    """a flattened, repeated as needed and cut to new_shape."""
    a = ravel(asarray(a))
    shape = (new_shape,) if isinstance(new_shape, int) else tuple(new_shape)
    n = 1
    for d in shape:
        if d < 0:
            raise ValueError("All elements of `new_shape` must be non-negative")
        n = n * d
    if a.size == 0:
        return zeros(shape, a.dtype)
    reps = -(-n // a.size)
    return reshape(tile(a, reps)[:n], shape)

def trim_zeros(filt, trim="fb"):
    """The 1-D filt without its leading ('f') and/or trailing ('b') zeros."""
    a = asarray(filt)
    if a.ndim != 1:
        raise ValueError(f"trim_zeros: filt must be 1-D, got shape {a.shape}")
    nz = (a != 0).tolist()
    start, stop = 0, len(nz)
    if "f" in trim.lower():
        while start < stop and not nz[start]:
            start = start + 1
    if "b" in trim.lower():
        while stop > start and not nz[stop - 1]:
            stop = stop - 1
    return a[start:stop]

# ---------------------------------------------------------------------------
# jax.numpy: reductions, NaN-aware ones included

def inner(a, b):
    """The sum of products over the last axes of a and b (a product with a scalar)."""
    a, b = asarray(a), asarray(b)
    if a.ndim == 0 or b.ndim == 0:
        return a * b
    if a.shape[-1] != b.shape[-1]:
        raise ValueError(f"inner: last dimensions differ: {a.shape} and {b.shape}")
    return tensordot(a, b, axes=(-1, -1))

def ptp(a, axis=None, out=None, keepdims=False):
    """The range (max - min) along axis."""
    a = asarray(a)
    return max(a, axis=axis, keepdims=keepdims) - min(a, axis=axis, keepdims=keepdims)

def average(a, axis=None, weights=None, returned=False, keepdims=False):
    """The mean along axis, weighted by weights (the same shape as a, or 1-D along axis);
    with returned, also the sum of the weights."""
    a = _inexact(a)
    if weights is None:
        avg = mean(a, axis=axis, keepdims=keepdims)
        if not returned:
            return avg
        return avg, broadcast_to(asarray(a.size / _max2(avg.size, 1), avg.dtype), avg.shape)
    w = asarray(weights)
    if w.shape != a.shape:
        if axis is None:
            raise ValueError("average: axis must be given when the shapes of a and weights differ")
        if not isinstance(axis, int):
            raise ValueError("average: a single axis is needed for 1-D weights")
        ax = _axis(axis, a.ndim)
        if w.ndim != 1 or w.shape[0] != a.shape[ax]:
            raise ValueError(f"average: weights of shape {w.shape} do not match axis {axis} of an array of shape {a.shape}")
        shape = [1] * a.ndim
        shape[ax] = w.shape[0]
        w = reshape(w, tuple(shape))
    total = sum(broadcast_to(w, a.shape).astype(result_type(a, w)), axis=axis, keepdims=keepdims)
    avg = sum(a * w, axis=axis, keepdims=keepdims) / total
    return (avg, total.astype(avg.dtype)) if returned else avg

# NumPy's reductions take a `where=` mask argument, which hides the function.
_where = where

def _nan_fill(a, fill):
    return where(isnan(a), asarray(fill, a.dtype), a)

def nanmax(a, axis=None, out=None, keepdims=False, initial=None, where=None):
    """The maximum ignoring NaNs (NaN where a slice is all NaN)."""
    a = asarray(a)
    if not _is_float(a.dtype):
        return max(a, axis=axis, keepdims=keepdims)
    m = max(_nan_fill(a, -inf), axis=axis, keepdims=keepdims)
    return _where(all(isnan(a), axis=axis, keepdims=keepdims), asarray(nan, a.dtype), m)

def nanmin(a, axis=None, out=None, keepdims=False, initial=None, where=None):
    """The minimum ignoring NaNs (NaN where a slice is all NaN)."""
    a = asarray(a)
    if not _is_float(a.dtype):
        return min(a, axis=axis, keepdims=keepdims)
    m = min(_nan_fill(a, inf), axis=axis, keepdims=keepdims)
    return _where(all(isnan(a), axis=axis, keepdims=keepdims), asarray(nan, a.dtype), m)

def nanargmax(a, axis=None, out=None, keepdims=False):
    """The index of the largest non-NaN element (-1 where a slice is all NaN)."""
    a = asarray(a)
    if not _is_float(a.dtype):
        return argmax(a, axis=axis, keepdims=keepdims)
    i = argmax(_nan_fill(a, -inf), axis=axis, keepdims=keepdims)
    return _where(all(isnan(a), axis=axis, keepdims=keepdims), -1, i)

def nanargmin(a, axis=None, out=None, keepdims=False):
    """The index of the smallest non-NaN element (-1 where a slice is all NaN)."""
    a = asarray(a)
    if not _is_float(a.dtype):
        return argmin(a, axis=axis, keepdims=keepdims)
    i = argmin(_nan_fill(a, inf), axis=axis, keepdims=keepdims)
    return _where(all(isnan(a), axis=axis, keepdims=keepdims), -1, i)

def nanvar(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, where=None):
    """The variance of the non-NaN elements (NaN where fewer than ddof + 1 remain)."""
    a = _inexact(a)
    ok = ~isnan(a)
    n = sum(ok, axis=axis, keepdims=True)
    centred = _nan_fill(a - sum(_nan_fill(a, 0), axis=axis, keepdims=True) / n, 0)
    ss = sum(centred * centred, axis=axis, keepdims=keepdims)
    n = sum(ok, axis=axis, keepdims=keepdims) - ddof
    return _where(n > 0, ss / _where(n > 0, n, 1), asarray(nan, a.dtype)).astype(a.dtype if dtype is None else dtype)

def nanstd(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, where=None):
    """The standard deviation of the non-NaN elements."""
    return sqrt(nanvar(a, axis=axis, dtype=dtype, ddof=ddof, keepdims=keepdims))

def nancumsum(a, axis=None, dtype=None, out=None):
    """The cumulative sum with NaNs counted as zero (of the flattened array if axis is None)."""
    a = asarray(a)
    if _is_float(a.dtype):
        a = _nan_fill(a, 0)
    if axis is None:
        a, axis = ravel(a), 0
    out = cumsum(a, axis=axis)
    return out if dtype is None else out.astype(dtype)

def cumulative_sum(x, axis=None, dtype=None, include_initial=False):
    """The cumulative sum along axis (which a 1-D x may omit), starting with a 0 if include_initial."""
    x = asarray(x)
    if x.ndim == 0:
        raise ValueError("cumulative_sum does not support scalar inputs")
    if axis is None:
        if x.ndim > 1:
            raise ValueError(f"cumulative_sum: axis must be given for arrays of more than one dimension, got shape {x.shape}")
        axis = 0
    axis = _axis(axis, x.ndim)
    out = cumsum(x, axis=axis)
    if dtype is not None:
        out = out.astype(dtype)
    if include_initial:
        out = concatenate([zeros_like(_along(out, axis, 0, 1)), out], axis=axis)
    return out

def _interpolate(vlo, vhi, frac, method, what):
    """The quantile between the order statistics vlo and vhi, frac of the way to vhi.
    Weighting both ends, as JAX does, rounds as JAX's results do."""
    if method == "linear":
        return vlo * (1 - frac) + vhi * frac
    if method == "lower":
        return vlo
    if method == "higher":
        return vhi
    if method == "midpoint":
        return (vlo + vhi) / 2
    if method == "nearest":
        return where(frac > 0.5, vhi, vlo)
    raise ValueError(f"{what}: unsupported method '{method}'")

def nanquantile(a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False):
    """The q-th quantiles (q in [0, 1]) of the non-NaN elements along axis (NaN for an all-NaN slice)."""
    a = _inexact(a)
    if axis is None:
        x, ax = ravel(a), 0
    else:
        x, ax = a, _axis(axis, a.ndim)
    # NaNs sort last, so the n non-NaN values of a slice are its first n.
    s = moveaxis(sort(x, axis=ax), ax, -1)
    n = sum(~isnan(s), axis=-1, keepdims=True).astype(a.dtype)
    q = asarray(q).astype(a.dtype)
    pos = ravel(q) * (n - 1)
    lo = clip(floor(pos), 0, None)
    hi = clip(ceil(pos), 0, maximum(n - 1, 0))
    vlo = take_along_axis(s, lo.astype(int32), axis=-1)
    vhi = take_along_axis(s, hi.astype(int32), axis=-1)
    r = _interpolate(vlo, vhi, pos - lo, method, "nanquantile")
    r = where(n > 0, r, asarray(nan, a.dtype))
    r = reshape(moveaxis(r, -1, 0), q.shape + s.shape[:-1])
    if keepdims:
        if axis is None:
            r = reshape(r, q.shape + (1,) * a.ndim)
        else:
            r = expand_dims(r, q.ndim + ax)
    return r

def nanpercentile(a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False):
    """The q-th percentiles (q in [0, 100]) of the non-NaN elements along axis."""
    return nanquantile(a, asarray(q) / 100, axis=axis, method=method, keepdims=keepdims)

# ---------------------------------------------------------------------------
# jax.numpy: selecting, inserting and deleting elements

def _index_list(obj, n, what):
    """obj (an int, a sequence or an array of ints) as a list of indices into n, negatives wrapped."""
    idx = asarray(obj)
    if idx.ndim > 1:
        raise ValueError(f"{what}: obj must be a one-dimensional array or a scalar")
    if idx.size > 0 and _is_float(idx.dtype):
        raise ValueError(f"{what}: index array must be integer typed")
    return [i + n if i < 0 else i for i in ravel(idx).tolist()]

def delete(arr, obj, axis=None):
    """arr without the entries at obj (an int or indices) along axis (of the flattened arr if axis is None)."""
    a = asarray(arr)
    if axis is None:
        a, axis = ravel(a), 0
    axis = _axis(axis, a.ndim)
    n = a.shape[axis]
    drop = _index_list(obj, n, "delete")
    for i in drop:
        if i < 0 or i >= n:
            raise IndexError(f"delete: index {i} is out of bounds for axis {axis} with size {n}")
    keep = [i for i in range(n) if i not in drop]
    return take(a, asarray(keep, int32), axis=axis)

def insert(arr, obj, values, axis=None):
    """arr with values inserted before the indices obj along axis (of the flattened arr
    if axis is None); a scalar obj inserts all of values there."""
    a = asarray(arr)
    if axis is None:
        a, axis = ravel(a), 0
    axis = _axis(axis, a.ndim)
    n = a.shape[axis]
    scalar = asarray(obj).ndim == 0
    idx = _index_list(obj, n, "insert")
    v = asarray(values).astype(a.dtype)
    v = reshape(v, (1,) * (a.ndim - v.ndim) + v.shape)
    if scalar:
        # NumPy inserts a scalar index's values as one block, its leading axis along axis.
        v = moveaxis(v, 0, axis)
        idx = idx * v.shape[axis]
    k = len(idx)
    if v.shape[axis] not in (1, k):
        raise ValueError(f"insert: {v.shape[axis]} values along axis {axis} for {k} indices")
    idx = [min(max(i, 0), n) for i in idx]
    shape = list(a.shape)
    shape[axis] = k
    v = broadcast_to(v, tuple(shape))
    # Stable order: values at the same index keep their order, and go before
    # the element that is there.
    order = sorted(range(k), key=lambda j: idx[j])
    pos_v = [0] * k
    for rank, j in enumerate(order):
        pos_v[j] = idx[j] + rank
    taken = set(pos_v)
    pos_a = [p for p in range(n + k) if p not in taken]
    out = zeros((n + k,) + tuple(moveaxis(a, axis, 0).shape[1:]), a.dtype)
    out = out.at[asarray(pos_a, int32)].set(moveaxis(a, axis, 0))
    out = out.at[asarray(pos_v, int32)].set(moveaxis(v, axis, 0))
    return moveaxis(out, 0, axis)

def compress(condition, a, axis=None):
    """The slices of a along axis (of the flattened a if axis is None) where the 1-D condition holds."""
    c = asarray(condition).astype(bool)
    if c.ndim != 1:
        raise ValueError("condition must be a 1D array")
    x = asarray(a)
    if axis is None:
        x, axis = ravel(x), 0
    axis = _axis(axis, x.ndim)
    x = moveaxis(x, axis, 0)
    extra = c[x.shape[0]:]
    if any(extra):
        raise ValueError("condition contains entries that are out of bounds")
    c = c[:x.shape[0]]
    return moveaxis(x[:c.shape[0]][c], 0, axis)

def extract(condition, arr, size=None, fill_value=0):
    """The elements of arr where condition is true, flattened (with size, exactly size of them)."""
    c = ravel(asarray(condition) != 0)
    x = ravel(asarray(arr))
    if size is None:
        return compress(c, x)
    i = nonzero(c, size=size)[0]
    return where(arange(size) < sum(c), x[i], asarray(fill_value, x.dtype))

def choose(a, choices, out=None, mode="raise"):
    """choices[a[i]][i] for each i, with a and the choices broadcast together; mode 'raise',
    'wrap' or 'clip' for indices outside [0, len(choices))."""
    a = asarray(a)
    choices = [asarray(c) for c in choices]
    n = len(choices)
    if mode == "wrap":
        a = a % n
    elif mode == "clip":
        a = clip(a, 0, n - 1)
    elif mode == "raise":
        if a.size > 0 and (bool(any(a < 0)) or bool(any(a >= n))):
            raise ValueError("invalid entry in choice array")
    else:
        raise ValueError(f"mode={mode!r} not understood. Must be 'raise', 'wrap', or 'clip'")
    arrays = broadcast_arrays(a, *choices)
    return take_along_axis(stack(arrays[1:]), arrays[0][None].astype(int32), axis=0)[0]

def put_along_axis(arr, indices, values, axis, inplace=True, mode=None):
    """A copy of arr with values written at indices along axis (JAX arrays are
    immutable, so inplace must be False)."""
    if inplace:
        raise ValueError("jax.numpy.put_along_axis cannot modify arrays in-place, because JAX arrays are immutable. Pass inplace=False to instead return an updated array.")
    a = asarray(arr)
    idx = asarray(indices)
    if axis is None:
        return reshape(put_along_axis(ravel(a), ravel(idx), ravel(asarray(values)), 0, inplace=False), a.shape)
    axis = _axis(axis, a.ndim)
    if idx.ndim != a.ndim:
        raise ValueError(f"put_along_axis: indices of shape {idx.shape} for an array of shape {a.shape}")
    idx = where(idx < 0, idx + a.shape[axis], idx)
    shape = broadcast_shapes(idx.shape, tuple([1 if i == axis else d for i, d in enumerate(a.shape)]))
    grid = []
    for i in range(a.ndim):
        if i == axis:
            grid.append(broadcast_to(idx, shape))
        else:
            s = [1] * a.ndim
            s[i] = a.shape[i]
            grid.append(broadcast_to(reshape(arange(a.shape[i], dtype=int32), tuple(s)), shape))
    return a.at[tuple(grid)].set(broadcast_to(asarray(values).astype(a.dtype), shape))

# ---------------------------------------------------------------------------
# jax.numpy: ranges, polynomials, calculus

def logspace(start, stop, num=50, endpoint=True, base=10.0, dtype=None, axis=0):
    """base ** linspace(start, stop): num points spaced evenly on a log scale (array
    start and stop give one sequence per element, along axis)."""
    start, stop = broadcast_arrays(_inexact(start), _inexact(stop))
    if num < 0:
        raise ValueError(f"Number of samples, {num}, must be non-negative.")
    div = num - 1 if endpoint else num
    t = arange(num, dtype=start.dtype) / _max2(div, 1)
    t = reshape(t, (num,) + (1,) * start.ndim)
    lin = start * (1 - t) + stop * t
    if endpoint and num > 1:
        # The last point is stop itself, not a rounding of it.
        lin = concatenate([lin[:-1], stop[None]])
    out = power(asarray(base, lin.dtype), moveaxis(lin, 0, axis))
    return out if dtype is None else out.astype(dtype)

def geomspace(start, stop, num=50, endpoint=True, dtype=None, axis=0):
    """num points from start to stop spaced evenly on a log scale (a geometric progression)."""
    start, stop = _inexact(start), _inexact(stop)
    if bool(any(start == 0)) or bool(any(stop == 0)):
        raise ValueError("Geometric sequence cannot include zero")
    s = sign(start)
    out = moveaxis(s * logspace(log10(start / s), log10(stop / s), num, endpoint=endpoint), 0, axis)
    return out if dtype is None else out.astype(dtype)

def polyval(p, x, unroll=16):
    """The polynomial with coefficients p (highest degree first) at x, by Horner's rule."""
    p, x = asarray(p), asarray(x)
    if p.ndim != 1:
        raise ValueError(f"polyval: p must be 1-D, got shape {p.shape}")
    y = zeros_like(x, dtype=result_type(p, x))
    for i in range(p.shape[0]):
        y = y * x + p[i]
    return y

def polyfit(x, y, deg, rcond=None, full=False, w=None, cov=False):
    """The least-squares polynomial of degree deg through (x, y), highest degree first
    (one column per column of a 2-D y)."""
    x, y = _inexact(x), _inexact(y)
    if deg < 0:
        raise ValueError("expected deg >= 0")
    if x.ndim != 1:
        raise TypeError("expected 1D vector for x")
    if y.ndim < 1 or y.ndim > 2:
        raise TypeError("expected 1D or 2D array for y")
    if x.shape[0] != y.shape[0]:
        raise TypeError("expected x and y to have same length")
    if full or cov:
        raise NotImplementedError("polyfit: full=True and cov=True are not supported")
    lhs = x[:, None] ** arange(deg, -1, -1, dtype=x.dtype)[None, :]
    rhs = y
    if w is not None:
        w = _inexact(w)
        lhs = lhs * w[:, None]
        rhs = rhs * (w if y.ndim == 1 else w[:, None])
    # Scaling the columns to unit norm keeps the least-squares problem well conditioned.
    scale = sqrt(sum(lhs * lhs, axis=0))
    c = lstsq(lhs / scale, rhs, rcond)[0]
    return c / scale if c.ndim == 1 else c / scale[:, None]

def trapezoid(y, x=None, dx=1.0, axis=-1):
    """The integral of y along axis by the trapezoidal rule, over x (or spacing dx)."""
    y = _inexact(y)
    axis = _axis(axis, y.ndim)
    n = y.shape[axis]
    if x is None:
        d = asarray(dx, y.dtype)
    else:
        x = asarray(x)
        if x.ndim == 1:
            if x.shape[0] != n:
                raise ValueError(f"trapezoid: x has {x.shape[0]} points, y has {n} along axis {axis}")
            shape = [1] * y.ndim
            shape[axis] = n - 1
            d = reshape(diff(x), tuple(shape))
        else:
            d = diff(x, axis=axis)
    return sum(d * (_along(y, axis, 1, None) + _along(y, axis, None, -1)) / 2, axis=axis)

def gradient(f, *varargs, axis=None, edge_order=None):
    """The gradient of f by central differences inside and one-sided ones at the edges,
    for each axis (or those given): a list, or one array for a single axis. Spacings:
    one scalar for all axes, or one per axis."""
    f = _inexact(f)
    if edge_order is not None and edge_order != 1:
        raise NotImplementedError("gradient: only edge_order=1 is supported")
    axes = list(range(f.ndim)) if axis is None else ([axis] if isinstance(axis, int) else list(axis))
    axes = [_axis(a, f.ndim) for a in axes]
    if len(varargs) == 0:
        spacing = [1.0] * len(axes)
    elif len(varargs) == 1:
        spacing = list(varargs) * len(axes)
    elif len(varargs) == len(axes):
        spacing = list(varargs)
    else:
        raise TypeError(f"gradient: {len(varargs)} spacings for {len(axes)} axes")
    out = []
    for ax, h in zip(axes, spacing):
        n = f.shape[ax]
        if n < 2:
            raise ValueError("Shape of array too small to calculate a numerical gradient, at least (edge_order + 1) elements are required.")
        if asarray(h).ndim != 0:
            raise NotImplementedError("gradient: only scalar spacings are supported")
        h = asarray(h, f.dtype)
        first = (_along(f, ax, 1, 2) - _along(f, ax, 0, 1)) / h
        last = (_along(f, ax, n - 1, n) - _along(f, ax, n - 2, n - 1)) / h
        inner_ = (_along(f, ax, 2, None) - _along(f, ax, None, -2)) / (2 * h)
        out.append(concatenate([first, inner_, last], axis=ax))
    return out[0] if len(out) == 1 else out

# ---------------------------------------------------------------------------
# jax.nn

def silu(x):
    """x * sigmoid(x) (also called swish)."""
    return x * sigmoid(x)

def swish(x):
    """The same as silu: x * sigmoid(x)."""
    return silu(x)

def elu(x, alpha=1.0):
    """x for x > 0, else alpha * (exp(x) - 1)."""
    x = asarray(x)
    safe = where(x > 0, 0.0, x)
    return where(x > 0, x, alpha * expm1(safe))

def celu(x, alpha=1.0):
    """max(x, 0) + alpha * expm1(min(x, 0) / alpha)."""
    return maximum(x, 0.0) + alpha * expm1(minimum(x, 0.0) / alpha)

def selu(x):
    """scale * elu(x, alpha) with the self-normalising constants."""
    return 1.0507009873554804934193349852946 * elu(x, 1.6732632423543772848170429916717)

def leaky_relu(x, negative_slope=0.01):
    """x for x >= 0, else negative_slope * x."""
    x = asarray(x)
    return where(x >= 0, x, negative_slope * x)

def relu6(x):
    """min(max(x, 0), 6)."""
    return minimum(maximum(x, 0), 6.0)

def hard_tanh(x):
    """x clipped to [-1, 1]."""
    x = asarray(x)
    return where(x > 1, 1, where(x < -1, -1, x)).astype(x.dtype)

def hard_sigmoid(x):
    """relu6(x + 3) / 6."""
    return relu6(x + 3.0) / 6.0

def hard_silu(x):
    """x * hard_sigmoid(x)."""
    return x * hard_sigmoid(x)

def hard_swish(x):
    """The same as hard_silu."""
    return hard_silu(x)

def log_sigmoid(x):
    """log(sigmoid(x)), computed stably."""
    return -softplus(-x)

def soft_sign(x):
    """x / (|x| + 1)."""
    return x / (abs(x) + 1)

def mish(x):
    """x * tanh(softplus(x))."""
    return x * tanh(softplus(x))

def squareplus(x, b=4):
    """(x + sqrt(x^2 + b)) / 2."""
    return (x + sqrt(x * x + b)) / 2

def glu(x, axis=-1):
    """Gated linear unit: the first half of x along axis times sigmoid of the second."""
    x = asarray(x)
    n = x.shape[axis]
    if n % 2 != 0:
        raise ValueError(f"glu: axis {axis} has odd size {n}")
    a = _along(x, _axis(axis, x.ndim), 0, n // 2)
    b = _along(x, _axis(axis, x.ndim), n // 2, n)
    return a * sigmoid(b)

def standardize(x, axis=-1, mean=None, variance=None, epsilon=1e-05, where=None):
    """(x - mean) / sqrt(variance + epsilon), the statistics along axis by default."""
    x = asarray(x)
    if mean is None:
        mean = _mean(x, axis=axis, keepdims=True)
    if variance is None:
        variance = _mean(square(x), axis=axis, keepdims=True) - square(mean)
    return (x - mean) * rsqrt(variance + epsilon)

def _mean(x, axis=None, keepdims=False):
    return sum(x, axis=axis, keepdims=keepdims) / (size(x) / size(sum(x, axis=axis, keepdims=True)))

def dot_product_attention(query, key, value, bias=None, mask=None, scale=None, is_causal=False, query_seq_lengths=None, key_value_seq_lengths=None, local_window_size=None, implementation=None):
    """softmax(q k^T * scale + bias, masked) v over [batch,] seq, heads, head_dim arrays."""
    q, k, v = asarray(query), asarray(key), asarray(value)
    unbatched = q.ndim == 3
    if unbatched:
        q, k, v = q[None], k[None], v[None]
    if q.ndim != 4 or k.ndim != 4 or v.ndim != 4:
        raise ValueError(f"dot_product_attention: query, key and value must be [B, T, N, H] or [T, N, H], got {query.shape}, {key.shape}, {value.shape}")
    h = q.shape[-1]
    if scale is None:
        scale = 1.0 / sqrt(float(h))
    logits = einsum("btnh,bsnh->bnts", q, k) * scale
    if bias is not None:
        logits = logits + bias
    big = -0.7 * 3.4028234663852886e38
    if mask is not None:
        logits = where(mask, logits, big)
    if is_causal:
        t, s = logits.shape[-2], logits.shape[-1]
        logits = where(tril(ones((t, s), bool)), logits, big)
    probs = softmax(logits.astype(float32), axis=-1).astype(q.dtype)
    out = einsum("bnts,bsnh->btnh", probs, v)
    return out[0] if unbatched else out

# jax.nn.initializers: each returns init(key, shape, dtype=float32).

def _fans(shape, in_axis=-2, out_axis=-1, batch_axis=()):
    """JAX's _compute_fans: the receptive field is every axis but the in,
    out and batch axes (which may coincide: Embed's in_axis=-2, out_axis=0)."""
    if isinstance(in_axis, int) and in_axis == -2 and len(shape) <= 1:
        raise ValueError(f"Can't compute input and output sizes of a {len(shape)}-dimensional weights tensor with default in_axis. Must be at least 2D or specify in_axis explicitly.")

    def size(axes):
        return shape[axes] if isinstance(axes, int) else math_prod([shape[i] for i in axes])

    in_size, out_size = size(in_axis), size(out_axis)
    field = math_prod(shape) / in_size / out_size / size(batch_axis)
    return in_size * field, out_size * field

def _init_variance_scaling(scale, mode, distribution, in_axis=-2, out_axis=-1, batch_axis=(), dtype=float32):
    """jax.nn.initializers.variance_scaling: samples with variance scale / fan."""
    if mode not in ("fan_in", "fan_out", "fan_avg", "fan_geo_avg"):
        raise ValueError(f"variance_scaling: invalid mode '{mode}'")
    if distribution not in ("truncated_normal", "normal", "uniform"):
        raise ValueError(f"variance_scaling: invalid distribution '{distribution}'")
    default_dtype = dtype

    def init(key, shape, dtype=None, out_sharding=None):
        return _init_placed(sample(key, shape, dtype), out_sharding)

    def sample(key, shape, dtype):
        dtype = default_dtype if dtype is None else dtype
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        fan_in, fan_out = _fans(shape, in_axis, out_axis, batch_axis)
        if mode == "fan_in":
            denominator = fan_in
        elif mode == "fan_out":
            denominator = fan_out
        elif mode == "fan_avg":
            denominator = (fan_in + fan_out) / 2
        else:
            denominator = (fan_in * fan_out) ** 0.5
        variance = asarray(scale / denominator, dtype)
        if distribution == "truncated_normal":
            stddev = sqrt(variance) / asarray(0.87962566103423978, dtype)
            return _random_truncated_normal(key, -2, 2, shape, dtype) * stddev
        if distribution == "normal":
            return random.normal(key, shape, dtype) * sqrt(variance)
        return random.uniform(key, shape, dtype, -1.0, 1.0) * sqrt(3 * variance)

    return init

def glorot_normal(in_axis=-2, out_axis=-1, batch_axis=(), dtype=float32):
    """Glorot (Xavier) normal initializer: variance_scaling(1, 'fan_avg', 'truncated_normal')."""
    return _init_variance_scaling(1.0, "fan_avg", "truncated_normal", in_axis, out_axis, batch_axis, dtype)

def glorot_uniform(in_axis=-2, out_axis=-1, batch_axis=(), dtype=float32):
    """Glorot (Xavier) uniform initializer: variance_scaling(1, 'fan_avg', 'uniform')."""
    return _init_variance_scaling(1.0, "fan_avg", "uniform", in_axis, out_axis, batch_axis, dtype)

def lecun_normal(in_axis=-2, out_axis=-1, batch_axis=(), dtype=float32):
    """LeCun normal initializer: variance_scaling(1, 'fan_in', 'truncated_normal')."""
    return _init_variance_scaling(1.0, "fan_in", "truncated_normal", in_axis, out_axis, batch_axis, dtype)

def lecun_uniform(in_axis=-2, out_axis=-1, batch_axis=(), dtype=float32):
    """LeCun uniform initializer: variance_scaling(1, 'fan_in', 'uniform')."""
    return _init_variance_scaling(1.0, "fan_in", "uniform", in_axis, out_axis, batch_axis, dtype)

def he_normal(in_axis=-2, out_axis=-1, batch_axis=(), dtype=float32):
    """He (Kaiming) normal initializer: variance_scaling(2, 'fan_in', 'truncated_normal')."""
    return _init_variance_scaling(2.0, "fan_in", "truncated_normal", in_axis, out_axis, batch_axis, dtype)

def he_uniform(in_axis=-2, out_axis=-1, batch_axis=(), dtype=float32):
    """He (Kaiming) uniform initializer: variance_scaling(2, 'fan_in', 'uniform')."""
    return _init_variance_scaling(2.0, "fan_in", "uniform", in_axis, out_axis, batch_axis, dtype)

def _init_normal(stddev=0.01, dtype=float32):
    """jax.nn.initializers.normal: normal samples times stddev."""
    default_dtype = dtype

    def init(key, shape, dtype=None, out_sharding=None):
        x = random.normal(key, shape, default_dtype if dtype is None else dtype) * stddev
        return _init_placed(x, out_sharding)

    return init

def _init_uniform(scale=0.01, dtype=float32):
    """jax.nn.initializers.uniform: uniform samples in [0, scale)."""
    default_dtype = dtype

    def init(key, shape, dtype=None, out_sharding=None):
        x = random.uniform(key, shape, default_dtype if dtype is None else dtype) * scale
        return _init_placed(x, out_sharding)

    return init

def _init_truncated_normal(stddev=0.01, dtype=float32, lower=-2.0, upper=2.0):
    """jax.nn.initializers.truncated_normal: samples in [lower, upper] times stddev."""
    default_dtype = dtype

    def init(key, shape, dtype=None, out_sharding=None):
        dtype = default_dtype if dtype is None else dtype
        x = _random_truncated_normal(key, lower, upper, shape, dtype) * asarray(stddev, dtype)
        return _init_placed(x, out_sharding)

    return init

def _init_constant(value, dtype=float32):
    """jax.nn.initializers.constant: every element is value."""
    default_dtype = dtype

    def init(key, shape, dtype=None, out_sharding=None):
        return _init_placed(full(shape, value, default_dtype if dtype is None else dtype), out_sharding)

    return init

def _init_placed(x, out_sharding):
    """An initializer's array laid out as out_sharding says (the values do
    not depend on the layout: JAX's keys are partitionable)."""
    return x if out_sharding is None else reshard(x, out_sharding)

def _init_zeros(key, shape, dtype=float32, out_sharding=None):
    """jax.nn.initializers.zeros."""
    return _init_placed(zeros(shape, dtype), out_sharding)

def _init_ones(key, shape, dtype=float32, out_sharding=None):
    """jax.nn.initializers.ones."""
    return _init_placed(ones(shape, dtype), out_sharding)

# ---------------------------------------------------------------------------
# jax.lax

def _lax_select(pred, on_true, on_false):
    """lax.select: on_true where pred, else on_false (same shapes)."""
    return where(pred, on_true, on_false)

def _lax_select_n(which, *cases):
    """lax.select_n: cases[which] elementwise (which a bool or an int array)."""
    if len(cases) == 0:
        raise ValueError("select_n: at least one case is required")
    out = cases[0]
    for i in range(1, len(cases)):
        out = where(which == i, cases[i], out)
    return out

def _lax_broadcast(operand, sizes, out_sharding=None):
    """lax.broadcast: operand with new leading axes of the given sizes."""
    x = asarray(operand)
    return broadcast_to(x, tuple(sizes) + x.shape)

def _lax_broadcast_in_dim(operand, shape, broadcast_dimensions, out_sharding=None):
    """lax.broadcast_in_dim: operand's axes placed at broadcast_dimensions of shape."""
    x = asarray(operand)
    shape = tuple(shape)
    if len(broadcast_dimensions) != x.ndim:
        raise TypeError(f"broadcast_in_dim: broadcast_dimensions must have one entry per axis of the operand {x.shape}, got {tuple(broadcast_dimensions)}")
    placed = [1] * len(shape)
    for i, d in enumerate(broadcast_dimensions):
        if x.shape[i] != 1 and x.shape[i] != shape[d]:
            raise TypeError(f"broadcast_in_dim: operand axis {i} of size {x.shape[i]} cannot go to axis {d} of size {shape[d]} of {shape}")
        placed[d] = x.shape[i]
    return broadcast_to(reshape(x, tuple(placed)), shape)

def _lax_broadcasted_iota(dtype, shape, dimension, out_sharding=None):
    """lax.broadcasted_iota: the index along axis dimension, over shape."""
    shape = tuple(shape)
    placed = [1] * len(shape)
    placed[dimension] = shape[dimension]
    return broadcast_to(reshape(arange(shape[dimension], dtype=dtype), tuple(placed)), shape)

def _lax_rev(operand, dimensions):
    """lax.rev: operand reversed along dimensions."""
    return flip(operand, tuple(dimensions))

def _lax_pad(operand, padding_value, padding_config):
    """lax.pad: padding_value around and between the elements of operand; padding_config
    holds (low, high, interior) per axis, where a negative low or high removes elements."""
    x = asarray(operand)
    config = [tuple(c) for c in padding_config]
    if len(config) != x.ndim:
        raise ValueError(f"pad: padding_config has {len(config)} entries for an operand of shape {x.shape}")
    value = asarray(padding_value).astype(x.dtype)
    if value.ndim != 0:
        raise TypeError(f"pad: padding_value must be a scalar, got shape {value.shape}")
    for axis in range(x.ndim):
        if len(config[axis]) != 3:
            raise ValueError(f"pad: each padding_config entry is (low, high, interior), got {config[axis]}")
        low, high, interior = config[axis]
        if interior < 0:
            raise ValueError(f"pad: interior padding must be non-negative, got {interior}")
        n = x.shape[axis]
        if interior > 0 and n > 1:
            # Each element followed by `interior` fills, the last fills dropped.
            fills = _with_len(value, x, axis, n * interior)
            spread = list(x.shape)
            spread[axis] = n
            spread.insert(axis + 1, interior)
            both = concatenate([expand_dims(x, axis + 1), reshape(fills, tuple(spread))], axis=axis + 1)
            shape = list(x.shape)
            shape[axis] = n * (interior + 1)
            x = _along(reshape(both, tuple(shape)), axis, 0, n + (n - 1) * interior)
        n = x.shape[axis]
        if low + n + high < 0:
            raise ValueError(f"pad: padding_config {config[axis]} leaves a negative size on axis {axis} of {x.shape}")
        x = _along(x, axis, _max2(-low, 0), n - _max2(-high, 0)) if low < 0 or high < 0 else x
        parts = [x]
        if low > 0:
            parts.insert(0, _with_len(value, x, axis, low))
        if high > 0:
            parts.append(_with_len(value, x, axis, high))
        x = concatenate(parts, axis=axis) if len(parts) > 1 else x
    return x

def _lax_slice(operand, start_indices, limit_indices, strides=None):
    """lax.slice: operand[start:limit:stride] on every axis."""
    x = asarray(operand)
    if len(start_indices) != x.ndim or len(limit_indices) != x.ndim:
        raise TypeError(f"slice: start_indices and limit_indices need one entry per axis of {x.shape}")
    steps = [1] * x.ndim if strides is None else strides
    return x[tuple(slice(start_indices[i], limit_indices[i], steps[i]) for i in range(x.ndim))]

def _lax_slice_in_dim(operand, start_index, limit_index, stride=1, axis=0):
    """lax.slice_in_dim: operand[start:limit:stride] along axis (negative indices count from the end)."""
    x = asarray(operand)
    n = x.shape[axis]
    start = 0 if start_index is None else start_index
    limit = n if limit_index is None else limit_index
    start = start + n if start < 0 else start
    limit = limit + n if limit < 0 else limit
    index = [slice(None)] * x.ndim
    index[axis] = slice(start, limit, stride)
    return x[tuple(index)]

def _lax_index_in_dim(operand, index, axis=0, keepdims=True):
    """lax.index_in_dim: the slice at index along axis (the axis kept when keepdims)."""
    x = asarray(operand)
    n = x.shape[axis]
    i = index + n if index < 0 else index
    if i < 0 or i >= n:
        raise IndexError(f"index_in_dim: index {index} is out of bounds for axis {axis} of size {n}")
    r = _lax_slice_in_dim(x, i, i + 1, 1, axis)
    return r if keepdims else squeeze(r, axis)

def _lax_collapse(operand, start_dimension, stop_dimension=None):
    """lax.collapse: axes start_dimension..stop_dimension merged into one."""
    x = asarray(operand)
    stop = x.ndim if stop_dimension is None else stop_dimension
    merged = 1
    for d in x.shape[start_dimension:stop]:
        merged *= d
    return reshape(x, x.shape[:start_dimension] + (merged,) + x.shape[stop:])

def _lax_tie_in(x, y):
    """lax.tie_in: y (a no-op kept for old programs)."""
    return y

def _lax_erfc(x):
    """lax.erfc: 1 - erf(x)."""
    return 1 - erf(x)

def _lax_sort_key_val(keys, values, dimension=-1, is_stable=True):
    """lax.sort_key_val: keys sorted along dimension, values permuted with them."""
    order = argsort(keys, axis=dimension, stable=True)
    return take_along_axis(keys, order, axis=dimension), take_along_axis(values, order, axis=dimension)

def _lax_cumlogsumexp(operand, axis=0, reverse=False):
    """lax.cumlogsumexp: log of the cumulative sum of exp(operand) along axis."""
    x = asarray(operand)
    top = stop_gradient(max(x, axis=axis, keepdims=True))
    top = where(isfinite(top), top, 0)
    return log(_lax_cumsum(exp(x - top), axis, reverse)) + top

def associative_scan(fn, elems, reverse=False, axis=0):
    """lax.associative_scan: the prefix combination of elems (a pytree of arrays) along axis
    under the associative fn, in O(log n) rounds of fn over whole arrays."""
    leaves, tree = tree_flatten(elems)
    if len(leaves) == 0:
        return elems
    leaves = [moveaxis(asarray(l), axis, 0) for l in leaves]
    n = leaves[0].shape[0]
    for l in leaves:
        if l.shape[0] != n:
            raise ValueError(f"associative_scan: every leaf needs the same length along axis {axis}, got {n} and {l.shape[0]}")
    if reverse:
        leaves = [flip(l, 0) for l in leaves]

    def combine(a, b):
        out = fn(tree_unflatten(tree, a), tree_unflatten(tree, b))
        return tree_leaves(out)

    def interleave(a, b):
        # a[0], b[0], a[1], b[1], ... (a may be one longer than b)
        m = b.shape[0]
        both = reshape(stack([a[:m], b], axis=1), (2 * m,) + a.shape[1:])
        return concatenate([both, a[m:]], axis=0) if a.shape[0] > m else both

    def scan(xs):
        k = xs[0].shape[0]
        if k < 2:
            return xs
        pairs = combine([x[0:-1:2] for x in xs], [x[1::2] for x in xs])
        odd = scan(pairs)
        if k % 2 == 0:
            even = combine([o[:-1] for o in odd], [x[2::2] for x in xs])
        else:
            even = combine(odd, [x[2::2] for x in xs])
        even = [concatenate([x[0:1], e], axis=0) for x, e in zip(xs, even)]
        return [interleave(e, o) for e, o in zip(even, odd)]

    out = scan(leaves)
    if reverse:
        out = [flip(l, 0) for l in out]
    return tree_unflatten(tree, [moveaxis(l, 0, axis) for l in out])

def integer_pow(x, y):
    """x ** y for a Python int y, by repeated squaring as XLA does."""
    if not isinstance(y, int):
        raise TypeError(f"integer_pow: the exponent must be an int, got {type(y).__name__}")
    if y == 0:
        return ones_like(x)
    n = -y if y < 0 else y
    acc = None
    base = x
    while n > 0:
        if n % 2 == 1:
            acc = base if acc is None else acc * base
        n = n // 2
        if n > 0:
            base = base * base
    return 1 / acc if y < 0 else acc

def _lax_div(x, y):
    """lax.div: x / y, rounding integer quotients toward zero."""
    x, y = asarray(x), asarray(y)
    if x.dtype in (float32, float64):
        return x / y
    q = abs(x) // abs(y)
    return where((x < 0) != (y < 0), -q, q).astype(x.dtype)

def _lax_rem(x, y):
    """lax.rem: x - div(x, y) * y (the sign of x, as C's fmod)."""
    x, y = asarray(x), asarray(y)
    if x.dtype in (float32, float64):
        r = abs(x) % abs(y)
        return where(x < 0, -r, r)
    return x - _lax_div(x, y) * y

def _lax_argmax(operand, axis, index_dtype=int32):
    """lax.argmax: the index of the largest element along axis."""
    return argmax(operand, axis=axis).astype(index_dtype)

def _lax_argmin(operand, axis, index_dtype=int32):
    """lax.argmin: the index of the smallest element along axis."""
    return argmin(operand, axis=axis).astype(index_dtype)

def reduce_max(operand, axes):
    """lax.reduce_max: the maximum over axes."""
    return max(operand, axis=tuple(axes))

def reduce_min(operand, axes):
    """lax.reduce_min: the minimum over axes."""
    return min(operand, axis=tuple(axes))

def reduce_sum(operand, axes):
    """lax.reduce_sum: the sum over axes."""
    return sum(operand, axis=tuple(axes))

def reduce_prod(operand, axes):
    """lax.reduce_prod: the product over axes."""
    return prod(operand, axis=tuple(axes))

def _starts(operand, start_indices, sizes):
    """Start indices clamped so that each window of sizes fits, as XLA does."""
    if len(start_indices) != operand.ndim or len(sizes) != operand.ndim:
        raise ValueError(f"dynamic slice: {len(start_indices)} start indices and {len(sizes)} sizes for an array of shape {operand.shape}")
    out = []
    for ax in range(operand.ndim):
        n, size = operand.shape[ax], sizes[ax]
        if size < 0 or size > n:
            raise ValueError(f"dynamic slice: size {size} does not fit axis {ax} of shape {operand.shape}")
        out.append(clip(asarray(start_indices[ax]), 0, n - size).astype(int32))
    return out

def dynamic_slice(operand, start_indices, slice_sizes):
    """operand[s0:s0+n0, s1:s1+n1, ...] with (traceable) starts clamped to fit."""
    x = asarray(operand)
    sizes = list(slice_sizes)
    starts = _starts(x, list(start_indices), sizes)
    for ax in range(x.ndim):
        if sizes[ax] != x.shape[ax]:
            x = take(x, starts[ax] + arange(sizes[ax], dtype=int32), axis=ax)
    return x

def dynamic_update_slice(operand, update, start_indices):
    """operand with update written at the (clamped) start indices."""
    x, u = asarray(operand), asarray(update)
    if u.ndim != x.ndim:
        raise ValueError(f"dynamic_update_slice: update of shape {u.shape} for an operand of shape {x.shape}")
    starts = _starts(x, list(start_indices), list(u.shape))
    idx = []
    for ax in range(x.ndim):
        shape = [1] * x.ndim
        shape[ax] = u.shape[ax]
        idx.append(reshape(starts[ax] + arange(u.shape[ax], dtype=int32), tuple(shape)))
    return x.at[tuple(idx)].set(u.astype(x.dtype))

def dynamic_slice_in_dim(operand, start_index, slice_size, axis=0):
    """dynamic_slice along one axis."""
    x = asarray(operand)
    axis = _axis(axis, x.ndim)
    starts = [0] * x.ndim
    starts[axis] = start_index
    sizes = list(x.shape)
    sizes[axis] = slice_size
    return dynamic_slice(x, starts, sizes)

def dynamic_index_in_dim(operand, index, axis=0, keepdims=True):
    """operand's slice at index along axis (keeping that axis, of size 1, if keepdims)."""
    x = asarray(operand)
    axis = _axis(axis, x.ndim)
    out = dynamic_slice_in_dim(x, index, 1, axis)
    return out if keepdims else squeeze(out, axis=axis)

def dynamic_update_slice_in_dim(operand, update, start_index, axis):
    """dynamic_update_slice along one axis."""
    x = asarray(operand)
    axis = _axis(axis, x.ndim)
    starts = [0] * x.ndim
    starts[axis] = start_index
    return dynamic_update_slice(x, update, starts)

def dynamic_update_index_in_dim(operand, update, index, axis):
    """Write update (without the axis, or with it of size 1) at index along axis."""
    x, u = asarray(operand), asarray(update)
    axis = _axis(axis, x.ndim)
    if u.ndim == x.ndim - 1:
        u = expand_dims(u, axis)
    return dynamic_update_slice_in_dim(x, u, index, axis)

def top_k(operand, k):
    """The k largest elements along the last axis and their indices (ties: lower index first)."""
    x = asarray(operand)
    if k < 0 or k > x.shape[-1]:
        raise ValueError(f"top_k: k={k} is out of range for a last axis of size {x.shape[-1]}")
    idx = argsort(x, axis=-1, descending=True)[..., :k].astype(int32)
    return [take_along_axis(x, idx, axis=-1), idx]

# ---------------------------------------------------------------------------
# jax.random (each becomes random.<name>)

def _float_dtype(dtype):
    return float32 if dtype is None else dtype

def _random_exponential(key, shape=(), dtype=None):
    """Exponential samples with rate 1: -log1p(-u)."""
    u = random.uniform(key, shape, _float_dtype(dtype))
    return -log1p(-u)

def _tiny(dtype):
    return 2.2250738585072014e-308 if dtype == float64 else 1.1754943508222875e-38

def _random_gumbel(key, shape=(), dtype=None, mode=None):
    """Gumbel samples: -log(-log(u))."""
    dtype = _float_dtype(dtype)
    u = random.uniform(key, shape, dtype, _tiny(dtype), 1.0)
    return -log(-log(u))

def _random_laplace(key, shape=(), dtype=None):
    """Laplace samples: sign(u) * log1p(-|u|)."""
    dtype = _float_dtype(dtype)
    epsneg = 1.1102230246251565e-16 if dtype == float64 else 5.960464477539063e-08
    u = random.uniform(key, shape, dtype, -1.0 + epsneg, 1.0)
    return sign(u) * log1p(-abs(u))

def _random_logistic(key, shape=(), dtype=None):
    """Logistic samples: log(u) - log1p(-u)."""
    dtype = _float_dtype(dtype)
    x = random.uniform(key, shape, dtype, _tiny(dtype), 1.0)
    return log(x) - log1p(-x)

def _random_rademacher(key, shape=(), dtype=int32):
    """-1 or 1 with equal probability."""
    b = random.bernoulli(key, 0.5, shape).astype(dtype)
    return (2 * b - 1).astype(dtype)

def _random_truncated_normal(key, lower, upper, shape=None, dtype=None):
    """Normal samples conditioned on lower < x < upper (the inverse-CDF method, as JAX)."""
    dtype = _float_dtype(dtype)
    if shape is None:
        shape = broadcast_shapes(asarray(lower).shape, asarray(upper).shape)
    sqrt2 = asarray(1.4142135623730951, dtype)
    lower = asarray(lower).astype(dtype)
    upper = asarray(upper).astype(dtype)
    a = erf(lower / sqrt2)
    b = erf(upper / sqrt2)
    u = random.uniform(key, shape, dtype, a, b)
    out = sqrt2 * erfinv(u)
    return clip(out, nextafter(stop_gradient(lower), asarray(inf, dtype)), nextafter(stop_gradient(upper), asarray(-inf, dtype)))

def _random_categorical(key, logits, axis=-1, shape=None, replace=True, mode=None):
    """Samples of category indices with probabilities softmax(logits) along axis."""
    logits = asarray(logits)
    nd = logits.ndim
    ax = _axis(axis, nd)
    batch_shape = tuple(d for i, d in enumerate(logits.shape) if i != ax)
    shape = batch_shape if shape is None else ((shape,) if isinstance(shape, int) else tuple(shape))
    if len(shape) < len(batch_shape) or shape[len(shape) - len(batch_shape):] != batch_shape:
        raise ValueError(f"categorical: shape {shape} is not compatible with the logits' batch shape {batch_shape}")
    prefix = shape[:len(shape) - len(batch_shape)]
    if not replace:
        g = logits + _random_gumbel(key, logits.shape, logits.dtype)
        k = 1
        for d in prefix:
            k = k * d
        idx = top_k(moveaxis(g, ax, -1), k)[1]
        return reshape(moveaxis(idx, -1, 0), shape)
    lshape = list(shape[len(shape) - len(batch_shape):])
    lshape.insert(ax, logits.shape[ax])
    g = _random_gumbel(key, tuple(prefix) + tuple(lshape), logits.dtype)
    return argmax(g + reshape(logits, (1,) * len(prefix) + logits.shape), axis=ax - nd)

def _choice_weighted(key, a, shape=(), replace=True, p=None, axis=0, mode=None):
    """random.choice weighted by p or along an axis other than 0, as JAX's choice."""
    arr = asarray(a)
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    if arr.ndim == 0:
        n_inputs = int(a)
    else:
        axis = _axis(axis, arr.ndim)
        n_inputs = arr.shape[axis]
    n_draws = 1
    for d in shape:
        n_draws = n_draws * d
    if n_draws == 0:
        return zeros(shape, arr.dtype)
    if n_inputs <= 0:
        raise ValueError("choice: a must be greater than 0 unless no samples are taken")
    if not replace and n_draws > n_inputs:
        raise ValueError(f"choice: cannot take {n_draws} samples without replacement from a population of {n_inputs}")
    if p is None:
        if replace:
            ind = random.randint(key, shape, 0, n_inputs)
            result = ind if arr.ndim == 0 else take(arr, ind, axis=axis)
        else:
            perm = random.permutation(key, n_inputs if arr.ndim == 0 else arr) if arr.ndim <= 1 or axis == 0 else moveaxis(random.permutation(key, moveaxis(arr, axis, 0)), 0, axis)
            result = _along(perm, 0 if arr.ndim == 0 else axis, 0, n_draws)
    else:
        p = asarray(p)
        if p.dtype not in (float32, float64):
            p = p.astype(float32)
        if p.shape != (n_inputs,):
            raise ValueError(f"choice: p must be None or a 1D vector with the same size as a.shape[axis]; p has shape {p.shape} and a.shape[axis] is {n_inputs}")
        if replace:
            p_cuml = cumsum(p)
            r = p_cuml[-1] * (1 - random.uniform(key, shape, p_cuml.dtype))
            ind = searchsorted(p_cuml, r)
        else:
            g = _random_gumbel(key, (n_inputs,), p.dtype) + log(p)
            ind = top_k(g, n_draws)[1]
        result = ind if arr.ndim == 0 else take(arr, ind, axis=axis)
    if arr.ndim == 0:
        return reshape(result, shape)
    return reshape(result, arr.shape[0:axis] + shape + arr.shape[axis + 1:])

# ---------------------------------------------------------------------------
# jax.numpy.linalg, over the last two axes (leading axes are a batch). Written
# with primitives (pivoting by gathers, updates by scatters) so grad, vmap and
# jit apply; the loops unroll over the matrix size, which suits the small
# matrices these are used on. The factorisations without a gradient rule in
# JAX's sense (eigh, svd, qr) work in float64 and return the input's dtype.

def _square(a, what, complex_ok=True):
    a = asarray(a)
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise ValueError(f"{what}: expected a square matrix (or a batch of them), got shape {a.shape}")
    if a.dtype == complex64:
        if not complex_ok:
            raise TypeError(f"{what}: complex matrices are not supported yet (got complex64)")
        return a
    if a.dtype not in (float32, float64):
        a = a.astype(float32)
    return a

def _swap_rows(a, k, p):
    """a with rows k and p (p: one per batch element) exchanged."""
    n = a.shape[-2]
    rows = arange(n, dtype=int32)
    p = asarray(p)[..., None]
    idx = where(rows == k, p, where(rows == p, k, rows))
    return take_along_axis(a, broadcast_to(idx[..., None], idx.shape + (a.shape[-1],)), axis=-2)

def _gauss_jordan(a, b):
    """Solve a x = b for matrices b by elimination with partial pivoting."""
    n = a.shape[-1]
    m = concatenate([a, b], axis=-1)
    for k in range(n):
        p = argmax(abs(m[..., k:, k]), axis=-1) + k
        m = _swap_rows(m, k, p)
        row = m[..., k, :] / m[..., k, k][..., None]
        col = m[..., :, k]
        m = m - col[..., :, None] * row[..., None, :]
        m = m.at[..., k, :].set(row)
    return m[..., :, n:]

def solve(a, b):
    """x with a @ x = b (b a vector or a matrix, with a's batch)."""
    a = _square(a, "solve")
    b = asarray(b).astype(a.dtype)
    if b.ndim == a.ndim - 1:
        return _gauss_jordan(a, b[..., None])[..., 0]
    if b.ndim != a.ndim or b.shape[-2] != a.shape[-1]:
        raise ValueError(f"solve: a has shape {a.shape} but b has shape {b.shape}")
    return _gauss_jordan(a, b)

def inv(a):
    """The inverse matrix."""
    a = _square(a, "inv")
    eye_b = broadcast_to(eye(a.shape[-1], dtype=a.dtype), a.shape)
    return _gauss_jordan(a, eye_b)

def _lu(a):
    """(packed LU factors, sign of the row permutation), partial pivoting."""
    n = a.shape[-1]
    parity = ones(a.shape[:-2], a.dtype)
    for k in range(n):
        p = argmax(abs(a[..., k:, k]), axis=-1) + k
        a = _swap_rows(a, k, p)
        parity = where(p != k, -parity, parity)
        if k + 1 < n:
            f = _pivot_div(a[..., k + 1:, k], a[..., k, k][..., None])
            a = a.at[..., k + 1:, k + 1:].add(-f[..., :, None] * a[..., k, None, k + 1:])
            a = a.at[..., k + 1:, k].set(f)
    return a, parity

def det(a):
    """The determinant."""
    # As jax.numpy's: products of entries for 2x2 and 3x3, else from slogdet.
    return _det_jax(_square(a, "det"))

def slogdet(a):
    """(sign, log|det|) of the determinant."""
    lu, parity = _lu(_square(a, "slogdet"))
    d = einsum("...ii->...i", lu)
    return parity * prod(sign(d), axis=-1), sum(log(abs(d)), axis=-1)

def cholesky(a, upper=False):
    """Lower-triangular L with L @ L.T = a (a symmetric positive definite)."""
    a = _square(a, "cholesky")
    n = a.shape[-1]
    cplx = a.dtype == complex64
    # As JAX's (symmetrize_input=True): the Hermitian part of a, so that
    # gradients are symmetric.
    at = swapaxes(a, -1, -2)
    a = (a + (conj(at) if cplx else at)) / 2
    l = zeros_like(a)
    for j in range(n):
        lj = l[..., j, None, :j]
        s = a[..., j:, j] - sum(l[..., j:, :j] * (conj(lj) if cplx else lj), axis=-1)
        # Hermitian a: the diagonal is real (its imaginary part is ignored, as LAPACK's).
        d = sqrt(real(s[..., 0])).astype(a.dtype) if cplx else sqrt(s[..., 0])
        col = concatenate([d[..., None], s[..., 1:] / d[..., None]], axis=-1)
        l = l.at[..., j:, j].set(col)
    if upper:
        l = swapaxes(l, -1, -2)
        return conj(l) if cplx else l
    return l

def _jacobi_eigh(a, sweeps):
    """Eigenvalues and eigenvectors of symmetric a by cyclic Jacobi rotations."""
    n = a.shape[-1]
    v = broadcast_to(eye(n, dtype=a.dtype), a.shape)
    for _ in range(sweeps):
        for p in range(n - 1):
            for q in range(p + 1, n):
                apq = a[..., p, q]
                app = a[..., p, p]
                aqq = a[..., q, q]
                zero = apq == 0
                theta = (aqq - app) / where(zero, 1.0, 2 * apq)
                t = where(theta >= 0, 1.0, -1.0) / (abs(theta) + sqrt(theta * theta + 1))
                t = where(zero, 0.0, t)
                c = 1 / sqrt(t * t + 1)
                s = t * c
                ap, aq = a[..., :, p], a[..., :, q]
                a = a.at[..., :, p].set(c[..., None] * ap - s[..., None] * aq)
                a = a.at[..., :, q].set(s[..., None] * ap + c[..., None] * aq)
                ap, aq = a[..., p, :], a[..., q, :]
                a = a.at[..., p, :].set(c[..., None] * ap - s[..., None] * aq)
                a = a.at[..., q, :].set(s[..., None] * ap + c[..., None] * aq)
                vp, vq = v[..., :, p], v[..., :, q]
                v = v.at[..., :, p].set(c[..., None] * vp - s[..., None] * vq)
                v = v.at[..., :, q].set(s[..., None] * vp + c[..., None] * vq)
    return einsum("...ii->...i", a), v

def eigh(a, UPLO="L", symmetrize_input=True):
    """(eigenvalues ascending, eigenvectors as columns) of a symmetric matrix."""
    a = _square(a, "eigh", complex_ok=False)
    dtype = a.dtype
    x = a.astype(float64)
    if symmetrize_input:
        x = (x + swapaxes(x, -1, -2)) / 2
    n = a.shape[-1]
    w, v = _jacobi_eigh(x, 6 + n // 4)
    order = argsort(w, axis=-1)
    w = take_along_axis(w, order, axis=-1)
    v = take_along_axis(v, broadcast_to(order[..., None, :], v.shape), axis=-1)
    return w.astype(dtype), v.astype(dtype)

def eigvalsh(a, UPLO="L", symmetrize_input=True):
    """The eigenvalues of a symmetric matrix, ascending."""
    return eigh(a, UPLO, symmetrize_input)[0]

def _complete_basis(u, m):
    """u's orthonormal columns extended to an m x m orthogonal matrix (Gram-Schmidt on the identity)."""
    cols = [u[..., :, i] for i in range(u.shape[-1])]
    e = eye(m, dtype=u.dtype)
    for i in range(m):
        if len(cols) == m:
            break
        c = broadcast_to(e[:, i], u.shape[:-2] + (m,))
        for b in cols:
            c = c - sum(c * b, axis=-1, keepdims=True) * b
        nrm = sqrt(sum(c * c, axis=-1, keepdims=True))
        if bool(all(nrm > 1e-6)):
            cols.append(c / nrm)
    return stack(cols, axis=-1)

def svd(a, full_matrices=True, compute_uv=True, hermitian=False):
    """(U, s, Vh) with a = U @ diag(s) @ Vh, s descending (s alone if not compute_uv)."""
    a = asarray(a)
    if a.ndim < 2:
        raise ValueError(f"svd: expected a matrix (or a batch of them), got shape {a.shape}")
    if a.dtype == complex64:
        raise TypeError("svd: complex matrices are not supported yet (got complex64)")
    dtype = a.dtype if a.dtype in (float32, float64) else result_type(a.dtype, 1.0)
    x = a.astype(float64)
    m, n = x.shape[-2], x.shape[-1]
    wide = m < n
    if wide:
        x = swapaxes(x, -1, -2)
        m, n = n, m
    w, v = _jacobi_eigh(swapaxes(x, -1, -2) @ x, 8 + n // 4)
    order = argsort(-w, axis=-1)
    w = take_along_axis(w, order, axis=-1)
    v = take_along_axis(v, broadcast_to(order[..., None, :], v.shape), axis=-1)
    s = sqrt(maximum(w, 0.0))
    if not compute_uv:
        return s.astype(dtype)
    u = (x @ v) / where(s > 0, s, 1.0)[..., None, :]
    if full_matrices:
        u = _complete_basis(u, m)
    if wide:
        u, v = v, u
    return u.astype(dtype), s.astype(dtype), swapaxes(v, -1, -2).astype(dtype)

def qr(a, mode="reduced"):
    """(Q, R) with a = Q @ R, Q orthonormal columns, R upper triangular (Householder)."""
    a = asarray(a)
    if a.ndim < 2:
        raise ValueError(f"qr: expected a matrix (or a batch of them), got shape {a.shape}")
    if a.dtype == complex64:
        raise TypeError("qr: complex matrices are not supported yet (got complex64)")
    if mode not in ("reduced", "complete", "r"):
        raise ValueError(f"qr: mode must be 'reduced', 'complete' or 'r', got '{mode}'")
    dtype = a.dtype if a.dtype in (float32, float64) else result_type(a.dtype, 1.0)
    r = a.astype(float64)
    m, n = r.shape[-2], r.shape[-1]
    q = broadcast_to(eye(m, dtype=float64), r.shape[:-2] + (m, m))
    for k in range(min(m - 1, n)):
        x = r[..., k:, k]
        nx = sqrt(sum(x * x, axis=-1))
        alpha = where(x[..., 0] >= 0, -nx, nx)
        u = x.at[..., 0].add(-alpha)
        nu = sqrt(sum(u * u, axis=-1, keepdims=True))
        # A column already zero below the diagonal is left as it is (LAPACK's
        # reflector is then the identity, so R's diagonal keeps its sign).
        reflect = sum(x[..., 1:] * x[..., 1:], axis=-1, keepdims=True) > 0
        u = where(reflect, u / where(nu > 0, nu, 1.0), 0.0)
        r = r.at[..., k:, :].add(-2 * u[..., :, None] * sum(u[..., :, None] * r[..., k:, :], axis=-2, keepdims=True))
        q = q.at[..., :, k:].add(-2 * sum(q[..., :, k:] * u[..., None, :], axis=-1, keepdims=True) * u[..., None, :])
    k = min(m, n)
    if mode == "r":
        return (r if m <= n else r[..., :k, :]).astype(dtype)
    if mode == "reduced":
        q, r = q[..., :, :k], r[..., :k, :]
    return q.astype(dtype), triu(r).astype(dtype)

def _eps(dtype):
    return 2.220446049250313e-16 if dtype == float64 else 1.1920928955078125e-07

def pinv(a, rtol=None, hermitian=False):
    """The Moore-Penrose pseudo-inverse, from the SVD (small singular values dropped)."""
    a = asarray(a)
    dtype = a.dtype if a.dtype in (float32, float64) else result_type(a.dtype, 1.0)
    u, s, vh = svd(a, full_matrices=False)
    m, n = a.shape[-2], a.shape[-1]
    rtol = 10 * _max2(m, n) * _eps(dtype) if rtol is None else rtol
    cutoff = rtol * max(s, axis=-1, keepdims=True)
    sinv = where(s > cutoff, 1 / where(s > cutoff, s, 1.0), 0.0)
    return (swapaxes(vh, -1, -2) * sinv[..., None, :]) @ swapaxes(u, -1, -2)

def matrix_rank(a, rtol=None, tol=None):
    """The number of singular values above the tolerance."""
    a = asarray(a)
    s = svd(a, compute_uv=False)
    if tol is None:
        m, n = a.shape[-2], a.shape[-1]
        r = _max2(m, n) * _eps(s.dtype) if rtol is None else rtol
        tol = r * max(s, axis=-1, keepdims=True)
    return sum(s > tol, axis=-1).astype(int32)

def lstsq(a, b, rcond=None, numpy_resid=False):
    """(x, residuals, rank, s): the least-squares solution of a @ x = b."""
    a = asarray(a)
    b = asarray(b).astype(a.dtype)
    m, n = a.shape[-2], a.shape[-1]
    u, s, vh = svd(a, full_matrices=False)
    rcond = _eps(s.dtype) * _max2(m, n) if rcond is None else rcond
    keep = s > rcond * max(s)
    rank = sum(keep).astype(int32)
    sinv = where(keep, 1 / where(keep, s, 1.0), 0.0)
    bm = b[:, None] if b.ndim == 1 else b
    x = swapaxes(vh, -1, -2) @ (sinv[:, None] * (swapaxes(u, -1, -2) @ bm))
    r = bm - a @ x
    resid = sum(r * r, axis=0)
    if b.ndim == 1:
        x, resid = x[:, 0], resid
    if int(rank) < n or m <= n:
        resid = zeros((0,), a.dtype)
    return x, resid, rank, s

def norm(x, ord=None, axis=None, keepdims=False):
    """Vector norms (ord None/2, 1, inf, -inf, 0, p) and, over two axes, matrix
    norms (None/'fro', 'nuc', 1, -1, 2, -2, inf, -inf)."""
    x = asarray(x)
    if x.dtype not in (float32, float64, complex64):
        x = x.astype(float32)
    # |x|², and from here on |x|: a complex vector's norms are its moduli's.
    sq = real(x * conj(x)) if x.dtype == complex64 else x * x
    if x.dtype == complex64 and ord not in (None, 2, "fro"):
        x = abs(x)
    if axis is None and (ord is None or x.ndim == 1):
        if ord is None:
            out = sqrt(sum(sq))
            return reshape(out, (1,) * x.ndim) if keepdims else out
        axis = (0,)
    if axis is None:
        axis = (x.ndim - 2, x.ndim - 1)
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    if len(axes) == 1:
        ax = axes[0]
        if ord is None or ord == 2:
            return sqrt(sum(sq, axis=ax, keepdims=keepdims))
        if ord == inf:
            return max(abs(x), axis=ax, keepdims=keepdims)
        if ord == -inf:
            return min(abs(x), axis=ax, keepdims=keepdims)
        if ord == 0:
            return sum(x != 0, axis=ax, keepdims=keepdims).astype(x.dtype)
        if ord == 1:
            return sum(abs(x), axis=ax, keepdims=keepdims)
        return sum(abs(x) ** ord, axis=ax, keepdims=keepdims) ** (1.0 / ord)
    if len(axes) != 2:
        raise ValueError(f"norm: axis must be an int or a pair of ints, got {axis}")
    r, c = _axis(axes[0], x.ndim), _axis(axes[1], x.ndim)
    if ord is None or ord == "fro":
        return sqrt(sum(sq, axis=(r, c), keepdims=keepdims))
    if ord in (1, -1):
        s = sum(abs(x), axis=r, keepdims=True)
        out = max(s, axis=c, keepdims=True) if ord == 1 else min(s, axis=c, keepdims=True)
    elif ord in (inf, -inf):
        s = sum(abs(x), axis=c, keepdims=True)
        out = max(s, axis=r, keepdims=True) if ord == inf else min(s, axis=r, keepdims=True)
    elif ord in (2, -2, "nuc"):
        m = moveaxis(moveaxis(x, r, -1), c if c > r else c + 1, -1) if (r, c) != (x.ndim - 2, x.ndim - 1) else x
        s = svd(m, compute_uv=False)
        out = max(s, axis=-1) if ord == 2 else (min(s, axis=-1) if ord == -2 else sum(s, axis=-1))
        return reshape(out, out.shape + (1, 1)) if keepdims else out
    else:
        raise ValueError(f"norm: invalid norm order {ord} for matrices")
    return out if keepdims else squeeze(out, axis=(r, c))

# ---------------------------------------------------------------------------
# jax.tree_util

def tree_reduce(function, tree, *initializer, is_leaf=None, **given):
    """function folded over the leaves, left to right (starting from initializer if given)."""
    xs = tree_leaves(tree, is_leaf=is_leaf)
    if any(k != "initializer" for k in given):
        raise TypeError(f"tree_reduce() got an unexpected keyword argument {list(given)[0]!r}")
    initializer = initializer + tuple(given.values())
    if len(initializer) > 1:
        raise TypeError("tree_reduce takes at most one initializer")
    if len(initializer) == 1:
        acc = initializer[0]
    elif len(xs) == 0:
        raise TypeError("tree_reduce() of an empty tree with no initializer")
    else:
        acc = xs[0]
        xs = xs[1:]
    for x in xs:
        acc = function(acc, x)
    return acc

def tree_all(tree, is_leaf=None):
    """True if every leaf is truthy."""
    for x in tree_leaves(tree, is_leaf=is_leaf):
        if not x:
            return False
    return True

def tree_any(tree, is_leaf=None):
    """True if some leaf is truthy."""
    for x in tree_leaves(tree, is_leaf=is_leaf):
        if x:
            return True
    return False

# ---------------------------------------------------------------------------
# numpy.testing: AssertionError with NumPy's kind of message on a mismatch.

def _mismatch(header, x, y, bad, extra=""):
    n = size(bad)
    k = int(sum(bad))
    pct = 100 * k / n if n else 0
    msg = f"\n{header}\n\nMismatched elements: {k} / {n} ({pct:.3g}%)\n{extra} ACTUAL: {repr(x)}\n DESIRED: {repr(y)}"
    assert False, msg

def assert_allclose(actual, desired, rtol=1e-07, atol=0, equal_nan=True, err_msg="", verbose=True, strict=False):
    """Raise AssertionError unless |actual - desired| <= atol + rtol * |desired| everywhere."""
    x, y = asarray(actual), asarray(desired)
    if strict and x.shape != y.shape:
        assert False, f"\nNot equal to tolerance rtol={rtol:g}, atol={atol:g}\n{err_msg}\n(shapes {x.shape}, {y.shape} mismatch)"
    if not _broadcastable(x.shape, y.shape):
        assert False, f"\nNot equal to tolerance rtol={rtol:g}, atol={atol:g}\n{err_msg}\n(shapes {x.shape}, {y.shape} mismatch)"
    d = abs(x - y)
    ok = d <= atol + rtol * abs(y)
    if equal_nan:
        ok = ok | (isnan(x) & isnan(y))
    ok = ok | (x == y)
    if not bool(all(ok)):
        bad = ~ok
        worst = max(where(bad, d, 0))
        rel = max(where(bad, d / where(y == 0, 1, abs(y)), 0))
        _mismatch(f"Not equal to tolerance rtol={rtol:g}, atol={atol:g}\n{err_msg}", x, y, bad, f"Max absolute difference among violations: {float(worst):.8g}\nMax relative difference among violations: {float(rel):.8g}\n")

def assert_array_equal(actual, desired, err_msg="", verbose=True, strict=False):
    """Raise AssertionError unless the arrays have the same shape and elements."""
    x, y = asarray(actual), asarray(desired)
    if not _broadcastable(x.shape, y.shape) or (strict and x.shape != y.shape):
        assert False, f"\nArrays are not equal\n{err_msg}\n(shapes {x.shape}, {y.shape} mismatch)\n ACTUAL: {repr(x)}\n DESIRED: {repr(y)}"
    ok = (x == y) | (isnan(x) & isnan(y))
    if not bool(all(ok)):
        _mismatch(f"Arrays are not equal\n{err_msg}", x, y, ~ok)

def assert_equal(actual, desired, err_msg="", verbose=True, strict=False):
    """Raise AssertionError unless actual equals desired (arrays elementwise)."""
    if isinstance(actual, (list, tuple, dict)) or isinstance(desired, (list, tuple, dict)):
        assert actual == desired, f"\nItems are not equal:\n{err_msg}\n ACTUAL: {actual}\n DESIRED: {desired}"
        return None
    assert_array_equal(actual, desired, err_msg)

def assert_almost_equal(actual, desired, decimal=7, err_msg="", verbose=True):
    """Raise AssertionError unless |desired - actual| < 1.5 * 10**(-decimal) everywhere."""
    x, y = asarray(actual), asarray(desired)
    ok = abs(y - x) < 1.5 * 10.0 ** (-decimal)
    if not bool(all(ok)):
        _mismatch(f"Arrays are not almost equal to {decimal} decimals\n{err_msg}", x, y, ~ok)

def assert_array_almost_equal(x, y, decimal=6, err_msg="", verbose=True):
    """The same as assert_almost_equal, for arrays."""
    assert_almost_equal(x, y, decimal, err_msg)

# ---------------------------------------------------------------------------
# More of jax.numpy and jax.lax

def convolve(a, v, mode="full"):
    """The discrete linear convolution of 1-d a and v (mode 'full', 'same' or 'valid'), as jnp.convolve
    (integers are convolved as floats, as JAX's)."""
    a, v = _inexact(a), _inexact(v)
    if a.ndim != 1 or v.ndim != 1:
        raise ValueError(f"convolve: a and v must be 1-d, got shapes {a.shape} and {v.shape}")
    n, m = a.shape[0], v.shape[0]
    if n == 0 or m == 0:
        raise ValueError("convolve: empty input")
    if n < m:
        a, v, n, m = v, a, m, n
    full = n + m - 1
    padded = pad(a, (m - 1, m - 1))
    rows = stack([padded[k:k + full] for k in range(m)])
    out = (flip(v)[:, None] * rows).sum(axis=0)
    if mode == "full":
        return out
    if mode == "same":
        start = (m - 1) // 2
        return out[start:start + n]
    if mode == "valid":
        return out[m - 1:n]
    raise ValueError(f"convolve: mode must be 'full', 'same' or 'valid', got {mode!r}")

def correlate(a, v, mode="valid"):
    """The cross-correlation of 1-d a and v, as jnp.correlate."""
    return convolve(a, flip(asarray(v)), mode)

def isscalar(x):
    """Whether x is a Python number or a 0-d array, as jnp.isscalar."""
    if isinstance(x, (int, float, bool)):
        return True
    return isinstance(x, asarray) and x.ndim == 0

def _lax_clamp(lo, x, hi):
    """x clipped to [lo, hi], as jax.lax.clamp (note the argument order)."""
    return minimum(maximum(x, lo), hi)

def _lax_convert_element_type(operand, new_dtype):
    """operand converted to new_dtype, as jax.lax.convert_element_type."""
    return asarray(operand).astype(new_dtype)

def _jnp_astype(x, dtype, copy=False):
    """x converted to dtype, as jnp.astype."""
    return asarray(x).astype(dtype)

# ---------------------------------------------------------------------------
# Smaller names of the namespaces (modules.rs): constants, linalg, testing,
# initializers, activations, the standard library's itertools / operator /
# dataclasses helpers.

euler_gamma = 0.5772156649015329

_math_tau = 6.283185307179586

def matrix_power(a, n):
    """linalg.matrix_power: a @ a @ ... (n times) by repeated squaring; inv(a) ** -n for n < 0."""
    if not isinstance(n, int):
        raise TypeError(f"matrix_power: the exponent must be an int, got {type(n).__name__}")
    a = asarray(a)
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise ValueError(f"matrix_power: a must be a stack of square matrices, got shape {a.shape}")
    if n == 0:
        return broadcast_to(eye(a.shape[-1], dtype=a.dtype), a.shape)
    base = inv(a) if n < 0 else a
    k = -n if n < 0 else n
    acc = None
    while k > 0:
        if k % 2 == 1:
            acc = base if acc is None else acc @ base
        k = k // 2
        if k > 0:
            base = base @ base
    return acc

def multi_dot(arrays):
    """linalg.multi_dot: the product of a chain of matrices (1-D ends as vectors)."""
    if len(arrays) < 2:
        raise ValueError(f"multi_dot: at least two arrays are needed, got {len(arrays)}")
    out = asarray(arrays[0])
    for m in arrays[1:]:
        out = out @ asarray(m)
    return out

def linalg_trace(x, offset=0, dtype=None):
    """linalg.trace: the sum of the diagonals of the last two axes."""
    t = trace(x, offset, -2, -1)
    return t if dtype is None else t.astype(dtype)

def assert_array_less(x, y, err_msg="", verbose=True, strict=False):
    """Raise AssertionError unless x < y everywhere."""
    a, b = asarray(x), asarray(y)
    if not _broadcastable(a.shape, b.shape):
        assert False, f"\nArrays are not strictly ordered `x < y`\n{err_msg}\n(shapes {a.shape}, {b.shape} mismatch)"
    ok = a < b
    if not bool(all(ok)):
        _mismatch(f"Arrays are not strictly ordered `x < y`\n{err_msg}", a, b, ~ok)

def _init_orthogonal(scale=1.0, column_axis=-1, dtype=float32):
    """jax.nn.initializers.orthogonal: random.orthogonal's matrix (orthonormal rows or
    columns, whichever side is smaller) reshaped to the requested shape."""
    default_dtype = dtype

    def init(key, shape, dtype=None, out_sharding=None):
        return _init_placed(sample(key, shape, dtype), out_sharding)

    def sample(key, shape, dtype):
        dtype = default_dtype if dtype is None else dtype
        shape = tuple(shape)
        if len(shape) < 2:
            raise ValueError("orthogonal initializer requires at least a 2D shape")
        if 0 in shape:
            return zeros(shape, dtype)
        axis = column_axis % len(shape)
        n_cols = shape[axis]
        n_rows = 1
        for d in shape:
            n_rows = n_rows * d
        n_rows = n_rows // n_cols
        q = _random_orthogonal(key, n_rows, (), dtype, n_cols)
        rest = tuple(d for i, d in enumerate(shape) if i != axis)
        q = moveaxis(reshape(q, rest + (n_cols,)), -1, axis)
        return asarray(scale, dtype) * q

    return init

def _tree_all_leaves(iterable, is_leaf=None):
    """jax.tree_util.all_leaves: whether every item of iterable is a leaf of its own
    (not a container, not None, not a registered node)."""
    leaf = tree_structure(0)
    for x in iterable:
        if is_leaf is not None and is_leaf(x):
            continue
        if tree_structure(x, is_leaf=is_leaf) != leaf:
            return False
    return True

def _debug_inspect_array_sharding(value, *, callback):
    """jax.debug.inspect_array_sharding: callback(sharding) for each array of the pytree
    value: under jit, the sharding its type carries, once per trace (as JAX calls it at
    compile time); outside, the array's own."""
    for leaf in tree_leaves(value):
        sharding = typeof(leaf).sharding
        callback(asarray(leaf).sharding if sharding is None else sharding)

def _init_delta_orthogonal(scale=1.0, column_axis=-1, dtype=None):
    """jax.nn.initializers.delta_orthogonal: a convolution kernel (3-D, 4-D or 5-D) that is
    zero but at its spatial centre, which holds an orthogonal (in, out) matrix."""
    default_dtype = dtype

    def init(key, shape, dtype=default_dtype, out_sharding=None):
        return _init_placed(sample(key, shape, dtype), out_sharding)

    def sample(key, shape, dtype):
        dtype = float32 if dtype is None else dtype
        shape = tuple(shape)
        if len(shape) not in [3, 4, 5]:
            raise ValueError("Delta orthogonal initializer requires a 3D, 4D or 5D shape.")
        if shape[-1] < shape[-2]:
            raise ValueError("`fan_in` must be less or equal than `fan_out`. ")
        ortho_matrix = _init_orthogonal(scale=scale, column_axis=column_axis, dtype=dtype)(key, shape[-2:])
        w = zeros(shape, dtype=dtype)
        centre = tuple((k - 1) // 2 for k in shape[:-2])
        return w.at[centre + (Ellipsis,)].set(ortho_matrix)

    return init

def _random_orthogonal(key, n, shape=(), dtype=None, m=None):
    """random.orthogonal: uniformly random n x n (or n x m) matrices with orthonormal columns."""
    dtype = float32 if dtype is None else dtype
    shape = tuple(shape)
    cols = n if m is None else m
    z = random.normal(key, shape + (max(n, cols), min(n, cols)), dtype)
    q, r = qr(z)
    d = diagonal(r, 0, -2, -1)
    q = q * expand_dims(sign(d), -2)
    return swapaxes(q, -2, -1) if n < cols else q

def sparse_plus(x):
    """jax.nn.sparse_plus: 0 below -1, x above 1, (x + 1)**2 / 4 between."""
    x = asarray(x)
    return where(x <= -1.0, 0.0, where(x >= 1.0, x, (x + 1.0) ** 2 / 4))

def sparse_sigmoid(x):
    """jax.nn.sparse_sigmoid: 0 below -1, 1 above 1, (x + 1) / 2 between."""
    x = asarray(x)
    return where(x <= -1.0, 0.0, where(x >= 1.0, 1.0, (x + 1.0) / 2))

def _jax_named_scope(name):
    """jax.named_scope: a context that names the operations inside it (arr keeps no names)."""
    if not isinstance(name, str):
        raise TypeError(f"named_scope: the name must be a str, got {type(name).__name__}")
    return nullcontext()

def _jax_named_call(fun, name=None):
    """jax.named_call: fun itself (the name only labels profiles)."""
    return fun

def _itertools_product(*iterables, repeat=1):
    """itertools.product: the cartesian product, as a list of tuples."""
    pools = [list(p) for p in iterables] * repeat
    out = [()]
    for pool in pools:
        out = [t + (x,) for t in out for x in pool]
    return out

def _itertools_permutations(iterable, r=None):
    """itertools.permutations: the r-length orderings of the items, as a list of tuples."""
    pool = list(iterable)
    r = len(pool) if r is None else r
    if r > len(pool):
        return []
    out = []
    def build(prefix, used):
        if len(prefix) == r:
            out.append(tuple(prefix))
            return None
        for i in range(len(pool)):
            if not used[i]:
                used[i] = True
                build(prefix + [pool[i]], used)
                used[i] = False
        return None
    build([], [False] * len(pool))
    return out

def _itertools_combinations(iterable, r):
    """itertools.combinations: the r-length subsequences in order, as a list of tuples."""
    pool = list(iterable)
    out = []
    def build(start, prefix):
        if len(prefix) == r:
            out.append(tuple(prefix))
            return None
        for i in range(start, len(pool)):
            build(i + 1, prefix + [pool[i]])
        return None
    if r <= len(pool):
        build(0, [])
    return out

def _itertools_chain(*iterables):
    """itertools.chain: the items of each iterable in turn, as a list."""
    out = []
    for it in iterables:
        out.extend(list(it))
    return out

def _itertools_accumulate(iterable, func=None, initial=None):
    """itertools.accumulate: running totals (or running func(total, item)), as a list."""
    out = [] if initial is None else [initial]
    total = initial
    for x in iterable:
        if total is None and len(out) == 0:
            total = x
        else:
            total = total + x if func is None else func(total, x)
        out.append(total)
    return out

def _operator_attrgetter(*names):
    """operator.attrgetter: a function reading the named (dotted) attributes."""
    def one(obj, name):
        for part in name.split("."):
            obj = getattr(obj, part)
        return obj
    if len(names) == 1:
        return lambda obj: one(obj, names[0])
    return lambda obj: tuple(one(obj, n) for n in names)

def astuple(obj):
    """dataclasses.astuple: a dataclass instance's fields as a tuple (nested dataclasses too)."""
    if not is_dataclass(obj):
        raise TypeError("astuple() should be called on dataclass instances")
    def value(v):
        if is_dataclass(v):
            return astuple(v)
        if isinstance(v, list):
            return [value(x) for x in v]
        if isinstance(v, tuple):
            return tuple(value(x) for x in v)
        if isinstance(v, dict):
            return {k: value(x) for k, x in v.items()}
        return v
    return tuple(value(getattr(obj, f.name)) for f in fields(obj))

def _jax_ensure_compile_time_eval():
    """jax.ensure_compile_time_eval: a context in which operations on values that are not
    traced compute at once (as arr always does, inside jit too)."""
    return nullcontext()

def dot_general(lhs, rhs, dimension_numbers, precision=None, preferred_element_type=None, out_sharding=None):
    """lax.dot_general: contract lhs's and rhs's axes ((lhs_contract, rhs_contract), (lhs_batch, rhs_batch)); the result's axes are the batch axes, then lhs's free axes, then rhs's."""
    (lc, rc), (lb, rb) = dimension_numbers
    lhs = asarray(lhs)
    rhs = asarray(rhs)
    ln, rn = lhs.ndim, rhs.ndim
    lc, rc = [a % ln for a in lc], [a % rn for a in rc]
    lb, rb = [a % ln for a in lb], [a % rn for a in rb]
    if len(lc) != len(rc) or len(lb) != len(rb):
        raise TypeError(f"dot_general requires equal numbers of lhs and rhs contracting and batch dimensions, got {dimension_numbers}")
    letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
    ls, rs = [None] * ln, [None] * rn
    k = 0
    for pairs in (zip(lb, rb), zip(lc, rc)):
        for a, b in pairs:
            if lhs.shape[a] != rhs.shape[b]:
                raise TypeError(f"dot_general requires contracting and batch dimensions to have the same size, got lhs axis {a} of size {lhs.shape[a]} and rhs axis {b} of size {rhs.shape[b]} (shapes {lhs.shape} and {rhs.shape})")
            ls[a] = letters[k]
            rs[b] = letters[k]
            k += 1
    free = []
    for subs in (ls, rs):
        for i in range(len(subs)):
            if subs[i] is None:
                subs[i] = letters[k]
                free.append(letters[k])
                k += 1
    out = "".join(ls[a] for a in lb) + "".join(free)
    r = einsum("".join(ls) + "," + "".join(rs) + "->" + out, lhs, rhs)
    if preferred_element_type is not None:
        r = r.astype(preferred_element_type)
    if out_sharding is not None:
        r = reshard(r, out_sharding)
    return r

def _conv_offsets(sizes):
    """Every offset of a window of the given sizes, in row-major order."""
    offsets = [()]
    for n in sizes:
        offsets = [o + (i,) for o in offsets for i in range(n)]
    return offsets

def _dilate_axis(x, axis, d):
    """d - 1 zeros between neighbours along axis (lax's base/lhs dilation)."""
    if d == 1 or x.shape[axis] == 0:
        return x
    n = x.shape[axis]
    y = stack([x] + [zeros_like(x)] * (d - 1), axis=axis + 1)
    y = reshape(y, x.shape[:axis] + (n * d,) + x.shape[axis + 1:])
    return _lax_slice_in_dim(y, 0, (n - 1) * d + 1, axis=axis)

def _pad_or_crop(x, pads, value=0):
    """Pad each axis by (lo, hi); negative amounts crop, as lax's padding."""
    grow = [(max(lo, 0), max(hi, 0)) for lo, hi in pads]
    if any(lo > 0 or hi > 0 for lo, hi in grow):
        x = pad(x, grow, constant_values=value)
    index = tuple(slice(max(-lo, 0), x.shape[i] - max(-hi, 0)) for i, (lo, hi) in enumerate(pads))
    return x[index]

def _window_pads(padding, in_shape, window, strides):
    """lax.padtype_to_pads: 'SAME' (the extra element after), 'SAME_LOWER' (before), 'VALID'."""
    if not isinstance(padding, str):
        return [tuple(p) for p in padding]
    kind = padding.upper()
    if kind == "VALID":
        return [(0, 0)] * len(in_shape)
    if kind not in ("SAME", "SAME_LOWER"):
        raise ValueError(f"Unknown padding type: {padding}.")
    pads = []
    for n, k, s in zip(in_shape, window, strides):
        total = max((-(-n // s) - 1) * s + k - n, 0)
        small = total // 2
        pads.append((small, total - small) if kind == "SAME" else (total - small, small))
    return pads

def _window_patches(x, window, strides, dilation, first):
    """The windows of x's axes from `first` on: one strided slice per window
    offset, stacked on a new axis at `first` (the output's length along each
    axis is the number of whole windows)."""
    span = [(k - 1) * d + 1 for k, d in zip(window, dilation)]
    out = [(x.shape[first + i] - span[i]) // strides[i] + 1 for i in range(len(window))]
    if any(o <= 0 for o in out):
        shape = x.shape[:first] + (math_prod(window),) + tuple(max(o, 0) for o in out)
        return zeros(shape, x.dtype)
    patches = []
    for offset in _conv_offsets(window):
        index = (slice(None),) * first + tuple(
            slice(o * d, o * d + (n - 1) * s + 1, s) for o, d, n, s in zip(offset, dilation, out, strides))
        patches.append(x[index])
    return stack(patches, axis=first)

def _conv_specs(dimension_numbers, nd):
    """(lhs, rhs, out) specs as axis numbers: (batch, feature, *spatial),
    (out feature, in feature, *spatial), (batch, feature, *spatial); string
    specs ('NHWC', 'HWIO', 'NHWC') order the spatial axes as the rhs's."""
    if dimension_numbers is None:
        same = tuple(range(nd))
        return same, same, same
    lhs, rhs, out = dimension_numbers
    if not isinstance(lhs, str):
        return tuple(lhs), tuple(rhs), tuple(out)
    if len(lhs) != nd or len(rhs) != nd or len(out) != nd:
        raise TypeError(f"conv_general_dilated: dimension_numbers {dimension_numbers} do not match operands of rank {nd}")
    spatial = [c for c in rhs if c not in "OI"]
    def spec(text, first, second):
        return (text.find(first), text.find(second)) + tuple(text.find(c) for c in spatial)
    return spec(lhs, "N", "C"), spec(rhs, "O", "I"), spec(out, "N", "C")

def conv_general_dilated(lhs, rhs, window_strides, padding, lhs_dilation=None, rhs_dilation=None, dimension_numbers=None, feature_group_count=1, batch_group_count=1, precision=None, preferred_element_type=None, out_sharding=None):
    """lax.conv_general_dilated: an N-d convolution (cross-correlation) with strides, padding ('SAME', 'VALID' or pairs), input and kernel dilation, feature groups and any layout; as the windows of the input stacked and contracted with the kernel."""
    lhs = asarray(lhs)
    rhs = asarray(rhs)
    nd = lhs.ndim
    if rhs.ndim != nd or nd < 3:
        raise TypeError(f"conv_general_dilated: lhs and rhs must have the same rank (at least 3), got shapes {lhs.shape} and {rhs.shape}")
    if batch_group_count != 1:
        raise NotImplementedError("conv_general_dilated: batch_group_count other than 1 is not supported yet")
    ls, rs, os = _conv_specs(dimension_numbers, nd)
    x = transpose(lhs, ls)
    w = transpose(rhs, rs)
    ns = nd - 2
    strides = tuple(window_strides) if window_strides is not None else (1,) * ns
    lhs_dilation = (1,) * ns if lhs_dilation is None else tuple(lhs_dilation)
    rhs_dilation = (1,) * ns if rhs_dilation is None else tuple(rhs_dilation)
    G = feature_group_count
    N, C = x.shape[0], x.shape[1]
    O, I = w.shape[0], w.shape[1]
    if C != G * I or O % G != 0:
        raise TypeError(f"conv_general_dilated: lhs feature dimension {C} must be feature_group_count ({G}) times the rhs input feature dimension {I}, and the rhs output feature dimension {O} a multiple of it (shapes {lhs.shape} and {rhs.shape})")
    kernel = w.shape[2:]
    span = [(k - 1) * d + 1 for k, d in zip(kernel, rhs_dilation)]
    pads = _window_pads(padding, x.shape[2:], span, strides)
    for a in range(ns):
        x = _dilate_axis(x, 2 + a, lhs_dilation[a])
    x = _pad_or_crop(x, [(0, 0), (0, 0)] + list(pads))
    p = _window_patches(x, kernel, strides, rhs_dilation, 2)
    out = p.shape[3:]
    K = math_prod(kernel)
    p = reshape(p, (N, G, I, K) + out)
    w = reshape(w, (G, O // G, I, K))
    sp = "abcdefghjlmpqrstuvwxyz"[:ns]
    y = einsum("ngik" + sp + ",goik->ngo" + sp, p, w)
    y = reshape(y, (N, O) + out)
    y = transpose(y, tuple(os.index(i) for i in range(nd)))
    if preferred_element_type is not None:
        y = y.astype(preferred_element_type)
    return y

def _lax_conv(lhs, rhs, window_strides, padding, precision=None, preferred_element_type=None):
    """lax.conv: conv_general_dilated in the NCHW / OIHW layout."""
    return conv_general_dilated(lhs, rhs, window_strides, padding, precision=precision, preferred_element_type=preferred_element_type)

def _lax_conv_with_general_padding(lhs, rhs, window_strides, padding, lhs_dilation, rhs_dilation, precision=None, preferred_element_type=None):
    return conv_general_dilated(lhs, rhs, window_strides, padding, lhs_dilation, rhs_dilation, precision=precision, preferred_element_type=preferred_element_type)

_lax_ConvDimensionNumbers = namedtuple("ConvDimensionNumbers", "lhs_spec rhs_spec out_spec")

def _lax_conv_dimension_numbers(lhs_shape, rhs_shape, dimension_numbers):
    """lax.conv_dimension_numbers: dimension_numbers (None, layout strings such as
    ('NHWC', 'HWIO', 'NHWC'), or axis numbers) as a ConvDimensionNumbers of axis numbers."""
    if isinstance(dimension_numbers, _lax_ConvDimensionNumbers):
        return dimension_numbers
    nd = len(lhs_shape)
    if len(rhs_shape) != nd:
        raise TypeError(f"convolution requires lhs and rhs ndim to be equal, got {len(lhs_shape)} and {len(rhs_shape)}.")
    lhs, rhs, out = _conv_specs(dimension_numbers, nd)
    return _lax_ConvDimensionNumbers(lhs, rhs, out)

def _vectorize_signature(signature):
    """The core axis names of each input and output of a gufunc signature
    such as '(n),(n)->()': ([('n',), ('n',)], [()])."""
    def parse(side):
        side = side.replace(" ", "")
        if side == "":
            return []
        out = []
        for part in side[1:-1].split("),("):
            out.append(tuple(n for n in part.split(",") if n))
        return out
    if "->" not in signature:
        raise ValueError(f"not a valid gufunc signature: {signature}")
    ins, outs = signature.split("->")
    return parse(ins), parse(outs)

def vectorize(pyfunc, *, excluded=frozenset(), signature=None):
    """pyfunc mapped over the leading (loop) axes of its array arguments broadcast
    together, as jnp.vectorize (one vmap); signature ('(n),(n)->()') names each
    argument's trailing core axes, which pyfunc sees whole. Arguments in excluded
    (positions or keyword names) and keyword arguments pass through unchanged."""
    cores = None if signature is None else _vectorize_signature(signature)[0]

    def wrapped(*args, **kwargs):
        mapped = [i for i in range(len(args)) if i not in excluded]
        arrays = [asarray(args[i]) for i in mapped]
        if cores is not None and len(cores) != len(arrays):
            raise TypeError(f"wrong number of positional arguments: expected {len(cores)}, got {len(arrays)}")
        ncore = [0] * len(arrays) if cores is None else [len(c) for c in cores]
        for a, k in zip(arrays, ncore):
            if a.ndim < k:
                raise ValueError(f"input with shape {a.shape} does not have enough dimensions for its core dimensions (signature {signature})")
        loops = [a.shape[:a.ndim - k] for a, k in zip(arrays, ncore)]
        loop = broadcast_shapes(*loops) if loops else ()
        if loop == ():
            return pyfunc(*args, **kwargs)
        n = math_prod(loop)
        flat = [reshape(broadcast_to(a, loop + a.shape[a.ndim - k:]), (n,) + a.shape[a.ndim - k:])
                for a, k in zip(arrays, ncore)]

        def one(*vals):
            full = list(args)
            for i, v in zip(mapped, vals):
                full[i] = v
            return pyfunc(*full, **kwargs)

        out = vmap(one)(*flat)
        return tree_map(lambda r: reshape(r, loop + r.shape[1:]), out)
    return wrapped

def _lax_reduce_window(operand, init_value, computation, window_dimensions, window_strides, padding, base_dilation=None, window_dilation=None):
    """lax.reduce_window: computation folded over every window (sum, max, min and product directly; any other binary function pairwise), the padding filled with init_value."""
    x = asarray(operand)
    nd = x.ndim
    window = tuple(window_dimensions)
    strides = tuple(window_strides)
    base_dilation = (1,) * nd if base_dilation is None else tuple(base_dilation)
    window_dilation = (1,) * nd if window_dilation is None else tuple(window_dilation)
    if len(window) != nd or len(strides) != nd:
        raise TypeError(f"reduce_window: window_dimensions {window} and window_strides {strides} must have one entry per axis of the operand of shape {x.shape}")
    span = [(k - 1) * d + 1 for k, d in zip(window, window_dilation)]
    for a in range(nd):
        x = _dilate_axis(x, a, base_dilation[a])
    pads = _window_pads(padding, x.shape, span, strides)
    init = asarray(init_value, x.dtype)
    x = _pad_or_crop(x, pads, init)
    p = _window_patches(x, window, strides, window_dilation, 0)
    if computation is add:
        r = init + sum(p, axis=0)
    elif computation is maximum:
        r = maximum(init, max(p, axis=0))
    elif computation is minimum:
        r = minimum(init, min(p, axis=0))
    elif computation is multiply:
        r = init * prod(p, axis=0)
    else:
        r = broadcast_to(init, p.shape[1:])
        for i in range(p.shape[0]):
            r = computation(r, p[i])
    return r.astype(x.dtype)

def _with_sharding_constraint_tree(x, shardings):
    """with_sharding_constraint of a pytree by a tree of shardings (a prefix of x's tree; None leaves x as it is)."""
    def is_sharding(s):
        return s is None or type(s).__name__ in ("PartitionSpec", "NamedSharding")
    return tree_map(lambda s, sub: sub if s is None else with_sharding_constraint(sub, s), shardings, x, is_leaf=is_sharding)

# ---- sharding strategies: logical axis names laid out on a mesh ----

_STRATEGIES = {
    "dp": (("batch", "data"),),
    "fsdp": (("batch", "data"), ("embed", "data")),
    "tp": (("heads", "model"), ("mlp", "model"), ("expert", "model")),
    "tp+dp": (("batch", "data"), ("heads", "model"), ("mlp", "model")),
    "tp+sp": (("batch", "data"), ("heads", "model"), ("mlp", "model"), ("seq", "model")),
    "ep": (("batch", "data"), ("expert", "data")),
    "ep+tp": (("batch", "data"), ("expert", "data"), ("heads", "model"), ("mlp", "model")),
}

def strategy_rules(strategy, mesh=None):
    """The logical axis rules of a named strategy, as (logical name, mesh axis) pairs:
    'dp' (batch over 'data'), 'fsdp' (batch and parameters' embed dimension over 'data'),
    'tp' (Megatron: attention heads and the MLP's hidden dimension over 'model'),
    'tp+dp', 'tp+sp' (tp+dp, and the activations between the layers split by sequence
    over 'model': the norms run on a share of the tokens, and each all-reduce becomes a
    reduce-scatter and an all-gather), 'ep' (batch and experts over 'data': tokens travel
    to their experts), 'ep+tp'.
    A list of pairs is its own rules.
    With a mesh, pairs naming an axis the mesh lacks are left out (that name stays whole)."""
    if isinstance(strategy, str):
        if strategy not in _STRATEGIES:
            raise ValueError(f"strategy_rules: no strategy named {strategy!r}; the named ones are {', '.join(_STRATEGIES)}")
        rules = _STRATEGIES[strategy]
    else:
        rules = tuple(tuple(r) for r in strategy)
        for r in rules:
            if len(r) != 2:
                raise ValueError(f"strategy_rules: a rule is a (logical name, mesh axis) pair, got {r!r}")
    if mesh is None:
        return list(rules)
    def on_mesh(a):
        return a is None or all(x in mesh.axis_names for x in ((a,) if isinstance(a, str) else a))
    return [(n, a) for n, a in rules if on_mesh(a)]

def logical_spec(names, rules):
    """The PartitionSpec of an array whose dimensions have these logical names:
    each name mapped by the rules (the first rule for it) to a mesh axis or a tuple
    of them, None or an unknown name kept whole; a mesh axis splits only the first
    dimension that asks for it."""
    table = {}
    for n, a in strategy_rules(rules):
        if n not in table:
            table[n] = a
    used = []
    spec = []
    for n in names:
        a = table.get(n, None) if isinstance(n, str) else None
        axes = () if a is None else (tuple(a) if isinstance(a, (tuple, list)) else (a,))
        if not axes or any(x in used for x in axes):
            spec.append(None)
        else:
            used.extend(axes)
            spec.append(a if isinstance(a, str) else tuple(a))
    return P(*spec)

def with_logical_constraint(x, names, mesh, rules):
    """x laid out by its logical axis names under rules (pairs or a strategy name):
    with_sharding_constraint(x, NamedSharding(mesh, logical_spec(names, rules)))."""
    return with_sharding_constraint(x, NamedSharding(mesh, logical_spec(names, strategy_rules(rules, mesh))))

def _is_names(n):
    return n is None or isinstance(n, tuple)

def logical_shardings(names, mesh, rules):
    """A tree of NamedShardings on mesh from a tree of logical axis names (a tuple
    of names per array, None for a replicated one) and rules (pairs or a strategy name)."""
    rules = strategy_rules(rules, mesh)
    return tree_map(lambda n: NamedSharding(mesh, P() if n is None else logical_spec(n, rules)), names, is_leaf=_is_names)

def _shard_by_rules(x, mesh, rules, names):
    """shard(tree, mesh, rules, names): each array laid out by its logical names."""
    if names is None:
        raise TypeError("shard: with rules or a strategy, give names= (a tree of logical axis names matching the arrays)")
    shardings = logical_shardings(names, mesh, rules)
    return tree_map(lambda s, a: device_put(a, s), shardings, x, is_leaf=lambda s: type(s).__name__ == "NamedSharding")

_STRATEGY_CALIBRATION = {}

def _time_best(f, *args):
    """The fastest of a few runs of f(*args), in seconds (after one to compile)."""
    block_until_ready(f(*args))
    best = 1e30
    for i in range(3):
        t0 = perf_counter()
        block_until_ready(f(*args))
        best = min(best, perf_counter() - t0)
    return max(best, 1e-9)

def strategy_calibration(mesh):
    """How fast this machine runs the mesh's devices all at once (they may share
    cores): product flops and elements written per second per device, and
    bytes per second and seconds per collective. Measured once per mesh size."""
    n = mesh.size
    if n in _STRATEGY_CALIBRATION:
        return _STRATEGY_CALIBRATION[n]
    a = ones((n, 192, 192))
    t_mm = _time_best(pmap(lambda x: x @ x), a)
    x = ones((n, 1 << 18))
    t_ew = _time_best(pmap(lambda x: x * 2.0 + 1.0), x)
    big = ones((n, 1 << 16))
    t_big = _time_best(pmap(lambda x: psum(x, "i"), axis_name="i"), big)
    small = ones((n, 1))
    t_small = _time_best(pmap(lambda x: psum(x, "i"), axis_name="i"), small)
    sent = 2 * (1 << 16) * 4 * (n - 1) / n
    c = {"flops": 2 * 192 ** 3 / t_mm, "elements": 2 * (1 << 18) / t_ew,
         "bandwidth": sent / max(t_big - t_small, 1e-9), "latency": t_small}
    _STRATEGY_CALIBRATION[n] = c
    return c

def strategy_costs(step, mesh, names, args, strategies=None):
    """step(*args) partitioned under each strategy (the named ones whose mesh axes
    the mesh has, or those given): a list of dicts with the plan's cost per device
    (flops, elements, collectives, bytes_sent, peak_bytes) and the estimated step
    time in ms from this machine's calibration. names: the logical names of each
    argument (a tree per argument, as in_shardings)."""
    cal = strategy_calibration(mesh)
    if strategies is None:
        strategies = [s for s, rules in _STRATEGIES.items() if all(a in mesh.axis_names for _, a in rules)]
    rows = []
    seen = []
    for s in strategies:
        rules = strategy_rules(s, mesh)
        shardings = tuple(logical_shardings(n, mesh, rules) for n in names)
        layout = str(shardings)
        if layout in seen:
            continue        # the same layouts as a strategy already weighed
        seen.append(layout)
        c = jit(step, in_shardings=shardings).cost(*args)
        compute = c["flops"] / cal["flops"] + c["elements"] / cal["elements"]
        comm = c["bytes_sent"] / cal["bandwidth"] + c["collectives"] * cal["latency"]
        rows.append({"strategy": s, "collectives": c["collectives"], "MB sent": round(c["bytes_sent"] / 1e6, 3),
                     "peak MB": round(c["peak_bytes"] / 1e6, 3), "GFLOP": round(c["flops"] / 1e9, 4),
                     "compute ms": round(1e3 * compute, 3), "comm ms": round(1e3 * comm, 3),
                     "estimate ms": round(1e3 * (compute + comm), 3)})
    return rows

def auto_strategy(step, mesh, names, args, strategies=None, show=True):
    """The strategy with the lowest estimated step time for step(*args) on mesh
    (strategy="auto"): shows the candidates it weighed and why it chose one."""
    rows = strategy_costs(step, mesh, names, args, strategies)
    best = min(rows, key=lambda r: r["estimate ms"])
    if show:
        print(table(rows))
        print(f"auto: {best['strategy']} (estimated {best['estimate ms']} ms a step: "
              f"{best['compute ms']} ms computing, {best['comm ms']} ms communicating)")
    return best["strategy"]

def device_bytes(tree):
    """The bytes each device holds of the arrays of tree: a dict from device id to
    bytes (an unsplit array counts on every device that holds a copy)."""
    out = {}
    for x in tree_leaves(tree):
        for s in x.addressable_shards:
            d = s.device.id
            out[d] = out.get(d, 0) + s.data.nbytes
    return out

def canonicalize_dtype(dtype, allow_extended_dtype=False):
    """The dtype JAX computes in for dtype (64-bit types become their 32-bit ones;
    Python's float and int are float32 and int32)."""
    if dtype is float:
        dtype = float32
    elif dtype is int:
        dtype = int32
    elif dtype is bool:
        dtype = bool_
    name = str(zeros((), dtype).dtype)
    narrow = {"float64": "float32", "int64": "int32", "uint64": "uint32"}
    return zeros((), narrow.get(name, name)).dtype

def tensorsolve(a, b, axes=None):
    """x with tensordot(a, x, axes=x.ndim) == b: a's leading dimensions are b's,
    its trailing ones x's (axes: those of a moved to the end first)."""
    a, b = asarray(a), asarray(b)
    if axes is not None:
        axes = [ax % a.ndim for ax in axes]
        rest = [d for d in range(a.ndim) if d not in axes]
        a = a.transpose(rest + axes)
    out_shape = a.shape[b.ndim:]
    n = 1
    for s in out_shape:
        n *= s
    if a.shape[:b.ndim] != b.shape or b.size != n:
        raise ValueError(f"tensorsolve: a of shape {a.shape} does not map an array of shape {out_shape} onto b of shape {b.shape}")
    return solve(a.reshape(b.size, n), b.reshape(b.size)).reshape(out_shape)

class cached_property:
    """functools.cached_property: the method's value, computed at the first read
    and kept in the instance (a later read finds it there)."""

    def __init__(self, func):
        self.func = func
        self.attrname = getattr(func, "__name__", None)
        self.__doc__ = getattr(func, "__doc__", None)

    def __set_name__(self, owner, name):
        self.attrname = name

    def __get__(self, instance, owner=None):
        if instance is None:
            return self
        value = self.func(instance)
        setattr(instance, self.attrname, value)
        return value

# ---------------------------------------------------------------------------
# jnp.fft: 1-D transforms along one axis over the primitive (lax.fft along
# the last axis); n-dimensional ones apply it axis by axis.

def _fft_norm(y, n, norm, inverse):
    """Scale y for norm: 'backward' (the default: 1/n on the inverse, which the
    primitive applies), 'ortho' (1/sqrt(n) both ways) or 'forward'."""
    if norm is None or norm == "backward":
        return y
    if norm == "ortho":
        s = sqrt(float(n)) if inverse else 1.0 / sqrt(float(n))
    elif norm == "forward":
        s = float(n) if inverse else 1.0 / n
    else:
        raise ValueError(f"Invalid norm value {norm}; should be 'backward', 'ortho' or 'forward'.")
    return y * asarray(s, float32).astype(y.dtype)

def _fit_last(a, m):
    """a's last axis cut or zero-padded to length m."""
    k = a.shape[-1]
    if k == m:
        return a
    if k > m:
        return a[..., :m]
    widths = [(0, 0)] * (a.ndim - 1) + [(0, m - k)]
    return pad(a, widths)

def _fft1(a, n, axis, norm, kind):
    a = asarray(a)
    if kind == "RFFT":
        if a.dtype == complex64:
            raise TypeError("rfft does not support complex input")
        a = a.astype(float32)
    else:
        a = a.astype(complex64)
    if a.ndim == 0:
        raise ValueError(f"{kind.lower()} needs an array of at least 1 dimension")
    ax = _axis(axis, a.ndim)
    a = moveaxis(a, ax, -1)
    if kind == "IRFFT":
        n = 2 * (a.shape[-1] - 1) if n is None else n
        a = _fit_last(a, n // 2 + 1)
    else:
        n = a.shape[-1] if n is None else n
        a = _fit_last(a, n)
    if n < 1:
        raise ValueError(f"Invalid number of FFT data points ({n}) specified.")
    y = _lax_fft(a, kind, n)
    y = _fft_norm(y, n, norm, kind in ("IFFT", "IRFFT"))
    return moveaxis(y, -1, ax)

def fft(a, n=None, axis=-1, norm=None):
    """The 1-D discrete Fourier transform along axis (length n: cut or zero-padded)."""
    return _fft1(a, n, axis, norm, "FFT")

def ifft(a, n=None, axis=-1, norm=None):
    """The inverse of fft."""
    return _fft1(a, n, axis, norm, "IFFT")

def rfft(a, n=None, axis=-1, norm=None):
    """The FFT of a real array: its n // 2 + 1 non-negative frequencies."""
    return _fft1(a, n, axis, norm, "RFFT")

def irfft(a, n=None, axis=-1, norm=None):
    """The inverse of rfft: a real array of length n (default 2 * (m - 1))."""
    return _fft1(a, n, axis, norm, "IRFFT")

def _fft_axes(a, s, axes, default_all):
    a = asarray(a)
    if axes is None:
        axes = tuple(range(a.ndim)) if default_all else (-2, -1)
        if s is not None:
            axes = tuple(range(a.ndim - len(s), a.ndim))
    axes = tuple(axes)
    s = [None] * len(axes) if s is None else list(s)
    if len(s) != len(axes):
        raise ValueError("Shape and axes have different lengths.")
    return a, s, axes

def _fftn(a, s, axes, norm, inverse, default_all):
    a, s, axes = _fft_axes(a, s, axes, default_all)
    kind = "IFFT" if inverse else "FFT"
    for n, ax in zip(s, axes):
        a = _fft1(a, n, ax, norm, kind)
    return a

def fftn(a, s=None, axes=None, norm=None):
    """The n-dimensional FFT over axes (all by default)."""
    return _fftn(a, s, axes, norm, False, True)

def ifftn(a, s=None, axes=None, norm=None):
    """The inverse of fftn."""
    return _fftn(a, s, axes, norm, True, True)

def fft2(a, s=None, axes=(-2, -1), norm=None):
    """The 2-D FFT over the last two axes."""
    return _fftn(a, s, axes, norm, False, False)

def ifft2(a, s=None, axes=(-2, -1), norm=None):
    """The inverse of fft2."""
    return _fftn(a, s, axes, norm, True, False)

def rfftn(a, s=None, axes=None, norm=None):
    """The n-dimensional FFT of a real array: rfft over the last axis, fft over the others."""
    a, s, axes = _fft_axes(a, s, axes, True)
    a = _fft1(a, s[-1], axes[-1], norm, "RFFT")
    for n, ax in zip(s[:-1], axes[:-1]):
        a = _fft1(a, n, ax, norm, "FFT")
    return a

def irfftn(a, s=None, axes=None, norm=None):
    """The inverse of rfftn."""
    a, s, axes = _fft_axes(a, s, axes, True)
    for n, ax in zip(s[:-1], axes[:-1]):
        a = _fft1(a, n, ax, norm, "IFFT")
    return _fft1(a, s[-1], axes[-1], norm, "IRFFT")

def rfft2(a, s=None, axes=(-2, -1), norm=None):
    """rfftn over the last two axes."""
    return rfftn(a, s, axes, norm)

def irfft2(a, s=None, axes=(-2, -1), norm=None):
    """irfftn over the last two axes."""
    return irfftn(a, s, axes, norm)

def fftfreq(n, d=1.0, *, dtype=None, device=None):
    """The sample frequencies of an FFT of length n with spacing d."""
    k = arange(n)
    k = where(k < (n + 1) // 2, k, k - n)
    return (k / (d * n)).astype(float32 if dtype is None else dtype)

def rfftfreq(n, d=1.0, *, dtype=None, device=None):
    """The sample frequencies of an rfft of length n with spacing d."""
    return (arange(n // 2 + 1) / (d * n)).astype(float32 if dtype is None else dtype)

def fftshift(x, axes=None):
    """The zero frequency moved to the centre: a roll by n // 2 along axes (all by default)."""
    x = asarray(x)
    axes = tuple(range(x.ndim)) if axes is None else ((axes,) if isinstance(axes, int) else tuple(axes))
    for a in axes:
        x = roll(x, x.shape[a] // 2, a)
    return x

def ifftshift(x, axes=None):
    """The inverse of fftshift."""
    x = asarray(x)
    axes = tuple(range(x.ndim)) if axes is None else ((axes,) if isinstance(axes, int) else tuple(axes))
    for a in axes:
        x = roll(x, -(x.shape[a] // 2), a)
    return x

# ---------------------------------------------------------------------------
# jax.random samplers built on gamma and rejection loops, with JAX's
# algorithms and key splits (so the numbers are JAX's).

def _gamma_one(key, alpha, log_space):
    """One Gamma(alpha) sample: Marsaglia and Tsang's method, alpha < 1
    boosted to alpha + 1 (JAX's `_gamma_one`)."""
    dtype = alpha.dtype
    zero = asarray(0.0, dtype)
    one = asarray(1.0, dtype)
    boost_mask = alpha >= one
    alpha_orig = alpha
    alpha = where(boost_mask, alpha, alpha + one)
    d = alpha - asarray(1.0 / 3.0, dtype)
    c = asarray(1.0 / 3.0, dtype) / sqrt(d)

    def cond_fn(kxvu):
        _, x, v, u = kxvu
        return (u >= one - asarray(0.0331, dtype) * (x * x)) & (log(u) >= x * asarray(0.5, dtype) + d * (one - v + log(v)))

    def next_kxv(kxv):
        k, subkey = random.split(kxv[0])
        x = random.normal(subkey, (), dtype)
        return k, x, one + x * c

    def body_fn(kxvu):
        k, x_key, u_key = random.split(kxvu[0], 3)
        _, x, v = while_loop(lambda kxv: kxv[2] <= zero, next_kxv, (x_key, zero, -one))
        u = random.uniform(u_key, (), dtype)
        return k, x * x, v * v * v, u

    k, subkey = random.split(key)
    _, _, v, _ = while_loop(cond_fn, body_fn, (k, zero, one, asarray(2.0, dtype)))
    if log_space:
        log_samples = -_random_exponential(subkey, (), dtype)
        log_boost = where(boost_mask | (log_samples == 0), zero, log_samples * (one / alpha_orig))
        return log(d) + log(v) + log_boost
    samples = one - random.uniform(subkey, (), dtype)
    boost = where(boost_mask, one, samples ** (one / alpha_orig))
    return d * v * boost

def _gamma_samples(key, a, shape, dtype, log_space):
    dtype = _float_dtype(dtype)
    a = asarray(a).astype(dtype)
    shape = a.shape if shape is None else tuple(shape)
    a = broadcast_to(a, shape).reshape(-1)
    if a.size == 0:
        return zeros(shape, dtype)
    keys = random.split(key, a.size)
    return vmap(lambda k, x: _gamma_one(k, x, log_space))(keys, a).reshape(shape)

def _random_gamma(key, a, shape=None, dtype=None):
    """Gamma(a) samples (Marsaglia and Tsang, as JAX). No gradient with respect to a."""
    return _gamma_samples(key, a, shape, dtype, False)

def _random_loggamma(key, a, shape=None, dtype=None):
    """The log of Gamma(a) samples, accurate for small a."""
    return _gamma_samples(key, a, shape, dtype, True)

def _random_beta(key, a, b, shape=None, dtype=None):
    """Beta(a, b) samples from two log-gamma draws."""
    dtype = _float_dtype(dtype)
    if shape is None:
        shape = broadcast_shapes(asarray(a).shape, asarray(b).shape)
    key_a, key_b = random.split(key)
    la = _random_loggamma(key_a, broadcast_to(asarray(a).astype(dtype), shape), shape, dtype)
    lb = _random_loggamma(key_b, broadcast_to(asarray(b).astype(dtype), shape), shape, dtype)
    m = maximum(la, lb)
    ga = exp(la - m)
    gb = exp(lb - m)
    return ga / (ga + gb)

def _random_dirichlet(key, alpha, shape=None, dtype=None):
    """Dirichlet(alpha) samples along the last axis: a softmax of log-gamma draws."""
    dtype = _float_dtype(dtype)
    alpha = asarray(alpha).astype(dtype)
    if alpha.ndim < 1:
        raise ValueError(f"dirichlet requires alpha.ndim >= 1, got alpha.ndim == {alpha.ndim}")
    shape = alpha.shape[:-1] if shape is None else tuple(shape)
    g = _random_loggamma(key, alpha, shape + alpha.shape[-1:], dtype)
    return softmax(g, axis=-1)

def _random_chisquare(key, df, shape=None, dtype=None):
    """Chi-square samples with df degrees of freedom: 2 Gamma(df / 2)."""
    dtype = _float_dtype(dtype)
    half = asarray(df).astype(dtype) / 2
    return exp(_random_loggamma(key, half, shape, dtype)) * 2

def _random_t(key, df, shape=None, dtype=None):
    """Student's t samples with df degrees of freedom."""
    dtype = _float_dtype(dtype)
    df = asarray(df).astype(dtype)
    shape = df.shape if shape is None else tuple(shape)
    key_n, key_g = random.split(key)
    n = random.normal(key_n, shape, dtype)
    half = df / 2
    g = _random_gamma(key_g, half, shape, dtype)
    return n * sqrt(half / g)

def _random_generalized_normal(key, p, shape=(), dtype=None):
    """Samples of the generalized normal distribution with exponent p."""
    dtype = _float_dtype(dtype)
    k1, k2 = random.split(key)
    g = _random_gamma(k1, 1 / p, tuple(shape), dtype)
    r = _random_rademacher(k2, tuple(shape), dtype)
    return r * g ** (1 / p)

def _random_ball(key, d, p=2, shape=(), dtype=None):
    """Uniform samples from the unit Lp ball in d dimensions."""
    dtype = _float_dtype(dtype)
    shape = tuple(shape)
    k1, k2 = random.split(key)
    g = _random_generalized_normal(k1, p, shape + (d,), dtype)
    e = _random_exponential(k2, shape, dtype)
    return g / ((sum(abs(g) ** p, axis=-1) + e) ** (1 / p))[..., None]

def _random_maxwell(key, shape=(), dtype=None):
    """Samples of the Maxwell distribution: the norm of three normals."""
    dtype = _float_dtype(dtype)
    return norm(random.normal(key, tuple(shape) + (3,), dtype), axis=-1)

def _random_multivariate_normal(key, mean, cov, shape=None, dtype=None, method="cholesky"):
    """Multivariate normal samples: mean + factor(cov) @ z, the factor by
    'cholesky' (the default), 'eigh' or 'svd'."""
    if method not in ("svd", "eigh", "cholesky"):
        raise ValueError("method must be one of {'svd', 'eigh', 'cholesky'}")
    mean = _inexact(mean)
    cov = _inexact(cov)
    dtype = mean.dtype if dtype is None else dtype
    if mean.ndim < 1:
        raise ValueError(f"multivariate_normal requires mean.ndim >= 1, got mean.ndim == {mean.ndim}")
    if cov.ndim < 2:
        raise ValueError(f"multivariate_normal requires cov.ndim >= 2, got cov.ndim == {cov.ndim}")
    n = mean.shape[-1]
    if cov.shape[-2:] != (n, n):
        raise ValueError(f"multivariate_normal requires cov.shape == (..., n, n) for n={n}, but got cov.shape == {cov.shape}.")
    shape = broadcast_shapes(mean.shape[:-1], cov.shape[:-2]) if shape is None else tuple(shape)
    if method == "svd":
        u, s, _ = svd(cov)
        factor = u * sqrt(s[..., None, :])
    elif method == "eigh":
        w, v = eigh(cov)
        factor = v * sqrt(w[..., None, :])
    else:
        factor = cholesky(cov)
    z = random.normal(key, shape + mean.shape[-1:], dtype)
    return mean + einsum("...ij,...j->...i", factor, z)

def _random_poisson(key, lam, shape=None, dtype=None):
    """Poisson(lam) samples: Knuth's method below lam = 10, transformed
    rejection (Hormann) above, as JAX."""
    dtype = int32 if dtype is None else dtype
    lam = asarray(lam).astype(float32)
    shape = lam.shape if shape is None else tuple(shape)
    lam = broadcast_to(lam, shape)
    use_knuth = isnan(lam) | (lam < 10)
    lam_knuth = where(use_knuth, lam, 0.0)
    lam_rejection = where(use_knuth, 1e5, lam)

    def knuth_body(carry):
        i, k, rng, log_prod = carry
        rng, subkey = random.split(rng)
        k = where(log_prod > -lam_knuth, k + 1, k)
        u = random.uniform(subkey, shape, float32)
        return i + 1, k, rng, log_prod + log(u)

    knuth = while_loop(lambda c: any(c[3] > -lam_knuth), knuth_body,
                           (0, zeros(shape, dtype), key, zeros(shape, float32)))[1]
    knuth = (knuth - 1).astype(dtype)

    lr = lam_rejection
    log_lam = log(lr)
    b = 0.931 + 2.53 * sqrt(lr)
    a = -0.059 + 0.02483 * b
    inv_alpha = 1.1239 + 1.1328 / (b - 3.4)
    v_r = 0.9277 - 3.6224 / (b - 2)

    def rejection_body(carry):
        i, k_out, accepted, k = carry
        k, subkey_0, subkey_1 = random.split(k, 3)
        u = random.uniform(subkey_0, shape, float32) - 0.5
        v = random.uniform(subkey_1, shape, float32)
        u_shifted = 0.5 - abs(u)
        kk = floor((2 * a / u_shifted + b) * u + lr + 0.43)
        s = log(v * inv_alpha / (a / (u_shifted * u_shifted) + b))
        t = -lr + kk * log_lam - lgamma(kk + 1)
        accept1 = (u_shifted >= 0.07) & (v <= v_r)
        reject = (kk < 0) | ((u_shifted < 0.013) & (v > u_shifted))
        accept2 = s <= t
        accept = accept1 | (~reject & accept2)
        return i + 1, where(accept, kk, k_out), accepted | accept, k

    rejection = while_loop(lambda c: any(~c[2]), rejection_body,
                               (0, full(shape, -1.0, float32), zeros(shape, bool), key))[1]
    result = where(use_knuth, knuth, rejection.astype(dtype))
    return where(lam == 0, zeros_like(result), result)

_LANCZOS = (676.520368121885098567009190444019, -1259.13921672240287047156078755283,
            771.3234287776530788486528258894, -176.61502916214059906584551354,
            12.507343278686904814458936853, -0.13857109526572011689554707,
            9.984369578019570859563e-6, 1.50563273514931155834e-7)

def lgamma(x):
    """log |Gamma(x)|, elementwise: the Lanczos approximation (g = 7) with
    Euler's reflection below 0.5, the formula XLA (and so JAX) evaluates."""
    x = _inexact(x)
    dt = x.dtype
    c = lambda v: asarray(v, dt)
    reflect = x < 0.5
    z = where(reflect, -x, x - c(1.0))
    s = c(0.99999999999980993227684700473478)
    for i, k in enumerate(_LANCZOS):
        s = s + c(k) / (z + c(i + 1.0))
    t = c(7.5) + z
    log_t = c(2.0149030205422647) + log1p(z / c(7.5))
    log_y = c(0.91893853320467274178) + (z + c(0.5) - t / log_t) * log_t + log(s)
    ax = abs(x)
    frac = ax - floor(ax)
    frac = where(frac > 0.5, c(1.0) - frac, frac)
    denom = log(sin(c(pi) * frac))
    reflection = where(isfinite(denom), c(1.1447298858494002) - denom - log_y, -denom)
    out = where(reflect, reflection, log_y)
    return where(isinf(x), c(inf), out)

def digamma(x):
    """The logarithmic derivative of Gamma, elementwise (XLA's Lanczos form);
    NaN at the poles 0, -1, -2, ..."""
    x = _inexact(x)
    dt = x.dtype
    c = lambda v: asarray(v, dt)
    reflect = x < 0.5
    z = where(reflect, -x, x - c(1.0))
    num = c(0.0)
    den = c(0.99999999999980993227684700473478)
    for i, k in enumerate(_LANCZOS):
        zi = z + c(i + 1.0)
        num = num - c(k) / (zi * zi)
        den = den + c(k) / zi
    t = c(7.5) + z
    log_t = c(2.0149030205422647) + log1p(z / c(7.5))
    y = log_t + num / den - c(7.0) / t
    r = x + abs(floor(x + c(0.5)))
    reflection = y - c(pi) * cos(c(pi) * r) / sin(c(pi) * r)
    out = where(reflect, reflection, y)
    return where((x <= 0) & (x == floor(x)), c(nan), out)

def _unsigned_bits(x):
    """x's bits as uint32 (of an 8-, 16- or 32-bit integer), and their count."""
    x = asarray(x)
    if not (x.dtype == bool or issubdtype(x.dtype, integer)):
        raise TypeError(f"needs an integer array, got {x.dtype}")
    if x.dtype in (int8, uint8):
        return x.astype(uint8).astype(uint32), 8
    if x.dtype in (int16, uint16):
        return x.astype(uint16).astype(uint32), 16
    if x.dtype == int64:
        raise TypeError("64-bit integers are not supported here (use int32 or uint32)")
    return x.astype(uint32), 32

def _popcount32(u):
    u = u - ((u >> 1) & uint32(0x55555555))
    u = (u & uint32(0x33333333)) + ((u >> 2) & uint32(0x33333333))
    u = (u + (u >> 4)) & uint32(0x0F0F0F0F)
    return (u * uint32(0x01010101)) >> 24

def population_count(x):
    """lax.population_count: the number of set bits of each element, in its own dtype."""
    d = asarray(x).dtype
    u, _ = _unsigned_bits(x)
    return _popcount32(u).astype(d)

def clz(x):
    """lax.clz: the number of leading zero bits of each element (of its width), in its own dtype."""
    d = asarray(x).dtype
    u, bits = _unsigned_bits(x)
    for s in (1, 2, 4, 8, 16):
        u = u | (u >> s)
    return (bits - _popcount32(u).astype(int32)).astype(d)

def _traceback_print_exc(limit=None, file=None, chain=True):
    """traceback.print_exc: the exception being handled, its traceback on standard error."""
    text = _traceback_format_exc(limit)
    if file is None:
        _stream_write(2, text)
    else:
        file.write(text)

# jax.config: JAX's flags, read as attributes and set with update(name, value).
# jax_debug_nans and jax_disable_jit act; the others are kept and read back.

class _JaxConfig:
    def __init__(self):
        self._values = {}

    def update(self, name, value):
        if name == "jax_debug_nans":
            _set_debug_nans(value)
        elif name == "jax_disable_jit":
            _jax_disable_jit(value).__enter__()
        elif name == "jax_enable_x64":
            # 64-bit dtypes asked for are kept; arr's defaults stay 32-bit.
            _set_x64(bool(value))
        elif name == "jax_num_cpu_devices" and value > device_count():
            raise RuntimeError(f"jax_num_cpu_devices: arr has {device_count()} devices (ARR_DEVICES sets the number at start-up)")
        self._values[name] = value

    def read(self, name):
        return getattr(self, name)

    def __getattr__(self, name):
        if name in self._values:
            return self._values[name]
        if name == "jax_num_cpu_devices":
            return device_count()
        defaults = {"jax_enable_x64": False, "jax_debug_nans": False, "jax_debug_infs": False,
                    "jax_disable_jit": False, "jax_platforms": None, "jax_platform_name": "",
                    "jax_default_matmul_precision": None, "jax_numpy_rank_promotion": "allow",
                    "jax_numpy_dtype_promotion": "standard", "jax_explain_cache_misses": False,
                    "jax_log_compiles": False, "jax_threefry_partitionable": True,
                    "jax_default_prng_impl": "threefry2x32", "jax_traceback_filtering": "auto",
                    "jax_compilation_cache_dir": None, "jax_check_tracer_leaks": False,
                    "jax_default_device": None, "jax_enable_checks": False}
        if name in defaults:
            return defaults[name]
        raise AttributeError(f"Unrecognized config option: {name}")

_jax_config = _JaxConfig()

class _jax_debug_nans:
    """jax.debug_nans(flag): a context inside which jax_debug_nans is flag."""
    def __init__(self, flag=True):
        self._flag = flag

    def __enter__(self):
        self._before = _set_debug_nans(self._flag)
        return self

    def __exit__(self, *exc):
        _set_debug_nans(self._before)
        return False

def _jax_effects_barrier():
    """jax.effects_barrier: wait for pending debug prints and callbacks (arr runs them in order, so there is none)."""
    return None

def linear_transpose(fun, *primals, reduce_axes=()):
    """The transpose of the linear function fun at primals' shapes and dtypes: a function of
    output cotangents returning a tuple with one cotangent per argument (as jax.linear_transpose)."""
    shapes = [zeros(shape(p), asarray(p).dtype) for p in primals]
    def transposed(*cts):
        _, pullback = vjp(fun, *shapes)
        ct = cts[0] if len(cts) == 1 else cts
        return pullback(ct)
    return transposed

def pcast(x, axis_name, to):
    """lax.pcast: a cast between replicated and device-varying types inside shard_map. arr's
    types carry no varying axes, so the value is unchanged."""
    if to not in ("varying", "invariant", "unreduced", "reduced"):
        raise ValueError(f"pcast: to must be 'varying', 'invariant', 'unreduced' or 'reduced', got {to!r}")
    return x

def pvary(x, axis_name):
    """lax.pvary: mark x as varying over axis_name inside shard_map (unchanged: see pcast)."""
    return x

def register_pytree_with_keys(nodetype, flatten_with_keys, unflatten_func, flatten_func=None):
    """Register nodetype as a pytree node from flatten_with_keys(x) -> ((key, child) pairs, aux)
    (the children's key paths are their flattened positions)."""
    if flatten_func is None:
        def flatten_func(x):
            pairs, aux = flatten_with_keys(x)
            return [c for _, c in pairs], aux
    register_pytree_node(nodetype, flatten_func, unflatten_func)
    return nodetype

def register_pytree_with_keys_class(cls):
    """Register a class with tree_flatten_with_keys and tree_unflatten methods as a pytree node."""
    register_pytree_with_keys(cls, lambda x: x.tree_flatten_with_keys(), cls.tree_unflatten)
    return cls

# make_jaxpr's result, as JAX's ClosedJaxpr: shown as its text (unquoted at
# the prompt), `.jaxpr` itself, and str's methods on that text.

class _jaxpr_ClosedJaxprBase:
    def __init__(self, text):
        self._text = text

    @property
    def jaxpr(self):
        return self

    def pretty_print(self, *args, **kwargs):
        return self._text

    def __str__(self):
        return self._text

    def __repr__(self):
        return self._text

    def __contains__(self, s):
        return s in self._text

    def __eq__(self, other):
        return str(other) == self._text

    def __getattr__(self, name):
        return getattr(self._text, name)

_jaxpr_ClosedJaxpr = type("ClosedJaxpr", (_jaxpr_ClosedJaxprBase,), {})

# jit(f).trace(*args): JAX's traced stage: its jaxpr, and lower() on to the
# later stages.

class _stages_Traced:
    def __init__(self, fun, static_argnums, static_argnames, args, kwargs):
        self._lowered = _stages_Lowered(fun, static_argnums, static_argnames, args, kwargs)

    @property
    def jaxpr(self):
        low = self._lowered
        statics = low._static
        dynamic = [a for i, a in enumerate(low._args) if i not in statics]
        def run(*dyn):
            full = list(dyn)
            for i in statics:
                full.insert(i, low._args[i])
            return low._fun(*full, **low._kwargs)
        return make_jaxpr(run)(*dynamic)

    @property
    def out_info(self):
        low = self._lowered
        return eval_shape(low._fun, *low._args, **low._kwargs)

    def lower(self, **kwargs):
        return self._lowered

    def __repr__(self):
        return "<Traced " + self._lowered._fun.__name__ + ">"

# jax.new_ref: mutable arrays, read and written by indexing. A jit whose
# function touches a ref runs it op by op (see `_ref_access`), so every read
# and write happens at each call; under grad and vmap the accesses are traced
# like any other operation.

class Ref:
    def __init__(self, value):
        self._value = asarray(value)
        self._frozen = False

    def _check(self):
        _ref_access()
        if self._frozen:
            raise ValueError("this ref was frozen (jax.freeze): read the array freeze returned")

    def __getitem__(self, idx):
        self._check()
        return self._value if idx is Ellipsis else self._value[idx]

    def __setitem__(self, idx, value):
        self._check()
        v = asarray(value).astype(self._value.dtype)
        if idx is Ellipsis:
            self._value = broadcast_to(v, self._value.shape)
        else:
            self._value = self._value.at[idx].set(v)

    @property
    def shape(self):
        return self._value.shape

    @property
    def dtype(self):
        return self._value.dtype

    @property
    def ndim(self):
        return self._value.ndim

    @property
    def size(self):
        return self._value.size

    def __len__(self):
        return len(self._value)

    def __repr__(self):
        text = repr(self._value)
        return "Ref" + text[5:] if text.startswith("Array") else "Ref(" + text + ")"

def new_ref(init_val, memory_space=None, kind=None):
    """jax.new_ref: a mutable array ref holding init_val (read with r[...], write with r[idx] = v)."""
    return Ref(init_val)

def freeze(ref):
    """jax.freeze: the ref's final value as an array; the ref cannot be used afterwards."""
    value = ref[...]
    ref._frozen = True
    return value

# jax.sharding.auto_axes / explicit_axes: a function run with the mesh axes
# left to the compiler (auto_axes: its inputs are replicated inside, its
# outputs resharded to out_sharding), or one whose inputs are first laid out
# by in_sharding (explicit_axes). The values are those of JAX's; only the
# layouts of the intermediates differ.

def _replicate_leaf(x):
    if not hasattr(x, "sharding"):
        return x
    s = x.sharding
    if type(s).__name__ == "NamedSharding":
        return reshard(x, NamedSharding(s.mesh, PartitionSpec()))
    return x

def _reshard_tree(tree, sharding):
    if sharding is None:
        return tree
    if isinstance(sharding, (tuple, list, dict)):
        return tree_map(lambda x, s: reshard(x, s), tree, sharding, is_leaf=lambda s: s is None or type(s).__name__ in ("PartitionSpec", "NamedSharding"))
    return tree_map(lambda x: reshard(x, sharding), tree)

def auto_axes(fun=None, *, axes=None, out_sharding=None):
    """jax.sharding.auto_axes: fun with the mesh axes (or those of axes) automatic inside; the
    result is laid out by out_sharding (given here or at the call)."""
    if fun is None:
        return lambda f: auto_axes(f, axes=axes, out_sharding=out_sharding)
    default = out_sharding
    def auto_fun(*args, out_sharding=None, **kwargs):
        target = default if out_sharding is None else out_sharding
        out = fun(*tree_map(_replicate_leaf, args), **kwargs)
        return _reshard_tree(out, target)
    return auto_fun

def explicit_axes(fun=None, *, axes=None, in_sharding=None):
    """jax.sharding.explicit_axes: fun with its inputs first laid out by in_sharding (given here
    or at the call), the mesh axes explicit inside."""
    if fun is None:
        return lambda f: explicit_axes(f, axes=axes, in_sharding=in_sharding)
    default = in_sharding
    def explicit_fun(*args, in_sharding=None, **kwargs):
        target = default if in_sharding is None else in_sharding
        if target is not None:
            args = _reshard_tree(args, tuple(target) if isinstance(target, list) else target)
        return fun(*args, **kwargs)
    return explicit_fun

# textwrap: Python's paragraph filling and indentation helpers.

def _textwrap_wrap(text, width=70, **kwargs):
    """textwrap.wrap: the words of text in lines of at most width characters."""
    lines, line = [], ""
    for word in text.split():
        if line and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = word if not line else line + " " + word
    if line:
        lines.append(line)
    return lines

def _textwrap_fill(text, width=70, **kwargs):
    """textwrap.fill: text's words wrapped in lines of at most width characters, one string."""
    return "\n".join(_textwrap_wrap(text, width))

def _textwrap_dedent(text):
    """textwrap.dedent: text without the leading whitespace its non-blank lines share."""
    lines = text.split("\n")
    margins = [len(l) - len(l.lstrip()) for l in lines if l.strip()]
    cut = min(margins) if margins else 0
    return "\n".join(l[cut:] if l.strip() else l.strip(" \t") for l in lines)

def _textwrap_indent(text, prefix):
    """textwrap.indent: prefix added to the start of every non-blank line of text."""
    return "".join(prefix + l if l.strip() else l for l in text.splitlines(True))

# jax.experimental.mesh_utils: device grids for Mesh(...).

def _mesh_utils_create_device_mesh(mesh_shape, devices=None, *, contiguous_submeshes=False,
                                   allow_split_physical_axes=False):
    """mesh_utils.create_device_mesh: the devices (all of them by default) as
    a NumPy array of mesh_shape, in order (virtual devices have no physical
    topology to follow)."""
    if devices is None:
        import jax
        devices = jax.devices()
    shape = tuple(mesh_shape)
    if len(devices) != math_prod(shape):
        raise ValueError(f"Number of devices {len(devices)} must equal the product of mesh_shape {shape}")
    return _np_array(list(devices)).reshape(shape)

def _xla_bridge_backends_are_initialized():
    """jax._src.xla_bridge.backends_are_initialized: arr's devices exist from the start."""
    return True

# jax.flatten_util: a pytree of arrays as one vector.

def _flatten_util_ravel_pytree(pytree):
    """jax.flatten_util.ravel_pytree: the leaves raveled into one vector (of
    their promoted dtype), and the function that rebuilds the tree from one."""
    import jax.numpy as jnp
    leaves, treedef = tree_flatten(pytree)
    leaves = [jnp.asarray(l) for l in leaves]
    shapes = [l.shape for l in leaves]
    dtypes = [l.dtype for l in leaves]
    if leaves:
        flat = jnp.concatenate([jnp.ravel(l).astype(jnp.result_type(*dtypes)) for l in leaves])
    else:
        flat = jnp.zeros((0,), dtype=jnp.float32)

    def unravel(vector):
        out, start = [], 0
        for s, dt in zip(shapes, dtypes):
            n = math_prod(s)
            out.append(jnp.reshape(vector[start:start + n], s).astype(dt))
            start = start + n
        return tree_unflatten(treedef, out)

    return flat, unravel

# open(): text files as Python's file objects (read, iterate, write).

_open_file_class = []

def open(file, mode="r", buffering=-1, encoding=None, errors=None, newline=None, closefd=True, opener=None):
    """open: a text file to read ('r'), write ('w', 'x'), append ('a') or
    update ('r+'); a context manager; its lines by iteration. Binary modes
    are not supported (arr has no bytes)."""
    if "b" in mode:
        raise ValueError(f"open: binary mode '{mode}' is not supported (arr has no bytes type); use numpy.save/load or text modes")
    if not _open_file_class:
        _open_file_class.append(_make_text_file_class())
    return _open_file_class[0](file, mode)

def _make_text_file_class():
    """The class of open()'s files, made at the first open (so that start-up
    does not run it)."""
    class TextIOWrapper:
        def __init__(self, file, mode):
            self.name = file if isinstance(file, str) else str(file)
            self.mode = mode
            self.closed = False
            self._pos = 0
            self._text = ""
            kind = mode.replace("t", "").replace("+", "")
            if kind not in ("r", "w", "a", "x"):
                raise ValueError(f"invalid mode: '{mode}'")
            self._readable = kind == "r" or "+" in mode
            self._writable = kind != "r" or "+" in mode
            if kind == "r":
                self._text = _file_read_text(file)
            elif kind == "x" and _os_path_exists(file):
                raise FileExistsError(f"[Errno 17] File exists: '{self.name}'")
            elif kind in ("w", "x"):
                _file_write_text(file, "")
            elif kind == "a":
                _file_write_text(file, "", append=True)

        def _check(self, reading):
            if self.closed:
                raise ValueError("I/O operation on closed file.")
            if reading and not self._readable:
                raise UnsupportedOperation("not readable")
            if not reading and not self._writable:
                raise UnsupportedOperation("not writable")

        def read(self, size=-1):
            self._check(True)
            end = len(self._text) if size is None or size < 0 else self._pos + size
            out = self._text[self._pos:end]
            self._pos = self._pos + len(out)
            return out

        def readline(self, size=-1):
            self._check(True)
            end = self._text.find("\n", self._pos)
            end = len(self._text) if end < 0 else end + 1
            if size is not None and size >= 0:
                end = min(end, self._pos + size)
            out = self._text[self._pos:end]
            self._pos = end
            return out

        def readlines(self, hint=-1):
            return list(self)

        def __iter__(self):
            self._check(True)
            lines = []
            line = self.readline()
            while line:
                lines.append(line)
                line = self.readline()
            return iter(lines)

        def write(self, s):
            self._check(False)
            if not isinstance(s, str):
                raise TypeError(f"write() argument must be str, not {type(s).__name__}")
            _file_write_text(self.name, s, append=True)
            return len(s)

        def writelines(self, lines):
            for line in lines:
                self.write(line)

        def flush(self):
            pass

        def close(self):
            self.closed = True

        def readable(self):
            return self._readable

        def writable(self):
            return self._writable

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.close()
            return False

        def __repr__(self):
            return f"<_io.TextIOWrapper name='{self.name}' mode='{self.mode}' encoding='UTF-8'>"

    return TextIOWrapper

def _lax_map(f, xs, *, batch_size=None):
    """lax.map: f over the leading axis of xs (a pytree), as a scan: the
    results stacked along a new leading axis (batch_size: that many at a
    time, under vmap)."""
    if batch_size is None:
        return scan(lambda carry, x: (carry, f(x)), None, xs)[1]
    n = tree_leaves(xs)[0].shape[0]
    full = n // batch_size * batch_size
    def batch(x):
        return tree_map(lambda a: a.reshape((-1, batch_size) + a.shape[1:]), x)
    ys = scan(lambda carry, x: (carry, vmap(f)(x)), None, batch(tree_map(lambda a: a[:full], xs)))[1]
    ys = tree_map(lambda a: a.reshape((-1,) + a.shape[2:]), ys)
    if full < n:
        rest = vmap(f)(tree_map(lambda a: a[full:], xs))
        ys = tree_map(lambda a, b: concatenate([a, b]), ys, rest)
    return ys

def pshuffle(x, axis_name, perm):
    """lax.pshuffle: device i along axis_name receives the x of device
    perm[i] (perm a permutation of the axis' indices), as one ppermute."""
    n = axis_size(axis_name)
    perm = [int(p) for p in perm]
    if sorted(perm) != list(range(n)):
        raise ValueError(f"pshuffle: perm {perm} is not a permutation of range({n}), the devices of '{axis_name}'")
    return ppermute(x, axis_name, [(p, i) for i, p in enumerate(perm)])

def pbroadcast(x, axis_name, source):
    """lax.pbroadcast: every device along axis_name receives the x (a
    pytree) of device `source`: a psum in which the other devices add
    zeros."""
    n = axis_size(axis_name)
    if not 0 <= source < n:
        raise ValueError(f"pbroadcast: source {source} is not a device of '{axis_name}' (size {n})")
    mine = axis_index(axis_name) == source
    return tree_map(lambda t: psum(where(mine, t, zeros_like(t)), axis_name), x)

# More of itertools, finite ones as lists (arr's generators are not lazy).

def _itertools_islice(iterable, *args):
    """itertools.islice(iterable, stop) or (iterable, start, stop[, step]): the items from
    start to stop by step, taken one at a time (so it ends an endless iterator)."""
    if len(args) == 1:
        start, stop, step = 0, args[0], 1
    elif len(args) in (2, 3):
        start, stop = args[0], args[1]
        step = args[2] if len(args) == 3 else 1
        start = 0 if start is None else start
        step = 1 if step is None else step
    else:
        raise TypeError(f"islice expected 2 to 4 arguments, got {len(args) + 1}")
    for v in (start, stop):
        if v is not None and (not isinstance(v, int) or v < 0):
            raise ValueError("Indices for islice() must be None or an integer: 0 <= x <= sys.maxsize.")
    if not isinstance(step, int) or step < 1:
        raise ValueError("Step for islice() must be a positive integer or None.")
    return _itertools_islice_items(iter(iterable), start, stop, step)

def _itertools_islice_items(it, start, stop, step):
    """The items islice takes, one at a time: none past the last one it yields."""
    if stop is not None and start >= stop:
        return
    i = 0
    wanted = start
    for x in it:
        if i == wanted:
            yield x
            wanted += step
            if stop is not None and wanted >= stop:
                return
        i += 1

def _lazy_zip(*iterables):
    """zip over a generator: tuples of corresponding items, taken one at a time."""
    its = [iter(x) for x in iterables]
    if not its:
        return
    while True:
        items = []
        for it in its:
            try:
                items.append(next(it))
            except StopIteration:
                return
        yield tuple(items)

def _lazy_enumerate(iterable, start=0):
    """enumerate over a generator: (i, item) pairs, taken one at a time."""
    i = start
    for x in iterable:
        yield (i, x)
        i += 1

def _lazy_map(f, *iterables):
    """map over a generator: f of corresponding items, taken one at a time."""
    for args in _lazy_zip(*iterables):
        yield f(*args)

def _lazy_filter(f, iterable):
    """filter over a generator: the items for which f is true, taken one at a time."""
    for x in iterable:
        if (x if f is None else f(x)):
            yield x

def _itertools_count(start=0, step=1):
    """itertools.count: start, start + step, start + 2 * step, ... without end."""
    n = start
    while True:
        yield n
        n += step

def _itertools_cycle(iterable):
    """itertools.cycle: the items of iterable, again and again (none if it is empty)."""
    saved = []
    for x in iterable:
        yield x
        saved.append(x)
    while saved:
        for x in saved:
            yield x

def _itertools_zip_longest(*iterables, fillvalue=None):
    """itertools.zip_longest: tuples of the items, the shorter ones padded with fillvalue."""
    lists = [list(it) for it in iterables]
    n = max([0] + [len(l) for l in lists])
    return [tuple(l[i] if i < len(l) else fillvalue for l in lists) for i in range(n)]

def _itertools_repeat(obj, times=None):
    """itertools.repeat(obj, times): obj times times; without times, without end."""
    if times is None:
        return _itertools_count_forever(obj)
    return [obj] * max(times, 0)

def _itertools_count_forever(obj):
    """obj again and again (itertools.repeat without times)."""
    while True:
        yield obj

def _itertools_starmap(function, iterable):
    """itertools.starmap: function(*args) for each tuple of args."""
    return [function(*args) for args in iterable]

def _itertools_takewhile(predicate, iterable):
    """itertools.takewhile: the leading items for which predicate holds."""
    out = []
    for x in iterable:
        if not predicate(x):
            break
        out.append(x)
    return out

def _itertools_dropwhile(predicate, iterable):
    """itertools.dropwhile: the items after the leading ones for which predicate holds."""
    items = list(iterable)
    i = 0
    while i < len(items) and predicate(items[i]):
        i += 1
    return items[i:]

def _itertools_combinations_with_replacement(iterable, r):
    """itertools.combinations_with_replacement: r-length sorted selections, items repeatable."""
    pool = list(iterable)
    out = []
    def build(start, prefix):
        if len(prefix) == r:
            out.append(tuple(prefix))
            return None
        for i in range(start, len(pool)):
            build(i, prefix + [pool[i]])
        return None
    if pool or r == 0:
        build(0, [])
    return out

def _itertools_pairwise(iterable):
    """itertools.pairwise: successive overlapping pairs."""
    items = list(iterable)
    return [(items[i], items[i + 1]) for i in range(len(items) - 1)]

def _itertools_batched(iterable, n):
    """itertools.batched: tuples of n items (the last may be shorter)."""
    if n < 1:
        raise ValueError("n must be at least one")
    items = list(iterable)
    return [tuple(items[i:i + n]) for i in range(0, len(items), n)]

def _itertools_compress(data, selectors):
    """itertools.compress: the items of data whose selector is true."""
    return [d for d, s in zip(data, selectors) if s]

def _itertools_filterfalse(predicate, iterable):
    """itertools.filterfalse: the items for which predicate is false."""
    if predicate is None:
        return [x for x in iterable if not x]
    return [x for x in iterable if not predicate(x)]

def _itertools_groupby(iterable, key=None):
    """itertools.groupby: (key, items) for each run of consecutive items with the same key."""
    out = []
    for x in iterable:
        k = x if key is None else key(x)
        if out and out[-1][0] == k:
            out[-1][1].append(x)
        else:
            out.append((k, [x]))
    return out

def _itertools_tee(iterable, n=2):
    """itertools.tee: n independent copies of the items."""
    items = list(iterable)
    return tuple(list(items) for _ in range(n))

# ---- set operations, index conversions, statistics, floating-point parts ----

def isin(element, test_elements, assume_unique=False, invert=False, *, method="auto"):
    """Whether each element of element occurs in test_elements (an array of
    element's shape; invert: whether it does not)."""
    e = asarray(element)
    t = ravel(asarray(test_elements))
    if t.size == 0:
        found = zeros(e.shape, dtype=bool)
    else:
        found = any(e[..., None] == t, axis=-1)
    return logical_not(found) if invert else found

def _set_take(values, keep, size, fill_value):
    """values where keep, in order; with size, the first size of them padded
    with fill_value (fixed shapes, so it runs under jit)."""
    if size is None:
        return values[keep]
    n = values.shape[0]
    if n == 0:
        return full((size,), 0 if fill_value is None else fill_value, values.dtype)
    idx = nonzero(keep, size=size, fill_value=n - 1)[0]
    out = values[idx]
    valid = arange(size) < sum(keep)
    if fill_value is None:
        # JAX's default: the smallest of the results (0 with none).
        out = where(valid, out, 0)
        out = where(valid, out, max(out))
        return where(valid, out, min(out))
    return where(valid, out, asarray(fill_value, values.dtype))

def _first_of_runs(s):
    """For sorted s: whether each element differs from the one before."""
    if s.shape[0] == 0:
        return zeros((0,), dtype=bool)
    return concatenate([asarray([True]), s[1:] != s[:-1]])

def setdiff1d(ar1, ar2, assume_unique=False, *, size=None, fill_value=None):
    """The sorted distinct elements of ar1 that are not in ar2 (with size:
    exactly size of them, padded with fill_value, default 0)."""
    s = sort(ravel(asarray(ar1)))
    keep = _first_of_runs(s) & isin(s, ar2, invert=True)
    return _set_take(s, keep, size, 0 if fill_value is None else fill_value)

def intersect1d(ar1, ar2, assume_unique=False, return_indices=False, *, size=None, fill_value=None):
    """The sorted distinct elements in both ar1 and ar2 (with size: exactly
    size of them, padded with fill_value, default the smallest); with
    return_indices, the first index of each in ar1 and in ar2."""
    a, b = ravel(asarray(ar1)), ravel(asarray(ar2))
    if return_indices:
        if size is not None:
            raise NotImplementedError("intersect1d: return_indices with size is not supported")
        ua, ia = unique(a, return_index=True)
        ub, ib = unique(b, return_index=True)
        both = concatenate([ua, ub])
        order = argsort(both, stable=True)
        aux = both[order]
        same = aux[1:] == aux[:-1]
        values = aux[:-1][same]
        return values, ia[order[:-1][same]], ib[order[1:][same] - ua.shape[0]]
    s = sort(a)
    keep = _first_of_runs(s) & isin(s, b)
    return _set_take(s, keep, size, fill_value)

def union1d(ar1, ar2, *, size=None, fill_value=None):
    """The sorted distinct elements of ar1 and ar2 together (with size: exactly
    size of them, padded with fill_value)."""
    both = concatenate([ravel(asarray(ar1)), ravel(asarray(ar2))])
    return unique(both, size=size, fill_value=fill_value)

def setxor1d(ar1, ar2, assume_unique=False, *, size=None, fill_value=None):
    """The sorted distinct elements in exactly one of ar1 and ar2."""
    a = unique(ravel(asarray(ar1)))
    b = unique(ravel(asarray(ar2)))
    s = sort(concatenate([a, b]))
    n = s.shape[0]
    if n == 0:
        return _set_take(s, zeros((0,), dtype=bool), size, fill_value)
    differs = s[1:] != s[:-1]
    keep = concatenate([asarray([True]), differs]) & concatenate([differs, asarray([True])])
    return _set_take(s, keep, size, 0 if fill_value is None else fill_value)

def unravel_index(indices, shape):
    """The coordinates in an array of shape of each flat index (a tuple of
    arrays; indices out of range are clipped, as JAX's)."""
    i = asarray(indices)
    shape = tuple(shape) if isinstance(shape, (tuple, list)) else (shape,)
    total = 1
    for d in shape:
        total = total * d
    i = clip(where(i < 0, i + total, i), 0, _max2(total - 1, 0))
    out = []
    for d in reversed(shape):
        out.append(i % d if d else i * 0)
        i = i // d if d else i
    return tuple(reversed(out))

def ravel_multi_index(multi_index, dims, mode="raise", order="C"):
    """The flat index of each coordinate tuple in an array of shape dims
    (mode 'clip' or 'wrap' for coordinates out of range)."""
    dims = tuple(dims)
    if len(multi_index) != len(dims):
        raise ValueError(f"ravel_multi_index: {len(multi_index)} coordinate arrays for {len(dims)} dimensions")
    idx = [asarray(m) for m in multi_index]
    if mode == "raise":
        for m, d in zip(idx, dims):
            if bool(any((m < 0) | (m >= d))):
                raise ValueError("invalid entry in coordinates array")
    elif mode == "clip":
        idx = [clip(m, 0, d - 1) for m, d in zip(idx, dims)]
    elif mode == "wrap":
        idx = [m % d for m, d in zip(idx, dims)]
    else:
        raise ValueError(f"ravel_multi_index: mode must be 'raise', 'clip' or 'wrap', not {mode!r}")
    order_dims = list(range(len(dims))) if order == "C" else list(reversed(range(len(dims))))
    flat = zeros(broadcast_shapes(*[m.shape for m in idx]), dtype=int32)
    for k in order_dims:
        flat = flat * dims[k] + idx[k]
    return flat

def cov(m, y=None, rowvar=True, bias=False, ddof=None, fweights=None, aweights=None):
    """The covariance matrix of the variables (rows, or columns with
    rowvar=False) of m (and y), with optional frequency and analytic weights."""
    x = atleast_2d(_inexact(m))
    if not rowvar and x.shape[0] != 1:
        x = x.T
    if y is not None:
        yy = atleast_2d(_inexact(y))
        if not rowvar and yy.shape[0] != 1:
            yy = yy.T
        x = concatenate([x, yy.astype(x.dtype)], axis=0)
    if ddof is None:
        ddof = 0 if bias else 1
    w = None
    if fweights is not None:
        w = asarray(fweights).astype(x.dtype)
    if aweights is not None:
        a = asarray(aweights).astype(x.dtype)
        w = a if w is None else w * a
    if w is None:
        avg = mean(x, axis=1)
        wsum = asarray(x.shape[1], x.dtype)
        fact = wsum - ddof
    else:
        wsum = sum(w)
        avg = sum(x * w, axis=1) / wsum
        if ddof == 0:
            fact = wsum
        elif aweights is None:
            fact = wsum - ddof
        else:
            fact = wsum - ddof * sum(w * asarray(aweights).astype(x.dtype)) / wsum
    xc = x - avg[:, None]
    xw = xc if w is None else xc * w
    c = (xw @ conj(xc).T) / fact
    return squeeze(c)

def corrcoef(x, y=None, rowvar=True):
    """The correlation coefficients of the variables of x (and y): cov
    normalised by the standard deviations, clipped to [-1, 1]."""
    c = cov(x, y, rowvar)
    if c.ndim == 0:
        return c / c
    d = sqrt(real(diagonal(c)))
    c = c / d[:, None] / d[None, :]
    return clip(real(c), -1, 1) if not iscomplexobj(c) else c

def modf(x):
    """The fractional and integral parts of x, each with x's sign."""
    x = _inexact(x)
    whole = trunc(x)
    return x - whole, whole

def frexp(x):
    """The mantissa (in [0.5, 1) in magnitude) and the int32 exponent with
    x == mantissa * 2 ** exponent; 0, inf and nan give themselves and 0."""
    x = _inexact(x)
    finite = isfinite(x) & (x != 0)
    ax = where(finite, abs(x), 1.0)
    e = floor(log2(ax)) + 1
    m = ax * exp2(-e)
    # log2 may round across a power of two: move the mantissa back into range.
    e = where(m >= 1, e + 1, where(m < 0.5, e - 1, e))
    m = ax * exp2(-e)
    return where(finite, sign(x) * m, x), where(finite, e, 0).astype(int32)

def ldexp(x1, x2):
    """x1 * 2 ** x2 (x2 integer)."""
    x1 = _inexact(x1)
    return x1 * exp2(asarray(x2).astype(x1.dtype))

def vander(x, N=None, increasing=False):
    """The Vandermonde matrix of x: columns the powers x ** (N-1) ... x ** 0
    (increasing: x ** 0 first)."""
    x = asarray(x)
    if x.ndim != 1:
        raise ValueError("vander: x must be one-dimensional")
    n = x.shape[0] if N is None else N
    powers = arange(n)
    if not increasing:
        powers = powers[::-1]
    return x[:, None] ** powers[None, :].astype(x.dtype) if n else zeros((x.shape[0], 0), x.dtype)

def polyder(p, m=1):
    """The coefficients of the m-th derivative of the polynomial p (highest
    power first)."""
    p = asarray(p)
    if m < 0:
        raise ValueError("polyder: order of derivative must be non-negative")
    for _ in range(m):
        n = p.shape[0] - 1
        if n <= 0:
            return zeros((0,), p.dtype) if n < 0 else zeros((1,), p.dtype) * 0
        p = p[:-1] * arange(n, 0, -1).astype(p.dtype)
    return p

def unwrap(p, discont=None, axis=-1, period=6.283185307179586):
    """p with jumps larger than discont (default period / 2) along axis
    replaced by their complement modulo period."""
    p = _inexact(p)
    axis = _axis(axis, p.ndim)
    half = period / 2
    discont = half if discont is None else _max2(discont, half)
    dd = diff(p, axis=axis)
    ddmod = (dd + half) % period - half
    ddmod = where((ddmod == -half) & (dd > 0), half, ddmod)
    correction = where(abs(dd) < discont, 0, ddmod - dd)
    zero = zeros_like(take(p, arange(1), axis=axis))
    return p + concatenate([zero, cumsum(correction, axis=axis)], axis=axis)

def fromfunction(function, shape, *, dtype=None, **kwargs):
    """function(*coordinates, **kwargs) on the coordinate arrays of shape."""
    return function(*indices(shape, dtype=float32 if dtype is None else dtype), **kwargs)

def block(arrays):
    """An array assembled from nested lists of blocks: the innermost lists are
    joined along the last axis, the outer ones along the axes before."""
    def depth(x):
        return 1 + depth(x[0]) if isinstance(x, list) and x else (1 if isinstance(x, list) else 0)
    d = depth(arrays)
    def build(x, level):
        if not isinstance(x, list):
            return asarray(x)
        parts = [build(y, level + 1) for y in x]
        rank = _max2(d, max(p.ndim for p in parts))
        parts = [reshape(p, (1,) * (rank - p.ndim) + p.shape) for p in parts]
        return concatenate(parts, axis=level - d)
    return build(arrays, 0) if isinstance(arrays, list) else asarray(arrays)

def bitwise_count(x):
    """The number of 1 bits in the magnitude of each integer (population count)."""
    x = asarray(x)
    v = abs(x).astype(uint32) if x.dtype in (int8, int16, int32) else x.astype(uint32)
    v = v - ((v >> 1) & 0x55555555)
    v = (v & 0x33333333) + ((v >> 2) & 0x33333333)
    v = (v + (v >> 4)) & 0x0F0F0F0F
    return ((v * 0x01010101) >> 24).astype(uint8)

# ---- more of jax.random: JAX's sampling algorithms, for JAX's numbers ----

def _random_shape(shape, *params):
    """The samples' shape: shape, or the parameters' broadcast shape."""
    return broadcast_shapes(*[asarray(p).shape for p in params]) if shape is None else tuple(shape)

def _random_cauchy(key, shape=(), dtype=None):
    """Cauchy samples: tan(pi (u - 1/2)), u in [eps, 1)."""
    dtype = _float_dtype(dtype)
    u = random.uniform(key, shape, dtype, finfo(dtype).eps, 1.0)
    return tan(asarray(3.141592653589793, dtype) * (u - 0.5))

def _random_lognormal(key, sigma=1.0, shape=None, dtype=None):
    """Log-normal samples: exp(sigma * normal)."""
    dtype = _float_dtype(dtype)
    shape = _random_shape(shape, sigma)
    return exp(random.normal(key, shape, dtype) * asarray(sigma).astype(dtype))

def _random_rayleigh(key, scale=1.0, shape=None, dtype=None):
    """Rayleigh samples: scale * sqrt(-2 log u)."""
    dtype = _float_dtype(dtype)
    shape = _random_shape(shape, scale)
    u = random.uniform(key, shape, dtype)
    scale = broadcast_to(asarray(scale).astype(dtype), shape)
    return scale * sqrt(log(u) * -2)

def _random_wald(key, mean, shape=None, dtype=None):
    """Wald (inverse Gaussian) samples, by Michael, Schucany and Haas' method."""
    dtype = _float_dtype(dtype)
    shape = _random_shape(shape, mean)
    k1, k2 = random.split(key)
    mean = broadcast_to(asarray(mean).astype(dtype), shape)
    v = random.normal(k1, shape, dtype)
    z = random.uniform(k2, shape, dtype)
    y = v * v
    y_sq = y * y
    mean_sq = mean * mean
    x = mean + mean_sq * y / 2 - mean / 2 * sqrt(4 * mean * y + mean_sq * y_sq)
    return where(z <= mean / (mean + x), x, mean_sq / x)

def _random_pareto(key, b, shape=None, dtype=None):
    """Pareto samples with shape parameter b: exp(exponential / b)."""
    dtype = _float_dtype(dtype)
    shape = _random_shape(shape, b)
    return exp(random.exponential(key, shape, dtype) / asarray(b).astype(dtype))

def _random_weibull_min(key, scale, concentration, shape=(), dtype=None):
    """Weibull samples: scale * (-log1p(-u)) ** (1 / concentration)."""
    dtype = _float_dtype(dtype)
    u = random.uniform(key, shape, dtype, 0.0, 1.0)
    return power(-log1p(-u), 1.0 / asarray(concentration)) * scale

def _random_geometric(key, p, shape=None, dtype=None):
    """Geometric samples (trials to the first success, from 1):
    floor(log u / log1p(-p)) + 1."""
    p = _inexact(p)
    shape = _random_shape(shape, p)
    u = random.uniform(key, shape, p.dtype)
    u = where(u == 0, 1, u)
    g = floor(log(u) / broadcast_to(log1p(-p), shape)) + 1
    return g.astype(int32 if dtype is None else dtype)

def _random_triangular(key, left, mode, right, shape=None, dtype=None):
    """Triangular samples on [left, right] peaking at mode (inverse CDF)."""
    dtype = _float_dtype(dtype)
    shape = _random_shape(shape, left, mode, right)
    left = broadcast_to(asarray(left).astype(dtype), shape)
    right = broadcast_to(asarray(right).astype(dtype), shape)
    mode = broadcast_to(asarray(mode).astype(dtype), shape)
    fc = (mode - left) / (right - left)
    u = random.uniform(key, shape, dtype)
    out1 = left + sqrt(u * (right - left) * (mode - left))
    out2 = right - sqrt((1 - u) * (right - left) * (right - mode))
    return where(u < fc, out1, out2)

def _random_clone(key):
    """jax.random.clone: the key itself (arr's keys are values; nothing to copy)."""
    return key

# ---- lax and nn extras ----

def _lax_batch_matmul(lhs, rhs, precision=None):
    """Batched matrix products of (..., m, k) and (..., k, n) arrays of equal rank."""
    if lhs.ndim < 2 or lhs.ndim != rhs.ndim:
        raise ValueError(f"batch_matmul: operands must have the same rank >= 2, got {lhs.ndim} and {rhs.ndim}")
    return matmul(lhs, rhs)

def _lax_optimization_barrier(operand):
    """The operand unchanged (a scheduling barrier in XLA; nothing to do here)."""
    return operand

def _lax_reduce(operands, init_values, computation, dimensions):
    """Reduce operands over dimensions with the associative computation,
    starting from init_values (pairwise, so any monoid works)."""
    single = not isinstance(operands, (tuple, list))
    xs = [asarray(operands)] if single else [asarray(o) for o in operands]
    inits = [asarray(init_values)] if single else [asarray(i) for i in init_values]
    dims = sorted([d % xs[0].ndim for d in dimensions], reverse=True)
    def combine(a, b):
        r = computation(a[0], b[0]) if single else computation(tuple(a), tuple(b))
        return [r] if single else list(r)
    for d in dims:
        xs = [moveaxis(x, d, 0) for x in xs]
        while xs[0].shape[0] > 1:
            n = xs[0].shape[0]
            if n % 2:
                xs = [concatenate([x, broadcast_to(i.astype(x.dtype), (1,) + x.shape[1:])]) for x, i in zip(xs, inits)]
            xs = combine([x[0::2] for x in xs], [x[1::2] for x in xs])
        if xs[0].shape[0] == 0:
            xs = [broadcast_to(i.astype(x.dtype), x.shape[1:]) for x, i in zip(xs, inits)]
        else:
            xs = combine([x[0] for x in xs], [broadcast_to(i.astype(x.dtype), x.shape[1:]) for x, i in zip(xs, inits)])
    return xs[0] if single else tuple(xs)

def _nn_identity(x):
    """The identity activation."""
    return x

def _nn_log1mexp(x):
    """log(1 - exp(-x)) for x > 0, accurately on both sides of log 2."""
    x = _inexact(x)
    return where(x < 0.6931471805599453, log(-expm1(-x)), log1p(-exp(-x)))

# ---- NumPy's print options as a context, and its floating-point error state ----

class _np_printoptions:
    """np.printoptions(**options): set_printoptions for a `with` block."""

    def __init__(self, *args, **kwargs):
        self.args = args
        self.kwargs = kwargs

    def __enter__(self):
        self.saved = get_printoptions()
        set_printoptions(*self.args, **self.kwargs)
        return get_printoptions()

    def __exit__(self, *exc):
        set_printoptions(**self.saved)
        return False

_np_error_state = [{"divide": "warn", "over": "warn", "under": "ignore", "invalid": "warn"}]

def _np_seterr(all=None, divide=None, over=None, under=None, invalid=None):
    """np.seterr: how floating-point errors are treated (arr's arrays follow
    IEEE arithmetic and never warn or raise); the previous settings."""
    old = dict(_np_error_state[-1])
    new = dict(old)
    for name, v in (("divide", divide), ("over", over), ("under", under), ("invalid", invalid)):
        v = all if v is None else v
        if v is not None:
            if v not in ("ignore", "warn", "raise", "call", "print", "log"):
                raise ValueError(f"invalid error mode {v!r}")
            new[name] = v
    _np_error_state[-1] = new
    return old

def _np_geterr():
    """np.geterr: the floating-point error settings."""
    return dict(_np_error_state[-1])

class _np_errstate:
    """np.errstate(**settings): seterr for a `with` block (or a decorated function)."""

    def __init__(self, *, call=None, all=None, divide=None, over=None, under=None, invalid=None):
        self.settings = dict(all=all, divide=divide, over=over, under=under, invalid=invalid)

    def __enter__(self):
        self.saved = _np_seterr(**self.settings)
        return self

    def __exit__(self, *exc):
        _np_error_state[-1] = self.saved
        return False

    def __call__(self, f):
        def wrapped(*args, **kwargs):
            with self:
                return f(*args, **kwargs)
        return wrapped

# ---- jax.scipy: special functions, distributions, linear algebra ----

def _jsp_i0e(x):
    """exp(-|x|) i0(x), without overflow."""
    x = _inexact(x)
    return _i0e(abs(x))

def _jsp_xlogy(x, y):
    """x * log(y), 0 where x is 0."""
    x, y = _inexact(x), _inexact(y)
    return where(x == 0, zeros_like(x * y), x * log(where(x == 0, 1, y)))

def _jsp_xlog1py(x, y):
    """x * log1p(y), 0 where x is 0."""
    x, y = _inexact(x), _inexact(y)
    return where(x == 0, zeros_like(x * y), x * log1p(where(x == 0, 0, y)))

def _jsp_logit(p):
    """log(p / (1 - p))."""
    p = _inexact(p)
    return log(p) - log1p(-p)

def _jsp_entr(x):
    """-x log x (0 at 0, -inf below)."""
    x = _inexact(x)
    return where(x > 0, -x * log(where(x > 0, x, 1)), where(x == 0, 0.0, -inf).astype(x.dtype))

def _jsp_rel_entr(x, y):
    """x log(x / y) (0 where x is 0 and y >= 0; inf elsewhere off the domain)."""
    x, y = _inexact(x), _inexact(y)
    ok = (x > 0) & (y > 0)
    v = x * (log(where(ok, x, 1)) - log(where(ok, y, 1)))
    return where(ok, v, where((x == 0) & (y >= 0), 0.0, inf).astype(v.dtype))

def _jsp_kl_div(x, y):
    """x log(x / y) - x + y (y where x is 0 and y >= 0; inf elsewhere off the domain)."""
    x, y = _inexact(x), _inexact(y)
    ok = (x > 0) & (y > 0)
    v = x * (log(where(ok, x, 1)) - log(where(ok, y, 1))) - x + y
    return where(ok, v, where((x == 0) & (y >= 0), y, inf).astype(v.dtype))

def _jsp_ndtr(x):
    """The standard normal CDF."""
    x = _inexact(x)
    return 0.5 * _lax_erfc(-x / 1.4142135623730951)

def _jsp_log_ndtr(x):
    """log of the standard normal CDF, accurate far in the lower tail."""
    x = _inexact(x)
    lower = x < -5.0
    xs = where(lower, x, -5.0)
    z2 = 1.0 / (xs * xs)
    series = 1.0 - z2 + 3.0 * z2 * z2 - 15.0 * z2 * z2 * z2 + 105.0 * z2 * z2 * z2 * z2
    tail = -0.5 * xs * xs - log(-xs) - 0.9189385332046727 + log(series)
    mid = log(_jsp_ndtr(where(lower, 0.0, x)))
    upper = -_jsp_ndtr(-where(lower, 0.0, x))
    return where(lower, tail, where(x > 5.0, log1p(upper), mid))

def _jsp_ndtri(p):
    """The inverse of the standard normal CDF."""
    p = _inexact(p)
    return 1.4142135623730951 * erfinv(2.0 * p - 1.0)

def _jsp_gamma(x):
    """The gamma function (its sign from lgamma's argument)."""
    x = _inexact(x)
    sign = where((x > 0) | (floor(x) % 2 == 0), 1.0, -1.0).astype(x.dtype)
    return sign * exp(lgamma(x))

def _jsp_betaln(a, b):
    """log |B(a, b)|."""
    a, b = _inexact(a), _inexact(b)
    return lgamma(a) + lgamma(b) - lgamma(a + b)

def _jsp_beta(a, b):
    """The beta function."""
    return exp(_jsp_betaln(a, b))

def _jsp_factorial(n, exact=False):
    """n! as a float (0 for negative n)."""
    n = _inexact(n)
    return where(n < 0, 0.0, exp(lgamma(n + 1))).astype(n.dtype)

def _jsp_comb(N, k, exact=False, repetition=False):
    """N choose k as a float (0 off the domain)."""
    N, k = _inexact(N), _inexact(k)
    if repetition:
        N = N + k - 1
    ok = (k >= 0) & (k <= N) & (N >= 0)
    return where(ok, exp(lgamma(N + 1) - lgamma(k + 1) - lgamma(N - k + 1)), 0.0).astype(N.dtype)

def _jsp_poch(z, m):
    """The rising factorial gamma(z + m) / gamma(z)."""
    z, m = _inexact(z), _inexact(m)
    return _jsp_gamma(z + m) / _jsp_gamma(z)

def _jsp_multigammaln(a, d):
    """The log of the multivariate gamma function of dimension d."""
    a = _inexact(a)
    out = asarray(d * (d - 1) / 4.0 * 1.1447298858494002, a.dtype)
    for j in range(1, d + 1):
        out = out + lgamma(a + (1 - j) / 2.0)
    return out

def _jsp_gammainc(a, x):
    """The regularized lower incomplete gamma function P(a, x): its series
    below a + 1, Legendre's continued fraction above (Numerical Recipes)."""
    a, x = _inexact(a), _inexact(x)
    a, x = broadcast_arrays(a, x)
    xs = where(x > 0, x, 1.0)
    front = exp(a * log(xs) - xs - lgamma(a))
    use_series = x < a + 1
    # The series: sum x^n / (a (a + 1) ... (a + n)).
    ap = a
    term = 1.0 / a
    total = term
    for _ in range(120):
        ap = ap + 1
        term = term * xs / ap
        total = total + term
    series = total * front
    # The continued fraction for Q(a, x) (modified Lentz).
    tiny = 1e-30
    b = xs + 1 - a
    c = zeros_like(b) + 1.0 / tiny
    d = 1.0 / where(abs(b) < tiny, tiny, b)
    h = d
    for i in range(1, 120):
        an = -i * (i - a)
        b = b + 2
        d = an * d + b
        d = 1.0 / where(abs(d) < tiny, tiny, d)
        c = b + an / c
        c = where(abs(c) < tiny, tiny, c)
        h = h * d * c
    q = front * h
    p = where(use_series, series, 1.0 - q)
    return where(x <= 0, 0.0, where(isinf(x), 1.0, p)).astype(a.dtype)

def _jsp_gammaincc(a, x):
    """The regularized upper incomplete gamma function Q(a, x) = 1 - P(a, x)."""
    return 1.0 - _jsp_gammainc(a, x)

def _jsp_betainc(a, b, x):
    """The regularized incomplete beta function I_x(a, b) (its continued
    fraction, on the side where it converges)."""
    a, b, x = _inexact(a), _inexact(b), _inexact(x)
    a, b, x = broadcast_arrays(a, b, x)
    swap = x > (a + 1) / (a + b + 2)
    aa, bb = where(swap, b, a), where(swap, a, b)
    xx = where(swap, 1 - x, x)
    xx = clip(xx, 1e-30, 1.0)
    front = exp(aa * log(xx) + bb * log1p(-xx) - _jsp_betaln(aa, bb)) / aa
    tiny = 1e-30
    c = ones_like(xx)
    d = 1 - (aa + bb) * xx / (aa + 1)
    d = 1.0 / where(abs(d) < tiny, tiny, d)
    h = d
    for m in range(1, 120):
        m2 = 2 * m
        num = m * (bb - m) * xx / ((aa + m2 - 1) * (aa + m2))
        d = 1 + num * d
        d = 1.0 / where(abs(d) < tiny, tiny, d)
        c = 1 + num / c
        c = where(abs(c) < tiny, tiny, c)
        h = h * d * c
        num = -(aa + m) * (aa + bb + m) * xx / ((aa + m2) * (aa + m2 + 1))
        d = 1 + num * d
        d = 1.0 / where(abs(d) < tiny, tiny, d)
        c = 1 + num / c
        c = where(abs(c) < tiny, tiny, c)
        h = h * d * c
    r = front * h
    r = where(swap, 1 - r, r)
    return where(x <= 0, 0.0, where(x >= 1, 1.0, r)).astype(a.dtype)

_ZETA_A = [12.0, -720.0, 30240.0, -1209600.0, 47900160.0, -1.8924375803183791606e9,
           7.47242496e10, -2.950130727918164224e12, 1.1646782814350067249e14,
           -4.5979787224074726105e15, 1.8152105401943546773e17, -7.1661652561756670113e18]

def _jsp_zeta(x, q=None):
    """The Hurwitz zeta function sum (q + k)^-x (Riemann's with q = 1), by
    Euler-Maclaurin summation (Cephes' coefficients)."""
    x = _inexact(x)
    q = ones_like(x) if q is None else _inexact(q)
    x, q = broadcast_arrays(x, q)
    s = power(q, -x)
    a = q
    for _ in range(9):
        a = a + 1
        b = power(a, -x)
        s = s + b
    w = a
    s = s + b * w / (x - 1) - 0.5 * b
    fac = ones_like(x)
    k = 0.0
    for coef in _ZETA_A:
        fac = fac * (x + k)
        b = b / w
        s = s + fac * b / coef
        k = k + 1
        fac = fac * (x + k)
        b = b / w
        k = k + 1
    return where(x == 1, inf, where(x < 1, nan, s)).astype(x.dtype)

def _jsp_polygamma(n, x):
    """The n-th derivative of digamma."""
    x = _inexact(x)
    n = asarray(n)
    nf = n.astype(x.dtype)
    sign = where(n % 2 == 1, 1.0, -1.0).astype(x.dtype)
    high = sign * exp(lgamma(nf + 1)) * _jsp_zeta(nf + 1, x)
    return where(n == 0, digamma(x), high)

# jax.scipy.stats: each distribution a namespace of functions.

def _jsp_z(x, loc, scale):
    x = _inexact(x)
    return (x - loc) / scale, asarray(scale).astype(x.dtype)

def _jsp_norm_logpdf(x, loc=0, scale=1):
    z, scale = _jsp_z(x, loc, scale)
    return -0.5 * z * z - log(scale) - 0.9189385332046727

def _jsp_norm_pdf(x, loc=0, scale=1):
    return exp(_jsp_norm_logpdf(x, loc, scale))

def _jsp_norm_cdf(x, loc=0, scale=1):
    return _jsp_ndtr(_jsp_z(x, loc, scale)[0])

def _jsp_norm_logcdf(x, loc=0, scale=1):
    return _jsp_log_ndtr(_jsp_z(x, loc, scale)[0])

def _jsp_norm_sf(x, loc=0, scale=1):
    return _jsp_ndtr(-_jsp_z(x, loc, scale)[0])

def _jsp_norm_logsf(x, loc=0, scale=1):
    return _jsp_log_ndtr(-_jsp_z(x, loc, scale)[0])

def _jsp_norm_ppf(q, loc=0, scale=1):
    return loc + scale * _jsp_ndtri(q)

def _jsp_norm_isf(q, loc=0, scale=1):
    return loc - scale * _jsp_ndtri(q)

def _jsp_uniform_logpdf(x, loc=0, scale=1):
    x = _inexact(x)
    inside = (x >= loc) & (x <= loc + scale)
    return where(inside, -log(asarray(scale).astype(x.dtype)), -inf).astype(x.dtype)

def _jsp_uniform_pdf(x, loc=0, scale=1):
    return exp(_jsp_uniform_logpdf(x, loc, scale))

def _jsp_uniform_cdf(x, loc=0, scale=1):
    z, _ = _jsp_z(x, loc, scale)
    return clip(z, 0.0, 1.0)

def _jsp_uniform_ppf(q, loc=0, scale=1):
    q = _inexact(q)
    return where((q >= 0) & (q <= 1), loc + q * scale, nan).astype(q.dtype)

def _jsp_expon_logpdf(x, loc=0, scale=1):
    z, scale = _jsp_z(x, loc, scale)
    return where(z >= 0, -z - log(scale), -inf).astype(z.dtype)

def _jsp_expon_pdf(x, loc=0, scale=1):
    return exp(_jsp_expon_logpdf(x, loc, scale))

def _jsp_expon_cdf(x, loc=0, scale=1):
    z, _ = _jsp_z(x, loc, scale)
    return where(z < 0, 0.0, -expm1(-z)).astype(z.dtype)

def _jsp_expon_sf(x, loc=0, scale=1):
    z, _ = _jsp_z(x, loc, scale)
    return where(z < 0, 1.0, exp(-z)).astype(z.dtype)

def _jsp_expon_ppf(q, loc=0, scale=1):
    q = _inexact(q)
    return loc - scale * log1p(-q)

def _jsp_laplace_logpdf(x, loc=0, scale=1):
    z, scale = _jsp_z(x, loc, scale)
    return -0.6931471805599453 - log(scale) - abs(z)

def _jsp_laplace_pdf(x, loc=0, scale=1):
    return exp(_jsp_laplace_logpdf(x, loc, scale))

def _jsp_laplace_cdf(x, loc=0, scale=1):
    z, _ = _jsp_z(x, loc, scale)
    return where(z < 0, 0.5 * exp(z), 1 - 0.5 * exp(-z))

def _jsp_logistic_logpdf(x, loc=0, scale=1):
    z, scale = _jsp_z(x, loc, scale)
    return -abs(z) - 2.0 * log1p(exp(-abs(z))) - log(scale)

def _jsp_logistic_pdf(x, loc=0, scale=1):
    return exp(_jsp_logistic_logpdf(x, loc, scale))

def _jsp_logistic_cdf(x, loc=0, scale=1):
    return sigmoid(_jsp_z(x, loc, scale)[0])

def _jsp_logistic_sf(x, loc=0, scale=1):
    return sigmoid(-_jsp_z(x, loc, scale)[0])

def _jsp_logistic_ppf(q, loc=0, scale=1):
    return loc + scale * _jsp_logit(q)

def _jsp_logistic_isf(q, loc=0, scale=1):
    return loc - scale * _jsp_logit(q)

def _jsp_cauchy_logpdf(x, loc=0, scale=1):
    z, scale = _jsp_z(x, loc, scale)
    return -1.1447298858494002 - log(scale) - log1p(z * z)

def _jsp_cauchy_pdf(x, loc=0, scale=1):
    return exp(_jsp_cauchy_logpdf(x, loc, scale))

def _jsp_cauchy_cdf(x, loc=0, scale=1):
    z, _ = _jsp_z(x, loc, scale)
    return 0.5 + arctan(z) / 3.141592653589793

def _jsp_cauchy_ppf(q, loc=0, scale=1):
    q = _inexact(q)
    return loc + scale * tan(3.141592653589793 * (q - 0.5))

def _jsp_t_logpdf(x, df, loc=0, scale=1):
    z, scale = _jsp_z(x, loc, scale)
    df = asarray(df).astype(z.dtype)
    return (lgamma((df + 1) / 2) - lgamma(df / 2) - 0.5 * log(df * 3.141592653589793)
            - log(scale) - (df + 1) / 2 * log1p(z * z / df))

def _jsp_t_pdf(x, df, loc=0, scale=1):
    return exp(_jsp_t_logpdf(x, df, loc, scale))

def _jsp_beta_logpdf(x, a, b, loc=0, scale=1):
    y, scale = _jsp_z(x, loc, scale)
    a, b = asarray(a).astype(y.dtype), asarray(b).astype(y.dtype)
    v = _jsp_xlogy(a - 1, y) + _jsp_xlog1py(b - 1, -y) - _jsp_betaln(a, b) - log(scale)
    return where((y >= 0) & (y <= 1), v, -inf).astype(v.dtype)

def _jsp_beta_pdf(x, a, b, loc=0, scale=1):
    return exp(_jsp_beta_logpdf(x, a, b, loc, scale))

def _jsp_beta_cdf(x, a, b, loc=0, scale=1):
    y, _ = _jsp_z(x, loc, scale)
    return _jsp_betainc(a, b, clip(y, 0.0, 1.0))

def _jsp_gamma_logpdf(x, a, loc=0, scale=1):
    y, scale = _jsp_z(x, loc, scale)
    a = asarray(a).astype(y.dtype)
    v = _jsp_xlogy(a - 1, y) - y - lgamma(a) - log(scale)
    return where(y >= 0, v, -inf).astype(v.dtype)

def _jsp_gamma_pdf(x, a, loc=0, scale=1):
    return exp(_jsp_gamma_logpdf(x, a, loc, scale))

def _jsp_gamma_cdf(x, a, loc=0, scale=1):
    y, _ = _jsp_z(x, loc, scale)
    return _jsp_gammainc(a, maximum(y, 0.0))

def _jsp_chi2_logpdf(x, df, loc=0, scale=1):
    y, scale = _jsp_z(x, loc, scale)
    k = asarray(df).astype(y.dtype) / 2
    v = _jsp_xlogy(k - 1, y) - y / 2 - lgamma(k) - k * 0.6931471805599453 - log(scale)
    return where(y >= 0, v, -inf).astype(v.dtype)

def _jsp_chi2_pdf(x, df, loc=0, scale=1):
    return exp(_jsp_chi2_logpdf(x, df, loc, scale))

def _jsp_chi2_cdf(x, df, loc=0, scale=1):
    y, _ = _jsp_z(x, loc, scale)
    return _jsp_gammainc(asarray(df) / 2.0, maximum(y, 0.0) / 2)

def _jsp_poisson_logpmf(k, mu, loc=0):
    x = _inexact(k) - loc
    mu = asarray(mu).astype(x.dtype)
    v = _jsp_xlogy(x, mu) - lgamma(x + 1) - mu
    return where((x >= 0) & (x == floor(x)), v, -inf).astype(v.dtype)

def _jsp_poisson_pmf(k, mu, loc=0):
    return exp(_jsp_poisson_logpmf(k, mu, loc))

def _jsp_poisson_cdf(k, mu, loc=0):
    x = _inexact(k) - loc
    return where(x < 0, 0.0, _jsp_gammaincc(floor(maximum(x, 0.0)) + 1, mu)).astype(x.dtype)

def _jsp_bernoulli_logpmf(k, p, loc=0):
    x = _inexact(k) - loc
    p = asarray(p).astype(x.dtype)
    return where(x == 0, log1p(-p), where(x == 1, log(p), -inf)).astype(x.dtype)

def _jsp_bernoulli_pmf(k, p, loc=0):
    return exp(_jsp_bernoulli_logpmf(k, p, loc))

def _jsp_bernoulli_cdf(k, p, loc=0):
    x = _inexact(k) - loc
    p = asarray(p).astype(x.dtype)
    return where(x < 0, 0.0, where(x < 1, 1 - p, 1.0)).astype(x.dtype)

def _jsp_geom_logpmf(k, p, loc=0):
    x = _inexact(k) - loc
    p = asarray(p).astype(x.dtype)
    v = _jsp_xlog1py(x - 1, -p) + log(p)
    return where(x >= 1, v, -inf).astype(v.dtype)

def _jsp_geom_pmf(k, p, loc=0):
    return exp(_jsp_geom_logpmf(k, p, loc))

def _jsp_dirichlet_logpdf(x, alpha):
    x, alpha = _inexact(x), _inexact(alpha)
    return sum(_jsp_xlogy(alpha - 1, x), axis=0) + lgamma(sum(alpha)) - sum(lgamma(alpha))

def _jsp_dirichlet_pdf(x, alpha):
    return exp(_jsp_dirichlet_logpdf(x, alpha))

def _jsp_multivariate_normal_logpdf(x, mean, cov, allow_singular=None):
    """log N(x; mean, cov) for x of shape (..., d), by the Cholesky factor of cov."""
    x = _inexact(x)
    mean = asarray(mean).astype(x.dtype)
    cov = asarray(cov).astype(x.dtype)
    d = x.shape[-1] if x.ndim else 1
    if cov.ndim < 2:
        cov = cov * eye(d, dtype=x.dtype)
    L = cholesky(cov)
    diff = (x - mean)[..., None]
    y = _jsp_solve_triangular(L, diff, lower=True)[..., 0]
    return (-0.5 * sum(y * y, axis=-1) - sum(log(diagonal(L, axis1=-2, axis2=-1)), axis=-1)
            - d * 0.9189385332046727)

def _jsp_multivariate_normal_pdf(x, mean, cov, allow_singular=None):
    return exp(_jsp_multivariate_normal_logpdf(x, mean, cov))

# jax.scipy.linalg

def _jsp_solve_triangular(a, b, trans=0, lower=False, unit_diagonal=False, overwrite_b=False, debug=None, check_finite=True):
    """x with a @ x = b for triangular a (trans 1 or 'T': a.T @ x = b; 2 or
    'C': the conjugate transpose), by substitution."""
    a = _inexact(a)
    b = asarray(b).astype(a.dtype)
    if trans in (1, "T"):
        a, lower = swapaxes(a, -1, -2), not lower
    elif trans in (2, "C"):
        a, lower = conj(swapaxes(a, -1, -2)), not lower
    vector = b.ndim == a.ndim - 1
    if vector:
        b = b[..., None]
    n = a.shape[-1]
    rows = [None] * n
    order = range(n) if lower else range(n - 1, -1, -1)
    for i in order:
        acc = b[..., i, :]
        for j in (range(i) if lower else range(i + 1, n)):
            acc = acc - a[..., i, j, None] * rows[j]
        rows[i] = acc if unit_diagonal else acc / a[..., i, i, None]
    x = stack(rows, axis=-2)
    return x[..., 0] if vector else x

def _jsp_cholesky(a, lower=False, overwrite_a=False, check_finite=True):
    """The Cholesky factor of a: upper (a = U^H U) unless lower."""
    L = cholesky(a)
    return L if lower else conj(swapaxes(L, -1, -2))

def _jsp_cho_factor(a, lower=False, overwrite_a=False, check_finite=True):
    """(the Cholesky factor, lower) for cho_solve."""
    return _jsp_cholesky(a, lower), lower

def _jsp_cho_solve(c_and_lower, b, overwrite_b=False, check_finite=True):
    """x with a @ x = b, from cho_factor(a)."""
    c, lower = c_and_lower
    L = c if lower else conj(swapaxes(c, -1, -2))
    y = _jsp_solve_triangular(L, b, lower=True)
    return _jsp_solve_triangular(conj(swapaxes(L, -1, -2)), y, lower=False)

_PADE13 = [64764752532480000.0, 32382376266240000.0, 7771770303897600.0, 1187353796428800.0,
           129060195264000.0, 10559470521600.0, 670442572800.0, 33522128640.0, 1323241920.0,
           40840800.0, 960960.0, 16380.0, 182.0, 1.0]

def _jsp_expm(A, *, upper_triangular=False, max_squarings=16):
    """The matrix exponential: the degree-13 Pade approximant of A / 2^s,
    squared s times (Higham's scaling and squaring)."""
    A = _inexact(A)
    n = A.shape[-1]
    norm1 = max(sum(abs(A), axis=-2))
    s = 0
    theta = 5.371920351148152
    if bool(norm1 > theta):
        s = min(int(ceil(log2(norm1 / theta))), max_squarings)
    A = A / (2.0 ** s)
    I = broadcast_to(eye(n, dtype=A.dtype), A.shape)
    b = _PADE13
    A2 = A @ A
    A4 = A2 @ A2
    A6 = A4 @ A2
    U = A @ (A6 @ (b[13] * A6 + b[11] * A4 + b[9] * A2) + b[7] * A6 + b[5] * A4 + b[3] * A2 + b[1] * I)
    V = A6 @ (b[12] * A6 + b[10] * A4 + b[8] * A2) + b[6] * A6 + b[4] * A4 + b[2] * A2 + b[0] * I
    R = solve(V - U, V + U)
    for _ in range(s):
        R = R @ R
    return R

def _jsp_block_diag(*arrs):
    """The block-diagonal matrix of the given matrices (scalars and vectors
    count as 1 x 1 and 1 x n)."""
    mats = [atleast_2d(asarray(a)) for a in arrs]
    if not mats:
        return zeros((1, 0))
    dtype = result_type(*mats)
    rows = sum([m.shape[0] for m in mats])
    cols = sum([m.shape[1] for m in mats])
    out = zeros((rows, cols), dtype)
    r = c = 0
    for m in mats:
        out = out.at[r:r + m.shape[0], c:c + m.shape[1]].set(m.astype(dtype))
        r, c = r + m.shape[0], c + m.shape[1]
    return out

def _jsp_toeplitz(c, r=None):
    """The Toeplitz matrix with first column c and first row r (default conj(c))."""
    c = ravel(asarray(c))
    r = conj(c) if r is None else ravel(asarray(r))
    vals = concatenate([c[::-1], r[1:].astype(c.dtype)])
    i = arange(c.shape[0])[:, None]
    j = arange(r.shape[0])[None, :]
    return vals[c.shape[0] - 1 - i + j]

def _jsp_qr(a, overwrite_a=False, lwork=None, mode="full", pivoting=False, check_finite=True):
    """scipy's qr: (Q, R) complete by default ('economic' for the reduced
    form, 'r' for R alone)."""
    if pivoting:
        raise NotImplementedError("qr: pivoting=True is not supported")
    if mode == "r":
        return (qr(a, mode="r"),)
    return qr(a, mode="complete" if mode == "full" else "reduced")

def _jsp_solve(a, b, lower=False, overwrite_a=False, overwrite_b=False, check_finite=True, assume_a="gen"):
    """x with a @ x = b."""
    return solve(a, b)

def _jsp_eigh(a, b=None, lower=True, eigvals_only=False, **kwargs):
    """Eigenvalues (ascending) and eigenvectors of a Hermitian matrix."""
    if b is not None:
        raise NotImplementedError("eigh: the generalized problem (b=...) is not supported")
    w, v = eigh(a, UPLO="L" if lower else "U")
    return w if eigvals_only else (w, v)

def _jsp_svd(a, full_matrices=True, compute_uv=True, overwrite_a=False, check_finite=True, lapack_driver="gesdd"):
    return svd(a, full_matrices=full_matrices, compute_uv=compute_uv)

def _tree_broadcast(prefix_tree, full_tree, is_leaf=None):
    """jax.tree.broadcast: prefix_tree with each of its leaves repeated over
    the subtree of full_tree at its place."""
    prefix = tree_leaves_with_path(prefix_tree, is_leaf=is_leaf)
    def pick(path, _):
        for p, v in prefix:
            if tuple(path[:len(p)]) == tuple(p):
                return v
        raise ValueError("tree.broadcast: prefix_tree is not a tree prefix of full_tree")
    return tree_map_with_path(pick, full_tree, is_leaf=is_leaf)

def custom_gradient(fun):
    """jax.custom_gradient: fun returns (value, vjp), vjp taking the output's
    cotangent to one per argument; the result's gradient is vjp's (a
    custom_vjp whose backward pass is the vjp fun returned)."""
    pending = []
    def primal(*args):
        return fun(*args)[0]
    def fwd(*args):
        out, vjp = fun(*args)
        pending.append(vjp)
        return out, ()
    def bwd(res, g):
        # custom_vjp traces the backward pass right after the forward one.
        cts = pending.pop()(g)
        return tuple(cts) if isinstance(cts, (tuple, list)) else (cts,)
    f = custom_vjp(primal)
    f.defvjp(fwd, bwd)
    return wraps(fun)(f)

def _sharding_AbstractMesh(axis_sizes, axis_names, axis_types=None):
    """jax.sharding.AbstractMesh: a mesh of axis sizes and names without
    chosen devices; arr lays it over the first devices, as make_mesh does."""
    return make_mesh(tuple(axis_sizes), tuple(axis_names), axis_types=axis_types)

def _sharding_use_abstract_mesh(mesh):
    """jax.sharding.use_abstract_mesh: the mesh as the context mesh for a `with` block."""
    return use_mesh(mesh)

# ---------------------------------------------------------------------------
# jax.experimental.checkify: checks as values. The trace that records them
# and their messages are the runtime's (`_checkify_run`, `_checkify_bind`,
# `_checkify_message`); here are JAX's API and the Error pytree.

_checkify_JaxRuntimeError = type("JaxRuntimeError", (ValueError,), {})

# The error categories; `errors=` takes a set of them.
class _checkify_FailedCheckError:
    _category = "user"

class _checkify_NaNError:
    _category = "nan"

class _checkify_DivisionByZeroError:
    _category = "div"

class _checkify_OOBError:
    _category = "index"

_checkify_user_checks = frozenset([_checkify_FailedCheckError])
_checkify_nan_checks = frozenset([_checkify_NaNError])
_checkify_index_checks = frozenset([_checkify_OOBError])
_checkify_div_checks = frozenset([_checkify_DivisionByZeroError])
_checkify_float_checks = _checkify_nan_checks | _checkify_div_checks
_checkify_automatic_checks = _checkify_float_checks | _checkify_index_checks
_checkify_all_checks = _checkify_automatic_checks | _checkify_user_checks

class _checkify_ErrorBase:
    """The errors a checkified function met: `get()` the first one's
    message (None if none), `throw()` it as a JaxRuntimeError. Under vmap
    each example has its own."""

    def __init__(self, records):
        # (category, info, failed, payload): failed is a boolean array of
        # the batch's shape (() unbatched), payload a list of arrays.
        self._records = records

    def tree_flatten(self):
        leaves = [(r[2], r[3]) for r in self._records]
        meta = tuple((r[0], r[1]) for r in self._records)
        return leaves, meta

    @classmethod
    def tree_unflatten(cls, meta, leaves):
        return cls([(m[0], m[1], l[0], l[1]) for m, l in zip(meta, leaves)])

    def _batch_shape(self):
        for r in self._records:
            return tuple(r[2].shape)
        return ()

    def _message_at(self, r, idx):
        payload = [p[idx] if len(idx) else p for p in r[3]]
        return _checkify_message(r[0], r[1], payload)

    def _first(self, idx):
        for r in self._records:
            if bool(r[2][idx] if len(idx) else r[2]):
                return self._message_at(r, idx)
        return None

    def get(self):
        """The message of the first failed check, or None."""
        shape = self._batch_shape()
        if shape == ():
            return self._first(())
        lines = []
        for idx in _checkify_indices(shape):
            m = self._first(idx)
            if m is not None:
                lines.append("at mapped index " + ", ".join(str(i) for i in idx) + ": " + m)
        return "\n".join(lines) if lines else None

    def get_exception(self):
        m = self.get()
        return None if m is None else _checkify_JaxRuntimeError(m)

    def throw(self):
        """Raise the first failure (under vmap: the last failing example's)."""
        shape = self._batch_shape()
        if shape == ():
            m = self._first(())
        else:
            m = None
            for r in self._records:
                hits = [idx for idx in _checkify_indices(shape) if bool(r[2][idx])]
                if hits:
                    m = self._message_at(r, hits[-1])
                    break
        if m is not None:
            raise _checkify_JaxRuntimeError(m)

    def __str__(self):
        return "Error(" + str(self.get()) + ")"

    def __repr__(self):
        return self.__str__()

_checkify_Error = register_pytree_node_class(type("Error", (_checkify_ErrorBase,), {}))

def _checkify_indices(shape):
    """Every index of an array of this shape, in order."""
    out = [()]
    for n in shape:
        out = [i + (k,) for i in out for k in range(n)]
    return out

def _checkify_categories(errors):
    names = set()
    for e in errors:
        names.add(e._category)
    return names

def _checkify_checkify(f, errors=_checkify_user_checks):
    """checkify.checkify: f returning (Error, its result). `check`s in f
    become the Error's records instead of raising; `errors` adds
    automatic checks (nan_checks, div_checks, index_checks)."""
    cats = _checkify_categories(errors)

    def checked(*args, **kwargs):
        out, records = _checkify_run(f, args, kwargs, "nan" in cats, "div" in cats, "index" in cats)
        kept = [r for r in records if r[0] in cats]
        return _checkify_Error(kept), out

    return checked

def _checkify_is_scalar_pred(pred):
    if isinstance(pred, bool):
        return True
    return hasattr(pred, "shape") and tuple(pred.shape) == () and str(pred.dtype) == "bool"

def _checkify_check(pred, msg, *fmt_args, debug=False, **fmt_kwargs):
    """checkify.check: add an error with msg (a format string over the
    array arguments) if pred is False. Outside checkify a failed check
    raises at once (eagerly) or is an error to stage (jit)."""
    if not _checkify_is_scalar_pred(pred):
        name = "debug_check" if debug else "check"
        raise TypeError(f"{name} takes a scalar pred as argument, got {pred}")
    for a in tree_leaves((fmt_args, fmt_kwargs)):
        if not (hasattr(a, "shape") and hasattr(a, "dtype")):
            raise TypeError("Formatting arguments to checkify.check need to be PyTrees of "
                            f"arrays, but got {a!r} of type {type(a)}.")
    if debug and not _checkify_active():
        return None
    names = tuple(fmt_kwargs.keys())
    payload = list(fmt_args) + [fmt_kwargs[k] for k in names]
    m = _checkify_bind("user", (msg, len(fmt_args), names), logical_not(asarray(pred)), payload)
    if m is not None:
        raise _checkify_JaxRuntimeError(m)

def _checkify_debug_check(pred, msg, *fmt_args, **fmt_kwargs):
    """checkify.debug_check: a check that only checkify sees (a no-op elsewhere)."""
    _checkify_check(pred, msg, *fmt_args, debug=True, **fmt_kwargs)

def _checkify_check_error(error):
    """Raise the error's first failure; under checkify, record it instead."""
    if not isinstance(error, _checkify_Error):
        raise TypeError(f"check_error takes an Error as argument, got type {type(error)} instead.")
    if not _checkify_active():
        return error.throw()
    for r in error._records:
        m = _checkify_bind(r[0], r[1], r[2], r[3])
        if m is not None:
            raise _checkify_JaxRuntimeError(m)

# jax.scipy.optimize: BFGS and L-BFGS over a strong-Wolfe line search, and
# jax.scipy.linalg's LU factorisation (lu, lu_factor, lu_solve)

_jsp_OptimizeResults = namedtuple("OptimizeResults", "x success status fun jac hess_inv nfev njev nit")
_jsp_LineSearchResults = namedtuple("_LineSearchResults", "failed nit nfev ngev k a_k f_k g_k status")
_jsp_ZoomState = namedtuple("_ZoomState", "done failed j a_lo phi_lo dphi_lo a_hi phi_hi dphi_hi a_rec phi_rec a_star phi_star dphi_star g_star nfev ngev")
_jsp_LineSearchState = namedtuple("_LineSearchState", "done failed i a_i1 phi_i1 dphi_i1 nfev ngev a_star phi_star dphi_star g_star")
_jsp_BFGSState = namedtuple("_BFGSResults", "converged failed k nfev ngev nhev x_k f_k g_k H_k old_old_fval status line_search_status")
_jsp_LBFGSState = namedtuple("LBFGSResults", "converged failed k nfev ngev x_k f_k g_k s_history y_history rho_history gamma status ls_status")

def _jsp_norm(x, ord=None):
    """norm(x, ord), for the optimizers whose option named norm hides it."""
    return norm(x, ord=ord)

def _jsp_select(state, bit, new):
    """state with each field named in new replaced by new's value where bit holds."""
    return state._replace(**{k: where(bit, v, getattr(state, k)) for k, v in new.items()})

def _jsp_cubicmin(a, fa, fpa, b, fb, c, fc):
    """The minimiser of the cubic through (a, fa) with slope fpa at a, (b, fb) and (c, fc)."""
    dtype = result_type(a, fa, fpa, b, fb, c, fc)
    db, dc = b - a, c - a
    denom = (db * dc) ** 2 * (db - dc)
    d1 = stack([stack([dc ** 2, -db ** 2]), stack([-dc ** 3, db ** 3])]).astype(dtype)
    d2 = stack([fb - fa - fpa * db, fc - fa - fpa * dc]).astype(dtype)
    coef = dot(d1, d2) / denom
    A, B = coef[0], coef[1]
    return a + (-B + sqrt(B * B - 3. * A * fpa)) / (3. * A)

def _jsp_quadmin(a, fa, fpa, b, fb):
    """The minimiser of the parabola through (a, fa) with slope fpa at a and (b, fb)."""
    db = b - a
    B = (fb - fa - fpa * db) / (db ** 2)
    return a - fpa / (2. * B)

def _jsp_zoom(phi_dphi, wolfe_one, wolfe_two, a_lo, phi_lo, dphi_lo, a_hi, phi_hi, dphi_hi, g_0, pass_through):
    """Zoom into [a_lo, a_hi] for a step with the strong Wolfe conditions
    (Nocedal and Wright's algorithm 3.6): cubic, else quadratic, else
    bisection steps, at most 30 of them."""
    state = _jsp_ZoomState(done=False, failed=False, j=0, a_lo=a_lo, phi_lo=phi_lo, dphi_lo=dphi_lo,
                           a_hi=a_hi, phi_hi=phi_hi, dphi_hi=dphi_hi, a_rec=(a_lo + a_hi) / 2.,
                           phi_rec=(phi_lo + phi_hi) / 2., a_star=1., phi_star=phi_lo, dphi_star=dphi_lo,
                           g_star=g_0, nfev=0, ngev=0)
    def body(s):
        dalpha = s.a_hi - s.a_lo
        lo, hi = minimum(s.a_hi, s.a_lo), maximum(s.a_hi, s.a_lo)
        cchk, qchk = 0.2 * dalpha, 0.1 * dalpha
        threshold = 1e-5 if finfo(asarray(dalpha).dtype).bits < 64 else 1e-10
        s = s._replace(failed=s.failed | (dalpha <= threshold))
        a_cubic = _jsp_cubicmin(s.a_lo, s.phi_lo, s.dphi_lo, s.a_hi, s.phi_hi, s.a_rec, s.phi_rec)
        use_cubic = (s.j > 0) & (a_cubic > lo + cchk) & (a_cubic < hi - cchk)
        a_quad = _jsp_quadmin(s.a_lo, s.phi_lo, s.dphi_lo, s.a_hi, s.phi_hi)
        use_quad = (~use_cubic) & (a_quad > lo + qchk) & (a_quad < hi - qchk)
        use_bisection = (~use_cubic) & (~use_quad)
        a_j = where(use_cubic, a_cubic, s.a_rec)
        a_j = where(use_quad, a_quad, a_j)
        a_j = where(use_bisection, (s.a_lo + s.a_hi) / 2., a_j)
        phi_j, dphi_j, g_j = phi_dphi(a_j)
        phi_j = phi_j.astype(asarray(s.phi_lo).dtype)
        dphi_j = dphi_j.astype(asarray(s.dphi_lo).dtype)
        g_j = g_j.astype(asarray(s.g_star).dtype)
        s = s._replace(nfev=s.nfev + 1, ngev=s.ngev + 1)
        hi_to_j = wolfe_one(a_j, phi_j) | (phi_j >= s.phi_lo)
        star_to_j = wolfe_two(dphi_j) & (~hi_to_j)
        hi_to_lo = (dphi_j * (s.a_hi - s.a_lo) >= 0.) & (~hi_to_j) & (~star_to_j)
        lo_to_j = (~hi_to_j) & (~star_to_j)
        s = _jsp_select(s, hi_to_j, dict(a_hi=a_j, phi_hi=phi_j, dphi_hi=dphi_j, a_rec=s.a_hi, phi_rec=s.phi_hi))
        s = _jsp_select(s, star_to_j, dict(a_star=a_j, phi_star=phi_j, dphi_star=dphi_j, g_star=g_j))
        s = s._replace(done=star_to_j | s.done)
        s = _jsp_select(s, hi_to_lo, dict(a_hi=s.a_lo, phi_hi=s.phi_lo, dphi_hi=s.dphi_lo, a_rec=s.a_hi, phi_rec=s.phi_hi))
        s = _jsp_select(s, lo_to_j & ~hi_to_lo, dict(a_rec=s.a_lo, phi_rec=s.phi_lo))
        s = _jsp_select(s, lo_to_j, dict(a_lo=a_j, phi_lo=phi_j, dphi_lo=dphi_j))
        s = s._replace(j=s.j + 1)
        return s._replace(failed=s.failed | (s.j >= 30))
    return while_loop(lambda s: (~s.done) & (~pass_through) & (~s.failed), body, state)

def _jsp_line_search(f, xk, pk, old_fval=None, old_old_fval=None, gfk=None, c1=1e-4, c2=0.9, maxiter=20):
    """An inexact line search along pk from xk for a step with the strong
    Wolfe conditions (Nocedal and Wright's algorithm 3.5), as
    jax.scipy.optimize.line_search: the first trial step from old_old_fval,
    doubled until the minimum is bracketed, then zoomed."""
    xk, pk = _inexact(asarray(xk)), _inexact(asarray(pk))
    dtype = result_type(xk, pk)
    xk, pk = xk.astype(dtype), pk.astype(dtype)
    def phi_dphi(t):
        t = asarray(t, dtype=pk.dtype)
        phi, g = value_and_grad(f)(xk + t * pk)
        return phi, real(dot(g, pk)), g
    evaluated = old_fval is None or gfk is None
    if evaluated:
        phi_0, dphi_0, gfk = phi_dphi(0)
    else:
        phi_0, dphi_0 = old_fval, real(dot(gfk, pk))
    if old_old_fval is not None:
        candidate = 1.01 * 2 * (phi_0 - old_old_fval) / dphi_0
        start_value = where(candidate > 1, 1.0, candidate)
    else:
        start_value = 1
    def wolfe_one(a_i, phi_i):
        return phi_i > phi_0 + c1 * a_i * dphi_0
    def wolfe_two(dphi_i):
        return abs(dphi_i) <= -c2 * dphi_0
    state = _jsp_LineSearchState(done=asarray(False), failed=asarray(False), i=1, a_i1=0., phi_i1=phi_0,
                                 dphi_i1=dphi_0, nfev=1 if evaluated else 0, ngev=1 if evaluated else 0,
                                 a_star=0., phi_star=phi_0, dphi_star=dphi_0, g_star=gfk)
    keys = ("a_star", "phi_star", "dphi_star", "g_star")
    def body(s):
        a_i = where(s.i == 1, start_value, s.a_i1 * 2.)
        phi_i, dphi_i, g_i = phi_dphi(a_i)
        s = s._replace(nfev=s.nfev + 1, ngev=s.ngev + 1)
        star_to_zoom1 = wolfe_one(a_i, phi_i) | ((phi_i >= s.phi_i1) & (s.i > 1))
        star_to_i = wolfe_two(dphi_i) & (~star_to_zoom1)
        star_to_zoom2 = (dphi_i >= 0.) & (~star_to_zoom1) & (~star_to_i)
        zoom1 = _jsp_zoom(phi_dphi, wolfe_one, wolfe_two, s.a_i1, s.phi_i1, s.dphi_i1,
                          a_i, phi_i, dphi_i, gfk, ~star_to_zoom1)
        s = s._replace(nfev=s.nfev + zoom1.nfev, ngev=s.ngev + zoom1.ngev)
        zoom2 = _jsp_zoom(phi_dphi, wolfe_one, wolfe_two, a_i, phi_i, dphi_i,
                          s.a_i1, s.phi_i1, s.dphi_i1, gfk, ~star_to_zoom2)
        s = s._replace(nfev=s.nfev + zoom2.nfev, ngev=s.ngev + zoom2.ngev)
        s = _jsp_select(s, star_to_zoom1, {k: getattr(zoom1, k) for k in keys})
        s = s._replace(done=star_to_zoom1 | s.done, failed=(star_to_zoom1 & zoom1.failed) | s.failed)
        s = _jsp_select(s, star_to_i, dict(a_star=a_i, phi_star=phi_i, dphi_star=dphi_i, g_star=g_i))
        s = s._replace(done=star_to_i | s.done)
        s = _jsp_select(s, star_to_zoom2, {k: getattr(zoom2, k) for k in keys})
        s = s._replace(done=star_to_zoom2 | s.done, failed=(star_to_zoom2 & zoom2.failed) | s.failed)
        return s._replace(i=s.i + 1, a_i1=a_i, phi_i1=phi_i, dphi_i1=dphi_i)
    state = while_loop(lambda s: (~s.done) & (s.i <= maxiter) & (~s.failed), body, state)
    status = where(state.failed, asarray(1), where(state.i > maxiter, asarray(3), asarray(0)))
    # A step under 1e-8 would stall below 64 bits: it is floored (keeping its sign).
    alpha_k = asarray(state.a_star)
    if finfo(alpha_k.dtype).bits != 64:
        alpha_k = where(abs(alpha_k) < 1e-8, sign(alpha_k) * 1e-8, alpha_k)
    return _jsp_LineSearchResults(failed=state.failed | (~state.done), nit=state.i - 1, nfev=state.nfev,
                                  ngev=state.ngev, k=state.i, a_k=alpha_k, f_k=state.phi_star,
                                  g_k=state.g_star, status=status)

def _jsp_minimize_bfgs(fun, x0, maxiter=None, norm=inf, gtol=1e-5, line_search_maxiter=10):
    """BFGS (Nocedal and Wright's algorithm 6.1) from the identity as the
    inverse Hessian, stopping when the gradient's norm-norm is under gtol."""
    order = norm
    if maxiter is None:
        maxiter = size(x0) * 200
    d = x0.shape[0]
    f_0, g_0 = value_and_grad(fun)(x0)
    state = _jsp_BFGSState(converged=_jsp_norm(g_0, ord=order) < gtol, failed=False, k=0, nfev=1, ngev=1,
                           nhev=0, x_k=x0, f_k=f_0, g_k=g_0, H_k=eye(d, dtype=x0.dtype),
                           old_old_fval=f_0 + _jsp_norm(g_0) / 2, status=0, line_search_status=0)
    def body(s):
        p_k = -dot(s.H_k, s.g_k)
        ls = _jsp_line_search(fun, s.x_k, p_k, old_fval=s.f_k, old_old_fval=s.old_old_fval, gfk=s.g_k,
                              maxiter=line_search_maxiter)
        s = s._replace(nfev=s.nfev + ls.nfev, ngev=s.ngev + ls.ngev, failed=ls.failed, line_search_status=ls.status)
        s_k = ls.a_k * p_k
        y_k = ls.g_k - s.g_k
        rho_k = reciprocal(dot(y_k, s_k))
        w = eye(d, dtype=rho_k.dtype) - rho_k * (s_k[:, None] * y_k[None, :])
        H = dot(dot(w, s.H_k), w.T) + rho_k * s_k[:, None] * s_k[None, :]
        H = where(isfinite(rho_k), H, s.H_k)
        return s._replace(converged=_jsp_norm(ls.g_k, ord=order) < gtol, k=s.k + 1, x_k=s.x_k + s_k,
                          f_k=ls.f_k, g_k=ls.g_k, H_k=H, old_old_fval=s.f_k)
    state = while_loop(lambda s: (~s.converged) & (~s.failed) & (s.k < maxiter), body, state)
    status = where(state.converged, 0, where(state.k == maxiter, 1, where(state.failed, 2 + state.line_search_status, -1)))
    return state._replace(status=status)

def _jsp_two_loop_recursion(state):
    """L-BFGS's search direction: minus the inverse-Hessian estimate of the
    history times the gradient (the history's unused slots skipped)."""
    dtype = state.rho_history.dtype
    m = len(state.rho_history)
    used = where(state.k < m, state.k, m)
    q = -conj(state.g_k)
    a_his = zeros_like(state.rho_history)
    for i in range(m - 1, -1, -1):
        live = i >= m - used
        a_i = state.rho_history[i] * real(dot(conj(state.s_history[i]), q)).astype(dtype)
        a_his = where(live, a_his.at[i].set(a_i), a_his)
        q = where(live, q - a_i * conj(state.y_history[i]), q)
    q = state.gamma * q
    for i in range(m):
        live = i >= m - used
        b_i = state.rho_history[i] * real(dot(state.y_history[i], q)).astype(dtype)
        q = where(live, q + (a_his[i] - b_i) * state.s_history[i], q)
    return q

def _jsp_minimize_lbfgs(fun, x0, maxiter=None, norm=inf, maxcor=10, ftol=2.220446049250313e-09, gtol=1e-05,
                        maxfun=None, maxgrad=None, maxls=20):
    """L-BFGS (Nocedal and Wright's algorithm 7.5) with a history of maxcor pairs."""
    order = norm
    d = len(x0)
    dtype = x0.dtype
    if maxiter is None and maxfun is None and maxgrad is None:
        maxiter = d * 200
    f_0, g_0 = value_and_grad(fun)(x0)
    state = _jsp_LBFGSState(converged=asarray(False), failed=asarray(False), k=0, nfev=1, ngev=1, x_k=x0,
                            f_k=f_0, g_k=g_0, s_history=zeros((maxcor, d), dtype=dtype),
                            y_history=zeros((maxcor, d), dtype=dtype), rho_history=zeros((maxcor,), dtype=dtype),
                            gamma=1., status=0, ls_status=0)
    def roll_in(history, new):
        return roll(history, -1, axis=0).at[-1].set(new)
    def body(s):
        p_k = _jsp_two_loop_recursion(s)
        ls = _jsp_line_search(fun, s.x_k, p_k, old_fval=s.f_k, gfk=s.g_k, maxiter=maxls)
        s_k = asarray(ls.a_k).astype(p_k.dtype) * p_k
        y_k = ls.g_k - s.g_k
        rho_k_inv = real(dot(y_k, s_k))
        rho_k = reciprocal(rho_k_inv).astype(y_k.dtype)
        gamma = rho_k_inv / real(dot(conj(y_k), y_k))
        status = asarray(0)
        status = where(s.f_k - ls.f_k < ftol, 4, status)
        if maxgrad is not None:
            status = where(s.ngev >= maxgrad, 3, status)
        if maxfun is not None:
            status = where(s.nfev >= maxfun, 2, status)
        if maxiter is not None:
            status = where(s.k >= maxiter, 1, status)
        status = where(ls.failed, 5, status)
        converged = _jsp_norm(ls.g_k, ord=order) < gtol
        return s._replace(converged=converged, failed=(status > 0) & (~converged), k=s.k + 1,
                          nfev=s.nfev + ls.nfev, ngev=s.ngev + ls.ngev, x_k=(s.x_k + s_k).astype(s.x_k.dtype),
                          f_k=ls.f_k.astype(s.f_k.dtype), g_k=ls.g_k.astype(s.g_k.dtype),
                          s_history=roll_in(s.s_history, s_k), y_history=roll_in(s.y_history, y_k),
                          rho_history=roll_in(s.rho_history, rho_k), gamma=gamma.astype(s.g_k.dtype),
                          status=where(converged, 0, status), ls_status=ls.status)
    return while_loop(lambda s: (~s.converged) & (~s.failed), body, state)

def _jsp_minimize(fun, x0, args=(), *, method, tol=None, options=None):
    """jax.scipy.optimize.minimize: fun(x, *args) minimised from x0 by
    method "BFGS" (or "l-bfgs-experimental-do-not-rely-on-this"), as an
    OptimizeResults; options are the method's (maxiter, gtol, norm, ...)."""
    if options is None:
        options = {}
    if not isinstance(args, tuple):
        raise TypeError("args argument to jax.scipy.optimize.minimize must be a tuple, got {}".format(args))
    fun_with_args = lambda x: fun(x, *args)
    if method.lower() == "bfgs":
        r = _jsp_minimize_bfgs(fun_with_args, x0, **options)
        return _jsp_OptimizeResults(x=r.x_k, success=r.converged & logical_not(r.failed), status=r.status,
                                    fun=r.f_k, jac=r.g_k, hess_inv=r.H_k, nfev=r.nfev, njev=r.ngev, nit=r.k)
    if method.lower() == "l-bfgs-experimental-do-not-rely-on-this":
        r = _jsp_minimize_lbfgs(fun_with_args, x0, **options)
        return _jsp_OptimizeResults(x=r.x_k, success=r.converged & logical_not(r.failed), status=r.status,
                                    fun=r.f_k, jac=r.g_k, hess_inv=None, nfev=r.nfev, njev=r.ngev, nit=r.k)
    raise ValueError(f"Method {method} not recognized")

def _jsp_getrf(a):
    """The LU factorisation of a (..., m, n) with partial pivoting, as
    LAPACK's getrf: (lu, pivots, permutation), the unit-lower L below lu's
    diagonal and U on and above it, pivots[j] the row swapped with row j at
    step j (the first row with the column's largest magnitude), a[perm] = L @ U."""
    a = _inexact(asarray(a))
    if a.ndim < 2:
        raise ValueError(f"Argument to LU decomposition must have ndims >= 2, got shape {a.shape}")
    m, n = a.shape[-2], a.shape[-1]
    batch = tuple(a.shape[:-2])
    rows = arange(m, dtype=int32)
    perm = broadcast_to(rows, batch + (m,))
    pivots = []
    for j in range(min(m, n)):
        p = (argmax(abs(a[..., j:, j]), axis=-1) + j).astype(int32)
        pivots.append(p)
        row_p = take_along_axis(a, broadcast_to(p[..., None, None], batch + (1, n)), axis=-2)
        row_j = a[..., j:j + 1, :]
        at_p = rows[:, None] == p[..., None, None]
        a = where(rows[:, None] == j, row_p, where(at_p, row_j, a))
        perm_p = take_along_axis(perm, p[..., None], axis=-1)
        perm_j = perm[..., j:j + 1]
        perm = where(rows == j, perm_p, where(rows == p[..., None], perm_j, perm))
        if j + 1 < m:
            pivot = a[..., j, j, None]
            below = a[..., j + 1:, j]
            # LAPACK scales by the pivot's reciprocal, and leaves a zero column alone.
            safe = where(pivot == 0, ones_like(pivot), pivot)
            below = where(pivot == 0, below, below * (1 / safe))
            a = a.at[..., j + 1:, j].set(below)
            if j + 1 < n:
                a = a.at[..., j + 1:, j + 1:].add(-(below[..., :, None] * a[..., j, None, j + 1:]))
    piv = stack(pivots, axis=-1) if pivots else zeros(batch + (0,), dtype=int32)
    return a, piv, perm

def _jsp_lu_factor(a, overwrite_a=False, check_finite=True):
    """(lu, piv) for lu_solve: L (unit diagonal) below lu's diagonal, U on and
    above it, piv[j] the row swapped with row j (LAPACK's getrf, 0-based)."""
    lu, piv, _ = _jsp_getrf(a)
    return lu, piv

def _jsp_lu(a, permute_l=False, overwrite_a=False, check_finite=True):
    """(P, L, U) with a = P @ L @ U, partial pivoting; (P @ L, U) with permute_l."""
    lu, _, perm = _jsp_getrf(a)
    m, n = lu.shape[-2], lu.shape[-1]
    k = min(m, n)
    p = real((perm[..., None, :] == arange(m, dtype=int32)[:, None]).astype(lu.dtype))
    l = tril(lu, -1)[..., :, :k] + eye(m, k, dtype=lu.dtype)
    u = triu(lu)[..., :k, :]
    if permute_l:
        return matmul(p, l), u
    return p, l, u

def _jsp_lu_substitute(a, b, lower, unit_diagonal):
    """x with a @ x = b for triangular a and b of shape (..., n, k), column by
    column as BLAS's trsm: each solved row scaled by its diagonal's
    reciprocal, then taken from the rows still to solve."""
    n = a.shape[-1]
    acc = [b[..., i, :] for i in range(n)]
    rows = [None] * n
    for i in (range(n) if lower else range(n - 1, -1, -1)):
        x = acc[i] if unit_diagonal else acc[i] * (1 / a[..., i, i, None])
        rows[i] = x
        for j in (range(i + 1, n) if lower else range(i)):
            acc[j] = acc[j] - a[..., j, i, None] * x
    return stack(rows, axis=-2)

def _jsp_lu_solve_core(lu, perm, b, trans):
    """x with a @ x = b (trans 0), a.T @ x = b (1) or a^H @ x = b (2) for b of
    shape (..., n, k), from a's factors (lu, perm) of the same batch shape."""
    if trans == 0:
        x = take_along_axis(b, broadcast_to(perm[..., :, None], perm.shape + (b.shape[-1],)), axis=-2)
        x = _jsp_lu_substitute(lu, x, True, True)
        return _jsp_lu_substitute(lu, x, False, False)
    if trans in (1, 2):
        lu_t = swapaxes(lu, -1, -2)
        if trans == 2:
            lu_t = conj(lu_t)
        x = _jsp_lu_substitute(lu_t, b, True, False)
        x = _jsp_lu_substitute(lu_t, x, False, True)
        inverse = argsort(perm, axis=-1).astype(int32)
        return take_along_axis(x, broadcast_to(inverse[..., :, None], inverse.shape + (x.shape[-1],)), axis=-2)
    raise ValueError(f"'trans' value must be 0, 1, or 2, got {trans}")

def _jsp_lu_solve(lu_and_piv, b, trans=0, overwrite_b=False, check_finite=True):
    """x with a @ x = b (trans 0), a.T @ x = b (1) or a^H @ x = b (2), from
    lu_factor(a); b of shape (n,) or (..., n, k), batches broadcast."""
    lu, piv = lu_and_piv
    lu, b = _inexact(asarray(lu)), asarray(b)
    dtype = result_type(lu, b)
    lu, b = lu.astype(dtype), b.astype(dtype)
    piv = asarray(piv)
    m = lu.shape[-2]
    if lu.ndim < 2 or lu.shape[-1] != m:
        raise ValueError(f"last two dimensions of LU decomposition must be equal, got shape {lu.shape}")
    # The permutation of the pivots' swaps.
    perm = broadcast_to(arange(m, dtype=int32), tuple(piv.shape[:-1]) + (m,))
    rows = arange(m, dtype=int32)
    for i in range(piv.shape[-1]):
        j = piv[..., i, None].astype(int32)
        x, y = perm[..., i:i + 1], take_along_axis(perm, j, axis=-1)
        perm = where(rows == i, y, where(rows == j, x, perm))
    vector = b.ndim == 1 or (lu.ndim == b.ndim + 1 and lu.shape[-1] == b.shape[-1])
    if vector:
        b = b[..., None]
    batch = broadcast_shapes(tuple(lu.shape[:-2]), tuple(perm.shape[:-1]), tuple(b.shape[:-2]))
    lu = broadcast_to(lu, batch + tuple(lu.shape[-2:]))
    perm = broadcast_to(perm, batch + (m,))
    b = broadcast_to(b, batch + tuple(b.shape[-2:]))
    x = _jsp_lu_solve_core(lu, perm, b, trans)
    return x[..., 0] if vector else x

# ---- bits of uint8 arrays ----

def unpackbits(a, axis=None, count=None, bitorder="big"):
    """The bits of a uint8 array, 8 per element along axis (of the flattened
    array if None), most significant first unless bitorder='little'."""
    a = asarray(a)
    if a.dtype != uint8:
        raise TypeError(f"Expected an input array of unsigned byte data type, got {a.dtype}")
    if bitorder not in ("big", "little"):
        raise ValueError("bitorder must be either 'little' or 'big'")
    if axis is None:
        a = ravel(a)
        axis = 0
    axis = axis + a.ndim if axis < 0 else axis
    shifts = arange(7, -1, -1) if bitorder == "big" else arange(8)
    bits = (expand_dims(a, axis + 1) >> shifts.astype(uint8).reshape((8,) + (1,) * (a.ndim - axis - 1))) & 1
    shape = a.shape[:axis] + (a.shape[axis] * 8,) + a.shape[axis + 1:]
    out = reshape(bits.astype(uint8), shape)
    if count is not None:
        n = shape[axis]
        keep = count if count >= 0 else n + count
        if keep <= n:
            out = _along(out, axis, 0, _max2(keep, 0))
        else:
            out = _pad_pairs_axis(out, axis, keep - n)
    return out

def _pad_pairs_axis(x, axis, n):
    """x with n zeros after its end along axis."""
    widths = [(0, 0)] * x.ndim
    widths[axis] = (0, n)
    return pad(x, widths)

def packbits(a, axis=None, bitorder="big"):
    """Groups of 8 bits (nonzero: 1) of a bool or integer array packed into
    uint8 along axis (of the flattened array if None), padded with zeros."""
    a = asarray(a)
    if axis is None:
        a = ravel(a)
        axis = 0
    axis = axis + a.ndim if axis < 0 else axis
    n = a.shape[axis]
    bits = (a != 0).astype(uint8)
    if n % 8:
        bits = _pad_pairs_axis(bits, axis, 8 - n % 8)
    groups = bits.shape[axis] // 8
    bits = reshape(bits, bits.shape[:axis] + (groups, 8) + bits.shape[axis + 1:])
    shifts = arange(7, -1, -1) if bitorder == "big" else arange(8)
    weights = (ones(8, dtype=uint8) << shifts.astype(uint8)).reshape((8,) + (1,) * (bits.ndim - axis - 2))
    return sum(bits * weights, axis=axis + 1, dtype=uint8)

def _promote_types_x64(a, b):
    """result_type of two dtypes with 64-bit dtypes kept: JAX's promote_types
    does not truncate them without jax_enable_x64 (its result_type does)."""
    was = _x64_enabled()
    _set_x64(True)
    try:
        return result_type(a, b)
    finally:
        _set_x64(was)

def _np_linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0):
    """num evenly spaced values from start to stop, as numpy.linspace computes
    them (start + arange(num) * step in the operands' float type, the last
    value set to stop; jax.numpy's differs in its last bits)."""
    if num < 0:
        raise ValueError(f"Number of samples, {num}, must be non-negative.")
    div = (num - 1) if endpoint else num
    start, stop = asarray(start), asarray(stop)
    dt = result_type(start, stop, float(num))
    delta = (stop - start).astype(dt)
    y = arange(num, dtype=dt).reshape((-1,) + (1,) * delta.ndim)
    if div > 0:
        step = delta / div
        if any(step == 0):
            y = y / div * delta
        else:
            y = y * step
    else:
        step = nan
        y = y * delta
    y = y + start
    if endpoint and num > 1:
        y[-1] = stop
    if axis != 0:
        y = moveaxis(y, 0, axis)
    if dtype is not None:
        if issubdtype(dtype, integer):
            y = floor(y)
        y = y.astype(dtype)
    return (y, step) if retstep else y

def _det_jax(a):
    """det as jax.numpy computes it: the cofactor products for 2x2 and 3x3
    matrices, sign * exp(logdet) of the LU factors for larger ones."""
    n = a.shape[-1]
    if n == 2:
        return a[..., 0, 0] * a[..., 1, 1] - a[..., 0, 1] * a[..., 1, 0]
    if n == 3:
        return (a[..., 0, 0] * a[..., 1, 1] * a[..., 2, 2] +
                a[..., 0, 1] * a[..., 1, 2] * a[..., 2, 0] +
                a[..., 0, 2] * a[..., 1, 0] * a[..., 2, 1] -
                a[..., 0, 2] * a[..., 1, 1] * a[..., 2, 0] -
                a[..., 0, 0] * a[..., 1, 2] * a[..., 2, 1] -
                a[..., 0, 1] * a[..., 1, 0] * a[..., 2, 2])
    return _det_lu(a)

def _det_lu(a):
    """sign * exp(logdet) of the LU factors (NumPy's det at every size)."""
    sign, logdet = slogdet(a)
    return sign * exp(logdet)

def _np_det(a):
    """The determinant, as numpy.linalg.det computes it (from slogdet)."""
    return _det_lu(_square(a, "det"))

def _pivot_div(x, p):
    """x / p, and 0 where the pivot p is 0 (its column is all zeros under
    partial pivoting: LAPACK's getrf skips it, and a singular matrix's
    determinant is 0 rather than NaN)."""
    nonzero = p != 0
    return where(nonzero, x / where(nonzero, p, 1), 0)

def _np_histogram(a, bins=10, range=None, weights=None, density=None):
    """(counts, edges), as numpy.histogram: int64 counts without weights or density."""
    counts, edges = histogram(a, bins, range, weights, density)
    if weights is None and not density:
        counts = counts.astype(int64)
    return counts, edges
