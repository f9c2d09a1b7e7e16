"""Differential test against the real optax package: one program, written as
an optax user writes it, runs under arr (the binary given as argv[1]) and
under Python with jax and optax. Each optimiser, combinator and schedule
trains a small pytree of parameters for 20 steps; every parameter after
every step must agree to 1e-6 (relative and absolute), and the lines that
describe the states (types, dtypes, shapes) must be the same text. Prints
one line per mismatch and exits non-zero if there is any."""
import os
import re
import subprocess
import sys
import time

PROGRAM = r'''
import jax
import jax.numpy as jnp
import optax

X = (jnp.arange(32.0).reshape(8, 4) % 7 - 3) / 4
Y = ((jnp.arange(24.0).reshape(8, 3) * 5) % 11 - 5) / 8


def loss(params, step):
    pred = X @ params["w"] + params["b"]
    target = Y * (1 + 0.25 * (step % 3))
    return jnp.mean((pred - target) ** 2)


grad_fn = jax.jit(jax.grad(loss))


def init_params():
    return {"w": jnp.arange(12.0).reshape(4, 3) / 8 - 0.75, "b": jnp.array([0.5, -0.25, 0.125])}


def show(name, i, params):
    print("P", name, i, params["w"].ravel().tolist(), params["b"].tolist())


def describe(tree):
    return jax.tree.map(lambda x: (str(jnp.asarray(x).dtype), jnp.shape(x)), tree)


def run(name, opt, steps=20, jit=False):
    def step(params, state, i):
        updates, state = opt.update(grad_fn(params, i), state, params)
        return optax.apply_updates(params, updates), state

    step = jax.jit(step) if jit else step
    params = init_params()
    state = opt.init(params)
    print("S", name, "init", describe(state))
    for i in range(steps):
        params, state = step(params, state, i)
        show(name, i, params)
    print("S", name, "final", describe(state))
    return state


@jax.jit
def jitted_adam_step(params, state, i):
    g = grad_fn(params, i)
    updates, state = ADAM.update(g, state, params)
    return optax.apply_updates(params, updates), state


ADAM = optax.adam(0.05)
params = init_params()
state = ADAM.init(params)
for i in range(20):
    params, state = jitted_adam_step(params, state, i)
    show("adam_jit", i, params)
print("S adam_jit", describe(state))

mask = {"w": True, "b": False}
mask_fn = lambda p: jax.tree.map(lambda x: x.ndim > 1, p)
run("sgd", optax.sgd(0.1))
run("sgd_momentum", optax.sgd(0.05, momentum=0.9))
run("sgd_nesterov", optax.sgd(0.05, momentum=0.9, nesterov=True))
run("adam", optax.adam(0.05))
run("adam_args", optax.adam(0.05, b1=0.8, b2=0.99, eps=1e-6, eps_root=1e-8))
run("adam_nesterov", optax.adam(0.05, nesterov=True))
run("nadam", optax.nadam(0.05))
run("adamw", optax.adamw(0.05, weight_decay=0.1))
run("adamw_mask", optax.adamw(0.05, weight_decay=0.1, mask=mask))
run("adamw_mask_fn", optax.adamw(0.05, weight_decay=0.1, mask=mask_fn))
run("lamb", optax.lamb(0.05, weight_decay=0.01))
run("adafactor", optax.adafactor(0.05))
run("adafactor_default", optax.adafactor())
run("adafactor_factored", optax.adafactor(0.05, min_dim_size_to_factor=2))
run("adafactor_all", optax.adafactor(learning_rate=0.05, min_dim_size_to_factor=3, momentum=0.9, weight_decay_rate=0.01, clipping_threshold=0.5))
run("rmsprop", optax.rmsprop(0.01))
run("rmsprop_centered", optax.rmsprop(0.01, centered=True, momentum=0.5))
run("rmsprop_bias", optax.rmsprop(0.01, bias_correction=True, eps_in_sqrt=False))
run("adagrad", optax.adagrad(0.1))
run("adabelief", optax.adabelief(0.05))
run("lion", optax.lion(0.01, weight_decay=0.1))
run("amsgrad", optax.amsgrad(0.05))
run("adamax", optax.adamax(0.05))
run("chain_clip_global_norm", optax.chain(optax.clip_by_global_norm(0.5), optax.adam(0.05)))
run("chain_clip", optax.chain(optax.clip(0.1), optax.sgd(0.2)))
run("chain_pieces", optax.chain(optax.scale_by_adam(b1=0.5), optax.add_decayed_weights(0.01), optax.scale_by_learning_rate(0.05)))
run("trace_nesterov", optax.chain(optax.trace(decay=0.5, nesterov=True), optax.scale(-0.05)))
run("identity", optax.chain(optax.identity(), optax.scale(-0.1)))
run("set_to_zero", optax.set_to_zero())
run("flatten", optax.flatten(optax.adam(0.05)))
run("masked", optax.chain(optax.masked(optax.trace(0.5), mask), optax.scale(-0.05)))
run("masked_fn", optax.chain(optax.masked(optax.adam(0.05), mask_fn), optax.masked(optax.sgd(0.1), {"w": False, "b": True})))
run("decayed_weights_mask", optax.chain(optax.add_decayed_weights(0.5, mask=mask), optax.sgd(0.1)))
run("decayed_weights_schedule", optax.chain(optax.add_decayed_weights(optax.linear_schedule(0.5, 0.0, 10)), optax.sgd(0.1)))
ms = run("multisteps", optax.MultiSteps(optax.adam(0.05), every_k_schedule=3), jit=True)
print("S multisteps", optax.MultiSteps(optax.sgd(0.1), 2).has_updated(ms))
run("multisteps_gt", optax.MultiSteps(optax.sgd(0.1, momentum=0.9), every_k_schedule=4).gradient_transformation(), jit=True)
run("multisteps_sum", optax.MultiSteps(optax.sgd(0.1), every_k_schedule=lambda step: 2, use_grad_mean=False), jit=True)
run("scale_by_schedule", optax.chain(optax.scale_by_schedule(optax.exponential_decay(-0.1, 4, 0.5)), optax.identity()))
inject = run("inject", optax.inject_hyperparams(optax.adam)(learning_rate=optax.linear_schedule(0.1, 0.01, 10), b1=0.8))
print("P inject_hyperparams 0", [float(v) for k, v in sorted(inject.hyperparams.items())])
inject = run("inject_positional", optax.inject_hyperparams(optax.sgd, static_args="nesterov")(0.05, 0.5, True))
inject.hyperparams["learning_rate"] = jnp.array(0.5)
print("P inject_hyperparams 1", [float(v) for k, v in sorted(inject.hyperparams.items())])

schedules = {
    "constant": optax.constant_schedule(0.1),
    "linear": optax.linear_schedule(0.1, 0.01, 10),
    "linear_begin": optax.linear_schedule(0.1, 0.01, 10, transition_begin=3),
    "polynomial": optax.polynomial_schedule(0.1, 0.01, 2, 10),
    "cosine": optax.cosine_decay_schedule(0.1, 15, alpha=0.1),
    "cosine_exponent": optax.cosine_decay_schedule(0.1, 12, exponent=2.0),
    "warmup_cosine": optax.warmup_cosine_decay_schedule(0.0, 0.1, 5, 20, end_value=0.01),
    "exponential": optax.exponential_decay(0.1, 5, 0.5),
    "exponential_staircase": optax.exponential_decay(0.1, 5, 0.5, staircase=True),
    "exponential_end": optax.exponential_decay(0.1, 3, 0.7, transition_begin=2, end_value=0.05),
    "exponential_up": optax.exponential_decay(0.01, 3, 1.5, end_value=0.05),
    "piecewise": optax.piecewise_constant_schedule(0.1, {5: 0.5, 12: 0.2}),
    "join": optax.join_schedules([optax.constant_schedule(0.1), optax.linear_schedule(0.1, 0.0, 10)], [5]),
    "warmup_constant": optax.warmup_constant_schedule(0.0, 0.1, 8),
    "warmup_exponential": optax.warmup_exponential_decay_schedule(0.0, 0.1, 4, 3, 0.8),
}
for name, sched in schedules.items():
    print("P", "schedule_" + name, 0, [float(sched(jnp.array(i, jnp.int32))) for i in range(25)], [float(sched(i)) for i in (0, 7, 30)])
    run("sgd_" + name, optax.sgd(sched))
run("adam_warmup_cosine", optax.adam(schedules["warmup_cosine"]))

logits = (jnp.arange(12.0).reshape(4, 3) % 5 - 2) / 3
labels = jax.nn.one_hot(jnp.array([0, 2, 1, 2]), 3)
ints = jnp.array([0, 2, 1, 2])
preds = jnp.arange(6.0).reshape(2, 3) / 4
targets = jnp.array([[0.5, 0.0, 1.0], [1.0, 1.0, 0.0]])
print("P losses 0", optax.softmax_cross_entropy(logits, labels).tolist(),
      optax.softmax_cross_entropy_with_integer_labels(logits, ints).tolist(),
      optax.losses.softmax_cross_entropy(logits, labels, axis=0).tolist(),
      optax.losses.softmax_cross_entropy_with_integer_labels(logits.T, ints, axis=0).tolist())
print("P losses 1", optax.l2_loss(preds, targets).ravel().tolist(), optax.squared_error(preds).ravel().tolist(),
      optax.sigmoid_binary_cross_entropy(logits, labels).ravel().tolist())
print("P losses 2", optax.huber_loss(preds * 3, targets).ravel().tolist(), optax.losses.cosine_similarity(preds, targets).tolist(),
      optax.log_cosh(preds, targets).ravel().tolist())
print("P losses 3", jax.grad(lambda l: optax.softmax_cross_entropy_with_integer_labels(l, ints).mean())(logits).ravel().tolist())
print("P norms 0", [float(optax.global_norm(init_params())), float(optax.tree.norm(init_params())), float(optax.tree.norm(init_params(), ord=1)), float(optax.tree.norm(init_params(), ord="inf"))])
print("S counts", optax.adam(0.1).init(init_params())[0].count.dtype, optax.tree.zeros_like(init_params())["w"].dtype)
'''

