# The jax.example_libraries namespaces (a library loaded at its first import).
# jax.example_libraries.optimizers (`_jopt_X`) and jax.example_libraries.stax
# (`_stax_X`), as JAX 0.10.2 writes them: an optimizer is an (init, update,
# get_params) triple over pytrees; a layer is an (init_fun, apply_fun) pair.

class _jopt_OptimizerStateBase:
    """OptimizerState(packed_state, tree_def, subtree_defs), a pytree of its packed_state:
    a class that acts as JAX's named tuple (arr registers no flattening of named tuples)."""
    _fields = ("packed_state", "tree_def", "subtree_defs")

    def __init__(self, packed_state, tree_def, subtree_defs):
        self.packed_state, self.tree_def, self.subtree_defs = packed_state, tree_def, subtree_defs

    def __iter__(self):
        return iter((self.packed_state, self.tree_def, self.subtree_defs))

    def __getitem__(self, i):
        return (self.packed_state, self.tree_def, self.subtree_defs)[i]

    def __len__(self):
        return 3

    def __repr__(self):
        return f"OptimizerState(packed_state={self.packed_state!r}, tree_def={self.tree_def!r}, subtree_defs={self.subtree_defs!r})"

_jopt_OptimizerState = type("OptimizerState", (_jopt_OptimizerStateBase,), {})
register_pytree_node(_jopt_OptimizerState, lambda xs: ((xs.packed_state,), (xs.tree_def, xs.subtree_defs)),
                     lambda data, xs: _jopt_OptimizerState(xs[0], data[0], data[1]))
_jopt_Optimizer = namedtuple("Optimizer", ["init_fn", "update_fn", "params_fn"])

def _jopt_unzip2(pairs):
    """The firsts and the seconds of pairs, as two tuples."""
    xs, ys = [], []
    for x, y in pairs:
        xs.append(x)
        ys.append(y)
    return tuple(xs), tuple(ys)

def _jopt_optimizer(opt_maker):
    """optimizers.optimizer: lift an (init, update, get_params) triple on arrays to pytrees."""
    def tree_opt_maker(*args, **kwargs):
        init, update, get_params = opt_maker(*args, **kwargs)

        def tree_init(x0_tree):
            x0_flat, tree = tree_flatten(x0_tree)
            states_flat, subtrees = _jopt_unzip2([tree_flatten(init(x0)) for x0 in x0_flat])
            return _jopt_OptimizerState(states_flat, tree, subtrees)

        def tree_update(i, grad_tree, opt_state):
            states_flat, tree, subtrees = opt_state
            grad_flat, tree2 = tree_flatten(grad_tree)
            if tree2 != tree:
                raise TypeError("optimizer update function was passed a gradient tree that did not match the parameter tree structure with which it was initialized: "
                                f"parameter tree {tree} and grad tree {tree2}.")
            states = [tree_unflatten(t, s) for t, s in zip(subtrees, states_flat)]
            new_states_flat, subtrees2 = _jopt_unzip2([tree_flatten(update(i, g, s)) for g, s in zip(grad_flat, states)])
            for subtree, subtree2 in zip(subtrees, subtrees2):
                if subtree2 != subtree:
                    raise TypeError("optimizer update function produced an output structure that did not match its input structure: "
                                    f"input {subtree} and output {subtree2}.")
            return _jopt_OptimizerState(new_states_flat, tree, subtrees)

        def tree_get_params(opt_state):
            states_flat, tree, subtrees = opt_state
            return tree_unflatten(tree, [get_params(tree_unflatten(t, s)) for t, s in zip(subtrees, states_flat)])

        return _jopt_Optimizer(tree_init, tree_update, tree_get_params)
    return tree_opt_maker

def _jopt_first(state):
    """The parameters: a state's first element."""
    return state[0]

def _jopt_sgd_triple(step_size):
    """sgd's triple on arrays."""
    step_size = _jopt_make_schedule(step_size)
    return _jopt_Optimizer(lambda x0: x0, lambda i, g, x: x - step_size(i) * g, lambda x: x)

