# optax, the gradient-processing and optimisation library of JAX users,
# written in arr over the surface: `import optax` gives these functions under
# optax's names (modules.rs maps `optax.X` to `_optax_X`). The semantics are
# optax 0.2's, step by step: where eps goes, bias correction with an int32
# count, the order of the chained transformations, float32 throughout.
# Every name carries the `_optax_` prefix so that none shadows a builtin of
# another meaning (`clip`, `trace`, `identity`, `scale`).
#
# The file loads at the first `import optax` (lib.rs's LIBRARIES): the state
# types, named tuples (pytrees), are made then; each function is compiled at
# its first call.

_optax_GradientTransformation = namedtuple("GradientTransformation", "init update")
_optax_GradientTransformationExtraArgs = type("GradientTransformationExtraArgs", (_optax_GradientTransformation,), {})
_optax_EmptyState = namedtuple("EmptyState", "")
_optax_MaskedNode = namedtuple("MaskedNode", "")
_optax_MaskedState = namedtuple("MaskedState", "inner_state")
_optax_TraceState = namedtuple("TraceState", "trace")
_optax_EmaState = namedtuple("EmaState", "count ema")
_optax_ScaleByAdamState = namedtuple("ScaleByAdamState", "count mu nu")
_optax_ScaleByBeliefState = namedtuple("ScaleByBeliefState", "count mu nu")
_optax_ScaleByLionState = namedtuple("ScaleByLionState", "count mu")
_optax_ScaleByRmsState = namedtuple("ScaleByRmsState", "nu")
_optax_ScaleByRmsWithCountState = namedtuple("ScaleByRmsWithCountState", "count nu")
_optax_ScaleByRStdDevState = namedtuple("ScaleByRStdDevState", "mu nu")
_optax_ScaleByRStdDevWithCountState = namedtuple("ScaleByRStdDevWithCountState", "count mu nu")
_optax_ScaleByAmsgradState = namedtuple("ScaleByAmsgradState", "count mu nu nu_max")
_optax_ScaleByRssState = namedtuple("ScaleByRssState", "sum_of_squares")
_optax_ScaleByScheduleState = namedtuple("ScaleByScheduleState", "count")
_optax_WeightDecaySchedule = namedtuple("WeightDecaySchedule", "count")
_optax_FactoredState = namedtuple("FactoredState", "count v_row v_col v")
_optax_InjectHyperparamsState = namedtuple("InjectHyperparamsState", "count hyperparams inner_state")
_optax_InjectStatefulHyperparamsState = namedtuple("InjectStatefulHyperparamsState", "count hyperparams hyperparams_states inner_state")
_optax_WrappedScheduleState = namedtuple("WrappedScheduleState", "count")
_optax_MultiStepsState = namedtuple("MultiStepsState", "mini_step gradient_step inner_opt_state acc_grads skip_state", defaults=((),))

class _optax_MultiStepsBase:
    """Gradient accumulation (optax.MultiSteps): the methods, each a lazily
    compiled function below."""

    def __init__(self, opt, every_k_schedule, use_grad_mean=True, should_skip_update_fn=None, accumulator_dtype=float32):
        _optax_multi_steps_setup(self, opt, every_k_schedule, use_grad_mean, should_skip_update_fn, accumulator_dtype)

    @property
    def inner_opt(self):
        return self._opt

    def init(self, params):
        return _optax_multi_steps_init(self, params)

    def update(self, updates, state, params=None, **extra_args):
        return _optax_multi_steps_update(self, updates, state, params, extra_args)

    def has_updated(self, state):
        return logical_and(state.mini_step == 0, state.gradient_step > 0)

    def gradient_transformation(self):
        return _optax_GradientTransformation(init=self.init, update=self.update)

_optax_MultiSteps = type("MultiSteps", (_optax_MultiStepsBase,), {})

# ---------------------------------------------------------------------------
# numerics and tree helpers (optax.tree)

def _optax_abs_sq(x):
    """|x|**2 elementwise (arrays are real in arr: x * x)."""
    return x * x

def _optax_safe_increment(count):
    """count + 1, saturating at the dtype's largest value."""
    count = asarray(count)
    if issubdtype(count.dtype, integer):
        max_value = iinfo(count.dtype).max
    else:
        max_value = finfo(count.dtype).max
    max_value = array(max_value, count.dtype)
    return where(count < max_value, count + array(1, count.dtype), max_value)

def _optax_safe_int32_increment(count):
    """count + 1 for an int32 count, saturating."""
    return _optax_safe_increment(count)

def _optax_safe_norm(x, min_norm, ord=None, axis=None, keepdims=False):
    """The norm of x, or min_norm where it is at most min_norm (with a gradient that stays finite)."""
    n = norm(x, ord=ord, axis=axis, keepdims=True)
    x = where(n <= min_norm, ones_like(x), x)
    n = squeeze(n, axis=axis) if not keepdims else n
    masked_norm = norm(x, ord=ord, axis=axis, keepdims=keepdims)
    return where(n <= min_norm, min_norm, masked_norm)

def _optax_safe_root_mean_squares(x, min_rms):
    """The root mean square of x, at least min_rms."""
    rms = sqrt(mean(_optax_abs_sq(x)))
    x = where(rms <= min_rms, ones_like(x), x)
    return where(rms <= min_rms, min_rms, sqrt(mean(_optax_abs_sq(x))))

def _optax_is_none(x):
    """Whether x is None (an is_leaf for trees with holes)."""
    return x is None

def _optax_tree_add(tree_x, tree_y, *other_trees):
    """The leafwise sum of trees."""
    trees = [tree_x, tree_y, *other_trees]
    return tree_map(lambda *xs: functools_reduce(operator_add, xs), *trees)

def _optax_tree_sub(tree_x, tree_y):
    """tree_x - tree_y, leafwise."""
    return tree_map(lambda x, y: x - y, tree_x, tree_y)

def _optax_tree_mul(tree_x, tree_y):
    """tree_x * tree_y, leafwise."""
    return tree_map(lambda x, y: x * y, tree_x, tree_y)

def _optax_tree_div(tree_x, tree_y):
    """tree_x / tree_y, leafwise."""
    return tree_map(lambda x, y: x / y, tree_x, tree_y)

def _optax_tree_scale(scalar, tree):
    """scalar * tree, leafwise."""
    return tree_map(lambda x: scalar * x, tree)

def _optax_tree_add_scale(tree_x, scalar, tree_y):
    """tree_x + scalar * tree_y, leafwise."""
    return tree_map(lambda x, y: x + scalar * y, tree_x, tree_y)

def _optax_tree_vdot(tree_x, tree_y):
    """The inner product of two trees."""
    vdots = tree_map(lambda a, b: sum(a * b), tree_x, tree_y)
    return tree_reduce(operator_add, vdots, 0)

def _optax_tree_sum(tree):
    """The sum of every element of every leaf."""
    return tree_reduce(operator_add, tree_map(sum, tree), 0)

def _optax_tree_max(tree):
    """The largest element of the tree."""
    return tree_reduce(maximum, tree_map(max, tree), -inf)

def _optax_tree_min(tree):
    """The smallest element of the tree."""
    return tree_reduce(minimum, tree_map(min, tree), inf)

def _optax_tree_size(tree):
    """The number of elements of the tree."""
    return functools_reduce(operator_add, [size(x) for x in tree_leaves(tree)], 0)

def _optax_tree_norm(tree, ord=None, squared=False):
    """The norm of the tree seen as one vector (2-norm by default)."""
    if ord is None or ord == 2:
        sqnorm = _optax_tree_sum(tree_map(square, tree))
        return array(sqnorm if squared else sqrt(sqnorm))
    if ord == 1:
        ret = _optax_tree_sum(tree_map(abs, tree))
    elif ord == inf or ord in ("inf", "infinity"):
        ret = _optax_tree_max(tree_map(abs, tree))
    else:
        raise ValueError(f"Unsupported ord: {ord}")
    return array(ret if not squared else square(ret))

def _optax_tree_zeros_like(tree, dtype=None):
    """Zeros shaped (and placed) like each leaf."""
    return tree_map(lambda x: zeros_like(x, dtype=dtype), tree)

