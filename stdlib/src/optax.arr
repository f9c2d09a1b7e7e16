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
_optax_ScaleByAdaDeltaState = namedtuple("ScaleByAdaDeltaState", "e_g e_x")
_optax_ScaleByAdanState = namedtuple("ScaleByAdanState", "m v n g t")
_optax_ScaleByNovogradState = namedtuple("ScaleByNovogradState", "count mu nu")
_optax_ScaleBySM3State = namedtuple("ScaleBySM3State", "mu nu")
_optax_PartitionState = namedtuple("PartitionState", "inner_states")
_optax_ApplyIfFiniteState = namedtuple("ApplyIfFiniteState", "notfinite_count last_finite total_notfinite inner_state")
_optax_ZeroNansState = namedtuple("ZeroNansState", "found_nan")
_optax_LookaheadState = namedtuple("LookaheadState", "fast_state steps_since_sync")

class _optax_LookaheadParamsBase(namedtuple("LookaheadParams", "fast slow")):
    """Lookahead's parameters: the fast (inner) and the slow (averaged) weights."""

    @classmethod
    def init_synced(cls, params):
        """LookaheadParams with params as both the fast and the slow weights."""
        return cls(slow=params, fast=params)

_optax_LookaheadParams = type("LookaheadParams", (_optax_LookaheadParamsBase,), {})

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
    # optax jits this function, so JAX computes decay**count with pow, not
    # with the multiplications of an integer power (a concrete count's, eagerly).
    bias_correction_ = 1 - decay ** asarray(count).astype(float32)
    return tree_map(lambda t: t / bias_correction_.astype(t.dtype), moment)

def _optax_canonicalize_dtype(dtype):
    """A dtype argument, None kept."""
    return None if dtype is None else _dtype_of(dtype)

def _optax_tree_l1_norm(tree, *, ord=1, squared=False):
    """tree_norm(tree, ord=1) (optax.tree_utils' deprecated name)."""
    return _optax_tree_norm(tree, ord=ord, squared=squared)

def _optax_tree_l2_norm(tree, *, ord=2, squared=False):
    """tree_norm(tree, ord=2) (optax.tree_utils' deprecated name)."""
    return _optax_tree_norm(tree, ord=ord, squared=squared)

def _optax_tree_linf_norm(tree, *, ord="inf", squared=False):
    """tree_norm(tree, ord='inf') (optax.tree_utils' deprecated name)."""
    return _optax_tree_norm(tree, ord=ord, squared=squared)

class _optax_NamedTupleKeyBase:
    """A key path entry of a named tuple's field: its type's name and the field's."""

    def __str__(self):
        return f"{self.tuple_name}.{self.name}"

_optax_NamedTupleKey = dataclass(frozen=True)(type("NamedTupleKey", (_optax_NamedTupleKeyBase,), {"__annotations__": {"tuple_name": str, "name": str}}))

def _optax_is_named_tuple(x):
    """Whether x is a named tuple."""
    return isinstance(x, tuple) and hasattr(x, "_fields") and hasattr(x, "__class__") and hasattr(x.__class__, "__name__")

def _optax_node_has_keys(node, keys):
    """Whether node is a named tuple with one of keys as a field or as its name, or a dict with one of keys."""
    if _optax_is_named_tuple(node) and any([key in node._fields for key in keys]):
        return True
    if _optax_is_named_tuple(node) and (node.__class__.__name__ in keys):
        return True
    if isinstance(node, dict) and any([key in node for key in keys]):
        return True
    return False

def _optax_tree_leaves_with_named_tuple_path(tree, is_leaf=None):
    """tree_leaves_with_path with NamedTupleKey entries for the fields of named tuples."""
    is_leaf_ = is_leaf if is_leaf else (lambda _: False)
    leaves_with_path = tree_leaves_with_path(tree, is_leaf=lambda x: is_leaf_(x) or _optax_is_named_tuple(x))
    out = []
    for path, node in leaves_with_path:
        if is_leaf_(node) or not _optax_is_named_tuple(node):
            out.append((path, node))
        else:
            for field in node._fields:
                for child_path, child_value in _optax_tree_leaves_with_named_tuple_path(getattr(node, field), is_leaf):
                    out.append(((*path, _optax_NamedTupleKey(node.__class__.__name__, field), *child_path), child_value))
    return out

def _optax_flatten_to_key(path, node, key):
    """(path, value) of node's key (the node itself if key is its name)."""
    if _optax_is_named_tuple(node):
        if key == node.__class__.__name__:
            return path, node
        return (*path, _optax_NamedTupleKey(node.__class__.__name__, key)), getattr(node, key)
    if isinstance(node, dict) and key in node:
        return (*path, DictKey(key)), node[key]
    return path, node

