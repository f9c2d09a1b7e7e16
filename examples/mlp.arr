# A small multilayer perceptron trained by plain gradient descent.
#
# The parameters are a pytree: a list with one {'w': ..., 'b': ...} dict per
# layer. value_and_grad differentiates the loss with respect to the whole
# tree at once, and tree_map applies the update to every leaf.
#
# Task: regression of y = sin(3x) + noise on 128 points in [-1, 1].

key = random.key(0)
k_x, k_noise, k_init = random.split(key, 3)

n = 128
x = random.uniform(k_x, (n, 1), minval=-1.0, maxval=1.0)
y = sin(3.0 * x) + 0.05 * random.normal(k_noise, (n, 1))

def init_params(key, sizes):
    """One {'w', 'b'} dict per layer; weights scaled by 1/sqrt(fan_in)."""
    keys = random.split(key, len(sizes) - 1)
    params = []
    for i in range(len(sizes) - 1):
        fan_in, fan_out = sizes[i], sizes[i + 1]
        w = random.normal(keys[i], (fan_in, fan_out)) / sqrt(float(fan_in))
        params.append({'w': w, 'b': zeros(fan_out)})
    return params

def predict(params, x):
    h = x
    for layer in params[:-1]:
        h = tanh(h @ layer['w'] + layer['b'])
    last = params[-1]
    return h @ last['w'] + last['b']

def loss(params, x, y):
    """Mean squared error."""
    return mean((predict(params, x) - y) ** 2)

params = init_params(k_init, [1, 32, 32, 1])
print("layers:", [p['w'].shape for p in params])
print("parameters:", sum([p.size for p in tree_leaves(params)]))

loss_and_grad = value_and_grad(loss)
lr = 0.03
steps = 2000
initial = float(loss(params, x, y))
print(f"step    0  loss {initial:.4f}")
for step in range(1, steps + 1):
    value, grads = loss_and_grad(params, x, y)
    params = tree_map(lambda p, g: p - lr * g, params, grads)
    if step % 200 == 0:
        print(f"step {step:4d}  loss {float(value):.4f}")

final = float(loss(params, x, y))
print(f"final loss {final:.4f}")
# Threshold 0.05: the initial loss is 0.34 and training ends near 0.006, so
# 0.05 is about 7x below the start and 8x above the end -- it holds with a
# wide margin either way. (The noise floor is 0.05 ** 2 = 0.0025.) The
# learning rate 0.03 keeps the descent monotone; 0.1 makes the loss spike.
print("final loss below 0.05:", final < 0.05)