def _optax_tree_ones_like(tree, dtype=None):
    """Ones shaped (and placed) like each leaf."""
    return tree_map(lambda x: ones_like(x, dtype=dtype), tree)

def _optax_tree_full_like(tree, fill_value, dtype=None):
    """fill_value shaped (and placed) like each leaf."""
    return tree_map(lambda x: full_like(x, fill_value, dtype=dtype), tree)

def _optax_tree_clip(tree, min_value=None, max_value=None):
    """Each leaf clipped to [min_value, max_value]."""
    return tree_map(lambda g: clip(g, min_value, max_value), tree)

def _optax_tree_cast(tree, dtype):
    """Each leaf cast to dtype (the tree itself when dtype is None)."""
    if dtype is None:
        return tree
    return tree_map(lambda t: t.astype(dtype), tree)

def _optax_tree_cast_like(tree, other_tree):
    """Each leaf cast to the dtype of the matching leaf of other_tree."""
    return tree_map(lambda t, o: t.astype(o.dtype) if hasattr(o, "dtype") else t, tree, other_tree)

def _optax_tree_where(condition, tree_x, tree_y):
    """where(condition, x, y) leafwise."""
    return tree_map(lambda x, y: where(condition, x, y), tree_x, tree_y)

def _optax_tree_update_moment(updates, moments, decay, order):
    """(1 - decay) * g**order + decay * m, leafwise (an exponential moving average)."""
    return tree_map(lambda g, t: (1 - decay) * (g ** order) + decay * t if g is not None else None, updates, moments, is_leaf=_optax_is_none)

def _optax_tree_update_moment_per_elem_norm(updates, moments, decay, order):
    """The moving average of |g|**order, leafwise (arrays are real in arr: g**order)."""
    return tree_map(lambda g, t: (1 - decay) * (g ** order) + decay * t if g is not None else None, updates, moments, is_leaf=_optax_is_none)

def _optax_tree_update_infinity_moment(updates, moments, decay, eps):
    """max(|g| + eps, decay * m), leafwise."""
    return tree_map(lambda g, t: maximum(abs(g) + eps, decay * t) if g is not None else None, updates, moments, is_leaf=_optax_is_none)

def _optax_tree_bias_correction(moment, decay, count):
    """moment / (1 - decay**count), leafwise."""
    bias_correction_ = 1 - decay ** count
    return tree_map(lambda t: t / bias_correction_.astype(t.dtype), moment)

def _optax_canonicalize_dtype(dtype):
    """A dtype argument, None kept."""
    return None if dtype is None else _dtype_of(dtype)

# ---------------------------------------------------------------------------
# base: transformations, apply_updates, chain

def _optax_init_empty_state(params):
    """EmptyState(), whatever the parameters."""
    return _optax_EmptyState()

def _optax_identity():
    """The transformation that leaves updates as they are."""
    def update_fn(updates, state, params=None):
        return updates, state
    return _optax_GradientTransformation(_optax_init_empty_state, update_fn)

def _optax_set_to_zero():
    """The transformation that makes every update zero."""
    def update_fn(updates, state, params=None):
        return tree_map(zeros_like, updates), state
    return _optax_GradientTransformation(_optax_init_empty_state, update_fn)

def _optax_stateless(f):
    """A transformation from f(updates, params) -> updates, with EmptyState."""
    def update_fn(updates, state, params=None):
        return f(updates, params), state
    return _optax_GradientTransformation(_optax_init_empty_state, update_fn)

def _optax_apply_updates(params, updates):
    """params + updates, leafwise, in each parameter's dtype."""
    return tree_map(lambda p, u: None if p is None else asarray(p + u).astype(asarray(p).dtype), params, updates, is_leaf=_optax_is_none)

def _optax_incremental_update(new_tensors, old_tensors, step_size):
    """step_size * new + (1 - step_size) * old, leafwise (a Polyak average)."""
    return tree_map(lambda new, old: step_size * new + (1.0 - step_size) * old, new_tensors, old_tensors)

def _optax_periodic_update(new_tensors, old_tensors, steps, update_period):
    """new_tensors every update_period steps, else old_tensors."""
    return cond(steps % update_period == 0, lambda _: new_tensors, lambda _: old_tensors, None)

def _optax_takes_extra_args(t):
    """Whether t's update takes extra keyword arguments."""
    return isinstance(t, _optax_GradientTransformationExtraArgs)

def _optax_with_extra_args_support(tx):
    """tx with an update that accepts (and ignores) extra keyword arguments."""
    if _optax_takes_extra_args(tx):
        return tx
    inner_update = tx.update

    def update(updates, state, params=None, **extra_args):
        return inner_update(updates, state, params)

    return _optax_GradientTransformationExtraArgs(tx.init, update)

def _optax_chain(*args):
    """The transformations applied in sequence; the state is the tuple of their states."""
    transforms = [_optax_with_extra_args_support(t) for t in args]
    init_fns = [t.init for t in transforms]
    update_fns = [t.update for t in transforms]

    def init_fn(params):
        return tuple(fn(params) for fn in init_fns)

    def update_fn(updates, state, params=None, **extra_args):
        if len(update_fns) != len(state):
            raise ValueError("The number of updates and states has to be the same in chain! Make sure you have called init first!")
        new_state = []
        for s, fn in zip(state, update_fns):
            updates, new_s = fn(updates, s, params, **extra_args)
            new_state.append(new_s)
        return updates, tuple(new_state)

    return _optax_GradientTransformationExtraArgs(init_fn, update_fn)

def _optax_named_chain(*transforms):
    """chain of (name, transformation) pairs; the state is a dict by name."""
    names = [name for name, _ in transforms]
    txs = [_optax_with_extra_args_support(t) for _, t in transforms]

    def init_fn(params):
        return {name: t.init(params) for name, t in zip(names, txs)}

    def update_fn(updates, state, params=None, **extra_args):
        new_state = {}
        for name, t in zip(names, txs):
            updates, new_state[name] = t.update(updates, state[name], params, **extra_args)
        return updates, new_state

    return _optax_GradientTransformationExtraArgs(init_fn, update_fn)

# ---------------------------------------------------------------------------
# transformations

def _optax_scale(step_size):
    """Every update times step_size."""
    def update_fn(updates, state, params=None):
        return tree_map(lambda g: step_size * g, updates), state
    return _optax_GradientTransformation(_optax_init_empty_state, update_fn)

def _optax_scale_by_schedule(step_size_fn):
    """Every update times step_size_fn(count); the state counts the steps (int32)."""
    def init_fn(params):
        return _optax_ScaleByScheduleState(count=zeros([], int32))

    def update_fn(updates, state, params=None):
        step_size = step_size_fn(state.count)
        updates = tree_map(lambda g: array(step_size, dtype=g.dtype) * g, updates)
        return updates, _optax_ScaleByScheduleState(count=_optax_safe_increment(state.count))

    return _optax_GradientTransformation(init_fn, update_fn)

def _optax_scale_by_learning_rate(learning_rate=None, *, flip_sign=True):
    """Updates times -learning_rate (a number or a schedule of the step count)."""
    if learning_rate is None:
        return _optax_identity()
    m = -1 if flip_sign else 1
    if callable(learning_rate):
        return _optax_scale_by_schedule(lambda count: m * learning_rate(count))
    return _optax_scale(m * learning_rate)