def _optax_get_children_with_path(path, node):
    """(path, child) for each field of a named tuple or each item of a dict."""
    if _optax_is_named_tuple(node):
        return [((*path, _optax_NamedTupleKey(node.__class__.__name__, field)), getattr(node, field)) for field in node._fields]
    if isinstance(node, dict):
        return [((*path, DictKey(key)), value) for key, value in node.items()]
    raise ValueError(f"Subtree must be a dict or a NamedTuple. Got {type(node)}")

def _optax_set_children(node, children_with_keys):
    """A copy of a named tuple or dict with its children replaced."""
    if _optax_is_named_tuple(node):
        return node._replace(**children_with_keys)
    if isinstance(node, dict):
        return children_with_keys
    raise ValueError(f"Subtree must be a dict or a NamedTuple. Got {type(node)}")

def _optax_get_key(key):
    """A key path entry as the key, field name or index it stands for."""
    kind = type(key).__name__
    if kind == "DictKey":
        if isinstance(key.key, (str, int)):
            return key.key
        raise KeyError("Hashable keys not supported")
    if kind == "FlattenedIndexKey":
        return key.key
    if kind in ("GetAttrKey", "NamedTupleKey"):
        return key.name
    if kind == "SequenceKey":
        return key.idx
    raise KeyError(f"Tree key '{key}' of type '{type(key)}' not valid.")

def _optax_tree_get_all_with_path_rec(tree, key):
    """Every (path, value) of tree under key (a dict key, a named tuple's field or name)."""
    has_key = lambda node: _optax_node_has_keys(node, (key,))
    subtrees_with_path = [(path, sub) for path, sub in _optax_tree_leaves_with_named_tuple_path(tree, is_leaf=has_key) if has_key(sub)]
    found = [_optax_flatten_to_key(path, sub, key) for path, sub in subtrees_with_path]
    for path, sub in subtrees_with_path:
        for child_path, child in _optax_get_children_with_path(path, sub):
            found += [((*child_path, *new_path), new_value) for new_path, new_value in _optax_tree_get_all_with_path_rec(child, key)]
    return found

def _optax_tree_get_all_with_path(tree, key, filtering=None):
    """Every (path, value) of tree under key (a dict key, a named tuple's field or name), optionally filtered by filtering(path, value)."""
    found = _optax_tree_get_all_with_path_rec(tree, key)
    if filtering:
        found = [(path, value) for path, value in found if filtering(path, value)]
    return found

def _optax_tree_get(tree, key, default=None, filtering=None):
    """The one value of tree under key (a dict key, a named tuple's field or name), or default."""
    found = _optax_tree_get_all_with_path(tree, key, filtering=filtering)
    if len(found) > 1:
        raise KeyError(f"Found multiple values for '{key}' in {tree}.")
    if not found:
        return default
    return found[0][1]

def _optax_tree_set(tree, filtering=None, **kwargs):
    """A copy of tree with the values under each keyword's key replaced by its value."""
    for key in kwargs:
        if not _optax_tree_get_all_with_path(tree, key, filtering):
            if filtering:
                raise KeyError(f"Found no values matching '{key}' given the filtering operation in {tree}")
            raise KeyError(f"Found no values matching '{key}' in {tree}")
    keys = tuple(kwargs.keys())
    has_any_key = lambda node: _optax_node_has_keys(node, keys)

    def _replace(path, node):
        if has_any_key(node):
            if _optax_is_named_tuple(node) and node.__class__.__name__ in kwargs and (filtering is None or filtering(path, node)):
                return kwargs[node.__class__.__name__]
            new_children_with_keys = {}
            for child_path, child in _optax_get_children_with_path(path, node):
                key = _optax_get_key(child_path[-1])
                if key in kwargs and (filtering is None or filtering(child_path, child)):
                    new_children_with_keys[key] = kwargs[key]
                elif isinstance(child, (dict, list, tuple)):
                    new_children_with_keys[key] = _replace(child_path, child)
                else:
                    new_children_with_keys[key] = child
            return _optax_set_children(node, new_children_with_keys)
        return node

    _, treedef = tree_flatten(tree, is_leaf=has_any_key)
    leaves_with_path = _optax_tree_leaves_with_named_tuple_path(tree, is_leaf=has_any_key)
    return tree_unflatten(treedef, [_replace(path, node) for path, node in leaves_with_path])

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

