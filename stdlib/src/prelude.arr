# The prelude: NumPy and jax.nn functions written in arr itself.
# Everything defined here becomes a builtin (users may shadow it).

def relu(x):
    """Rectified linear unit: max(x, 0), elementwise. Its derivative at 0 is
    0, as JAX's (a select, not maximum, whose derivative splits ties)."""
    x = asarray(x)
    return where(x > 0, x, where(isnan(x), x, 0))

def sigmoid(x):
    """Logistic sigmoid 1 / (1 + exp(-x)), computed stably."""
    return logistic(x)

def gelu(x, approximate=True):
    """Gaussian error linear unit (tanh approximation by default, as jax.nn.gelu)."""
    if approximate:
        return 0.5 * x * (1.0 + tanh(0.7978845608028654 * (x + 0.044715 * x ** 3)))
    return 0.5 * x * (1.0 + erf(x / 1.4142135623730951))

def softplus(x):
    """log(1 + exp(x)), computed stably."""
    return logaddexp(x, 0.0)

@custom_jvp
def logaddexp(a, b):
    """log(exp(a) + exp(b)) without overflow. Its derivative is JAX's rule
    (each input weighted by exp(input - output): 1/2 each where they tie)."""
    m = maximum(a, b)
    delta = a - b
    # Infinities of the same sign (and NaNs) give a + b, as JAX's.
    return _where(isnan(delta), a + b, m + log1p(exp(-abs(delta))))

@logaddexp.defjvp
def _logaddexp_jvp(primals, tangents):
    a, b = primals
    ta, tb = tangents
    out = logaddexp(a, b)
    # Infinities as 0 inside the weights, as JAX's (exp(inf - inf) is no weight).
    fin = lambda v: _where(isinf(v), 0.0, v)
    return out, ta * exp(fin(a) - fin(out)) + tb * exp(fin(b) - fin(out))

# `where` under another name, for functions whose `where=` parameter hides it.
_where = where

def logsumexp(x, axis=None, keepdims=False, b=None, return_sign=False, where=None):
    """log(sum(exp(x))) along axis, shifted by the maximum for stability.
    Its derivative is the softmax (a custom_jvp rule), exact also where x is -inf.
    b scales each exp(x) (log|sum(b exp(x))|, with its sign when return_sign);
    where= keeps only some elements."""
    if b is not None or return_sign or where is not None:
        return _logsumexp_scaled(x, axis, keepdims, b, return_sign, where)

    @custom_jvp
    def lse(x):
        m = stop_gradient(max(x, axis=axis, keepdims=True))
        m = _where(isfinite(m), m, 0.0)
        return log(sum(exp(x - m), axis=axis, keepdims=True)) + m

    @lse.defjvp
    def lse_jvp(primals, tangents):
        x, = primals
        t, = tangents
        out = lse(x)
        return out, sum(t * exp(x - out), axis=axis, keepdims=True)

    out = lse(x)
    if keepdims:
        return out
    return squeeze(out, axis=axis)

def _logsumexp_scaled(x, axis, keepdims, b, return_sign, where_):
    """logsumexp with scale factors b, a sign, or a mask, as jax.nn.logsumexp."""
    x = asarray(x)
    if not (x.dtype == float16 or x.dtype == bfloat16 or x.dtype == float32 or x.dtype == float64 or x.dtype == complex64):
        x = x.astype(float32)
    if b is not None:
        b = asarray(b)
        x = where(b != 0, x, -inf)
    m = max(x, axis=axis, keepdims=True, where=where_, initial=-inf)
    m = stop_gradient(where(isfinite(m), m, 0.0))
    e = exp(x - m)
    if b is not None:
        e = e * b
    s = sum(e, axis=axis, keepdims=keepdims, where=where_)
    sgn = sign(s)
    if return_sign or x.dtype != complex64:
        s = abs(s)
    out = log(s) + (m if keepdims else squeeze(m, axis=axis) if axis is not None else reshape(m, ()))
    if return_sign:
        return (out, stop_gradient(sgn))
    if b is not None and x.dtype != complex64:
        out = where(sgn < 0, nan, out)
    return out

def softmax(x, axis=-1):
    """exp(x) / sum(exp(x)) along axis, shifted by the maximum for stability.
    Differentiated by its own rule (custom_jvp): y * (t - sum(y * t))."""
    @custom_jvp
    def sm(x):
        e = exp(x - stop_gradient(max(x, axis=axis, keepdims=True)))
        return e / sum(e, axis=axis, keepdims=True)

    @sm.defjvp
    def sm_jvp(primals, tangents):
        x, = primals
        t, = tangents
        y = sm(x)
        return y, y * (t - sum(y * t, axis=axis, keepdims=True))

    return sm(x)

def log_softmax(x, axis=-1):
    """x - logsumexp(x) along axis. Differentiated by its own rule
    (custom_jvp): t - sum(softmax(x) * t)."""
    @custom_jvp
    def lsm(x):
        shifted = x - stop_gradient(max(x, axis=axis, keepdims=True))
        return shifted - log(sum(exp(shifted), axis=axis, keepdims=True))

    @lsm.defjvp
    def lsm_jvp(primals, tangents):
        x, = primals
        t, = tangents
        y = lsm(x)
        return y, t - sum(exp(y) * t, axis=axis, keepdims=True)

    return lsm(x)

def var(x, axis=None, keepdims=False, ddof=0):
    """Variance along axis: mean of squared deviations (ddof: delta degrees of freedom)."""
    x = asarray(x)
    m = mean(x, axis=axis, keepdims=True)
    d = x - m
    n = size(x) / size(m)
    return sum(d * d, axis=axis, keepdims=keepdims) / (n - ddof)

def std(x, axis=None, keepdims=False, ddof=0):
    """Standard deviation along axis: sqrt(var(x))."""
    return sqrt(var(x, axis=axis, keepdims=keepdims, ddof=ddof))

def one_hot(x, num_classes, dtype=float32):
    """One-hot encoding of integer labels: result shape x.shape + (num_classes,)."""
    # iota, not arange: a negative or non-integer num_classes is an error, as in JAX.
    return (asarray(x)[..., None] == iota(int32, (num_classes,))).astype(dtype)

def outer(a, b):
    """Outer product of two vectors (flattened first)."""
    return ravel(a)[:, None] * ravel(b)[None, :]

def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """True if every |a - b| <= atol + rtol * |b| (as isclose)."""
    return bool(all(isclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan)))

def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """Elementwise |a - b| <= atol + rtol * |b| for finite b, as NumPy: equal infinities are close, NaNs only with equal_nan."""
    return ((abs(a - b) <= atol + rtol * abs(b)) & isfinite(b)) | (a == b) | ((isnan(a) & isnan(b)) if equal_nan else False)

def linspace(start, stop, num=50, endpoint=True, dtype=None):
    """num evenly spaced values from start to stop (inclusive if endpoint), as jax.numpy.linspace."""
    div = (num - 1) if endpoint else num
    if num == 0:
        out = zeros((0,))
    elif div > 0:
        # Times the reciprocal, as XLA computes JAX's iota / div: the same bits.
        step = arange(num, dtype=result_type(start, stop, 1.0)) * (1.0 / div)
        out = start * (1.0 - step) + stop * step
        if endpoint:
            out[-1] = stop
    else:
        out = full((num,), start, dtype=result_type(start, stop, 1.0))
    if dtype is not None:
        out = out.astype(dtype)
    return out