def _optax_scale_by_adam(b1=0.9, b2=0.999, eps=1e-8, eps_root=0.0, mu_dtype=None, *, nesterov=False):
    """Adam's rescaling: bias-corrected first moment over the root of the second (plus eps)."""
    mu_dtype = _optax_canonicalize_dtype(mu_dtype)

    def init_fn(params):
        mu = _optax_tree_zeros_like(params, dtype=mu_dtype)
        nu = _optax_tree_zeros_like(params)
        return _optax_ScaleByAdamState(count=zeros([], int32), mu=mu, nu=nu)

    def update_fn(updates, state, params=None):
        mu = _optax_tree_update_moment(updates, state.mu, b1, 1)
        nu = _optax_tree_update_moment_per_elem_norm(updates, state.nu, b2, 2)
        count_inc = _optax_safe_increment(state.count)
        if nesterov:
            mu_hat = tree_map(
                lambda m, g: b1 * m + (1 - b1) * g,
                _optax_tree_bias_correction(mu, b1, _optax_safe_increment(count_inc)),
                _optax_tree_bias_correction(updates, b1, count_inc))
        else:
            mu_hat = _optax_tree_bias_correction(mu, b1, count_inc)
        nu_hat = _optax_tree_bias_correction(nu, b2, count_inc)
        updates = tree_map(lambda m, v: None if m is None else m / (sqrt(v + eps_root) + eps), mu_hat, nu_hat, is_leaf=_optax_is_none)
        mu = _optax_tree_cast(mu, mu_dtype)
        nu = _optax_tree_cast_like(nu, state.nu)
        return updates, _optax_ScaleByAdamState(count=count_inc, mu=mu, nu=nu)

    return _optax_GradientTransformation(init_fn, update_fn)

def _optax_scale_by_amsgrad(b1=0.9, b2=0.999, eps=1e-8, eps_root=0.0, mu_dtype=None):
    """AMSGrad's rescaling: Adam with the running maximum of the second moment."""
    mu_dtype = _optax_canonicalize_dtype(mu_dtype)

    def init_fn(params):
        mu = _optax_tree_zeros_like(params, dtype=mu_dtype)
        nu = _optax_tree_zeros_like(params)
        nu_max = _optax_tree_zeros_like(params)
        return _optax_ScaleByAmsgradState(count=zeros([], int32), mu=mu, nu=nu, nu_max=nu_max)

    def update_fn(updates, state, params=None):
        mu = _optax_tree_update_moment(updates, state.mu, b1, 1)
        nu = _optax_tree_update_moment_per_elem_norm(updates, state.nu, b2, 2)
        count_inc = _optax_safe_increment(state.count)
        mu_hat = _optax_tree_bias_correction(mu, b1, count_inc)
        nu_hat = _optax_tree_bias_correction(nu, b2, count_inc)
        nu_max = tree_map(maximum, state.nu_max, nu_hat)
        updates = tree_map(lambda m, v: None if m is None else m / (sqrt(v + eps_root) + eps), mu_hat, nu_max, is_leaf=_optax_is_none)
        mu = _optax_tree_cast(mu, mu_dtype)
        return updates, _optax_ScaleByAmsgradState(count=count_inc, mu=mu, nu=nu, nu_max=nu_max)

    return _optax_GradientTransformation(init_fn, update_fn)

def _optax_scale_by_adamax(b1=0.9, b2=0.999, eps=1e-8):
    """Adamax's rescaling: the first moment over the infinity norm of past gradients."""
    def init_fn(params):
        mu = _optax_tree_zeros_like(params)
        nu = _optax_tree_zeros_like(params)
        return _optax_ScaleByAdamState(count=zeros([], int32), mu=mu, nu=nu)

    def update_fn(updates, state, params=None):
        count_inc = _optax_safe_increment(state.count)
        mu = _optax_tree_update_moment(updates, state.mu, b1, 1)
        nu = _optax_tree_update_infinity_moment(updates, state.nu, b2, eps)
        mu_hat = _optax_tree_bias_correction(mu, b1, count_inc)
        updates = tree_map(lambda m, v: m / v, mu_hat, nu)
        return updates, _optax_ScaleByAdamState(count=count_inc, mu=mu, nu=nu)

    return _optax_GradientTransformation(init_fn, update_fn)

def _optax_scale_by_belief(b1=0.9, b2=0.999, eps=1e-16, eps_root=1e-16, *, nesterov=False):
    """AdaBelief's rescaling: the first moment over the root of the variance of the prediction error."""
    def init_fn(params):
        mu = _optax_tree_zeros_like(params)
        s = _optax_tree_zeros_like(params)
        return _optax_ScaleByBeliefState(count=zeros([], int32), mu=mu, nu=s)

    def update_fn(updates, state, params=None):
        mu = _optax_tree_update_moment(updates, state.mu, b1, 1)
        prediction_error = _optax_tree_sub(updates, mu)
        nu = _optax_tree_update_moment_per_elem_norm(prediction_error, state.nu, b2, 2)
        nu = tree_map(lambda v: v + eps_root, nu)
        count_inc = _optax_safe_increment(state.count)
        if nesterov:
            mu_hat = tree_map(
                lambda m, g: b1 * m + (1 - b1) * g,
                _optax_tree_bias_correction(mu, b1, _optax_safe_increment(count_inc)),
                _optax_tree_bias_correction(updates, b1, count_inc))
        else:
            mu_hat = _optax_tree_bias_correction(mu, b1, count_inc)
        nu_hat = _optax_tree_bias_correction(nu, b2, count_inc)
        updates = tree_map(lambda m, v: None if m is None else m / (sqrt(v) + eps), mu_hat, nu_hat, is_leaf=_optax_is_none)
        return updates, _optax_ScaleByBeliefState(count=count_inc, mu=mu, nu=nu)

    return _optax_GradientTransformation(init_fn, update_fn)

def _optax_scale_by_lion(b1=0.9, b2=0.99, mu_dtype=None, *, mode="hard", smooth_beta=1.0):
    """Lion's rescaling: the sign of an interpolation of the gradient and the moment."""
    mu_dtype = _optax_canonicalize_dtype(mu_dtype)

    def init_fn(params):
        mu = _optax_tree_zeros_like(params, dtype=mu_dtype)
        return _optax_ScaleByLionState(count=zeros([], int32), mu=mu)

    def _comb(g, m):
        x = (1.0 - b1) * g + b1 * m
        if mode == "hard":
            return sign(x)
        elif mode == "smooth":
            return tanh(smooth_beta * x)
        elif mode == "refined":
            return where(abs(x) < 1.0, x, sign(x))
        raise ValueError(f'Unknown lion mode: {mode}. It needs to be one of ["hard", "smooth", "refined"].')

    def update_fn(updates, state, params=None):
        updates_new = tree_map(_comb, updates, state.mu)
        mu = _optax_tree_update_moment(updates, state.mu, b2, 1)
        mu = _optax_tree_cast(mu, mu_dtype)
        count_inc = _optax_safe_increment(state.count)
        return updates_new, _optax_ScaleByLionState(count=count_inc, mu=mu)

    return _optax_GradientTransformation(init_fn, update_fn)

def _optax_scale_by_rms(decay=0.9, eps=1e-8, initial_scale=0.0, eps_in_sqrt=True, bias_correction=False):
    """RMSProp's rescaling: updates over the root of a moving average of their squares."""
    def init_fn(params):
        nu = _optax_tree_full_like(params, initial_scale)
        if bias_correction:
            return _optax_ScaleByRmsWithCountState(count=zeros([], int32), nu=nu)
        return _optax_ScaleByRmsState(nu=nu)

    def update_fn(updates, state, params=None):
        nu = _optax_tree_update_moment_per_elem_norm(updates, state.nu, decay, 2)
        if bias_correction:
            count_inc = _optax_safe_increment(state.count)
            nu_hat = _optax_tree_bias_correction(nu, decay, count_inc)
        else:
            nu_hat = nu
        if eps_in_sqrt:
            scaling = tree_map(lambda n: rsqrt(n + eps), nu_hat)
        else:
            scaling = tree_map(lambda n: 1 / (sqrt(n) + eps), nu_hat)
        updates = tree_map(lambda s, g: s * g, scaling, updates)
        if bias_correction:
            return updates, _optax_ScaleByRmsWithCountState(count=count_inc, nu=nu)
        return updates, _optax_ScaleByRmsState(nu=nu)

    return _optax_GradientTransformation(init_fn, update_fn)