def _optax_scale_by_radam(b1=0.9, b2=0.999, eps=1e-8, eps_root=0.0, threshold=5.0, *, nesterov=False):
    """RAdam's rescaling: Adam rectified by the variance of its adaptive step (plain momentum while that is undefined)."""
    ro_inf = 2.0 / (1.0 - b2) - 1.0

    def _radam_update(ro, mu_hat, nu_hat):
        r = sqrt((ro - 4.0) * (ro - 2.0) * ro_inf / ((ro_inf - 4.0) * (ro_inf - 2.0) * ro))
        return tree_map(lambda m, v: r.astype(m.dtype) * m / (sqrt(v + eps_root) + eps), mu_hat, nu_hat)

    def init_fn(params):
        mu = _optax_tree_zeros_like(params)
        nu = _optax_tree_zeros_like(params)
        return _optax_ScaleByAdamState(count=zeros([], int32), mu=mu, nu=nu)

    def update_fn(updates, state, params=None):
        mu = _optax_tree_update_moment(updates, state.mu, b1, 1)
        nu = _optax_tree_update_moment_per_elem_norm(updates, state.nu, b2, 2)
        count_inc = _optax_safe_increment(state.count)
        b2t = b2 ** count_inc
        ro = ro_inf - 2 * count_inc * b2t / (1 - b2t)
        if nesterov:
            mu_hat = tree_map(
                lambda m, g: b1 * m + (1 - b1) * g,
                _optax_tree_bias_correction(mu, b1, _optax_safe_increment(count_inc)),
                _optax_tree_bias_correction(updates, b1, count_inc))
        else:
            mu_hat = _optax_tree_bias_correction(mu, b1, count_inc)
        nu_hat = _optax_tree_bias_correction(nu, b2, count_inc)
        updates = tree_map(lambda t, f: where(ro >= threshold, t, f), _radam_update(ro, mu_hat, nu_hat), mu_hat)
        return updates, _optax_ScaleByAdamState(count=count_inc, mu=mu, nu=nu)

    return _optax_GradientTransformation(init_fn, update_fn)

def _optax_scale_by_yogi(b1=0.9, b2=0.999, eps=1e-3, eps_root=0.0, initial_accumulator_value=1e-6):
    """Yogi's rescaling: Adam with an additive, sign-controlled second-moment update."""
    def init_fn(params):
        mu = _optax_tree_full_like(params, initial_accumulator_value)
        nu = _optax_tree_full_like(params, initial_accumulator_value)
        return _optax_ScaleByAdamState(count=zeros([], int32), mu=mu, nu=nu)

    def update_fn(updates, state, params=None):
        mu = _optax_tree_update_moment(updates, state.mu, b1, 1)
        nu = tree_map(lambda g, v: v - (1 - b2) * sign(v - _optax_abs_sq(g)) * _optax_abs_sq(g), updates, state.nu)
        count_inc = _optax_safe_increment(state.count)
        mu_hat = _optax_tree_bias_correction(mu, b1, count_inc)
        nu_hat = _optax_tree_bias_correction(nu, b2, count_inc)
        updates = tree_map(lambda m, v: None if m is None else m / (sqrt(v + eps_root) + eps), mu_hat, nu_hat, is_leaf=_optax_is_none)
        return updates, _optax_ScaleByAdamState(count=count_inc, mu=mu, nu=nu)

    return _optax_GradientTransformation(init_fn, update_fn)

def _optax_scale_by_adadelta(rho=0.9, eps=1e-6):
    """AdaDelta's rescaling: the root of the mean squared past updates over the root of the mean squared gradients."""
    def init_fn(params):
        e_g = _optax_tree_zeros_like(params)
        e_x = _optax_tree_zeros_like(params)
        return _optax_ScaleByAdaDeltaState(e_g=e_g, e_x=e_x)

    def update_fn(updates, state, params=None):
        e_g = _optax_tree_update_moment(updates, state.e_g, rho, 2)
        updates = tree_map(lambda g, cur_e_g, prev_e_x: sqrt(prev_e_x + eps) / sqrt(cur_e_g + eps) * g, updates, e_g, state.e_x)
        e_x = _optax_tree_update_moment(updates, state.e_x, rho, 2)
        return updates, _optax_ScaleByAdaDeltaState(e_g=e_g, e_x=e_x)

    return _optax_GradientTransformation(init_fn, update_fn)