def _jopt_momentum_triple(step_size, mass):
    """momentum's triple on arrays."""
    step_size = _jopt_make_schedule(step_size)
    def update(i, g, state):
        x, velocity = state
        velocity = mass * velocity + g
        return x - step_size(i) * velocity, velocity
    return (lambda x0: (x0, zeros_like(x0))), update, _jopt_first

def _jopt_nesterov_triple(step_size, mass):
    """nesterov's triple on arrays."""
    step_size = _jopt_make_schedule(step_size)
    def update(i, g, state):
        x, velocity = state
        velocity = mass * velocity + g
        return x - step_size(i) * (mass * velocity + g), velocity
    return (lambda x0: (x0, zeros_like(x0))), update, _jopt_first

def _jopt_adagrad_triple(step_size, momentum=0.9):
    """adagrad's triple on arrays."""
    step_size = _jopt_make_schedule(step_size)
    def update(i, g, state):
        x, g_sq, m = state
        g_sq = g_sq + square(g)
        g_sq_inv_sqrt = where(g_sq > 0, 1. / sqrt(g_sq), 0.0)
        m = (1. - momentum) * (g * g_sq_inv_sqrt) + momentum * m
        return x - step_size(i) * m, g_sq, m
    return (lambda x0: (x0, zeros_like(x0), zeros_like(x0))), update, _jopt_first

def _jopt_rmsprop_triple(step_size, gamma=0.9, eps=1e-8):
    """rmsprop's triple on arrays."""
    step_size = _jopt_make_schedule(step_size)
    def update(i, g, state):
        x, avg_sq_grad = state
        avg_sq_grad = avg_sq_grad * gamma + square(g) * (1. - gamma)
        return x - step_size(i) * g / sqrt(avg_sq_grad + eps), avg_sq_grad
    return (lambda x0: (x0, zeros_like(x0))), update, _jopt_first

def _jopt_rmsprop_momentum_triple(step_size, gamma=0.9, eps=1e-8, momentum=0.9):
    """rmsprop_momentum's triple on arrays."""
    step_size = _jopt_make_schedule(step_size)
    def update(i, g, state):
        x, avg_sq_grad, mom = state
        avg_sq_grad = avg_sq_grad * gamma + square(g) * (1. - gamma)
        mom = momentum * mom + step_size(i) * g / sqrt(avg_sq_grad + eps)
        return x - mom, avg_sq_grad, mom
    return (lambda x0: (x0, zeros_like(x0), zeros_like(x0))), update, _jopt_first

def _jopt_adam_triple(step_size, b1=0.9, b2=0.999, eps=1e-8):
    """adam's triple on arrays."""
    step_size = _jopt_make_schedule(step_size)
    def update(i, g, state):
        x, m, v = state
        m = (1 - b1) * g + b1 * m
        v = (1 - b2) * square(g) + b2 * v
        mhat = m / (1 - asarray(b1, m.dtype) ** (i + 1))
        vhat = v / (1 - asarray(b2, m.dtype) ** (i + 1))
        return x - step_size(i) * mhat / (sqrt(vhat) + eps), m, v
    return (lambda x0: (x0, zeros_like(x0), zeros_like(x0))), update, _jopt_first

def _jopt_adamax_triple(step_size, b1=0.9, b2=0.999, eps=1e-8):
    """adamax's triple on arrays."""
    step_size = _jopt_make_schedule(step_size)
    def update(i, g, state):
        x, m, u = state
        m = (1 - b1) * g + b1 * m
        u = maximum(b2 * u, abs(g))
        return x - (step_size(i) / (1 - asarray(b1, m.dtype) ** (i + 1))) * m / (u + eps), m, u
    return (lambda x0: (x0, zeros_like(x0), zeros_like(x0))), update, _jopt_first