def _optax_scale_by_stddev(decay=0.9, eps=1e-8, initial_scale=0.0, eps_in_sqrt=True, bias_correction=False):
    """Centred RMSProp's rescaling: updates over the root of a moving variance."""
    def init_fn(params):
        mu = _optax_tree_zeros_like(params)
        nu = _optax_tree_full_like(params, initial_scale)
        if bias_correction:
            return _optax_ScaleByRStdDevWithCountState(count=zeros([], int32), mu=mu, nu=nu)
        return _optax_ScaleByRStdDevState(mu=mu, nu=nu)

    def update_fn(updates, state, params=None):
        mu = _optax_tree_update_moment(updates, state.mu, decay, 1)
        nu = _optax_tree_update_moment_per_elem_norm(updates, state.nu, decay, 2)
        if bias_correction:
            count_inc = _optax_safe_increment(state.count)
            mu_hat = _optax_tree_bias_correction(mu, decay, count_inc)
            nu_hat = _optax_tree_bias_correction(nu, decay, count_inc)
        else:
            mu_hat = mu
            nu_hat = nu
        if eps_in_sqrt:
            scaling = tree_map(lambda m, n: rsqrt(n - _optax_abs_sq(m) + eps), mu_hat, nu_hat)
        else:
            scaling = tree_map(lambda m, n: 1 / (sqrt(n - _optax_abs_sq(m)) + eps), mu_hat, nu_hat)
        updates = tree_map(lambda s, g: s * g, scaling, updates)
        if bias_correction:
            return updates, _optax_ScaleByRStdDevWithCountState(count=count_inc, mu=mu, nu=nu)
        return updates, _optax_ScaleByRStdDevState(mu=mu, nu=nu)

    return _optax_GradientTransformation(init_fn, update_fn)

def _optax_scale_by_rss(initial_accumulator_value=0.1, eps=1e-7):
    """Adagrad's rescaling: updates over the root of the running sum of their squares."""
    def init_fn(params):
        return _optax_ScaleByRssState(sum_of_squares=_optax_tree_full_like(params, initial_accumulator_value))

    def update_fn(updates, state, params=None):
        sum_of_squares = tree_map(lambda g, t: _optax_abs_sq(g) + t, updates, state.sum_of_squares)
        inv_sqrt_g_square = tree_map(lambda t: where(t > 0, rsqrt(t + eps), 0.0), sum_of_squares)
        updates = _optax_tree_mul(inv_sqrt_g_square, updates)
        return updates, _optax_ScaleByRssState(sum_of_squares=sum_of_squares)

    return _optax_GradientTransformation(init_fn, update_fn)

def _optax_scale_by_trust_ratio(min_norm=0.0, trust_coefficient=1.0, eps=0.0):
    """LARS/LAMB's rescaling: each update times ||param|| / ||update|| (1 where either is zero)."""
    def _scale_update(update, param):
        param_norm = _optax_safe_norm(param, min_norm)
        update_norm = _optax_safe_norm(update, min_norm)
        trust_ratio = trust_coefficient * param_norm / (update_norm + eps)
        zero_norm = logical_or(param_norm == 0.0, update_norm == 0.0)
        safe_trust_ratio = where(zero_norm, array(1.0, dtype=param.dtype), trust_ratio)
        return update * safe_trust_ratio

    def update_fn(updates, state, params):
        if params is None:
            raise ValueError("You are using a transformation that requires the current value of parameters, but you are not passing `params` when calling `update`.")
        return tree_map(_scale_update, updates, params), state

    return _optax_GradientTransformation(_optax_init_empty_state, update_fn)

def _optax_scale_by_param_block_rms(min_scale=1e-3):
    """Each update times the root mean square of its parameter (at least min_scale)."""
    def update_fn(updates, state, params):
        if params is None:
            raise ValueError("You are using a transformation that requires the current value of parameters, but you are not passing `params` when calling `update`.")
        return tree_map(lambda u, p: u * _optax_safe_root_mean_squares(p, min_scale), updates, params), state

    return _optax_GradientTransformation(_optax_init_empty_state, update_fn)

def _optax_trace(decay, nesterov=False, accumulator_dtype=None):
    """Momentum: trace = g + decay * trace; the update is the trace (nesterov: g + decay * trace)."""
    accumulator_dtype = _optax_canonicalize_dtype(accumulator_dtype)

    def init_fn(params):
        return _optax_TraceState(trace=_optax_tree_zeros_like(params, dtype=accumulator_dtype))

    def update_fn(updates, state, params=None):
        f = lambda g, t: g + decay * t
        new_trace = tree_map(lambda g, t: None if g is None else f(g, t), updates, state.trace, is_leaf=_optax_is_none)
        updates = tree_map(f, updates, new_trace) if nesterov else new_trace
        new_trace = _optax_tree_cast(new_trace, accumulator_dtype)
        return updates, _optax_TraceState(trace=new_trace)

    return _optax_GradientTransformation(init_fn, update_fn)

def _optax_ema(decay, debias=True, accumulator_dtype=None):
    """An exponential moving average of the updates (bias-corrected when debias)."""
    accumulator_dtype = _optax_canonicalize_dtype(accumulator_dtype)

    def init_fn(params):
        return _optax_EmaState(count=zeros([], int32), ema=_optax_tree_zeros_like(params, dtype=accumulator_dtype))

    def update_fn(updates, state, params=None):
        updates = new_ema = _optax_tree_update_moment(updates, state.ema, decay, 1)
        count_inc = _optax_safe_increment(state.count)
        if debias:
            updates = _optax_tree_bias_correction(new_ema, decay, count_inc)
        state_ema = _optax_tree_cast(new_ema, accumulator_dtype)
        return updates, _optax_EmaState(count=count_inc, ema=state_ema)

    return _optax_GradientTransformation(init_fn, update_fn)

def _optax_add_decayed_weights(weight_decay=0.0, mask=None):
    """updates + weight_decay * params (weight_decay a number or a schedule), optionally masked."""
    def init_fn(params):
        if callable(weight_decay):
            return _optax_WeightDecaySchedule(count=zeros([], int32))
        return _optax_EmptyState()

    def update_fn(updates, state, params):
        if params is None:
            raise ValueError("You are using a transformation that requires the current value of parameters, but you are not passing `params` when calling `update`.")
        if callable(weight_decay):
            new_state = _optax_WeightDecaySchedule(_optax_safe_increment(state.count))
        else:
            new_state = state
        if isinstance(weight_decay, (int, float)) and weight_decay == 0.0:
            return updates, new_state
        s = weight_decay(state.count) if callable(weight_decay) else weight_decay
        updates = tree_map(lambda g, p: None if g is None else g + s * p, updates, params, is_leaf=_optax_is_none)
        return updates, new_state

    if mask is not None:
        return _optax_masked(_optax_GradientTransformation(init_fn, update_fn), mask)
    return _optax_GradientTransformation(init_fn, update_fn)

# ---------------------------------------------------------------------------
# clipping

def _optax_clip(max_delta):
    """Each update clipped elementwise to [-max_delta, max_delta]."""
    def update_fn(updates, state, params=None):
        return _optax_tree_clip(updates, -max_delta, max_delta), state
    return _optax_GradientTransformation(_optax_init_empty_state, update_fn)

def _optax_clip_by_block_rms(threshold):
    """Each update divided by max(1, rms(update) / threshold)."""
    def _clip_fn(u):
        clip_denom = maximum(1.0, sqrt(mean(_optax_abs_sq(u))) / threshold)
        return u / clip_denom

    def update_fn(updates, state, params=None):
        return tree_map(_clip_fn, updates), state

    return _optax_GradientTransformation(_optax_init_empty_state, update_fn)

def _optax_clip_by_global_norm(max_norm):
    """The updates scaled down so that their global norm is at most max_norm."""
    def update_fn(updates, state, params=None):
        g_norm = _optax_tree_norm(updates)
        trigger = squeeze(g_norm < max_norm)

        def clip_fn(t):
            return _lax_select(trigger, t, (t / g_norm.astype(t.dtype)) * max_norm)

        return tree_map(clip_fn, updates), state

    return _optax_GradientTransformation(_optax_init_empty_state, update_fn)

def _optax_global_norm(updates):
    """The 2-norm of all the updates' elements together."""
    return _optax_tree_norm(updates)