def _optax_scale_by_adan(b1=0.98, b2=0.92, b3=0.99, eps=1e-8, eps_root=0.0):
    """Adan's rescaling: Nesterov-style moments of the gradient and of its change between steps."""
    def init_fn(params):
        return _optax_ScaleByAdanState(
            m=_optax_tree_zeros_like(params),
            v=_optax_tree_zeros_like(params),
            n=_optax_tree_zeros_like(params),
            g=_optax_tree_zeros_like(params),
            t=zeros([], int32))

    def update_fn(updates, state, params=None):
        g = updates
        diff = _optax_tree_where(state.t == 0, _optax_tree_zeros_like(g), _optax_tree_sub(g, state.g))
        m = _optax_tree_update_moment(g, state.m, b1, 1)
        v = _optax_tree_update_moment(diff, state.v, b2, 1)
        sq = _optax_tree_add_scale(g, 1 - b2, diff)
        n = _optax_tree_update_moment_per_elem_norm(sq, state.n, b3, 2)
        t = _optax_safe_increment(state.t)
        m_hat = _optax_tree_bias_correction(m, b1, t)
        v_hat = _optax_tree_bias_correction(v, b2, t)
        n_hat = _optax_tree_bias_correction(n, b3, t)
        u = _optax_tree_add_scale(m_hat, 1 - b2, v_hat)
        denom = tree_map(lambda n_hat: sqrt(n_hat + eps_root) + eps, n_hat)
        u = _optax_tree_div(u, denom)
        return u, _optax_ScaleByAdanState(m=m, v=v, n=n, g=g, t=t)

    return _optax_GradientTransformation(init_fn, update_fn)

def _optax_scale_by_novograd(b1=0.9, b2=0.25, eps=1e-8, eps_root=0.0, weight_decay=0.0, mu_dtype=None):
    """NovoGrad's rescaling: each layer's gradient over the root of a moving average of its squared norm, plus weight decay, with momentum."""
    mu_dtype = _optax_canonicalize_dtype(mu_dtype)

    def init_fn(params):
        mu = _optax_tree_zeros_like(params, dtype=mu_dtype)
        nu = tree_map(lambda p: asarray(0.0, dtype=p.dtype), params)
        return _optax_ScaleByNovogradState(count=zeros([], int32), mu=mu, nu=nu)

    def nu_addition(grads):
        return norm(grads) ** 2

    def mu_addition(grads, params, nu):
        return grads / (sqrt(nu + eps_root) + eps) + weight_decay * params

    def init_nu(grads, nu):
        return tree_map(lambda g, n: nu_addition(g).astype(n.dtype), grads, nu)

    def update_nu(grads, nu):
        return _optax_tree_update_moment(tree_map(nu_addition, grads), nu, b2, 1)

    def init_mu(grads, params, mu, nu):
        return tree_map(mu_addition, grads, params, nu)

    def update_mu(grads, params, mu, nu):
        updates = tree_map(mu_addition, grads, params, nu)
        return tree_map(lambda m, u: None if m is None else b1 * m + u, mu, updates, is_leaf=_optax_is_none)

    def update_fn(updates, state, params):
        count_inc = _optax_safe_increment(state.count)
        nu = cond(count_inc == 1, lambda ops: init_nu(*ops), lambda ops: update_nu(*ops), (updates, state.nu))
        mu = cond(count_inc == 1, lambda ops: init_mu(*ops), lambda ops: update_mu(*ops), (updates, params, state.mu, nu))
        mu = _optax_tree_cast(mu, mu_dtype)
        return mu, _optax_ScaleByNovogradState(count=count_inc, mu=mu, nu=nu)

    return _optax_GradientTransformation(init_fn, update_fn)

def _optax_reject_complex(params):
    """Raise ValueError if a leaf of params is complex."""
    if any([iscomplexobj(x) for x in tree_leaves(params)]):
        raise ValueError("This transformation does not support complex parameters.")

def _optax_scale_by_sm3(b1=0.9, b2=1.0, eps=1e-8):
    """SM3's rescaling: Adagrad with accumulators kept per row, column, ... (the cover of each axis), with momentum."""
    def zeros_for_dim(p):
        return [zeros((p.shape[i],), dtype=p.dtype) for i in range(p.ndim)]

    def init_fn(params):
        _optax_reject_complex(params)
        mu = tree_map(zeros_for_dim, params)
        nu = _optax_tree_zeros_like(params)
        return _optax_ScaleBySM3State(mu, nu)

    def _expanded_shape(shape, axis):
        rank = len(shape)
        return [1] * axis + [shape[axis]] + [1] * (rank - axis - 1)

    def _new_accum(g, v):
        coeffs = (1.0 - b2 if b2 != 1.0 else 1.0, b2)
        if g.ndim < 2:
            return coeffs[0] * g ** 2 + coeffs[1] * v[0]
        return coeffs[0] * g ** 2 + coeffs[1] * functools_reduce(minimum, v)

    def other_axes(idx, ndim):
        return tuple(list(range(idx)) + list(range(idx + 1, ndim)))

    def _new_mu(g, i):
        if g.ndim < 2:
            return g
        return max(g, axis=other_axes(i, g.ndim))

    def update_fn(updates, state, params=None):
        def f(g, v):
            return [reshape(v[i], _expanded_shape(g.shape, i)) for i in range(g.ndim)]

        mu = tree_map(f, updates, state.mu)
        accum = tree_map(_new_accum, updates, mu)
        accum_inv_sqrt = tree_map(lambda t: where(t > 0, rsqrt(t + eps), 0.0), accum)
        up = tree_map(lambda g, a: g * a, updates, accum_inv_sqrt)
        nu = _optax_tree_update_moment(up, state.nu, b1, 1)
        mu = tree_map(lambda g: [_new_mu(g, i) for i in range(g.ndim)], accum)
        return nu, _optax_ScaleBySM3State(mu=mu, nu=nu)

    return _optax_GradientTransformation(init_fn, update_fn)

