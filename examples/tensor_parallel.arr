# A tensor-parallel MLP layer pair with shard_map on a 2x4 mesh: the batch
# is split over 'data', the hidden units over 'model'. The first layer is
# column-parallel (each device holds a quarter of W1's columns and computes
# its quarter of the hidden units, no communication); the second is
# row-parallel (each device multiplies its hidden quarter by its quarter of
# W2's rows, and psum over 'model' adds the partial sums).

m = mesh((2, 4), ("data", "model"))
print(m)

k1, k2, k3 = random.split(random.key(0), 3)
x = random.normal(k1, (16, 64))
w1 = random.normal(k2, (64, 128)) / 8.0
w2 = random.normal(k3, (128, 10)) / 11.3

# Lay the operands out as the layers use them.
x = shard(x, m, P("data", None))
w1 = shard(w1, m, P(None, "model"))
w2 = shard(w2, m, P("model", None))
print("x: ", type(x))
print("w1:", type(w1))
print("w2:", type(w2))
visualize_sharding(w1)

def mlp_block(x, w1, w2):
    h = tanh(x @ w1)                  # f32[8,32] per device: column-parallel
    return psum(h @ w2, "model")      # partial sums reduced over 'model'

tp = shard_map(mlp_block, m,
               in_specs=(P("data", None), P(None, "model"), P("model", None)),
               out_specs=P("data", None))
y = tp(x, w1, w2)
print("y: ", type(y))
visualize_sharding(y)

# The same as the unsharded computation.
print("matches one device:", max(abs(y - tanh(x @ w1) @ w2)) < 1e-5)

# The same layer pair written as plain code: jit with in_shardings and
# out_shardings partitions it by itself. The plan, before anything runs,
# has exactly one collective: the row-parallel layer's psum over 'model'.
def mlp(x, w1, w2):
    return tanh(x @ w1) @ w2

s = lambda *spec: NamedSharding(m, P(*spec))
auto = jit(mlp, in_shardings=(s("data", None), s(None, "model"), s("model", None)),
           out_shardings=s("data", None))
print(auto.plan(x, w1, w2))
z = auto(x, w1, w2)
print("z: ", type(z))
print("sharded jit matches one device:", max(abs(z - mlp(x, w1, w2))) < 1e-5)

# Training over the same layout. The parameters are donated: each device
# writes its new blocks over its old ones, step after step, and the arrays
# passed in are deleted.
target = random.normal(random.key(9), (16, 10))

def loss(w1, w2, x, t):
    return mean((mlp(x, w1, w2) - t) ** 2)

def sgd(w1, w2, x, t):
    g1, g2 = grad(loss, argnums=(0, 1))(w1, w2, x, t)
    return w1 - 0.1 * g1, w2 - 0.1 * g2

layout = (s(None, "model"), s("model", None))
train = jit(sgd, in_shardings=layout + (s("data", None), s("data", None)),
            out_shardings=layout, donate_argnums=(0, 1))
p1, p2 = device_put(w1, layout[0]), device_put(w2, layout[1])
start = p1
print(f"loss before {float(loss(p1, p2, x, target)):.4f}")
for i in range(20):
    p1, p2 = train(p1, p2, x, target)
print(f"loss after 20 steps {float(loss(p1, p2, x, target)):.4f}")
print("p1:", type(p1), "  first parameters deleted:", start.is_deleted())
q1, q2 = w1, w2
for i in range(20):
    q1, q2 = sgd(q1, q2, x, target)
print("matches training on one device:", max(abs(p1 - q1)) < 1e-4 and max(abs(p2 - q2)) < 1e-4)