# ---------------------------------------------------------------------------
# wrappers: masked, MultiSteps, inject_hyperparams

def _optax_mask_callable(mask):
    """Whether the mask is a function of the parameters (rather than a tree of bools)."""
    callable_leaves = tree_leaves(tree_map(callable, mask))
    return len(callable_leaves) > 0 and all(callable_leaves)

def _optax_flatten(inner):
    """optax.flatten: inner applied to the parameters and updates raveled
    into one vector (its state is the inner state over that vector)."""
    inner = _optax_with_extra_args_support(inner)

    def init_fn(params):
        return inner.init(_flatten_util_ravel_pytree(params)[0])

    def update_fn(updates, state, params=None, **extra_args):
        flat, unravel = _flatten_util_ravel_pytree(updates)
        flat_params = None if params is None else _flatten_util_ravel_pytree(params)[0]
        flat, state = inner.update(flat, state, flat_params, **extra_args)
        return unravel(flat), state

    return _optax_GradientTransformationExtraArgs(init_fn, update_fn)

def _optax_masked(inner, mask, *, mask_compatible_extra_args=False):
    """inner applied to the updates whose mask is True; the others pass unchanged."""
    inner = _optax_with_extra_args_support(inner)

    def mask_pytree(pytree, mask_tree):
        return tree_map(lambda m, p: p if m else _optax_MaskedNode(), mask_tree, pytree)

    def maybe_mask_values(pytree_dict, base_pytree, mask_tree):
        base_structure = tree_structure(base_pytree)

        def _maybe_mask(pytree):
            if mask_compatible_extra_args and tree_structure(pytree) == base_structure:
                return mask_pytree(pytree, mask_tree)
            return pytree

        return {k: _maybe_mask(v) for k, v in pytree_dict.items()}

    def init_fn(params):
        mask_tree = mask(params) if _optax_mask_callable(mask) else mask
        masked_params = mask_pytree(params, mask_tree)
        return _optax_MaskedState(inner_state=inner.init(masked_params))

    def update_fn(updates, state, params=None, **extra_args):
        mask_tree = mask(updates) if _optax_mask_callable(mask) else mask
        masked_extra_args = maybe_mask_values(extra_args, updates, mask_tree)
        masked_updates = mask_pytree(updates, mask_tree)
        masked_params = None if params is None else mask_pytree(params, mask_tree)
        new_masked_updates, new_inner_state = inner.update(masked_updates, state.inner_state, masked_params, **masked_extra_args)
        new_updates = tree_map(lambda m, new_u, old_u: new_u if m else old_u, mask_tree, new_masked_updates, updates)
        return new_updates, _optax_MaskedState(inner_state=new_inner_state)

    return _optax_GradientTransformationExtraArgs(init_fn, update_fn)

def _optax_multi_steps_setup(self, opt, every_k_schedule, use_grad_mean, should_skip_update_fn, accumulator_dtype):
    """MultiSteps.__init__."""
    self._opt = _optax_with_extra_args_support(opt)
    if isinstance(every_k_schedule, int):
        self._every_k_schedule = lambda step: every_k_schedule
    else:
        self._every_k_schedule = every_k_schedule
    self._use_grad_mean = use_grad_mean
    self._accumulator_dtype = _optax_canonicalize_dtype(accumulator_dtype)
    self._should_skip_update_fn = should_skip_update_fn

def _optax_multi_steps_init(self, params):
    """MultiSteps.init: the inner state and zero accumulated gradients."""
    updates = _optax_tree_zeros_like(params)
    acc_grads = _optax_tree_zeros_like(params, dtype=self._accumulator_dtype)
    gradient_step = zeros([], dtype=int32)
    skip_state = ()
    if self._should_skip_update_fn is not None:
        _, skip_state = self._should_skip_update_fn(updates, gradient_step, params)
    return _optax_MultiStepsState(
        mini_step=zeros([], dtype=int32),
        gradient_step=gradient_step,
        inner_opt_state=self._opt.init(params),
        acc_grads=acc_grads,
        skip_state=skip_state)

def _optax_multi_steps_update(self, updates, state, params, extra_args):
    """MultiSteps.update: accumulate; every k-th step apply the inner update to the mean gradient."""
    k_steps = self._every_k_schedule(state.gradient_step)
    use_grad_mean = self._use_grad_mean
    accumulator_dtype = self._accumulator_dtype
    opt = self._opt
    if self._should_skip_update_fn is None:
        should_skip_update = None
        skip_state = ()
    else:
        should_skip_update, skip_state = self._should_skip_update_fn(updates, state.gradient_step, params)
        if (should_skip_update.dtype, should_skip_update.shape) != (bool_, ()):
            raise ValueError(f"The `should_skip_update_fn` function should return a boolean scalar array, but it returned an array of dtype {should_skip_update.dtype} and shape {should_skip_update.shape}")

    def acc_update(grad, acc, n_acc):
        if use_grad_mean:
            return acc + (grad - acc) / (n_acc + 1)
        return grad + acc

    def _do_update(updates, state, params):
        acc_grads = tree_map(lambda upd, acc: acc_update(upd, acc, state.mini_step), updates, state.acc_grads)
        final_updates, new_inner_state = opt.update(_optax_tree_cast_like(acc_grads, updates), state.inner_opt_state, params=params, **extra_args)
        emit = state.mini_step == (k_steps - 1)
        new_state = _optax_MultiStepsState(
            mini_step=_optax_safe_increment(state.mini_step) % k_steps,
            gradient_step=emit * _optax_safe_increment(state.gradient_step) + (1 - emit) * state.gradient_step,
            inner_opt_state=tree_map(lambda st, nst: where(emit, nst, st).astype(st.dtype), state.inner_opt_state, new_inner_state),
            acc_grads=tree_map(lambda ga: ((1 - emit) * ga).astype(accumulator_dtype), acc_grads),
            skip_state=skip_state)
        final_updates = tree_map(lambda ga: emit * ga, final_updates)
        return final_updates, new_state

    def _skip_update(updates, state, params):
        zero_updates = _optax_tree_zeros_like(updates)
        return zero_updates, _optax_MultiStepsState(
            mini_step=state.mini_step,
            gradient_step=state.gradient_step,
            inner_opt_state=state.inner_opt_state,
            acc_grads=state.acc_grads,
            skip_state=skip_state)

    if should_skip_update is None:
        return _do_update(updates, state, params)
    return cond(should_skip_update, lambda ops: _skip_update(*ops), lambda ops: _do_update(*ops), (updates, state, params))

def _optax_skip_not_finite(updates, gradient_step, params):
    """MultiSteps' should_skip_update_fn: skip when an update is not finite."""
    all_is_finite = [sum(logical_not(isfinite(p))) for p in tree_leaves(updates)]
    num_not_finite = sum(array(all_is_finite))
    should_skip = num_not_finite > 0
    return should_skip, {"should_skip": should_skip, "num_not_finite": num_not_finite}

def _optax_skip_large_updates(updates, gradient_step, params, max_squared_norm):
    """MultiSteps' should_skip_update_fn: skip when the squared norm reaches max_squared_norm."""
    norm_sq = sum(array([sum(p ** 2) for p in tree_leaves(updates)]))
    should_skip = logical_not(norm_sq < max_squared_norm)
    return should_skip, {"should_skip": should_skip, "norm_squared": norm_sq}

def _optax_convert_floats(x, dtype):
    """A float hyperparameter as an array of dtype; anything else as it is."""
    if isinstance(x, float) or (hasattr(x, "dtype") and issubdtype(x.dtype, floating)):
        return asarray(x, dtype=dtype)
    return x