def _optax_zero_nans():
    """The transformation that replaces NaNs in the updates by 0 (its state says, per leaf, whether it found any)."""
    def init_fn(params):
        return _optax_ZeroNansState(found_nan=tree_map(lambda p: array(False, dtype=bool_), params))

    def update_fn(updates, opt_state, params=None):
        opt_state = _optax_ZeroNansState(found_nan=tree_map(lambda p: any(isnan(p)), updates))
        updates = tree_map(lambda p: where(isnan(p), zeros_like(p), p), updates)
        return updates, opt_state

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

def _optax_partition(transforms, param_labels, *, mask_compatible_extra_args=False):
    """Each transformation of the dict transforms applied to the parameters with its key as label (param_labels: a tree, or a function of the parameters)."""
    transforms = {k: _optax_with_extra_args_support(v) for k, v in transforms.items()}

    def make_mask(labels, group):
        return tree_map(lambda label: label == group, labels)

    def init_fn(params):
        labels = param_labels(params) if callable(param_labels) else param_labels
        label_set = set(tree_leaves(labels))
        if not label_set.issubset(transforms.keys()):
            raise ValueError(f"Some parameters have no corresponding transformation.\nParameter labels: {list(sorted(label_set))} \nTransforms keys: {list(sorted(transforms.keys()))} \n")
        inner_states = {group: _optax_masked(tx, make_mask(labels, group), mask_compatible_extra_args=mask_compatible_extra_args).init(params) for group, tx in transforms.items()}
        return _optax_PartitionState(inner_states)

    def update_fn(updates, state, params=None, **extra_args):
        labels = param_labels(updates) if callable(param_labels) else param_labels
        new_inner_state = {}
        for group, tx in transforms.items():
            masked_tx = _optax_masked(tx, make_mask(labels, group), mask_compatible_extra_args=mask_compatible_extra_args)
            updates, new_inner_state[group] = masked_tx.update(updates, state.inner_states[group], params, **extra_args)
        return updates, _optax_PartitionState(new_inner_state)

    return _optax_GradientTransformationExtraArgs(init_fn, update_fn)

def _optax_apply_if_finite(inner, max_consecutive_errors):
    """inner's update if the updates are finite, else zero updates and inner's state kept (unless more than max_consecutive_errors in a row)."""
    inner = _optax_with_extra_args_support(inner)

    def init_fn(params):
        return _optax_ApplyIfFiniteState(
            notfinite_count=zeros([], int32),
            last_finite=array(True, bool_),
            total_notfinite=zeros([], int32),
            inner_state=inner.init(params))

    def update_fn(updates, state, params=None, **extra_args):
        inner_state = state.inner_state
        flat_updates = tree_flatten(updates)[0]
        is_finite = all(array([all(isfinite(p)) for p in flat_updates]))
        notfinite_count = where(is_finite, zeros([], int32), _optax_safe_increment(state.notfinite_count))

        def do_update(_):
            return inner.update(updates, inner_state, params, **extra_args)

        def reject_update(_):
            return _optax_tree_zeros_like(updates), inner_state

        updates, new_inner_state = cond(logical_or(is_finite, notfinite_count > max_consecutive_errors), do_update, reject_update, None)
        return updates, _optax_ApplyIfFiniteState(
            notfinite_count=notfinite_count,
            last_finite=is_finite,
            total_notfinite=where(is_finite, state.total_notfinite, _optax_safe_increment(state.total_notfinite)),
            inner_state=new_inner_state)

    return _optax_GradientTransformationExtraArgs(init_fn, update_fn)