def _jopt_sm3_triple(step_size, momentum=0.9):
    """sm3's triple on arrays."""
    step_size = _jopt_make_schedule(step_size)
    def init(x0):
        x_shape = x0.shape
        x0 = atleast_1d(x0)
        return x0, zeros_like(x0), [zeros(sz, dtype=x0.dtype) for sz in x0.shape], x_shape
    def update(i, g, state):
        x, m, vs, x_shape = state
        vs = [v[tuple(slice(None) if a == j else None for a in range(g.ndim))] for j, v in enumerate(vs)]
        accum = vs[0]
        for v in vs[1:]:
            accum = minimum(accum, v)
        accum = accum + square(g)
        accum_inv_sqrt = where(accum > 0, 1. / sqrt(accum), 0)
        m = (1. - momentum) * (g * accum_inv_sqrt) + momentum * m
        x = x - step_size(i) * m
        vs = [accum.max(axis=tuple(a for a in range(x.ndim) if a != j)) for j in range(x.ndim)]
        return x, m, vs, x_shape
    return init, update, lambda state: state[0].reshape(state[3])

_jopt_sgd = _jopt_optimizer(_jopt_sgd_triple)
_jopt_momentum = _jopt_optimizer(_jopt_momentum_triple)
_jopt_nesterov = _jopt_optimizer(_jopt_nesterov_triple)
_jopt_adagrad = _jopt_optimizer(_jopt_adagrad_triple)
_jopt_rmsprop = _jopt_optimizer(_jopt_rmsprop_triple)
_jopt_rmsprop_momentum = _jopt_optimizer(_jopt_rmsprop_momentum_triple)
_jopt_adam = _jopt_optimizer(_jopt_adam_triple)
_jopt_adamax = _jopt_optimizer(_jopt_adamax_triple)
_jopt_sm3 = _jopt_optimizer(_jopt_sm3_triple)

def _jopt_constant(step_size):
    """optimizers.constant: the schedule i -> step_size."""
    return lambda i: step_size

def _jopt_exponential_decay(step_size, decay_steps, decay_rate):
    """optimizers.exponential_decay: step_size * decay_rate ** (i / decay_steps)."""
    return lambda i: step_size * decay_rate ** (i / decay_steps)

def _jopt_inverse_time_decay(step_size, decay_steps, decay_rate, staircase=False):
    """optimizers.inverse_time_decay: step_size / (1 + decay_rate * i / decay_steps), floored steps with staircase."""
    if staircase:
        return lambda i: step_size / (1 + decay_rate * floor(i / decay_steps))
    return lambda i: step_size / (1 + decay_rate * i / decay_steps)

def _jopt_polynomial_decay(step_size, decay_steps, final_step_size, power=1.0):
    """optimizers.polynomial_decay: from step_size to final_step_size over decay_steps."""
    def schedule(step_num):
        step_num = minimum(step_num, decay_steps)
        step_mult = (1 - step_num / decay_steps) ** power
        return step_mult * (step_size - final_step_size) + final_step_size
    return schedule

def _jopt_piecewise_constant(boundaries, values):
    """optimizers.piecewise_constant: values[k] after the k-th boundary."""
    boundaries = array(boundaries)
    values = array(values)
    if not boundaries.ndim == values.ndim == 1:
        raise ValueError("boundaries and values must be sequences")
    if not boundaries.shape[0] == values.shape[0] - 1:
        raise ValueError("boundaries length must be one shorter than values length")
    return lambda i: values[sum(i > boundaries)]

def _jopt_make_schedule(scalar_or_schedule):
    """optimizers.make_schedule: a callable as it is, a scalar as a constant schedule."""
    if callable(scalar_or_schedule):
        return scalar_or_schedule
    if ndim(scalar_or_schedule) == 0:
        return _jopt_constant(scalar_or_schedule)
    raise TypeError(type(scalar_or_schedule))

def _jopt_l2_norm(tree):
    """optimizers.l2_norm: the l2 norm of a pytree of arrays."""
    total = 0
    for x in tree_leaves(tree):
        total = total + vdot(x, x)
    return sqrt(total)

