# A mixture-of-experts language model trained with expert parallelism: each
# of the mesh's 'data' rows holds half of the experts and half of the
# batch; tokens travel to their experts' devices and back (one all-to-all
# each way), and the experts' weights never move.
B, T, D, E, K, F, V = 8, 16, 32, 4, 2, 256, 64
C = int(1.25 * K * T / E)                 # tokens each expert takes per group
ks = random.split(random.key(0), 4)
params = {"emb": random.normal(ks[0], (V, D)) * 0.05,
          "router": random.normal(ks[1], (D, E)) * 0.1,
          "w1": random.normal(ks[2], (E, D, F)) / sqrt(D),
          "w2": random.normal(ks[3], (E, F, D)) / sqrt(F)}
names = {"emb": ("vocab", "embed"), "router": ("embed", None),
         "w1": ("expert", "embed", "mlp"), "w2": ("expert", "mlp", "embed")}

def moe(x, p):
    """Top-k routing with a capacity per expert, GShard's dispatch and combine."""
    probs = softmax(x @ p["router"], axis=-1)                  # [G, S, E]: a group per row
    gate, idx = top_k(probs, K)                                # [G, S, K]
    mask = one_hot(idx, E).reshape(B, T * K, E)                # the choices in order
    pos = cumsum(mask, axis=1) - mask                          # places in the experts' buffers
    slot = (one_hot(pos, C) * (mask * (pos < C))[..., None]).reshape(B, T, K, E, C)
    dispatch = sum(slot, axis=2)                               # [G, S, E, C]
    combine = sum(gate[..., None, None] * slot, axis=2)
    xe = einsum("gsd,gsec->egcd", x, dispatch)                 # tokens to their experts
    ye = einsum("egcf,efd->egcd", gelu(einsum("egcd,edf->egcf", xe, p["w1"])), p["w2"])
    balance = E * sum(mean(mask, axis=(0, 1)) * mean(probs, axis=(0, 1)))
    return einsum("egcd,gsec->gsd", ye, combine), balance       # and back

def loss(p, tok, tgt):
    x = p["emb"][tok]
    y, balance = moe(x, p)
    logp = log_softmax((x + y) @ p["emb"].T, axis=-1)
    return -mean(take_along_axis(logp, tgt[..., None], axis=-1)) + 0.01 * balance

def step(p, tok, tgt):
    l, g = value_and_grad(loss)(p, tok, tgt)
    return l, tree_map(lambda a, b: a - 2.0 * b, p, g)

text = array([(7 * i + i // 5) % V for i in range(B * (T + 1))]).reshape(B, T + 1)
tok, tgt = text[:, :-1], text[:, 1:]

m = mesh((2, 4), ("data", "model"))
print(strategy_rules("ep"))
ps = logical_shardings(names, m, "ep")
bs = logical_shardings(("batch", None), m, "ep")
train = jit(step, in_shardings=(ps, bs, bs), out_shardings=(NamedSharding(m, P()), ps))
p = shard(params, m, "ep", names=names)
print("w1:", type(p["w1"]))
plan = train.plan(p, tok, tgt)
print("\n".join(line.split(" sent per")[0] for line in plan.splitlines()[:-1]))

reference = jit(step)
q = params
for i in range(30):
    l, p = train(p, tok, tgt)
    lq, q = reference(q, tok, tgt)
    if i % 10 == 0 or i == 29:
        print(f"step {i:2d}  loss {float(l):.3f}  same as on one device: {abs(float(l) - float(lq)) < 1e-5}")
print("experts' weights per device:", device_bytes({"w1": p["w1"], "w2": p["w2"]})[0], "of",
      p["w1"].nbytes + p["w2"].nbytes, "bytes")