def _optax_lookahead(fast_optimizer, sync_period, slow_step_size, reset_state=False):
    """Lookahead: fast_optimizer on params.fast; every sync_period steps params.slow moves slow_step_size towards it and params.fast restarts there."""
    if sync_period < 1:
        raise ValueError("Synchronization period must be >= 1.")

    def init_fn(params):
        fast_params = getattr(params, "fast", None)
        if fast_params is None:
            fast_params = params
        return _optax_LookaheadState(fast_state=fast_optimizer.init(fast_params), steps_since_sync=zeros((), dtype=int32))

    def update_fn(updates, state, params):
        updates, fast_state = fast_optimizer.update(updates, state.fast_state, params.fast)
        sync_next = state.steps_since_sync == sync_period - 1
        updates = _optax_lookahead_update(updates, sync_next, params, slow_step_size)
        if reset_state:
            initial_state = fast_optimizer.init(params.fast)
            fast_state = tree_map(lambda current, init: (1 - sync_next) * current + sync_next * init, fast_state, initial_state)
        steps_since_sync = (state.steps_since_sync + 1) % sync_period
        return updates, _optax_LookaheadState(fast_state, steps_since_sync)

    return _optax_GradientTransformation(init_fn, update_fn)

def _optax_lookahead_update(updates, sync_next, params, slow_step_size):
    """Lookahead's updates of the fast and the slow weights for one step."""
    last_difference = tree_map(lambda f, u, s: f + u - s, params.fast, updates, params.slow)
    slow_updates = tree_map(lambda diff: slow_step_size * sync_next * diff, last_difference)
    fast_updates = tree_map(lambda up, diff: up - sync_next * (1 - slow_step_size) * diff, updates, last_difference)
    return _optax_LookaheadParams(fast=fast_updates, slow=slow_updates)

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
    order = []
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
        order.append(name)
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
    # In the signature's order, as optax's hyperparams dict is.
    ordered = {n: bound[n] for n in order if n in bound}
    ordered.update({n: v for n, v in bound.items() if n not in ordered})
    return ordered

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

def _optax_radam(learning_rate, b1=0.9, b2=0.999, eps=1e-8, eps_root=0.0, threshold=5.0, *, nesterov=False):
    """RAdam: Adam with a rectified adaptive learning rate."""
    return _optax_chain(
        _optax_scale_by_radam(b1=b1, b2=b2, eps=eps, eps_root=eps_root, threshold=threshold, nesterov=nesterov),
        _optax_scale_by_learning_rate(learning_rate))

def _optax_yogi(learning_rate, b1=0.9, b2=0.999, eps=1e-3):
    """Yogi: Adam with additive second-moment updates."""
    return _optax_chain(_optax_scale_by_yogi(b1=b1, b2=b2, eps=eps), _optax_scale_by_learning_rate(learning_rate))

def _optax_adadelta(learning_rate=None, rho=0.9, eps=1e-6, weight_decay=0.0, weight_decay_mask=None):
    """AdaDelta, with optional weight decay."""
    return _optax_chain(
        _optax_add_decayed_weights(weight_decay, mask=weight_decay_mask),
        _optax_scale_by_adadelta(rho=rho, eps=eps),
        _optax_scale_by_learning_rate(learning_rate))

def _optax_novograd(learning_rate, b1=0.9, b2=0.25, eps=1e-6, eps_root=0.0, weight_decay=0.0):
    """NovoGrad: layer-wise normalised gradients with weight decay and momentum."""
    return _optax_chain(
        _optax_scale_by_novograd(b1=b1, b2=b2, eps=eps, eps_root=eps_root, weight_decay=weight_decay),
        _optax_scale_by_learning_rate(learning_rate))

def _optax_sm3(learning_rate, momentum=0.9):
    """SM3: memory-efficient Adagrad (accumulators per axis), with momentum."""
    return _optax_chain(_optax_scale_by_sm3(momentum), _optax_scale(-learning_rate))

def _optax_fromage(learning_rate, min_norm=1e-6):
    """Fromage: updates scaled by the trust ratio, shrinking the weights by 1 / sqrt(1 + lr**2)."""
    if not callable(learning_rate):
        mult = 1 / (1 + learning_rate ** 2) ** 0.5
        return _optax_chain(
            _optax_scale_by_trust_ratio(min_norm),
            _optax_scale_by_learning_rate(learning_rate * mult),
            _optax_add_decayed_weights(mult - 1))
    mult_lr = lambda count: 1 / (1 + learning_rate(count) ** 2) ** 0.5
    return _optax_chain(
        _optax_scale_by_trust_ratio(min_norm),
        _optax_scale_by_learning_rate(lambda c: mult_lr(c) * learning_rate(c)),
        _optax_add_decayed_weights(lambda c: mult_lr(c) - 1))