def _jopt_clip_grads(grad_tree, max_norm):
    """optimizers.clip_grads: the gradients scaled down to l2 norm max_norm where larger."""
    norm = _jopt_l2_norm(grad_tree)
    return tree_map(lambda g: where(norm < max_norm, g, g * (max_norm / norm)), grad_tree)

class _jopt_JoinPointBase:
    """Marks the boundary between two joined (nested) pytrees."""
    def __init__(self, subtree):
        self.subtree = subtree

    def __iter__(self):
        return iter((self.subtree,))

_jopt_JoinPoint = type("JoinPoint", (_jopt_JoinPointBase,), {})

def _jopt_unpack_optimizer_state(opt_state):
    """optimizers.unpack_optimizer_state: the state as the parameters' tree with JoinPoint leaves."""
    states_flat, tree_def, subtree_defs = opt_state
    return tree_unflatten(tree_def, [_jopt_JoinPoint(tree_unflatten(t, s)) for t, s in zip(subtree_defs, states_flat)])

def _jopt_pack_optimizer_state(marked_pytree):
    """optimizers.pack_optimizer_state: the inverse of unpack_optimizer_state."""
    sentinels, tree_def = tree_flatten(marked_pytree)
    assert all(isinstance(s, _jopt_JoinPoint) for s in sentinels)
    states_flat, subtree_defs = _jopt_unzip2([tree_flatten(s.subtree) for s in sentinels])
    return _jopt_OptimizerState(states_flat, tree_def, subtree_defs)

def _stax_Dense(out_dim, W_init=glorot_normal(), b_init=_init_normal()):
    """stax.Dense: a fully-connected layer, params (W, b)."""
    def init_fun(rng, input_shape):
        output_shape = input_shape[:-1] + (out_dim,)
        k1, k2 = random.split(rng)
        return output_shape, (W_init(k1, (input_shape[-1], out_dim)), b_init(k2, (out_dim,)))
    def apply_fun(params, inputs, **kwargs):
        W, b = params
        return dot(inputs, W) + b
    return init_fun, apply_fun

