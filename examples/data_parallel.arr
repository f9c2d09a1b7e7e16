# Data-parallel training with pmap: each of 8 devices holds one eighth of
# the batch and a copy of the parameters, computes its gradient, and pmean
# averages the gradients across devices (an all-reduce between the device
# workers) before every device applies the same update. The result equals
# full-batch training on one device.

n_dev = 8
key = random.key(1)
k_x, k_w, k_init = random.split(key, 3)

# Linear-tanh regression: 256 examples of 16 features.
x = random.normal(k_x, (256, 16))
w_true = random.normal(k_w, (16, 1))
y = tanh(x @ w_true)

def loss(p, x, y):
    return mean((tanh(x @ p["w"] + p["b"]) - y) ** 2)

def step(p, x, y):
    g = pmean(grad(loss)(p, x, y), "batch")
    return tree_map(lambda a, d: a - 0.5 * d, p, g)

p_step = pmap(step, axis_name="batch")

params = {"w": zeros((16, 1)), "b": zeros(1)}
# One copy of the parameters per device, and the batch split by device.
replicated = tree_map(lambda a: broadcast_to(a, (n_dev,) + a.shape), params)
xs = x.reshape(n_dev, 256 // n_dev, 16)
ys = y.reshape(n_dev, 256 // n_dev, 1)

print("devices:", device_count())
for i in range(40):
    replicated = p_step(replicated, xs, ys)
    if i % 10 == 9:
        print(f"step {i + 1}: loss {loss(tree_map(lambda a: a[0], replicated), x, y):.5f}")

# The parameters came back laid out over the devices that computed them.
visualize_sharding(replicated["w"])

# Every device holds the same parameters...
spread = max(abs(replicated["w"] - replicated["w"][0]))
print("largest difference between devices:", spread)

# ...and they are what full-batch gradient descent on one device gives.
single = params
for i in range(40):
    single = tree_map(lambda a, d: a - 0.5 * d, single, grad(loss)(single, x, y))
print("matches one device:", max(abs(replicated["w"][0] - single["w"])) < 1e-5)
