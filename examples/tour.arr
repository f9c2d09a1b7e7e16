# A tour of arr's arrays: creation, arithmetic, broadcasting, reductions,
# indexing, functional updates, and a few Python-style conveniences.

x = arange(12.0).reshape(3, 4)        # float32 by default, as in JAX
print("x =", x.shape, x.dtype)
print(x)

y = x @ x.T + 1                       # matmul and broadcasting
print("y.sum(axis=0):", y.sum(axis=0))
print("y[1:, ::2]:", y[1:, ::2])

# Python scalars are weakly typed: x * 2 stays float32.
print((x * 2).dtype, (arange(3) * 2).dtype, (arange(3) / 2).dtype)

# Reductions with axis and keepdims; where; clip.
col_means = mean(x, axis=0, keepdims=True)
print("centred:", x - col_means)
print("where:", where(x > 5, x, -x))
print("clip:", clip(x[0], 1, 2))

# Indexing: negative indices, None, ..., integer and boolean arrays.
print(x[-1], x[:, -1], x[None, 0].shape, x[..., 1])
print("fancy:", x[[0, 2], [1, 3]], "mask:", x[x > 9])

# Arrays are values: x[i] = v rebinds x to an updated copy.
z = x
x[0, 0] = 100.0
print("x[0, 0] =", x[0, 0], "z[0, 0] =", z[0, 0])

# Functions, closures, keyword arguments and docstrings.
def scale(v, by=2.0):
    """Multiply v by a factor."""
    return v * by

def make_adder(n):
    return lambda v: v + n

add3 = make_adder(3)
print(scale(ones(2)), scale(ones(2), by=10), add3(arange(3)))

# Lists, dicts, comprehensions, f-strings.
squares = [i * i for i in range(6) if i % 2 == 0]
stats = {"mean": float(mean(y)), "max": float(max(y))}
print(squares, f"mean={stats['mean']:.2f} max={stats['max']:.1f}")

# Pytrees and NN helpers.
params = {"w": ones((2, 2)), "b": zeros(2)}
print(tree_map(lambda p: p.shape, params), len(tree_leaves(params)))
print("softmax:", softmax(array([1.0, 2.0, 3.0])))
print("einsum:", einsum("ij,jk->ik", eye(2), array([[1.0, 2.0], [3.0, 4.0]])))

# Transformations compose: gradients, per-example vectorisation, loops.
f = lambda t: sin(t) * t ** 2
print("grad:", grad(f)(1.5), "second:", grad(grad(f))(1.5))
print("vmap(grad):", vmap(grad(f))(array([0.0, 1.0, 2.0])))
print("jacobian:", jacobian(lambda v: v * v[0])(array([1.0, 2.0])))
total, running = scan(lambda c, v: (c + v, c + v), 0.0, arange(4.0))
print("scan:", total, running)
print(make_jaxpr(grad(lambda t: sum(tanh(t))))(ones(2)))

# Large arrays print summarised.
print(arange(2000))