def _optax_lars(learning_rate, weight_decay=0.0, weight_decay_mask=True, trust_coefficient=0.001, eps=0.0, trust_ratio_mask=True, momentum=0.9, nesterov=False):
    """LARS: SGD with momentum, each layer's update scaled by its trust ratio."""
    return _optax_chain(
        _optax_add_decayed_weights(weight_decay, mask=weight_decay_mask),
        _optax_masked(inner=_optax_scale_by_trust_ratio(trust_coefficient=trust_coefficient, eps=eps), mask=trust_ratio_mask),
        _optax_scale_by_learning_rate(learning_rate),
        _optax_trace(decay=momentum, nesterov=nesterov))

def _optax_adan(learning_rate, b1=0.98, b2=0.92, b3=0.99, eps=1e-8, eps_root=1e-8, weight_decay=0.0, mask=None):
    """Adan: adaptive Nesterov momentum, with decoupled weight decay."""
    return _optax_chain(
        _optax_scale_by_adan(b1=b1, b2=b2, b3=b3, eps=eps, eps_root=eps_root),
        _optax_add_decayed_weights(weight_decay, mask),
        _optax_scale_by_learning_rate(learning_rate))

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

def _optax_linear_interpolate(start, end, pct):
    """start + (end - start) * pct."""
    return (end - start) * pct + start

def _optax_cosine_interpolate(start, end, pct):
    """From start (pct 0) to end (pct 1) along a half cosine."""
    return end + (start - end) / 2.0 * (cos(pi * pct) + 1)

def _optax_piecewise_interpolate_schedule(interpolate_type, init_value, boundaries_and_scales=None):
    """init_value times the scales of the boundaries passed, interpolated ('linear' or 'cosine') between boundaries."""
    if interpolate_type == "linear":
        interpolate_fn = _optax_linear_interpolate
    elif interpolate_type == "cosine":
        interpolate_fn = _optax_cosine_interpolate
    else:
        raise ValueError("`interpolate_type` must be either 'cosine' or 'linear'")
    if boundaries_and_scales:
        boundaries, scales = zip(*sorted(boundaries_and_scales.items()))
        if not all(scale >= 0.0 for scale in scales):
            raise ValueError("`piecewise_interpolate_schedule` expects non-negative scale factors")
    else:
        boundaries, scales = (), ()

    def schedule(count):
        bounds = stack((0,) + tuple(boundaries))
        values = cumprod(stack((init_value,) + tuple(scales)))
        interval_sizes = maximum(bounds[1:] - bounds[:-1], 1)
        indicator = logical_and(bounds[:-1] <= count, count < bounds[1:])
        pct = (count - bounds[:-1]) / interval_sizes
        interp_vals = interpolate_fn(values[:-1], values[1:], pct)
        return indicator.dot(interp_vals) + (bounds[-1] <= count) * values[-1]

    return schedule

def _optax_linear_onecycle_schedule(transition_steps, peak_value, pct_start=0.3, pct_final=0.85, div_factor=25.0, final_div_factor=1e4):
    """One cycle: linear up from peak_value / div_factor to peak_value, back down, then down to a final_div_factor-th of the start."""
    if transition_steps <= 0:
        raise ValueError("A linear onecycle schedule was set with a non-positive `transition_steps`")
    return _optax_piecewise_interpolate_schedule("linear", peak_value / div_factor, {
        int(pct_start * transition_steps): div_factor,
        int(pct_final * transition_steps): 1.0 / div_factor,
        transition_steps: 1.0 / final_div_factor})

def _optax_cosine_onecycle_schedule(transition_steps, peak_value, pct_start=0.3, div_factor=25.0, final_div_factor=1e4):
    """One cycle: cosine up from peak_value / div_factor to peak_value, then cosine down to a final_div_factor-th of the start."""
    if transition_steps <= 0:
        raise ValueError("A linear onecycle schedule was set with a non-positive `transition_steps`")
    return _optax_piecewise_interpolate_schedule("cosine", peak_value / div_factor, {
        int(pct_start * transition_steps): div_factor,
        int(transition_steps): 1.0 / (div_factor * final_div_factor)})

def _optax_sgdr_schedule(cosine_kwargs):
    """SGDR: warm restarts, one warmup_cosine_decay_schedule (given by its keyword arguments) after another."""
    boundaries = []
    schedules = []
    step = 0
    for kwargs in cosine_kwargs:
        schedules += [_optax_warmup_cosine_decay_schedule(**kwargs)]
        boundaries += [step + kwargs["decay_steps"]]
        step += kwargs["decay_steps"]
    return _optax_join_schedules(schedules, boundaries[:-1])

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

def _optax_check_subdtype(x, subdtype):
    """Raise TypeError unless x's dtype is a subdtype of subdtype."""
    dtype = result_type(x)
    if not issubdtype(dtype, subdtype):
        raise TypeError(f"Expected the input to have a dtype that is a subdtype of {subdtype}, got {dtype} instead")