def _optax_inject_hyperparams(inner_factory, static_args=(), hyperparam_dtype=None):
    """inner_factory with its numeric arguments (numbers, arrays or schedules of the
    step count) kept in the state's hyperparams, where they can be read and changed.
    The factory's defaults count as arguments for optax's own optimisers; for other
    factories, pass the hyperparameters by keyword."""
    static_args = (static_args,) if isinstance(static_args, str) else tuple(static_args)

    def wrapped(*args, **kwargs):
        bound = _optax_bind_arguments(inner_factory, args, kwargs)
        sched_hps = {}
        numeric_hps = {}
        other_hps = {}
        for name, value in bound.items():
            if name in static_args or isinstance(value, bool):
                other_hps[name] = value
            elif callable(value):
                sched_hps[name] = value
            elif isinstance(value, (int, float)) or hasattr(value, "dtype"):
                numeric_hps[name] = value
            else:
                other_hps[name] = value

        def hyperparam_dtype_of(params):
            if hyperparam_dtype is not None:
                return hyperparam_dtype
            floats = [x for x in tree_leaves(params) if issubdtype(asarray(x).dtype, floating)]
            return result_type(*floats) if floats else float32

        def init_fn(params):
            dtype = hyperparam_dtype_of(params)
            hparams = {k: asarray(_optax_convert_floats(v, dtype)) for k, v in numeric_hps.items()}
            hparams_states = {k: _optax_WrappedScheduleState(count=zeros([], int32)) for k in sched_hps}
            hparams.update({k: _optax_convert_floats(f(hparams_states[k].count), dtype) for k, f in sched_hps.items()})
            return _optax_InjectStatefulHyperparamsState(
                count=zeros([], int32),
                hyperparams=hparams,
                hyperparams_states=hparams_states,
                inner_state=inner_factory(**other_hps, **hparams).init(params))

        def update_fn(updates, state, params=None, **extra_args):
            dtype = hyperparam_dtype_of(params)
            hparams = {k: _optax_convert_floats(v, dtype) for k, v in state.hyperparams.items()}
            hparams.update({k: _optax_convert_floats(f(state.hyperparams_states[k].count), dtype) for k, f in sched_hps.items()})
            hyperparams_states = {k: _optax_WrappedScheduleState(count=_optax_safe_increment(state.hyperparams_states[k].count)) for k in sched_hps}
            inner = _optax_with_extra_args_support(inner_factory(**other_hps, **hparams))
            updates, inner_state = inner.update(updates, state.inner_state, params, **extra_args)
            return updates, _optax_InjectStatefulHyperparamsState(
                count=_optax_safe_increment(state.count),
                hyperparams=hparams,
                hyperparams_states=hyperparams_states,
                inner_state=inner_state)

        return _optax_GradientTransformationExtraArgs(init_fn, update_fn)

    return wrapped

def _optax_bind_arguments(f, args, kwargs):
    """f's arguments by name, with the defaults its signature text shows
    (literal numbers, booleans, None and strings; other defaults are left to f)."""
    text = getattr(f, "__signature__", None)
    if text is None:
        if args:
            raise TypeError("inject_hyperparams: pass the hyperparameters of this factory by keyword")
        return dict(kwargs)
    bound = {}
    positional = []
    keyword_only = False
    for part in text[text.find("(") + 1:text.rfind(")")].split(","):
        part = part.strip()
        if part == "*" or part.startswith("*"):
            keyword_only = True
            continue
        if not part:
            continue
        eq = part.find("=")
        name = (part if eq < 0 else part[:eq]).split(":")[0].strip()
        if not keyword_only:
            positional.append(name)
        if eq >= 0:
            value = _optax_literal(part[eq + 1:].strip())
            if value is not _optax_literal:
                bound[name] = value
    if len(args) > len(positional):
        raise TypeError(f"{f.__name__} takes {len(positional)} positional arguments but {len(args)} were given")
    for name, value in zip(positional, args):
        bound[name] = value
    bound.update(kwargs)
    return bound

def _optax_literal(text):
    """The value of a literal default (a number, True, False, None or a string),
    else _optax_literal itself."""
    if text in ("None", "True", "False"):
        return {"None": None, "True": True, "False": False}[text]
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        return text[1:-1]
    digits = text[1:] if text.startswith("-") else text
    if digits and (digits[0].isdigit() or digits[0] == "."):
        if "." in digits or "e" in digits or "E" in digits:
            return float(text)
        return int(text)
    return _optax_literal

# ---------------------------------------------------------------------------
# factored second moments (adafactor)

def _optax_decay_rate_pow(i, exponent=0.8):
    """The second-moment decay 1 - (i + 1)**-exponent."""
    t = array(i + 1, float32)
    return 1.0 - t ** (-exponent)

def _optax_factored_dims(shape, factored, min_dim_size_to_factor):
    """The two largest dimensions (second-largest, largest) if both are large enough to factor."""
    if not factored or len(shape) < 2:
        return None
    sorted_dims = sorted(range(len(shape)), key=lambda i: shape[i])
    if shape[sorted_dims[-2]] < min_dim_size_to_factor:
        return None
    return int(sorted_dims[-2]), int(sorted_dims[-1])

def _optax_zeros_without(x, axis):
    """Zeros shaped like x without one axis."""
    shape = tuple(n for i, n in enumerate(x.shape) if i != axis)
    return zeros(shape, dtype=x.dtype)

def _optax_scale_by_factored_rms(factored=True, decay_rate=0.8, step_offset=0, min_dim_size_to_factor=128, epsilon=1e-30, decay_rate_fn=_optax_decay_rate_pow):
    """Adafactor's rescaling: second moments factored into row and column statistics for large matrices."""
    def init_one(param):
        dtype = param.dtype
        dims = _optax_factored_dims(param.shape, factored, min_dim_size_to_factor)
        if dims is not None:
            d1, d0 = dims
            return (_optax_zeros_without(param, d0), _optax_zeros_without(param, d1), zeros((1,), dtype=dtype))
        return (zeros((1,), dtype=dtype), zeros((1,), dtype=dtype), zeros_like(param))

    def init_fn(params):
        leaves, treedef = tree_flatten(params)
        parts = [init_one(p) for p in leaves]
        return _optax_FactoredState(
            count=zeros([], int32),
            v_row=tree_unflatten(treedef, [p[0] for p in parts]),
            v_col=tree_unflatten(treedef, [p[1] for p in parts]),
            v=tree_unflatten(treedef, [p[2] for p in parts]))

    def update_one(grad, v_row, v_col, v, param, step):
        shape, dtype = param.shape, param.dtype
        decay_rate_t = decay_rate_fn(step - step_offset, decay_rate)
        new_v_row = zeros((1,), dtype=dtype)
        new_v_col = zeros((1,), dtype=dtype)
        new_v = zeros((1,), dtype=dtype)
        dims = _optax_factored_dims(shape, factored, min_dim_size_to_factor)
        if dims is not None:
            d1, d0 = dims
            grad_sqr = _optax_abs_sq(grad) + epsilon
            new_v_row = decay_rate_t * v_row + (1.0 - decay_rate_t) * mean(grad_sqr, axis=d0)
            new_v_col = decay_rate_t * v_col + (1.0 - decay_rate_t) * mean(grad_sqr, axis=d1)
            new_v_row = new_v_row.astype(dtype)
            new_v_col = new_v_col.astype(dtype)
            reduced_d1 = d1 - 1 if d1 > d0 else d1
            row_col_mean = mean(new_v_row, axis=reduced_d1, keepdims=True)
            row_factor = (new_v_row / row_col_mean) ** -0.5
            col_factor = new_v_col ** -0.5
            update = grad * expand_dims(row_factor, axis=d0) * expand_dims(col_factor, axis=d1)
        else:
            grad_sqr = _optax_abs_sq(grad) + epsilon
            new_v = decay_rate_t * v + (1.0 - decay_rate_t) * grad_sqr
            new_v = new_v.astype(dtype)
            update = grad * new_v ** -0.5
        return (update, new_v_row, new_v_col, new_v)

    def update_fn(grads, state, params):
        if params is None:
            raise ValueError("You are using a transformation that requires the current value of parameters, but you are not passing `params` when calling `update`.")
        g, treedef = tree_flatten(grads)
        rows = tree_leaves(state.v_row)
        cols = tree_leaves(state.v_col)
        vs = tree_leaves(state.v)
        ps = tree_leaves(params)
        out = [update_one(g[i], rows[i], cols[i], vs[i], ps[i], state.count) for i in range(len(g))]
        updates = tree_unflatten(treedef, [o[0] for o in out])
        return updates, _optax_FactoredState(
            count=_optax_safe_increment(state.count),
            v_row=tree_unflatten(treedef, [o[1] for o in out]),
            v_col=tree_unflatten(treedef, [o[2] for o in out]),
            v=tree_unflatten(treedef, [o[3] for o in out]))

    return _optax_GradientTransformation(init_fn, update_fn)

