# A small GPT trained with tensor + data parallelism on a 2x4 mesh, laid out
# by a named strategy: every parameter names its axes ("embed", "heads",
# "mlp", ...), and the strategy's rules map those names to mesh axes. The
# plan has Megatron's communication and nothing else; a checkpoint written
# under this mesh restores onto a 4x2 mesh.
import tempfile

text = "the quick brown fox jumps over the lazy dog. " * 8
chars = sorted(set(text))
data = array([chars.index(c) for c in text])
B, T, D, H, L, V = 8, 32, 64, 4, 2, len(chars)

ks = random.split(random.key(0), 1 + 4 * L)
params = {"emb": random.normal(ks[0], (V, D)) * 0.05, "layers": []}
names = {"emb": ("vocab", "embed"), "layers": []}
for i in range(L):
    k = ks[1 + 4 * i: 5 + 4 * i]
    params["layers"].append({"wqkv": random.normal(k[0], (D, 3, H, D // H)) / sqrt(D),
                             "wo": random.normal(k[1], (H, D // H, D)) / sqrt(D),
                             "w1": random.normal(k[2], (D, 4 * D)) / sqrt(D),
                             "w2": random.normal(k[3], (4 * D, D)) / sqrt(4 * D),
                             "g1": ones(D), "g2": ones(D)})
    names["layers"].append({"wqkv": ("embed", None, "heads", "head_dim"),
                            "wo": ("heads", "head_dim", "embed"),
                            "w1": ("embed", "mlp"), "w2": ("mlp", "embed"),
                            "g1": ("embed",), "g2": ("embed",)})

def layernorm(x, g):
    m = mean(x, axis=-1, keepdims=True)
    return (x - m) / sqrt(mean((x - m) ** 2, axis=-1, keepdims=True) + 1e-5) * g

def attention(x, lp):
    qkv = einsum("btd,dkhe->kbhte", x, lp["wqkv"])      # heads split over 'model'
    s = einsum("bhqe,bhke->bhqk", qkv[0], qkv[1]) / sqrt(float(D // H))
    s = where(tril(ones((T, T))) > 0, s, -1e9)
    a = einsum("bhqk,bhke->bhqe", softmax(s, axis=-1), qkv[2])
    return einsum("bhqe,hed->bqd", a, lp["wo"])           # one all-reduce

def loss(p, tok, tgt):
    x = p["emb"][tok]
    for lp in p["layers"]:
        x = x + attention(layernorm(x, lp["g1"]), lp)
        x = x + gelu(layernorm(x, lp["g2"]) @ lp["w1"]) @ lp["w2"]  # one all-reduce
    logp = log_softmax(x @ p["emb"].T, axis=-1)
    return -mean(take_along_axis(logp, tgt[..., None], axis=-1))

def step(p, tok, tgt):
    l, g = value_and_grad(loss)(p, tok, tgt)
    return l, tree_map(lambda a, b: a - 0.1 * b, p, g)

def batch(i):
    starts = (arange(B) * 37 + i * 11) % (len(text) - T - 1)
    idx = starts[:, None] + arange(T)[None, :]
    return data[idx], data[idx + 1]

def trainer(m):
    ps = logical_shardings(names, m, "tp+dp")
    bs = logical_shardings(("batch", None), m, "tp+dp")
    return jit(step, in_shardings=(ps, bs, bs), out_shardings=(NamedSharding(m, P()), ps)), ps

m24 = mesh((2, 4), ("data", "model"))
print(strategy_rules("tp+dp"))
train24, ps24 = trainer(m24)
p = shard(params, m24, "tp+dp", names=names)
print("wqkv:", type(p["layers"][0]["wqkv"]), "w2:", type(p["layers"][0]["w2"]))
tok, tgt = batch(0)
plan = train24.plan(p, tok, tgt)
print("\n".join(line.split(" sent per")[0] for line in plan.splitlines()[:-1]))

for i in range(40):
    l, p = train24(p, *batch(i))
    if i % 10 == 0 or i == 39:
        print(f"step {i:2d}  loss {float(l):.3f}")

# Write the state under (2, 4), read it back onto a (4, 2) mesh.
path = tempfile.mkdtemp() + "/gpt"
save_checkpoint(path, p)
m42 = mesh((4, 2), ("data", "model"))
train42, ps42 = trainer(m42)
q = load_checkpoint(path, shardings=ps42)
print("wqkv now:", type(q["layers"][0]["wqkv"]))
same = tree_map(lambda a, b: bool(all(a == b)), p, q)
print("restored exactly:", all(tree_leaves(same)))
l24, _ = train24(p, *batch(40))
l42, _ = train42(q, *batch(40))
print(f"next loss on (2, 4): {float(l24):.3f}, on (4, 2): {float(l42):.3f}")