def _stax_stride_dim(d, window, stride):
    """JAX's core.stride_dim: the number of windows, at least 0."""
    return max((d - window) // stride + 1, 0)

def _stax_conv_shapes(dimension_numbers, out_chan, filter_shape, input_shape):
    """The kernel's shape, the bias's shape, and the specs as axis numbers."""
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    filters = iter(filter_shape)
    kernel_shape = [out_chan if c == 'O' else input_shape[lhs_spec.index('C')] if c == 'I' else next(filters) for c in rhs_spec]
    bias_shape = [out_chan if c == 'C' else 1 for c in out_spec]
    dn = _lax_conv_dimension_numbers(input_shape, kernel_shape, dimension_numbers)
    return kernel_shape, bias_shape, dn

def _stax_unpermute(out_trans, out_perm):
    """A shape in (N, C, spatial...) order back in the output's layout."""
    return tuple(out_trans[list(out_perm).index(i)] for i in range(len(out_perm)))

def _stax_GeneralConv(dimension_numbers, out_chan, filter_shape, strides=None, padding='VALID', W_init=None, b_init=_init_normal(1e-6)):
    """stax.GeneralConv: a convolution layer in any layout, params (W, b)."""
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    one = (1,) * len(filter_shape)
    strides = strides or one
    W_init = W_init or glorot_normal(rhs_spec.index('I'), rhs_spec.index('O'))
    def init_fun(rng, input_shape):
        kernel_shape, bias_shape, dn = _stax_conv_shapes(dimension_numbers, out_chan, filter_shape, input_shape)
        lhs = [input_shape[i] for i in dn.lhs_spec]
        rhs = [kernel_shape[i] for i in dn.rhs_spec]
        pads = _window_pads(padding, lhs[2:], rhs[2:], strides)
        space = tuple(_stax_stride_dim(n + lo + hi, k, s) for n, (lo, hi), k, s in zip(lhs[2:], pads, rhs[2:], strides))
        output_shape = _stax_unpermute((lhs[0], rhs[0]) + space, dn.out_spec)
        k1, k2 = random.split(rng)
        return output_shape, (W_init(k1, tuple(kernel_shape)), b_init(k2, tuple(bias_shape)))
    def apply_fun(params, inputs, **kwargs):
        W, b = params
        return conv_general_dilated(inputs, W, strides, padding, one, one, dimension_numbers=dimension_numbers) + b
    return init_fun, apply_fun

def _stax_Conv(out_chan, filter_shape, strides=None, padding='VALID', W_init=None, b_init=_init_normal(1e-6)):
    """stax.Conv: a 2-d convolution layer, NHWC inputs and an HWIO kernel."""
    return _stax_GeneralConv(('NHWC', 'HWIO', 'NHWC'), out_chan, filter_shape, strides, padding, W_init, b_init)

def _stax_conv_transpose_padding(k, s, padding):
    """JAX's _conv_transpose_padding: (before, after) for one axis."""
    if padding == 'SAME':
        pad_len = k + s - 2
        pad_a = k - 1 if s > k - 1 else -(-pad_len // 2)
    elif padding == 'VALID':
        pad_len = k + s - 2 + max(k - s, 0)
        pad_a = k - 1
    else:
        raise ValueError(f"Invalid padding mode: {padding}")
    return pad_a, pad_len - pad_a

def _stax_GeneralConvTranspose(dimension_numbers, out_chan, filter_shape, strides=None, padding='VALID', W_init=None, b_init=_init_normal(1e-6)):
    """stax.GeneralConvTranspose: a transposed-convolution layer in any layout, params (W, b)."""
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    one = (1,) * len(filter_shape)
    strides = strides or one
    W_init = W_init or glorot_normal(rhs_spec.index('I'), rhs_spec.index('O'))
    def pads_of(rhs):
        if isinstance(padding, str):
            return [_stax_conv_transpose_padding(k, s, padding) for k, s in zip(rhs[2:], strides)]
        return [tuple(p) for p in padding]
    def init_fun(rng, input_shape):
        kernel_shape, bias_shape, dn = _stax_conv_shapes(dimension_numbers, out_chan, filter_shape, input_shape)
        lhs = [input_shape[i] for i in dn.lhs_spec]
        rhs = [kernel_shape[i] for i in dn.rhs_spec]
        space = tuple((n - 1) * s - k + 2 + lo + hi for n, k, s, (lo, hi) in zip(lhs[2:], rhs[2:], strides, pads_of(rhs)))
        output_shape = _stax_unpermute((lhs[0], rhs[0]) + space, dn.out_spec)
        k1, k2 = random.split(rng)
        return output_shape, (W_init(k1, tuple(kernel_shape)), b_init(k2, tuple(bias_shape)))
    def apply_fun(params, inputs, **kwargs):
        W, b = params
        dn = _lax_conv_dimension_numbers(inputs.shape, W.shape, dimension_numbers)
        pads = pads_of([W.shape[i] for i in dn.rhs_spec])
        return conv_general_dilated(inputs, W, one, pads, strides, one, dimension_numbers=dimension_numbers) + b
    return init_fun, apply_fun

def _stax_Conv1DTranspose(out_chan, filter_shape, strides=None, padding='VALID', W_init=None, b_init=_init_normal(1e-6)):
    """stax.Conv1DTranspose: a 1-d transposed convolution, NHC inputs and an HIO kernel."""
    return _stax_GeneralConvTranspose(('NHC', 'HIO', 'NHC'), out_chan, filter_shape, strides, padding, W_init, b_init)

def _stax_ConvTranspose(out_chan, filter_shape, strides=None, padding='VALID', W_init=None, b_init=_init_normal(1e-6)):
    """stax.ConvTranspose: a 2-d transposed convolution, NHWC inputs and an HWIO kernel."""
    return _stax_GeneralConvTranspose(('NHWC', 'HWIO', 'NHWC'), out_chan, filter_shape, strides, padding, W_init, b_init)

def _stax_BatchNorm(axis=(0, 1, 2), epsilon=1e-5, center=True, scale=True, beta_init=_init_zeros, gamma_init=_init_ones):
    """stax.BatchNorm: standardize over axis (batch statistics), then scale by gamma and shift by beta."""
    axis = (axis,) if isscalar(axis) else axis
    def init_fun(rng, input_shape):
        shape = tuple(d for i, d in enumerate(input_shape) if i not in axis)
        k1, k2 = random.split(rng)
        beta = beta_init(k1, shape) if center else ()
        gamma = gamma_init(k2, shape) if scale else ()
        return input_shape, (beta, gamma)
    def apply_fun(params, x, **kwargs):
        beta, gamma = params
        ed = tuple(None if i in axis else slice(None) for i in range(ndim(x)))
        z = standardize(x, axis, epsilon=epsilon)
        if center and scale:
            return gamma[ed] * z + beta[ed]
        if center:
            return z + beta[ed]
        if scale:
            return gamma[ed] * z
        return z
    return init_fun, apply_fun

def _stax_elementwise(fun, **fun_kwargs):
    """stax.elementwise: a layer without parameters applying fun to its inputs."""
    return (lambda rng, input_shape: (input_shape, ())), (lambda params, inputs, **kwargs: fun(inputs, **fun_kwargs))

_stax_Tanh = _stax_elementwise(tanh)
_stax_Relu = _stax_elementwise(relu)
_stax_Exp = _stax_elementwise(exp)
_stax_LogSoftmax = _stax_elementwise(log_softmax, axis=-1)
_stax_Softmax = _stax_elementwise(softmax, axis=-1)
_stax_Softplus = _stax_elementwise(softplus)
_stax_Sigmoid = _stax_elementwise(sigmoid)
_stax_Elu = _stax_elementwise(elu)
_stax_LeakyRelu = _stax_elementwise(leaky_relu)
_stax_Selu = _stax_elementwise(selu)
_stax_Gelu = _stax_elementwise(gelu)

def _stax_pooling_layer(reducer, init_val, rescale=False):
    """A pooling layer's constructor: reducer over windows, averaged with rescale."""
    def PoolingLayer(window_shape, strides=None, padding='VALID', spec=None):
        """A pooling layer over window_shape (NHWC by default, else as spec says)."""
        strides = strides or (1,) * len(window_shape)
        dims, spatial_strides = tuple(window_shape), tuple(strides)
        non_spatial_axes = (0, len(window_shape) + 1) if spec is None else (spec.index('N'), spec.index('C'))
        for i in sorted(non_spatial_axes):
            window_shape = tuple(window_shape[:i]) + (1,) + tuple(window_shape[i:])
            strides = tuple(strides[:i]) + (1,) + tuple(strides[i:])
        def init_fun(rng, input_shape):
            pads = _window_pads(padding, input_shape, window_shape, strides)
            return tuple(_stax_stride_dim(d + lo + hi, w, s) for d, (lo, hi), w, s in zip(input_shape, pads, window_shape, strides)), ()
        def apply_fun(params, inputs, **kwargs):
            out = _lax_reduce_window(inputs, init_val, reducer, window_shape, strides, padding)
            if not rescale:
                return out
            axes = (0, inputs.ndim - 1) if spec is None else (spec.index('N'), spec.index('C'))
            one = ones(tuple(inputs.shape[i] for i in range(inputs.ndim) if i not in axes), dtype=inputs.dtype)
            window_sizes = _lax_reduce_window(one, 0., add, dims, spatial_strides, padding)
            for i in sorted(axes):
                window_sizes = expand_dims(window_sizes, i)
            return out / window_sizes
        return init_fun, apply_fun
    return PoolingLayer

_stax_MaxPool = _stax_pooling_layer(maximum, -inf)
_stax_SumPool = _stax_pooling_layer(add, 0.)
_stax_AvgPool = _stax_pooling_layer(add, 0., True)

_stax_Flatten = ((lambda rng, input_shape: ((input_shape[0], math_prod(input_shape[1:])), ())),
                 (lambda params, inputs, **kwargs: reshape(inputs, (inputs.shape[0], -1))))
_stax_Identity = (lambda rng, input_shape: (input_shape, ())), (lambda params, inputs, **kwargs: inputs)
_stax_FanInSum = (lambda rng, input_shape: (input_shape[0], ())), (lambda params, inputs, **kwargs: sum(inputs))

def _stax_FanOut(num):
    """stax.FanOut: num copies of the input."""
    return (lambda rng, input_shape: ([input_shape] * num, ())), (lambda params, inputs, **kwargs: [inputs] * num)

def _stax_FanInConcat(axis=-1):
    """stax.FanInConcat: the inputs concatenated along axis."""
    def init_fun(rng, input_shape):
        ax = axis % len(input_shape[0])
        concat_size = sum(shape[ax] for shape in input_shape)
        return tuple(input_shape[0][:ax]) + (concat_size,) + tuple(input_shape[0][ax + 1:]), ()
    return init_fun, lambda params, inputs, **kwargs: concatenate(inputs, axis)

def _stax_Dropout(rate, mode='train'):
    """stax.Dropout: keeps each input with probability rate (scaled by 1/rate) in 'train' mode; needs rng."""
    def apply_fun(params, inputs, **kwargs):
        rng = kwargs.get('rng', None)
        if rng is None:
            raise ValueError("Dropout layer requires apply_fun to be called with a PRNG key argument. That is, instead of `apply_fun(params, inputs)`, "
                             "call it like `apply_fun(params, inputs, rng)` where `rng` is a PRNG key (e.g. from `jax.random.key`).")
        if mode == 'train':
            return where(random.bernoulli(rng, rate, inputs.shape), inputs / rate, 0)
        return inputs
    return (lambda rng, input_shape: (input_shape, ())), apply_fun

def _stax_serial(*layers):
    """stax.serial: the layers composed in sequence, params a list."""
    nlayers = len(layers)
    init_funs, apply_funs = tuple(l[0] for l in layers), tuple(l[1] for l in layers)
    def init_fun(rng, input_shape):
        params = []
        for init in init_funs:
            rng, layer_rng = random.split(rng)
            input_shape, param = init(layer_rng, input_shape)
            params.append(param)
        return input_shape, params
    def apply_fun(params, inputs, **kwargs):
        rng = kwargs.pop('rng') if 'rng' in kwargs else None
        rngs = random.split(rng, nlayers) if rng is not None else (None,) * nlayers
        for fun, param, r in zip(apply_funs, params, rngs):
            inputs = fun(param, inputs, rng=r, **kwargs)
        return inputs
    return init_fun, apply_fun

def _stax_parallel(*layers):
    """stax.parallel: the layers side by side on a sequence of inputs."""
    nlayers = len(layers)
    init_funs, apply_funs = tuple(l[0] for l in layers), tuple(l[1] for l in layers)
    def init_fun(rng, input_shape):
        rngs = random.split(rng, nlayers)
        outs = [init(r, shape) for init, r, shape in zip(init_funs, rngs, input_shape)]
        return tuple(o[0] for o in outs), tuple(o[1] for o in outs)
    def apply_fun(params, inputs, **kwargs):
        rng = kwargs.pop('rng') if 'rng' in kwargs else None
        rngs = random.split(rng, nlayers) if rng is not None else (None,) * nlayers
        return [f(p, x, rng=r, **kwargs) for f, p, x, r in zip(apply_funs, params, inputs, rngs)]
    return init_fun, apply_fun

def _stax_shape_dependent(make_layer):
    """stax.shape_dependent: the layer make_layer(input_shape), made when the shape is known."""
    return ((lambda rng, input_shape: make_layer(input_shape)[0](rng, input_shape)),
            (lambda params, inputs, **kwargs: make_layer(inputs.shape)[1](params, inputs, **kwargs)))
