//! Sharding strategies: a GPT's parameters named by logical axes, laid
//! out by a named strategy's rules. Each strategy's plan has exactly the
//! collectives the strategy is known for (snapshots), and training under
//! it gives the unsharded losses.

use arr_runtime::{Session, Value};
use expect_test::{expect, Expect};

/// A 2-layer GPT (pre-LayerNorm, causal attention with a head-major QKV
/// projection, GELU MLP, tied embeddings, SGD) and the logical names of
/// its parameters.
const GPT: &str = r#"
B, T, D, H, L, V = 8, 16, 64, 4, 2, 64
ks = random.split(random.key(0), 1 + 4 * L)
params = {"emb": random.normal(ks[0], (V, D)) * 0.02, "layers": []}
names = {"emb": ("vocab", "embed"), "layers": []}
for i in range(L):
    k = ks[1 + 4 * i: 5 + 4 * i]
    params["layers"].append({"wqkv": random.normal(k[0], (D, 3, H, D // H)) * 0.02,
                             "wo": random.normal(k[1], (H, D // H, D)) * 0.02,
                             "w1": random.normal(k[2], (D, 4 * D)) * 0.02,
                             "w2": random.normal(k[3], (4 * D, D)) * 0.02, "g1": ones(D), "g2": ones(D)})
    names["layers"].append({"wqkv": ("embed", None, "heads", "head_dim"), "wo": ("heads", "head_dim", "embed"),
                            "w1": ("embed", "mlp"), "w2": ("mlp", "embed"), "g1": ("embed",), "g2": ("embed",)})

# The activations between the layers, named for sequence parallelism
# (under the strategy being traced; none for the unsharded model).
def act(x):
    return x if ACT[0] is None else with_logical_constraint(x, ("batch", "seq", "embed"), m, ACT[0])

def layernorm(x, g):
    mu = mean(x, axis=-1, keepdims=True)
    return (x - mu) / sqrt(mean((x - mu) ** 2, axis=-1, keepdims=True) + 1e-5) * g

def attn(x, lp):
    qkv = einsum("btd,dkhe->kbhte", x, lp["wqkv"])
    s = einsum("bhqe,bhke->bhqk", qkv[0], qkv[1]) / sqrt(float(D // H))
    s = where(tril(ones((T, T))) > 0, s, -1e9)
    return einsum("bhqe,hed->bqd", einsum("bhqk,bhke->bhqe", softmax(s, axis=-1), qkv[2]), lp["wo"])

def loss(p, tok, tgt):
    x = act(p["emb"][tok])
    for lp in p["layers"]:
        x = act(x + attn(layernorm(x, lp["g1"]), lp))
        x = act(x + gelu(layernorm(x, lp["g2"]) @ lp["w1"]) @ lp["w2"])
    logp = log_softmax(x @ p["emb"].T, axis=-1)
    return -mean(take_along_axis(logp, tgt[..., None], axis=-1))

def step(p, tok, tgt):
    l, g = value_and_grad(loss)(p, tok, tgt)
    return l, tree_map(lambda a, b: a - 0.5 * b, p, g)

"#;

/// Training and plans under a strategy, for either model.
const COMMON: &str = r#"
tok = random.randint(random.key(1), (B, T), 0, V)
tgt = random.randint(random.key(2), (B, T), 0, V)
m = mesh((2, 4), ("data", "model"))

ACT = [None]

def sharded_step(strategy):
    ACT[0] = strategy
    ps = logical_shardings(names, m, strategy)
    bs = logical_shardings(("batch", None), m, strategy)
    return jit(step, in_shardings=(ps, bs, bs), out_shardings=(NamedSharding(m, P()), ps))

def losses(strategy, steps=10):
    ACT[0] = None
    p = params if strategy is None else shard(params, m, strategy, names=names)
    f = jit(step) if strategy is None else sharded_step(strategy)
    out = []
    for i in range(steps):
        l, p = f(p, tok, tgt)
        out.append(float(l))
    return out
"#;

/// A mixture-of-experts layer (top-2 routing, a capacity per expert, a
/// load-balancing loss; GShard's dispatch and combine) in a small language
/// model, and the logical names of its parameters.
const MOE: &str = r#"
B, T, D, E, K, F, V = 8, 16, 32, 4, 2, 256, 64
C = int(1.25 * K * T / E)
ks = random.split(random.key(0), 4)
params = {"emb": random.normal(ks[0], (V, D)) * 0.05, "router": random.normal(ks[1], (D, E)) * 0.1,
          "w1": random.normal(ks[2], (E, D, F)) / sqrt(D), "w2": random.normal(ks[3], (E, F, D)) / sqrt(F)}
names = {"emb": ("vocab", "embed"), "router": ("embed", None),
         "w1": ("expert", "embed", "mlp"), "w2": ("expert", "mlp", "embed")}

def moe(x, p):
    probs = softmax(x @ p["router"], axis=-1)                         # [G, S, E]: a group per row
    gate, idx = top_k(probs, K)                                       # [G, S, K]
    mask = one_hot(idx, E).reshape(B, T * K, E)                       # the choices in order
    pos = cumsum(mask, axis=1) - mask                                 # places in the experts' buffers
    slot = (one_hot(pos, C) * (mask * (pos < C))[..., None]).reshape(B, T, K, E, C)
    dispatch = sum(slot, axis=2)                                      # [G, S, E, C]
    combine = sum(gate[..., None, None] * slot, axis=2)
    xe = einsum("gsd,gsec->egcd", x, dispatch)                        # tokens to their experts
    ye = einsum("egcf,efd->egcd", gelu(einsum("egcd,edf->egcf", xe, p["w1"])), p["w2"])
    balance = E * sum(mean(mask, axis=(0, 1)) * mean(probs, axis=(0, 1)))
    return einsum("egcd,gsec->gsd", ye, combine), balance              # and back

def loss(p, tok, tgt):
    x = p["emb"][tok]
    y, balance = moe(x, p)
    logp = log_softmax((x + y) @ p["emb"].T, axis=-1)
    return -mean(take_along_axis(logp, tgt[..., None], axis=-1)) + 0.01 * balance

def step(p, tok, tgt):
    l, g = value_and_grad(loss)(p, tok, tgt)
    return l, tree_map(lambda a, b: a - 0.5 * b, p, g)
"#;

fn session() -> Session {
    arr_testkit::session_with(&format!("{GPT}{COMMON}"))
}

fn moe_session() -> Session {
    arr_testkit::session_with(&format!("{MOE}{COMMON}"))
}

fn check_plan(strategy: &str, want: Expect) {
    check_plan_of(session(), strategy, want);
}

fn check_plan_of(mut s: Session, strategy: &str, want: Expect) {
    let src = format!("sharded_step('{strategy}').plan(params, tok, tgt)");
    match arr_testkit::run(&mut s, &src) {
        Value::Str(plan) => want.assert_eq(&plan),
        other => panic!("{src}: {other:?}"),
    }
}

#[test]
fn tensor_and_data_parallel_plan_is_megatrons() {
    // Per layer: one all-reduce over 'model' after attention and one after
    // the MLP, the same two in the backward pass; one bucketed all-reduce
    // of the gradients (and the loss) over 'data'; no all-gather.
    check_plan(
        "tp+dp",
        expect![[r#"
            sharded jit on Mesh('data': 2, 'model': 4)
              1. psum over 'model' (4 devices) of f32[4,16,64]: 24.0 KiB sent per device  (dot: partial sums over the contracting dimension split by 'model') at <setup>:28
              2. psum over 'model' (4 devices) of f32[4,16,64]: 24.0 KiB sent per device  (dot: partial sums over the contracting dimension split by 'model') at <setup>:34
              3. psum over 'model' (4 devices) of f32[4,16,64]: 24.0 KiB sent per device  (dot: partial sums over the contracting dimension split by 'model') at <setup>:28
              4. psum over 'model' (4 devices) of f32[4,16,64]: 24.0 KiB sent per device  (dot: partial sums over the contracting dimension split by 'model') at <setup>:34
              5. psum over 'model' (4 devices) of f32[4,16,64]: 24.0 KiB sent per device  (dot: partial sums over the contracting dimension split by 'model') at <setup>:34
              6. psum over 'model' (4 devices) of f32[4,16,64]: 24.0 KiB sent per device  (dot: partial sums over the contracting dimension split by 'model') at <setup>:25
              7. psum over 'model' (4 devices) of f32[4,16,64]: 24.0 KiB sent per device  (dot: partial sums over the contracting dimension split by 'model') at <setup>:34
              8. psum over 'model' (4 devices) of f32[4,16,64]: 24.0 KiB sent per device  (dot: partial sums over the contracting dimension split by 'model') at <setup>:25
              9. psum over 'data' (2 devices) of 15 arrays (f32[], f32[64,64], f32[64,64], f32[64,64], f32[64], f32[64,1,16], f32[3,1,16,64], f32[64], f32[64,64], f32[64,64], f32[64], f32[64,1,16], f32[3,1,16,64], f32[64], f32[64,64]): 129.0 KiB sent per device  (15 bucketed: reduce_sum over a dimension split by 'data'; dot: partial sums over the contracting dimension split by 'data'; scatter_add of updates split by 'data') at <setup>:36, <setup>:35, <setup>:34, <setup>:22, <setup>:28, <setup>:25, <setup>:31
            collectives send 321.0 KiB per device; inputs take 113.5 KiB, peak memory 607.5 KiB per device
        "#]],
    );
}

#[test]
fn sequence_parallel_plan_splits_each_all_reduce_in_the_forward_pass() {
    // Between the layers the activations are split by sequence over
    // 'model': each forward all-reduce becomes an all-gather before the
    // layer and a reduce-scatter after it (items 1-8). The backward pass
    // still has some all-reduces and gathers more than Megatron's (the
    // norms' gradients mix both layouts).
    check_plan(
        "tp+sp",
        expect![[r#"
            sharded jit on Mesh('data': 2, 'model': 4)
              1. all_gather over 'model' (4 devices) of f32[4,4,64]: 12.0 KiB sent per device  (dot: operands laid out differently) at <setup>:25
              2. psum_scatter over 'model' (4 devices) of f32[4,16,64]: 12.0 KiB sent per device  (a sum over 'model' laid out split by it) at <setup>:33
              3. all_gather over 'model' (4 devices) of f32[4,4,64]: 12.0 KiB sent per device  (dot: operands laid out differently) at <setup>:34
              4. psum_scatter over 'model' (4 devices) of f32[4,16,64]: 12.0 KiB sent per device  (a sum over 'model' laid out split by it) at <setup>:34
              5. all_gather over 'model' (4 devices) of f32[4,4,64]: 12.0 KiB sent per device  (dot: operands laid out differently) at <setup>:25
              6. psum_scatter over 'model' (4 devices) of f32[4,16,64]: 12.0 KiB sent per device  (a sum over 'model' laid out split by it) at <setup>:33
              7. all_gather over 'model' (4 devices) of f32[4,4,64]: 12.0 KiB sent per device  (dot: operands laid out differently) at <setup>:34
              8. psum_scatter over 'model' (4 devices) of f32[4,16,64]: 12.0 KiB sent per device  (a sum over 'model' laid out split by it) at <setup>:34
              9. all_gather over 'model' (4 devices) of f32[4,4,64]: 12.0 KiB sent per device  (dot: operands laid out differently) at <setup>:34
             10. psum over 'model' (4 devices) of f32[4,16,64]: 24.0 KiB sent per device  (dot: partial sums over the contracting dimension split by 'model') at <setup>:28
             11. psum_scatter over 'model' (4 devices) of f32[4,16,64]: 12.0 KiB sent per device  (a sum over 'model' laid out split by it) at <setup>:22
             12. all_gather over 'model' (4 devices) of f32[4,4,64]: 12.0 KiB sent per device  (dot: operands laid out differently) at <setup>:28
             13. all_gather over 'model' (4 devices) of f32[1,16,64]: 12.0 KiB sent per device  (dot: operands laid out differently) at <setup>:28
             14. all_to_all over 'model' (4 devices) of f32[4,4,1,4,16]: 4.0 KiB sent per device  (dot: operands laid out differently) at <setup>:28
             15. psum over 'model' (4 devices) of f32[4,16,64]: 24.0 KiB sent per device  (dot: partial sums over the contracting dimension split by 'model') at <setup>:34
             16. psum_scatter over 'model' (4 devices) of f32[4,16,64]: 12.0 KiB sent per device  (a sum over 'model' laid out split by it) at <setup>:22
             17. all_gather over 'model' (4 devices) of f32[4,4,64]: 12.0 KiB sent per device  (dot: operands laid out differently) at <setup>:34
             18. psum over 'model' (4 devices) of f32[4,16,64]: 24.0 KiB sent per device  (dot: partial sums over the contracting dimension split by 'model') at <setup>:28
             19. psum_scatter over 'model' (4 devices) of f32[4,16,64]: 12.0 KiB sent per device  (a sum over 'model' laid out split by it) at <setup>:22
             20. all_gather over 'model' (4 devices) of f32[4,4,64]: 12.0 KiB sent per device  (dot: operands laid out differently) at <setup>:28
             21. all_gather over 'model' (4 devices) of f32[1,16,64]: 12.0 KiB sent per device  (dot: operands laid out differently) at <setup>:28
             22. all_to_all over 'model' (4 devices) of f32[4,4,1,4,16]: 4.0 KiB sent per device  (dot: operands laid out differently) at <setup>:28
             23. psum over 'model' (4 devices) of f32[4,16,64]: 24.0 KiB sent per device  (dot: partial sums over the contracting dimension split by 'model') at <setup>:34
             24. psum_scatter over 'model' (4 devices) of f32[4,16,64]: 12.0 KiB sent per device  (a sum over 'model' laid out split by it) at <setup>:22
             25. all_gather over 'model' (4 devices) of f32[4,4,64]: 12.0 KiB sent per device  (scatter: updates laid out as indexed) at <setup>:31
             26. psum over 'data' (2 devices) of 15 arrays (f32[], f32[64,64], f32[64,64], f32[64,64], f32[64], f32[64,1,16], f32[3,1,16,64], f32[64], f32[64,64], f32[64,64], f32[64], f32[64,1,16], f32[3,1,16,64], f32[64], f32[64,64]): 129.0 KiB sent per device  (15 bucketed: reduce_sum over a dimension split by 'data'; dot: partial sums over the contracting dimension split by 'data'; scatter_add of updates split by 'data') at <setup>:36, <setup>:35, <setup>:34, <setup>:22, <setup>:28, <setup>:25, <setup>:31
             27. psum over 'model' (4 devices) of 6 arrays (f32[], f32[64,64], f32[64], f32[64], f32[64], f32[64]): 25.5 KiB sent per device  (6 bucketed: reduce_sum over a dimension split by 'model'; dot: partial sums over the contracting dimension split by 'model') at <setup>:36, <setup>:35, <setup>:22
            collectives send 486.5 KiB per device; inputs take 113.5 KiB, peak memory 420.7 KiB per device
        "#]],
    );
}

#[test]
fn data_parallel_plan_is_one_bucketed_all_reduce() {
    check_plan(
        "dp",
        expect![[r#"
            sharded jit on Mesh('data': 2, 'model': 4)
              1. psum over 'data' (2 devices) of 15 arrays (f32[], f32[64,64], f32[64,256], f32[256,64], f32[64], f32[64,4,16], f32[3,4,16,64], f32[64], f32[64,256], f32[256,64], f32[64], f32[64,4,16], f32[3,4,16,64], f32[64], f32[64,64]): 417.0 KiB sent per device  (15 bucketed: reduce_sum over a dimension split by 'data'; dot: partial sums over the contracting dimension split by 'data'; scatter_add of updates split by 'data') at <setup>:36, <setup>:35, <setup>:34, <setup>:22, <setup>:28, <setup>:25, <setup>:31
            collectives send 417.0 KiB per device; inputs take 401.5 KiB, peak memory 1.2 MiB per device
        "#]],
    );
}

#[test]
fn fsdp_plan_gathers_each_parameter_once() {
    // Each parameter is gathered whole once before its first use (the
    // backward pass reuses it); each gradient is reduce-scattered over
    // 'data', each device getting the block of the sum its update needs.
    check_plan(
        "fsdp",
        expect![[r#"
            sharded jit on Mesh('data': 2, 'model': 4)
              1. all_gather over 'data' (2 devices) of f32[64,32]: 8.0 KiB sent per device  (gather along a split dimension) at <setup>:31
              2. all_gather over 'data' (2 devices) of f32[32]: 128 B sent per device  (mul: operands laid out differently) at <setup>:22
              3. all_gather over 'data' (2 devices) of f32[32,3,4,16]: 24.0 KiB sent per device  (dot: operands laid out differently) at <setup>:25
              4. all_gather over 'data' (2 devices) of f32[4,16,32]: 8.0 KiB sent per device  (dot: operands laid out differently) at <setup>:28
              5. all_gather over 'data' (2 devices) of f32[32]: 128 B sent per device  (mul: operands laid out differently) at <setup>:22
              6. all_gather over 'data' (2 devices) of f32[32,256]: 32.0 KiB sent per device  (dot: operands laid out differently) at <setup>:34
              7. all_gather over 'data' (2 devices) of f32[256,32]: 32.0 KiB sent per device  (dot: operands laid out differently) at <setup>:34
              8. all_gather over 'data' (2 devices) of f32[32]: 128 B sent per device  (mul: operands laid out differently) at <setup>:22
              9. all_gather over 'data' (2 devices) of f32[32,3,4,16]: 24.0 KiB sent per device  (dot: operands laid out differently) at <setup>:25
             10. all_gather over 'data' (2 devices) of f32[4,16,32]: 8.0 KiB sent per device  (dot: operands laid out differently) at <setup>:28
             11. all_gather over 'data' (2 devices) of f32[32]: 128 B sent per device  (mul: operands laid out differently) at <setup>:22
             12. all_gather over 'data' (2 devices) of f32[32,256]: 32.0 KiB sent per device  (dot: operands laid out differently) at <setup>:34
             13. all_gather over 'data' (2 devices) of f32[256,32]: 32.0 KiB sent per device  (dot: operands laid out differently) at <setup>:34
             14. all_gather over 'data' (2 devices) of f32[32,64]: 8.0 KiB sent per device  (dot: operands laid out differently) at <setup>:35
             15. psum over 'data' (2 devices) of f32[]: 4 B sent per device  (reduce_sum over a dimension split by 'data') at <setup>:36
             16. psum_scatter over 'data' (2 devices) of f32[64,64]: 8.0 KiB sent per device  (a sum over 'data' laid out split by it) at <setup>:40
             17. psum_scatter over 'data' (2 devices) of f32[64,64]: 8.0 KiB sent per device  (a sum over 'data' laid out split by it) at <setup>:40
             18. psum_scatter over 'data' (2 devices) of f32[64]: 128 B sent per device  (a sum over 'data' laid out split by it) at <setup>:40
             19. psum_scatter over 'data' (2 devices) of f32[64]: 128 B sent per device  (a sum over 'data' laid out split by it) at <setup>:40
             20. psum_scatter over 'data' (2 devices) of f32[256,64]: 32.0 KiB sent per device  (a sum over 'data' laid out split by it) at <setup>:40
             21. psum_scatter over 'data' (2 devices) of f32[64,256]: 32.0 KiB sent per device  (a sum over 'data' laid out split by it) at <setup>:40
             22. psum_scatter over 'data' (2 devices) of f32[64,4,16]: 8.0 KiB sent per device  (a sum over 'data' laid out split by it) at <setup>:40
             23. psum_scatter over 'data' (2 devices) of f32[3,4,16,64]: 24.0 KiB sent per device  (a sum over 'data' laid out split by it) at <setup>:40
             24. psum_scatter over 'data' (2 devices) of f32[64]: 128 B sent per device  (a sum over 'data' laid out split by it) at <setup>:40
             25. psum_scatter over 'data' (2 devices) of f32[64]: 128 B sent per device  (a sum over 'data' laid out split by it) at <setup>:40
             26. psum_scatter over 'data' (2 devices) of f32[256,64]: 32.0 KiB sent per device  (a sum over 'data' laid out split by it) at <setup>:40
             27. psum_scatter over 'data' (2 devices) of f32[64,256]: 32.0 KiB sent per device  (a sum over 'data' laid out split by it) at <setup>:40
             28. psum_scatter over 'data' (2 devices) of f32[64,4,16]: 8.0 KiB sent per device  (a sum over 'data' laid out split by it) at <setup>:40
             29. psum_scatter over 'data' (2 devices) of f32[3,4,16,64]: 24.0 KiB sent per device  (a sum over 'data' laid out split by it) at <setup>:40
            collectives send 417.0 KiB per device; inputs take 201.0 KiB, peak memory 1.4 MiB per device
        "#]],
    );
}

#[test]
fn expert_parallel_plan_sends_tokens_to_their_experts() {
    // Each device holds two of the four experts: the tokens go to their
    // experts' devices and come back, one all-to-all each way, forward and
    // backward; the expert weights' gradients stay where they are.
    check_plan_of(
        moe_session(),
        "ep",
        expect![[r#"
            sharded jit on Mesh('data': 2, 'model': 4)
              1. all_to_all over 'data' (2 devices) of f32[2,2,4,10,32]: 20.0 KiB sent per device  (dot: operands laid out differently) at <setup>:19
              2. psum over 'data' (2 devices) of f32[4]: 16 B sent per device  (reduce_sum over a dimension split by 'data') at <setup>:20
              3. all_to_all over 'data' (2 devices) of f32[2,2,4,10,32]: 20.0 KiB sent per device  (dot: operands laid out differently) at <setup>:21
              4. all_to_all over 'data' (2 devices) of f32[2,2,4,10,32]: 20.0 KiB sent per device  (dot: operands laid out differently) at <setup>:19
              5. all_to_all over 'data' (2 devices) of f32[2,4,32,2,10]: 20.0 KiB sent per device  (dot: operands laid out differently) at <setup>:18
              6. psum over 'data' (2 devices) of 5 arrays (f32[4], f32[], f32[64,32], f32[4,32], f32[64,32]): 16.5 KiB sent per device  (5 bucketed: reduce_sum over a dimension split by 'data'; dot: partial sums over the contracting dimension split by 'data'; scatter_add of updates split by 'data') at <setup>:20, <setup>:27, <setup>:26, <setup>:11, <setup>:24
            collectives send 96.5 KiB per device; inputs take 137.0 KiB, peak memory 743.6 KiB per device
        "#]],
    );
}

#[test]
fn auto_strategy_weighs_every_distinct_layout_and_picks_the_cheapest() {
    let mut s = session();
    s.run_script(
        "<test>",
        r#"
ACT[0] = None
args = (params, tok, tgt)
arg_names = (names, ("batch", None), ("batch", None))
rows = strategy_costs(step, m, arg_names, args)
# 'ep' and 'ep+tp' lay this model out as 'dp' and 'tp+dp' do: weighed once.
assert [r["strategy"] for r in rows] == ["dp", "fsdp", "tp", "tp+dp"], rows
by_name = {r["strategy"]: r for r in rows}
assert by_name["tp+dp"]["collectives"] == 9 and by_name["dp"]["collectives"] == 1, rows
# Megatron's layout splits the layers' products over 'model' (the tied
# logits stay whole): well under half of dp's flops on each device.
assert by_name["tp+dp"]["GFLOP"] * 3 < by_name["dp"]["GFLOP"], rows
for r in rows:
    assert r["estimate ms"] > 0 and abs(r["estimate ms"] - r["compute ms"] - r["comm ms"]) < 2e-3, r
chosen = auto_strategy(step, m, arg_names, args, show=False)
assert chosen == min(rows, key=lambda r: r["estimate ms"])["strategy"], (chosen, rows)
"#,
    )
    .unwrap_or_else(|e| panic!("{}", e.render()));
}

#[test]
fn fsdp_and_tp_keep_a_share_of_parameters_and_optimiser_state_per_device() {
    let mut s = session();
    s.run_script(
        "<test>",
        r#"
import optax
total = sum(x.nbytes for x in tree_leaves(params))
p = shard(params, m, "fsdp", names=names)
per = device_bytes(p)
assert len(per) == 8 and all(b == total // 2 for b in per.values()), (total, per)
state = optax.adam(1e-3).init(p)
for moment in (state[0].mu, state[0].nu):
    assert all(b == total // 2 for b in device_bytes(moment).values()), device_bytes(moment)
# Tensor parallel: the layers' matrices split over 'model', the tied
# embedding and the norms' gains whole on every device.
split = sum(lp[k].nbytes for lp in params["layers"] for k in ("wqkv", "wo", "w1", "w2"))
p = shard(params, m, "tp", names=names)
assert all(b == total - split + split // 4 for b in device_bytes(p).values()), device_bytes(p)
assert all(b == total - split + split // 4 for b in device_bytes(optax.sgd(0.1, momentum=0.9).init(p)).values())
report = str(mesh_report())
assert "resident" in report and "sharded arrays" in report, report
"#,
    )
    .unwrap_or_else(|e| panic!("{}", e.render()));
}

#[test]
fn a_checkpoint_restores_under_another_mesh_and_strategy_or_says_what_is_wrong() {
    let mut s = session();
    s.run_script(
        "<test>",
        r#"
import tempfile, os
path = tempfile.mkdtemp() + "/gpt"
p = shard(params, m, "tp+dp", names=names)
l, p = sharded_step("tp+dp")(p, tok, tgt)
save_checkpoint(path, p)
m42 = mesh((4, 2), ("data", "model"))
q = load_checkpoint(path, shardings=logical_shardings(names, m42, "fsdp"))
assert str(q["layers"][1]["w1"].sharding.spec) == "P('data', None)", q["layers"][1]["w1"].sharding
same = tree_map(lambda a, b: bool(all(a == b)), p, q)
assert all(tree_leaves(same)), same
# A block cut short: the error names its file and the array; nothing loads.
block = [b for b in sorted(os.listdir(path)) if b.endswith(".bin")][-1]
os.truncate(path + "/" + block, 8)
try:
    load_checkpoint(path)
    assert False, "a truncated checkpoint loaded"
except IOError as e:
    assert block in str(e) and "the array at ['layers']" in str(e) and "nothing was loaded" in str(e), str(e)
try:
    load_checkpoint(path, shardings=[NamedSharding(m42, P())] * 3)
    assert False, "a mismatched tree of shardings loaded"
except ValueError as e:
    assert "shardings has 3 leaves, the checkpoint 13 arrays" in str(e), str(e)
"#,
    )
    .unwrap_or_else(|e| panic!("{}", e.render()));
}

/// Ten steps under each strategy give the unsharded losses.
fn trains_as_unsharded(mut s: Session, strategies: &str) {
    let check = format!(
        r#"
want = losses(None)
assert want[-1] < want[0] - 0.005, want
for strategy in {strategies}:
    got = losses(strategy)
    for a, b in zip(got, want):
        assert abs(a - b) <= 1e-5, (strategy, got, want)
"#
    );
    s.run_script("<test>", &check)
        .unwrap_or_else(|e| panic!("{}", e.render()));
}

#[test]
fn every_strategy_trains_as_the_unsharded_model() {
    trains_as_unsharded(session(), "['dp', 'tp+dp', 'fsdp', 'tp', 'tp+sp']");
}

#[test]
fn a_three_dimensional_mesh_combines_data_fsdp_and_tensor_parallelism() {
    let mut s = session();
    s.run_script(
        "<test>",
        r#"
m3 = mesh((2, 2, 2), ("data", "fsdp", "model"))
rules = [("batch", ("data", "fsdp")), ("embed", "fsdp"), ("heads", "model"), ("mlp", "model")]
assert str(logical_spec(("embed", "mlp"), rules)) == "P('fsdp', 'model')"
assert str(logical_spec(("batch", None, "embed"), rules)) == "P(('data', 'fsdp'), None, None)"
ps = logical_shardings(names, m3, rules)
bs = logical_shardings(("batch", None), m3, rules)
f = jit(step, in_shardings=(ps, bs, bs), out_shardings=(NamedSharding(m3, P()), ps))
plan = f.plan(params, tok, tgt)
assert "over 'model'" in plan and "over 'fsdp'" in plan, plan
p = shard(params, m3, rules, names=names)
assert p["layers"][0]["w1"].sharding.spec == P("fsdp", "model")
want = losses(None, steps=5)
for i in range(5):
    l, p = f(p, tok, tgt)
    assert abs(float(l) - want[i]) <= 1e-5, (i, float(l), want)
"#,
    )
    .unwrap_or_else(|e| panic!("{}", e.render()));
}

#[test]
fn experts_train_as_the_unsharded_model() {
    trains_as_unsharded(moe_session(), "['ep', 'ep+tp', 'dp']");
}

#[test]
fn strategies_errors_name_the_problem() {
    let mut s = session();
    let e = arr_testkit::error_of(&mut s, "strategy_rules('zero')");
    assert!(e.contains("no strategy named 'zero'"), "{e}");
    let e = arr_testkit::error_of(&mut s, "shard(params, m, 'dp')");
    assert!(e.contains("give names="), "{e}");
    // A mesh axis splits one dimension only; names the rules lack stay whole.
    assert!(arr_testkit::truthy(
        &mut s,
        "str(logical_spec(('embed', 'embed', 'other'), [('embed', 'data')])) == \"P('data', None, None)\""
    ));
}