# ---------------------------------------------------------------------------
# optimisers (optax's aliases)

def _optax_sgd(learning_rate, momentum=None, nesterov=False, accumulator_dtype=None):
    """Stochastic gradient descent, with optional (Nesterov) momentum."""
    if momentum is not None:
        opt = _optax_trace(decay=momentum, nesterov=nesterov, accumulator_dtype=accumulator_dtype)
    else:
        opt = _optax_identity()
    return _optax_chain(opt, _optax_scale_by_learning_rate(learning_rate))

def _optax_adam(learning_rate, b1=0.9, b2=0.999, eps=1e-8, eps_root=0.0, mu_dtype=None, *, nesterov=False):
    """Adam."""
    return _optax_chain(
        _optax_scale_by_adam(b1=b1, b2=b2, eps=eps, eps_root=eps_root, mu_dtype=mu_dtype, nesterov=nesterov),
        _optax_scale_by_learning_rate(learning_rate))

def _optax_nadam(learning_rate, b1=0.9, b2=0.999, eps=1e-8, eps_root=0.0, mu_dtype=None):
    """NAdam: Adam with Nesterov momentum."""
    return _optax_adam(learning_rate, b1, b2, eps, eps_root, mu_dtype, nesterov=True)

def _optax_adamw(learning_rate, b1=0.9, b2=0.999, eps=1e-8, eps_root=0.0, mu_dtype=None, weight_decay=1e-4, mask=None, *, nesterov=False):
    """Adam with decoupled weight decay."""
    return _optax_chain(
        _optax_scale_by_adam(b1=b1, b2=b2, eps=eps, eps_root=eps_root, mu_dtype=mu_dtype, nesterov=nesterov),
        _optax_add_decayed_weights(weight_decay, mask),
        _optax_scale_by_learning_rate(learning_rate))

def _optax_nadamw(learning_rate, b1=0.9, b2=0.999, eps=1e-8, eps_root=0.0, mu_dtype=None, weight_decay=1e-4, mask=None):
    """NAdamW: AdamW with Nesterov momentum."""
    return _optax_adamw(learning_rate, b1, b2, eps, eps_root, mu_dtype, weight_decay, mask, nesterov=True)

def _optax_amsgrad(learning_rate, b1=0.9, b2=0.999, eps=1e-8, eps_root=0.0, mu_dtype=None):
    """AMSGrad: Adam with the running maximum of the second moment."""
    return _optax_chain(
        _optax_scale_by_amsgrad(b1=b1, b2=b2, eps=eps, eps_root=eps_root, mu_dtype=mu_dtype),
        _optax_scale_by_learning_rate(learning_rate))

def _optax_adamax(learning_rate, b1=0.9, b2=0.999, eps=1e-8):
    """Adamax: Adam with the infinity norm."""
    return _optax_chain(_optax_scale_by_adamax(b1=b1, b2=b2, eps=eps), _optax_scale_by_learning_rate(learning_rate))

def _optax_lamb(learning_rate, b1=0.9, b2=0.999, eps=1e-6, eps_root=0.0, weight_decay=0.0, mask=None):
    """LAMB: Adam with weight decay, each update scaled by its layer's trust ratio."""
    return _optax_chain(
        _optax_scale_by_adam(b1=b1, b2=b2, eps=eps, eps_root=eps_root),
        _optax_add_decayed_weights(weight_decay=weight_decay, mask=mask),
        _optax_scale_by_trust_ratio(),
        _optax_scale_by_learning_rate(learning_rate))

def _optax_lion(learning_rate, b1=0.9, b2=0.99, mu_dtype=None, weight_decay=1e-3, mask=None):
    """Lion: the sign of interpolated momentum, with decoupled weight decay."""
    return _optax_chain(
        _optax_scale_by_lion(b1=b1, b2=b2, mu_dtype=mu_dtype),
        _optax_add_decayed_weights(weight_decay, mask),
        _optax_scale_by_learning_rate(learning_rate))

def _optax_adabelief(learning_rate, b1=0.9, b2=0.999, eps=1e-16, eps_root=1e-16, *, nesterov=False):
    """AdaBelief: Adam with the variance of the prediction error."""
    return _optax_chain(
        _optax_scale_by_belief(b1=b1, b2=b2, eps=eps, eps_root=eps_root, nesterov=nesterov),
        _optax_scale_by_learning_rate(learning_rate))

def _optax_adagrad(learning_rate, initial_accumulator_value=0.1, eps=1e-7):
    """Adagrad."""
    return _optax_chain(
        _optax_scale_by_rss(initial_accumulator_value=initial_accumulator_value, eps=eps),
        _optax_scale_by_learning_rate(learning_rate))

def _optax_rmsprop(learning_rate, decay=0.9, eps=1e-8, initial_scale=0.0, eps_in_sqrt=True, centered=False, momentum=None, nesterov=False, bias_correction=False):
    """RMSProp (centred: divided by the moving standard deviation), with optional momentum."""
    tail = _optax_trace(decay=momentum, nesterov=nesterov) if momentum is not None else _optax_identity()
    if centered:
        head = _optax_scale_by_stddev(decay=decay, eps=eps, initial_scale=initial_scale, eps_in_sqrt=eps_in_sqrt, bias_correction=bias_correction)
    else:
        head = _optax_scale_by_rms(decay=decay, eps=eps, initial_scale=initial_scale, eps_in_sqrt=eps_in_sqrt, bias_correction=bias_correction)
    return _optax_chain(head, _optax_scale_by_learning_rate(learning_rate), tail)

def _optax_adafactor(learning_rate=None, min_dim_size_to_factor=128, decay_rate=0.8, decay_offset=0, multiply_by_parameter_scale=True, clipping_threshold=1.0, momentum=None, dtype_momentum=float32, weight_decay_rate=None, eps=1e-30, factored=True, weight_decay_mask=None):
    """Adafactor: factored second moments, block-RMS clipping, updates relative to the parameters' scale."""
    tx = [_optax_scale_by_factored_rms(factored, decay_rate, decay_offset, min_dim_size_to_factor, eps)]
    if clipping_threshold is not None:
        tx.append(_optax_clip_by_block_rms(clipping_threshold))
    if learning_rate is not None:
        tx.append(_optax_scale_by_learning_rate(learning_rate, flip_sign=False))
    if multiply_by_parameter_scale:
        tx.append(_optax_scale_by_param_block_rms())
    if momentum is not None:
        tx.append(_optax_ema(momentum, debias=False, accumulator_dtype=dtype_momentum))
    if weight_decay_rate is not None:
        tx.append(_optax_add_decayed_weights(weight_decay_rate, mask=weight_decay_mask))
    tx.append(_optax_scale(-1))
    return _optax_chain(*tx)

# ---------------------------------------------------------------------------
# schedules

def _optax_constant_schedule(value):
    """The schedule that is value at every step."""
    return lambda count: value

def _optax_polynomial_schedule(init_value, end_value, power, transition_steps, transition_begin=0):
    """From init_value to end_value along (1 - t)**power over transition_steps, then end_value."""
    if transition_steps <= 0:
        return lambda count: init_value
    if transition_begin < 0:
        transition_begin = 0

    def schedule(count):
        count = clip(count - transition_begin, 0, transition_steps)
        frac = 1 - count / transition_steps
        return (init_value - end_value) * (frac ** power) + end_value

    return schedule

def _optax_linear_schedule(init_value, end_value, transition_steps, transition_begin=0):
    """From init_value to end_value linearly over transition_steps, then end_value."""
    return _optax_polynomial_schedule(init_value=init_value, end_value=end_value, power=1, transition_steps=transition_steps, transition_begin=transition_begin)