NUMBER = re.compile(r"-?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|inf|nan)")


def run(cmd, env=None):
    start = time.time()
    out = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if out.returncode != 0:
        print(f"{cmd[0]} failed:\n{out.stdout[-2000:]}\n{out.stderr[-4000:]}")
        sys.exit(1)
    return out.stdout.strip().split("\n"), time.time() - start


def numbers(line):
    return [float(t) for t in NUMBER.findall(line)]


def main():
    arr_lines, arr_s = run([sys.argv[1], "-e", PROGRAM])
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    ref_lines, ref_s = run([sys.executable, "-c", PROGRAM], env=env)
    bad = 0
    if len(arr_lines) != len(ref_lines):
        print(f"arr printed {len(arr_lines)} lines, optax {len(ref_lines)}")
        bad += 1
    for got, want in zip(arr_lines, ref_lines):
        head_g, head_w = got.split(" ")[:3], want.split(" ")[:3]
        if head_g != head_w:
            print(f"MISMATCH line order\n   arr:   {got[:200]}\n   optax: {want[:200]}")
            bad += 1
            break
        if want.startswith("S "):
            same = got == want
        else:
            g, w = numbers(got)[1:], numbers(want)[1:]
            same = len(g) == len(w) and all(abs(a - b) <= 1e-6 + 1e-6 * abs(b) for a, b in zip(g, w))
        if not same:
            bad += 1
            print(f"MISMATCH {' '.join(head_w)}\n   arr:   {got[:600]}\n   optax: {want[:600]}")
    steps = sum(1 for l in ref_lines if l.startswith("P "))
    print(f"{steps} parameter lines, {bad} mismatches (arr {arr_s:.1f} s, optax {ref_s:.1f} s)")
    sys.exit(1 if bad else 0)


main()
