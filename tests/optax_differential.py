"""Differential test against the real optax package: one program, written as
an optax user writes it, runs under arr (the binary given as argv[1]) and
under Python with jax and optax. Each optimiser, combinator and schedule
trains a small pytree of parameters for 20 steps; every parameter after
every step must agree to 1e-6 (relative and absolute), and the lines that
describe the states (types, dtypes, shapes) must be the same text. Losses,
schedules and tree utilities are compared on a few inputs each. Prints
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


def run(name, opt, steps=20, jit=False, hook=None):
    def step(params, state, i):
        g = grad_fn(params, i)
        if hook is not None:
            g = hook(g, i)
        updates, state = opt.update(g, state, params)
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
# radam's rectification term subtracts two numbers near 2 / (1 - b2): run
# eagerly with b2 = 0.999 it magnifies the last bit of b2 ** count, which JAX
# computes with lax.integer_pow for a concrete count (arr with pow), so the
# default settings are compared under jit, where both use pow.
run("radam", optax.radam(0.05), jit=True)
run("radam_nesterov", optax.radam(0.05, b2=0.9, eps_root=1e-8, threshold=4.5, nesterov=True))
run("radam_b2", optax.radam(0.05, b2=0.99), steps=12)
run("yogi", optax.yogi(0.05))
run("yogi_jit", optax.yogi(0.05, b1=0.5, b2=0.99, eps=1e-4), jit=True)
run("adadelta", optax.adadelta(0.5))
run("adadelta_default", optax.adadelta())
run("adadelta_wd", optax.adadelta(0.5, rho=0.5, eps=1e-4, weight_decay=0.1, weight_decay_mask=mask))
run("novograd", optax.novograd(0.05))
run("novograd_wd", optax.novograd(0.05, b1=0.5, b2=0.5, weight_decay=0.01), jit=True)
run("sm3", optax.sm3(0.1))
run("sm3_jit", optax.sm3(0.1, momentum=0.5), jit=True)
run("fromage", optax.fromage(0.05))
run("fromage_schedule", optax.fromage(optax.linear_schedule(0.1, 0.01, 10)))
run("lars", optax.lars(0.5, weight_decay=0.01))
run("lars_masks", optax.lars(0.5, weight_decay=0.01, weight_decay_mask=mask, trust_ratio_mask=mask_fn, momentum=0.5, nesterov=True), jit=True)
run("adan", optax.adan(0.05))
run("adan_wd", optax.adan(0.05, b1=0.9, b2=0.8, b3=0.95, weight_decay=0.01, mask=mask), jit=True)
run("scale_by_pieces", optax.chain(optax.scale_by_adan(), optax.scale_by_yogi(), optax.scale(-0.01)))
run("scale_by_pieces2", optax.chain(optax.scale_by_adadelta(rho=0.5), optax.scale_by_novograd(b1=0.5), optax.scale_by_radam(b2=0.9), optax.scale(-0.01)))
run("scale_by_sm3", optax.chain(optax.scale_by_sm3(b1=0.5, b2=0.9), optax.scale(-0.05)))
labels_tree = {"w": "adam", "b": "sgd"}
run("multi_transform", optax.multi_transform({"adam": optax.adam(0.05), "sgd": optax.sgd(0.1, momentum=0.9)}, labels_tree))
run("multi_transform_fn", optax.multi_transform({"big": optax.yogi(0.05), "small": optax.set_to_zero()}, lambda p: jax.tree.map(lambda x: "big" if x.ndim > 1 else "small", p)), jit=True)
run("partition", optax.partition({"adam": optax.adan(0.05), "sgd": optax.lars(0.1)}, labels_tree))
print("S multi_transform_state", optax.MultiTransformState.__name__, optax.MultiTransformState._fields, optax.multi_transform is optax.partition)


def nan_grads(g, i):
    return {"w": g["w"], "b": jnp.where((jnp.arange(3) == i % 3) & (i % 4 == 1), jnp.nan, g["b"])}


finite = run("apply_if_finite", optax.apply_if_finite(optax.adam(0.05), 2), hook=nan_grads)
print("P apply_if_finite_state 0", [int(finite.notfinite_count), bool(finite.last_finite), int(finite.total_notfinite)])
finite = run("apply_if_finite_jit", optax.apply_if_finite(optax.sgd(0.1, momentum=0.5), 3), hook=nan_grads, jit=True)
print("P apply_if_finite_state 1", [int(finite.notfinite_count), bool(finite.last_finite), int(finite.total_notfinite)])
zeroed = run("zeroed_grads", optax.chain(optax.zero_nans(), optax.adam(0.05)), hook=nan_grads)
print("S zeroed_grads_state", type(zeroed[0]).__name__, [bool(x) for x in jax.tree.leaves(zeroed[0].found_nan)])
finite_opt = optax.apply_if_finite(optax.sgd(0.1), 2)
finite = finite_opt.init(init_params())
for i in range(5):
    updates, finite = finite_opt.update(jax.tree.map(lambda x: x * jnp.inf, init_params()), finite)
    print("P apply_if_finite_always", i, [int(finite.notfinite_count), int(finite.last_finite), int(finite.total_notfinite)],
          [int(jnp.all(jnp.isfinite(u))) for u in jax.tree.leaves(updates)], [int(jnp.all(u == 0)) for u in jax.tree.leaves(updates)])

for name, opt in [("lookahead", optax.lookahead(optax.adam(0.05), sync_period=3, slow_step_size=0.5)),
                  ("lookahead_reset", optax.lookahead(optax.sgd(0.1, momentum=0.9), 4, 0.3, reset_state=True))]:
    params = optax.LookaheadParams.init_synced(init_params())
    state = opt.init(params)
    print("S", name, "init", describe(state), type(params).__name__)
    for i in range(20):
        updates, state = opt.update(grad_fn(params.fast, i), state, params)
        params = optax.apply_updates(params, updates)
        show(name + "_fast", i, params.fast)
        show(name + "_slow", i, params.slow)
    print("S", name, "final", describe(state), type(params).__name__)
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
    "sgdr": optax.sgdr_schedule([dict(init_value=0.0, peak_value=0.1, warmup_steps=2, decay_steps=8, end_value=0.01),
                                 dict(init_value=0.01, peak_value=0.05, warmup_steps=0, decay_steps=6),
                                 dict(init_value=0.0, peak_value=0.02, warmup_steps=3, decay_steps=10, end_value=0.001)]),
    "cosine_onecycle": optax.cosine_onecycle_schedule(20, 0.1),
    "cosine_onecycle_args": optax.schedules.cosine_onecycle_schedule(15, 0.2, pct_start=0.4, div_factor=10.0, final_div_factor=100.0),
    "linear_onecycle": optax.linear_onecycle_schedule(20, 0.1),
    "linear_onecycle_args": optax.schedules.linear_onecycle_schedule(16, 0.3, pct_start=0.2, pct_final=0.6, div_factor=5.0, final_div_factor=50.0),
    "interpolate_linear": optax.piecewise_interpolate_schedule("linear", 0.1, {3: 2.0, 8: 0.5, 15: 0.1}),
    "interpolate_cosine": optax.schedules.piecewise_interpolate_schedule("cosine", 0.1, {4: 0.5, 10: 3.0}),
    "interpolate_empty": optax.piecewise_interpolate_schedule("linear", 0.1),
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
log_probs = jax.nn.log_softmax(logits)
probs = jax.nn.softmax(logits * 1.5 + 0.1)
soft = jnp.array([[0.2, 0.3, 0.5], [0.0, 1.0, 0.0], [0.1, 0.0, 0.9], [1 / 3, 1 / 3, 1 / 3]])
keep = jnp.array([[True, True, False], [True, False, True], [True, True, True], [False, True, True]])
print("P losses 4", optax.kl_divergence(log_probs, soft).tolist(), optax.losses.kl_divergence(log_probs, soft, axis=0).tolist(),
      optax.losses.kl_divergence(log_probs, soft, where=keep).tolist(), float(optax.kl_divergence(log_probs, soft, axis=None)))
print("P losses 5", optax.losses.kl_divergence_with_log_targets(log_probs, jnp.log(probs)).tolist(),
      optax.losses.kl_divergence_with_log_targets(log_probs, jnp.log(probs), axis=0, where=keep).tolist())
print("P losses 6", optax.losses.convex_kl_divergence(log_probs, soft * 1.2).tolist(), optax.losses.convex_kl_divergence(log_probs, soft, where=keep).tolist(),
      optax.generalized_kl_divergence(log_probs, soft).tolist())
print("P losses 7", optax.hinge_loss(logits, 2 * labels - 1).ravel().tolist(), optax.losses.hinge_loss(logits[0], jnp.array([1.0, -1.0, 1.0])).tolist(),
      optax.losses.perceptron_loss(logits, 2 * labels - 1).ravel().tolist())
print("P losses 8", optax.sigmoid_focal_loss(logits * 3, labels).ravel().tolist(), optax.losses.sigmoid_focal_loss(logits, soft, alpha=0.25, gamma=1.5).ravel().tolist(),
      optax.losses.sigmoid_focal_loss(logits, labels, gamma=0.0).ravel().tolist())
print("P losses 9", jax.grad(lambda l: optax.sigmoid_focal_loss(l, labels, alpha=0.5).sum())(logits + 0.1).ravel().tolist())
print("P losses 10", optax.smooth_labels(labels, 0.1).ravel().tolist(), optax.losses.smooth_labels(labels, 0.2, axis=0).ravel().tolist(),
      optax.losses.smooth_labels(labels, 0.3, where=keep).ravel().tolist(), optax.losses.smooth_labels(labels, 0.1, axis=(0, 1)).ravel().tolist())
print("P losses 11", optax.losses.poly_loss_cross_entropy(logits, labels).tolist(), optax.losses.poly_loss_cross_entropy(logits, soft, epsilon=-0.5, axis=0).tolist(),
      optax.losses.poly_loss_cross_entropy(logits, soft, where=keep).tolist())
print("P losses 12", jax.grad(lambda l: optax.losses.poly_loss_cross_entropy(l, soft).sum())(logits).ravel().tolist())
tree = {"w": jnp.arange(6.0).reshape(2, 3) - 2, "b": jnp.array([0.5, -1.5])}
print("P tree_utils 0", [float(optax.tree_utils.tree_l2_norm(tree)), float(optax.tree_utils.tree_l2_norm(tree, squared=True)),
                         float(optax.tree_utils.tree_l1_norm(tree)), float(optax.tree_utils.tree_linf_norm(tree))])
chained = optax.chain(optax.adam(0.1), optax.add_decayed_weights(0.1)).init(tree)
print("P tree_utils 1", optax.tree_utils.tree_get(chained, "count").tolist(), optax.tree_utils.tree_get(chained, "nu")["b"].tolist(),
      optax.tree_utils.tree_get(chained, "missing", 7))
print("S tree_utils 2", type(optax.tree_utils.tree_get(chained, "ScaleByAdamState")).__name__,
      [str(path) for path, _ in optax.tree_utils.tree_get_all_with_path(chained, "count")])
replaced = optax.tree_utils.tree_set(chained, count=jnp.array(5))
print("P tree_utils 3", optax.tree_utils.tree_get(replaced, "count").tolist(), optax.tree_utils.tree_get(replaced, "mu")["w"].ravel().tolist())
replaced = optax.tree_utils.tree_set(chained, lambda path, v: True, mu={"w": jnp.ones((2, 3)), "b": jnp.ones(2)})
print("P tree_utils 4", optax.tree_utils.tree_get(replaced, "mu")["b"].tolist(), optax.tree_utils.tree_get(replaced, "nu")["b"].tolist())
injected = optax.inject_hyperparams(optax.adam)(learning_rate=0.1).init(tree)
print("P tree_utils 5", float(optax.tree_utils.tree_get(injected, "learning_rate")),
      float(optax.tree_utils.tree_get(optax.tree_utils.tree_set(injected, learning_rate=jnp.array(0.5)), "learning_rate")))
states = (optax.adam(0.1).init(tree), optax.sgd(0.1, momentum=0.9).init(tree), optax.adam(0.1).init(tree))
print("P tree_utils 6", optax.tree_utils.tree_get(states, "trace", filtering=lambda path, v: True)["b"].tolist(),
      len(optax.tree_utils.tree_get_all_with_path(states, "count")),
      len(optax.tree_utils.tree_get_all_with_path(states, "count", lambda path, v: path[0].idx == 2)))
for bad_call in (lambda: optax.tree_utils.tree_get(states, "count"), lambda: optax.tree_utils.tree_set(states, nope=1)):
    try:
        bad_call()
        print("S tree_utils error none")
    except KeyError:
        print("S tree_utils error KeyError")
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