def _optax_piecewise_constant_schedule(init_value, boundaries_and_scales=None):
    """init_value, multiplied by each scale once the step passes its boundary."""
    if boundaries_and_scales is not None:
        if not all(s >= 0.0 for s in boundaries_and_scales.values()):
            raise ValueError("`piecewise_constant_schedule` expects non-negative scale factors")

    def schedule(count):
        v = init_value
        if boundaries_and_scales is not None:
            for threshold, scale in sorted(boundaries_and_scales.items()):
                indicator = maximum(0.0, sign(threshold - count))
                v = v * indicator + (1 - indicator) * scale * v
        return v

    return schedule

def _optax_exponential_decay(init_value, transition_steps, decay_rate, transition_begin=0, staircase=False, end_value=None):
    """init_value * decay_rate**((count - transition_begin) / transition_steps), optionally stepwise and bounded by end_value."""
    if transition_steps <= 0 or decay_rate == 0:
        return lambda count: init_value
    if transition_begin < 0:
        transition_begin = 0
    clip_fn = maximum if decay_rate < 1.0 else minimum

    def schedule(count):
        decreased_count = count - transition_begin
        p = decreased_count / transition_steps
        if staircase:
            p = floor(p)
        decayed_value = where(decreased_count <= 0, init_value, init_value * power(decay_rate, p))
        if end_value is not None:
            decayed_value = clip_fn(decayed_value, end_value)
        return decayed_value

    return schedule

def _optax_cosine_decay_schedule(init_value, decay_steps, alpha=0.0, exponent=1.0):
    """init_value times a half cosine from 1 down to alpha over decay_steps."""
    if not decay_steps > 0:
        raise ValueError(f"The cosine_decay_schedule requires positive decay_steps, got decay_steps={decay_steps}.")
    steps = float(decay_steps)

    def schedule(count):
        if isinstance(count, int):
            count = float(count)
        count = minimum(count, steps)
        cosine_decay = 0.5 * (1 + cos(pi * count / steps))
        decayed = (1 - alpha) * cosine_decay ** exponent + alpha
        return init_value * decayed

    return schedule

def _optax_join_schedules(schedules, boundaries):
    """schedules[i] from boundaries[i-1] on (its count restarting at the boundary)."""
    def schedule(step):
        output = schedules[0](step)
        for boundary, sched in zip(boundaries, schedules[1:]):
            output = where(step < boundary, output, sched(step - boundary))
        return output

    return schedule

def _optax_warmup_constant_schedule(init_value, peak_value, warmup_steps):
    """Linear warm-up from init_value to peak_value, then peak_value."""
    return _optax_linear_schedule(init_value=init_value, end_value=peak_value, transition_steps=warmup_steps)

def _optax_warmup_cosine_decay_schedule(init_value, peak_value, warmup_steps, decay_steps, end_value=0.0, exponent=1.0):
    """Linear warm-up to peak_value, then cosine decay to end_value at decay_steps."""
    alpha = 0.0 if peak_value == 0.0 else end_value / peak_value
    schedules = [
        _optax_linear_schedule(init_value=init_value, end_value=peak_value, transition_steps=warmup_steps),
        _optax_cosine_decay_schedule(init_value=peak_value, decay_steps=decay_steps - warmup_steps, alpha=alpha, exponent=exponent),
    ]
    return _optax_join_schedules(schedules, [warmup_steps])

def _optax_warmup_exponential_decay_schedule(init_value, peak_value, warmup_steps, transition_steps, decay_rate, transition_begin=0, staircase=False, end_value=None):
    """Linear warm-up to peak_value, then exponential decay."""
    schedules = [
        _optax_linear_schedule(init_value=init_value, end_value=peak_value, transition_steps=warmup_steps),
        _optax_exponential_decay(init_value=peak_value, decay_rate=decay_rate, transition_steps=transition_steps, transition_begin=transition_begin, staircase=staircase, end_value=end_value),
    ]
    return _optax_join_schedules(schedules, [warmup_steps])

# ---------------------------------------------------------------------------
# losses

def _optax_l2_loss(predictions, targets=None):
    """0.5 * (predictions - targets)**2, elementwise."""
    predictions = asarray(predictions)
    return 0.5 * _optax_squared_error(predictions, targets)

def _optax_squared_error(predictions, targets=None):
    """(predictions - targets)**2, elementwise (the shapes must be equal)."""
    if targets is not None and shape(predictions) != shape(targets):
        raise ValueError(f"Arrays must have equal shapes, got {shape(predictions)} and {shape(targets)}")
    errors = predictions - targets if targets is not None else predictions
    return errors ** 2

def _optax_log_softmax_where(logits, axis, where_):
    """log_softmax over axis restricted to where_ (JAX's where= argument)."""
    shifted = logits - stop_gradient(max(where(where_, logits, -inf), axis=axis, keepdims=True))
    total = sum(where(where_, exp(shifted), 0.0), axis=axis, keepdims=True)
    return shifted - log(total)

def _optax_softmax_cross_entropy(logits, labels, axis=-1, where=None):
    """-sum(labels * log_softmax(logits)) over axis."""
    if where is None:
        return -sum(labels * log_softmax(logits, axis), axis=axis)
    if where.ndim != logits.ndim:
        where = expand_dims(where, axis)
    log_probs = _optax_log_softmax_where(logits, axis, where)
    return -sum(_where(where, labels * log_probs, 0.0), axis=axis)

def _optax_softmax_cross_entropy_with_integer_labels(logits, labels, axis=-1, where=None):
    """logsumexp(logits) - logits[label] over axis, for integer labels."""
    if not isinstance(axis, int):
        raise ValueError("softmax_cross_entropy_with_integer_labels: arr takes one axis")
    axis = axis % logits.ndim
    label_logits = take(take_along_axis(logits, expand_dims(labels, axis), axis=axis), 0, axis=axis)
    if where is None:
        return logsumexp(logits, axis=axis) - label_logits
    if where.ndim != logits.ndim:
        where = expand_dims(where, axis)
    m = stop_gradient(max(_where(where, logits, -inf), axis=axis, keepdims=True))
    log_normalizers = squeeze(log(sum(_where(where, exp(logits - m), 0.0), axis=axis, keepdims=True)) + m, axis=axis)
    return _where(any(where, axis=axis), log_normalizers - label_logits, 0.0)

def _optax_safe_softmax_cross_entropy(logits, labels):
    """softmax_cross_entropy that is 0 where a label's logit is -inf."""
    log_probs = log_softmax(logits, -1)
    return -sum(_where(labels == 0, 0.0, labels * log_probs), axis=-1)

def _optax_sigmoid_binary_cross_entropy(logits, labels):
    """The binary cross-entropy of sigmoid(logits) against labels, elementwise."""
    labels = asarray(labels).astype(logits.dtype)
    log_p = log_sigmoid(logits)
    log_not_p = log_sigmoid(-logits)
    return -labels * log_p - (1.0 - labels) * log_not_p

def _optax_huber_loss(predictions, targets=None, delta=1.0):
    """Huber loss: quadratic within delta, linear beyond."""
    errors = (predictions - targets) if targets is not None else predictions
    abs_errors = abs(errors)
    quadratic = minimum(abs_errors, delta)
    linear = abs_errors - quadratic
    return 0.5 * quadratic ** 2 + delta * linear

def _optax_cosine_similarity(predictions, targets, epsilon=0.0):
    """The cosine of the angle between predictions and targets, along the last axis."""
    a_norm = _optax_safe_norm(predictions, epsilon, axis=-1, keepdims=True)
    b_norm = _optax_safe_norm(targets, epsilon, axis=-1, keepdims=True)
    return sum((predictions / a_norm) * (targets / b_norm), axis=-1)

def _optax_cosine_distance(predictions, targets, epsilon=0.0):
    """1 - cosine_similarity."""
    return 1.0 - _optax_cosine_similarity(predictions, targets, epsilon)

def _optax_log_cosh(predictions, targets=None):
    """log(cosh(predictions - targets)), elementwise."""
    errors = (predictions - targets) if targets is not None else predictions
    return logaddexp(errors, -errors) - log(2.0).astype(errors.dtype)
