# Per-example gradients of a logistic-regression loss with vmap(grad(...)).
#
# grad(loss) gives the gradient for one example; vmap maps it over the batch
# axis of x and y while sharing the parameters (in_axes=(None, 0, 0)). The
# result is checked against a Python loop of grad calls, and the mean of the
# per-example gradients against grad of the mean loss.

key = random.key(42)
k_x, k_w, k_noise = random.split(key, 3)

n, d = 16, 3
x = random.normal(k_x, (n, d))
true_w = array([1.5, -2.0, 0.5])
y = (x @ true_w + 0.5 * random.normal(k_noise, (n,)) > 0).astype(float32)

# Parameters as a pytree: the gradient comes back with the same structure.
params = {'w': 0.1 * random.normal(k_w, (d,)), 'b': array(0.0)}

def example_loss(params, xi, yi):
    """Binary cross-entropy of one example (xi: [d], yi: scalar label)."""
    logit = xi @ params['w'] + params['b']
    # log(1 + exp(z)) - y z, written stably with logaddexp.
    return logaddexp(0.0, logit) - yi * logit

def batch_loss(params, x, y):
    return mean(vmap(example_loss, in_axes=(None, 0, 0))(params, x, y))

per_example = vmap(grad(example_loss), in_axes=(None, 0, 0))(params, x, y)
print("per-example grad shapes:", tree_map(lambda g: g.shape, per_example))

# The same gradients one example at a time.
g_example = grad(example_loss)
loop_w = stack([g_example(params, x[i], y[i])['w'] for i in range(n)])
loop_b = stack([g_example(params, x[i], y[i])['b'] for i in range(n)])
diff = max(float(max(abs(per_example['w'] - loop_w))),
           float(max(abs(per_example['b'] - loop_b))))
# Printed to 6 decimals so that a change of summation order does not show.
print(f"max |vmap - loop|: {diff:.6f}")
print("vmap matches the loop:", diff < 1e-6)

# Averaging per-example gradients gives the gradient of the average loss.
full = grad(batch_loss)(params, x, y)
mean_w = mean(per_example['w'], axis=0)
mean_b = mean(per_example['b'])
diff_mean = max(float(max(abs(mean_w - full['w']))), float(abs(mean_b - full['b'])))
print("grad of mean loss, w:", full['w'].round(4), " b:", f"{float(full['b']):.4f}")
print("mean of per-example, w:", mean_w.round(4), " b:", f"{float(mean_b):.4f}")
print(f"max |mean - grad of mean|: {diff_mean:.6f}")
print("mean matches:", diff_mean < 1e-6)

# The per-example gradient norms, e.g. for clipping in DP-SGD.
norms = sqrt(sum(per_example['w'] ** 2, axis=1) + per_example['b'] ** 2)
print("per-example grad norms:", norms.round(3))