def _optax_check_shapes_equal(a, b):
    """Raise ValueError unless a and b have the same shape."""
    if shape(a) != shape(b):
        raise ValueError(f"Shape mismatch: got {shape(a)} and {shape(b)}.")

def _optax_hinge_loss(predictor_outputs, targets):
    """max(0, 1 - predictor_outputs * targets), for targets in {-1, 1}."""
    return maximum(0, 1 - predictor_outputs * targets)

def _optax_perceptron_loss(predictor_outputs, targets):
    """max(0, -predictor_outputs * targets), for targets in {-1, 1}."""
    _optax_check_shapes_equal(predictor_outputs, targets)
    return maximum(0, -predictor_outputs * targets)

def _optax_kl_divergence(log_predictions, targets, axis=-1, where=None):
    """sum(targets * (log(targets) - log_predictions)) over axis (0 log 0 = 0)."""
    _optax_check_subdtype(log_predictions, floating)
    _optax_check_subdtype(targets, floating)
    loss = targets * (_where(targets == 0, 0, log(targets)) - log_predictions)
    return sum(loss, axis=axis, where=where)

def _optax_kl_divergence_with_log_targets(log_predictions, log_targets, axis=-1, where=None):
    """sum(exp(log_targets) * (log_targets - log_predictions)) over axis."""
    _optax_check_subdtype(log_predictions, floating)
    _optax_check_subdtype(log_targets, floating)
    loss = exp(log_targets) * (log_targets - log_predictions)
    return sum(loss, axis=axis, where=where)

def _optax_generalized_kl_divergence(log_predictions, targets, axis=-1, where=None):
    """kl_divergence plus sum(exp(log_predictions) - targets): the KL divergence of unnormalised measures."""
    x = _optax_kl_divergence(log_predictions, targets, axis=axis, where=where)
    y = sum(exp(log_predictions) - targets, axis=axis, where=where)
    return x + y

def _optax_convex_kl_divergence(log_predictions, targets, axis=-1, where=None):
    """generalized_kl_divergence's deprecated name."""
    return _optax_generalized_kl_divergence(log_predictions, targets, axis=axis, where=where)

def _optax_sigmoid_focal_loss(logits, labels, *, alpha=None, gamma=2.0):
    """The sigmoid binary cross-entropy weighted by (1 - p_t)**gamma (and alpha for the positives), elementwise."""
    _optax_check_subdtype(logits, floating)
    labels = asarray(labels).astype(logits.dtype)
    ce_loss = _optax_sigmoid_binary_cross_entropy(logits, labels)
    log_p = log_sigmoid(logits)
    log_q = log_sigmoid(-logits)
    log_one_minus_p_t = logsumexp(stack([log_p, log_q], axis=-1), axis=-1, b=stack([1 - labels, labels], axis=-1))
    focal_weight = exp(gamma * log_one_minus_p_t)
    loss = ce_loss * focal_weight
    if alpha is None:
        return loss
    return (alpha * labels + (1.0 - alpha) * (1.0 - labels)) * loss

def _optax_softmax_where(x, axis, where_):
    """softmax over axis (0 outside where_, as jax.nn.softmax's where=)."""
    if where_ is None:
        return softmax(x, axis=axis)
    m = max(_where(where_, x, -inf), axis=axis, keepdims=True)
    unnormalized = exp(x - stop_gradient(m))
    result = unnormalized / sum(unnormalized, axis=axis, where=where_, keepdims=True)
    return _where(where_, result, 0.0)

def _optax_poly_loss_cross_entropy(logits, labels, *, epsilon=2.0, axis=-1, where=None):
    """PolyLoss: softmax_cross_entropy + epsilon * sum(labels * (1 - softmax(logits)))."""
    _optax_check_subdtype(logits, floating)
    _optax_check_subdtype(labels, floating)
    p = _optax_softmax_where(logits, axis, where)
    one_minus_pt = sum(labels * (1 - p), axis=axis, where=where)
    cross_entropy = _optax_softmax_cross_entropy(logits=logits, labels=labels, axis=axis, where=where)
    return cross_entropy + epsilon * one_minus_pt

def _optax_smooth_labels(labels, alpha, *, axis=-1, where=None):
    """(1 - alpha) * labels + alpha / num_categories (the categories along axis, or those of where)."""
    _optax_check_subdtype(labels, floating)
    if where is None:
        if axis is None:
            num_categories = size(labels)
        else:
            axes = (axis,) if isinstance(axis, int) else tuple(axis)
            num_categories = functools_reduce(operator_mul, [shape(labels)[a] for a in axes], 1)
    else:
        num_categories = sum(where, axis, keepdims=True)
    return (1.0 - alpha) * labels + alpha / num_categories
