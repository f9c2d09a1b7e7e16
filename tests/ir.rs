//! IR snapshots: the text that `make_jaxpr` returns for a handful of
//! functions, plain and under the transformations (grad, jvp, vmap,
//! vmap(grad), grad(grad), jacfwd(jacrev)). `make_jaxpr` type-checks every
//! graph it returns, so each snapshot is also a well-typed graph.
//!
//! Refresh with `UPDATE_EXPECT=1 cargo test -p arr-repl --test ir`, then read
//! the diff: a snapshot records what the transformation emits, needless work
//! included, so a change shows up here first.

use arr_kernels::{DType, Shape, UnaryOp};
use arr_runtime::prim::{Aval, Prim};
use arr_runtime::transform::graph::{typecheck, Atom, Eqn, Graph};
use expect_test::{expect, Expect};

/// The functions the snapshots transform.
const PRELUDE: &str = r#"
def poly(x):
    return 3.0 * x ** 3 - 2.0 * x ** 2 + x

def layer(w, x):
    return tanh(x @ w)

def layer_sum(w, x):
    return sum(layer(w, x))

def indexed(x):
    # basic slice, integer index, integer-array (gather) index
    return x[1:3] * x[0] + x[array([0, 2])].sum()

def sliced(x):
    # basic indexing only: slices and an integer
    return x[1:] * x[0] - x[:-1]

def cumprod(xs):
    def step(c, x):
        c = c * x
        return c, c
    return scan(step, 1.0, xs)[1]

def branch(x):
    return cond(x > 0.0, lambda v: sin(v), lambda v: v * v, x)
"#;

/// Run `src` (after the prelude) in a fresh session; its last line must be
/// `make_jaxpr(...)(...)`. Snapshot the IR text, or the error if it fails.
fn check(src: &str, expect: Expect) {
    let mut session = arr_testkit::session_with(PRELUDE);
    // make_jaxpr gives a ClosedJaxpr; its text is its `str`.
    let mut lines: Vec<&str> = src.trim_end().lines().collect();
    let last = format!("str({})", lines.pop().unwrap_or_default());
    lines.push(&last);
    expect.assert_eq(&arr_testkit::text_of(&mut session, &lines.join("\n")));
}

// ---------------------------------------------------------------------------
// poly: 3x^3 - 2x^2 + x

#[test]
fn poly_plain() {
    check(
        "make_jaxpr(poly)(1.0)",
        expect![[r#"
            { lambda ; a:f32[]. let
                b:f32[] = mul a a
                c:f32[] = mul a b
                d:f32[] = mul 3.0:f32[] c
                e:f32[] = mul a a
                f:f32[] = mul 2.0:f32[] e
                g:f32[] = sub d f
                h:f32[] = add g a
              in (h,) }"#]],
    );
}

#[test]
fn poly_grad() {
    check(
        "make_jaxpr(grad(poly))(1.0)",
        expect![[r#"
            { lambda ; a:f32[]. let
                b:f32[] = mul a a
                c:f32[] = mul -2.0:f32[] a
                d:f32[] = add 1.0:f32[] c
                e:f32[] = mul -2.0:f32[] a
                f:f32[] = add d e
                g:f32[] = mul 3.0:f32[] a
                h:f32[] = mul 3.0:f32[] b
                i:f32[] = add f h
                j:f32[] = mul g a
                k:f32[] = add i j
                l:f32[] = mul g a
                m:f32[] = add k l
              in (m,) }"#]],
    );
}

#[test]
fn poly_jvp() {
    check(
        "make_jaxpr(lambda x, t: jvp(poly, (x,), (t,)))(1.0, 1.0)",
        expect![[r#"
            { lambda ; a:f32[] b:f32[]. let
                c:f32[] = mul a a
                d:f32[] = mul b a
                e:f32[] = mul a b
                f:f32[] = add d e
                g:f32[] = mul a c
                h:f32[] = mul b c
                i:f32[] = mul a f
                j:f32[] = add h i
                k:f32[] = mul 3.0:f32[] g
                l:f32[] = mul 3.0:f32[] j
                m:f32[] = mul a a
                n:f32[] = mul b a
                o:f32[] = mul a b
                p:f32[] = add n o
                q:f32[] = mul 2.0:f32[] m
                r:f32[] = mul 2.0:f32[] p
                s:f32[] = sub k q
                t:f32[] = neg r
                u:f32[] = add l t
                v:f32[] = add s a
                w:f32[] = add u b
              in (v, w) }"#]],
    );
}

#[test]
fn poly_vmap() {
    check(
        "make_jaxpr(vmap(poly))(ones(4))",
        expect![[r#"
            { lambda ; a:f32[4]. let
                b:f32[4] = mul a a
                c:f32[4] = mul a b
                d:f32[4] = mul 3.0:f32[] c
                e:f32[4] = mul a a
                f:f32[4] = mul 2.0:f32[] e
                g:f32[4] = sub d f
                h:f32[4] = add g a
              in (h,) }"#]],
    );
}

#[test]
fn poly_grad_grad() {
    check(
        "make_jaxpr(grad(grad(poly)))(1.0)",
        expect![[r#"
            { lambda ; a:f32[]. let
                b:f32[] = mul 3.0:f32[] a
                c:f32[] = mul 1.0:f32[] b
                d:f32[] = mul 1.0:f32[] a
                e:f32[] = mul 1.0:f32[] b
                f:f32[] = add c e
                g:f32[] = mul 1.0:f32[] a
                h:f32[] = add d g
                i:f32[] = mul h 3.0:f32[]
                j:f32[] = add f i
                k:f32[] = add j -2.0:f32[]
                l:f32[] = add k -2.0:f32[]
                m:f32[] = mul 3.0:f32[] a
                n:f32[] = add l m
                o:f32[] = mul 3.0:f32[] a
                p:f32[] = add n o
              in (p,) }"#]],
    );
}

// ---------------------------------------------------------------------------
// tanh(x @ w)

#[test]
fn layer_plain() {
    check(
        "make_jaxpr(layer)(ones((3, 2)), ones(3))",
        expect![[r#"
            { lambda ; a:f32[3,2] b:f32[3]. let
                c:f32[1,3] = reshape[shape=(1,3)] b
                d:f32[1,2] = dot_general[contract=((1,),(0,)) batch=((),())] c a
                e:f32[2] = reshape[shape=(2,)] d
                f:f32[2] = tanh e
              in (f,) }"#]],
    );
}

#[test]
fn layer_grad() {
    check(
        "make_jaxpr(grad(layer_sum))(ones((3, 2)), ones(3))",
        expect![[r#"
            { lambda a:f32[1] ; b:f32[3,2] c:f32[3]. let
                d:f32[1,3] = reshape[shape=(1,3)] c
                e:f32[1,2] = dot_general[contract=((1,),(0,)) batch=((),())] d b
                f:f32[2] = reshape[shape=(2,)] e
                g:f32[2] = tanh f
                h:f32[2] = mul g g
                i:f32[2] = sub 1.0:f32[] h
                j:f32[2] = broadcast_in_dim[shape=(2,) dims=(0,)] a
                k:f32[2] = mul j i
                l:f32[1,2] = reshape[shape=(1,2)] k
                m:f32[2,3] = dot_general[contract=((0,),(0,)) batch=((),())] l d
                n:f32[3,2] = transpose[perm=(1,0)] m
              in (n,) }"#]],
    );
}

#[test]
fn layer_vmap() {
    check(
        "make_jaxpr(vmap(layer, in_axes=(None, 0)))(ones((3, 2)), ones((5, 3)))",
        expect![[r#"
            { lambda ; a:f32[3,2] b:f32[5,3]. let
                c:f32[5,1,3] = reshape[shape=(5,1,3)] b
                d:f32[5,1,2] = dot_general[contract=((2,),(0,)) batch=((),())] c a
                e:f32[5,2] = reshape[shape=(5,2)] d
                f:f32[5,2] = tanh e
              in (f,) }"#]],
    );
}

#[test]
fn layer_vmap_grad() {
    check(
        "make_jaxpr(vmap(grad(layer_sum), in_axes=(None, 0)))(ones((3, 2)), ones((5, 3)))",
        expect![[r#"
            { lambda a:f32[1] ; b:f32[3,2] c:f32[5,3]. let
                d:f32[5,1,3] = reshape[shape=(5,1,3)] c
                e:f32[5,1,2] = dot_general[contract=((2,),(0,)) batch=((),())] d b
                f:f32[5,2] = reshape[shape=(5,2)] e
                g:f32[5,2] = tanh f
                h:f32[5,2] = mul g g
                i:f32[5,2] = sub 1.0:f32[] h
                j:f32[2] = broadcast_in_dim[shape=(2,) dims=(0,)] a
                k:f32[5,2] = mul j i
                l:f32[5,1,2] = reshape[shape=(5,1,2)] k
                m:f32[5,2,3] = dot_general[contract=((1,),(1,)) batch=((0,),(0,))] l d
                n:f32[5,3,2] = transpose[perm=(0,2,1)] m
              in (n,) }"#]],
    );
}

#[test]
fn layer_hessian_jacfwd_jacrev() {
    check(
        "w = ones((3, 2))\nmake_jaxpr(jacfwd(jacrev(lambda x: layer_sum(w, x))))(ones(3))",
        expect![[r#"
            { lambda a:f32[3,2] b:f32[1,1] ; c:f32[3]. let
                d:i32[3,3] = iota[dtype=int32 shape=(3,3) dim=0]
                e:i32[3,3] = iota[dtype=int32 shape=(3,3) dim=1]
                f:i32[3,3] = add e 0:i32[]
                g:bool[3,3] = eq d f
                h:f32[3,3] = convert[dtype=float32] g
                i:f32[1,3] = reshape[shape=(1,3)] c
                j:f32[3,1,3] = reshape[shape=(3,1,3)] h
                k:f32[1,2] = dot_general[contract=((1,),(0,)) batch=((),())] i a
                l:f32[3,1,2] = dot_general[contract=((2,),(0,)) batch=((),())] j a
                m:f32[2] = reshape[shape=(2,)] k
                n:f32[3,2] = reshape[shape=(3,2)] l
                o:f32[2] = tanh m
                p:f32[2] = mul o o
                q:f32[2] = sub 1.0:f32[] p
                r:f32[3,2] = mul n q
                s:f32[3,2] = mul r o
                t:f32[3,2] = mul o r
                u:f32[3,2] = add s t
                v:f32[3,2] = neg u
                w:f32[1,2] = broadcast_in_dim[shape=(1,2) dims=(0,1)] b
                x:f32[3,1,2] = reshape[shape=(3,1,2)] v
                y:f32[3,1,2] = mul w x
                z:f32[3,1,1,2] = reshape[shape=(3,1,1,2)] y
                ba:f32[3,1,1,3] = dot_general[contract=((3,),(1,)) batch=((),())] z a
                bb:f32[3,1,3] = reshape[shape=(3,1,3)] ba
                bc:f32[3,1,3] = slice[start=(0,0,0) limit=(3,1,3) stride=(1,1,1)] bb
                bd:f32[3,3] = reshape[shape=(3,3)] bc
                be:f32[3,3] = transpose[perm=(1,0)] bd
                bf:f32[3,3] = slice[start=(0,0) limit=(3,3) stride=(1,1)] be
              in (bf,) }"#]],
    );
}

// ---------------------------------------------------------------------------
// softmax

#[test]
fn softmax_plain() {
    check(
        "make_jaxpr(softmax)(ones(4))",
        expect![[r#"
            { lambda ; a:f32[4]. let
                b:f32[] = reduce_max[axes=(0,)] a
                c:f32[1] = reshape[shape=(1,)] b
                d:f32[4] = sub a c
                e:f32[4] = exp d
                f:f32[] = reduce_sum[axes=(0,)] e
                g:f32[1] = reshape[shape=(1,)] f
                h:f32[4] = div e g
              in (h,) }"#]],
    );
}

#[test]
fn softmax_jvp() {
    check(
        "make_jaxpr(lambda x, t: jvp(softmax, (x,), (t,)))(ones(4), ones(4))",
        expect![[r#"
            { lambda ; a:f32[4] b:f32[4]. let
                c:f32[] = reduce_max[axes=(0,)] a
                d:f32[1] = reshape[shape=(1,)] c
                e:f32[4] = sub a d
                f:f32[4] = exp e
                g:f32[] = reduce_sum[axes=(0,)] f
                h:f32[1] = reshape[shape=(1,)] g
                i:f32[4] = div f h
                j:f32[4] = mul i b
                k:f32[] = reduce_sum[axes=(0,)] j
                l:f32[1] = reshape[shape=(1,)] k
                m:f32[4] = sub b l
                n:f32[4] = mul i m
              in (i, n) }"#]],
    );
}

#[test]
fn softmax_vmap() {
    check(
        "make_jaxpr(vmap(softmax))(ones((2, 4)))",
        expect![[r#"
            { lambda ; a:f32[2,4]. let
                b:f32[2] = reduce_max[axes=(1,)] a
                c:f32[2,1] = reshape[shape=(2,1)] b
                d:f32[2,4] = sub a c
                e:f32[2,4] = exp d
                f:f32[2] = reduce_sum[axes=(1,)] e
                g:f32[2,1] = reshape[shape=(2,1)] f
                h:f32[2,4] = div e g
              in (h,) }"#]],
    );
}

// ---------------------------------------------------------------------------
// indexing

#[test]
fn indexed_plain() {
    check(
        "make_jaxpr(indexed)(ones(4))",
        expect![[r#"
            { lambda a:i32[1] b:i32[1] ; c:f32[4]. let
                d:f32[2] = slice[start=(1,) limit=(3,) stride=(1,)] c
                e:f32[1] = slice[start=(0,) limit=(1,) stride=(1,)] c
                f:f32[] = reshape[shape=()] e
                g:f32[2] = mul d f
                h:i32[2] = concatenate[axis=0] a b
                i:bool[2] = lt h 0:i32[]
                j:i32[2] = add h 4:i32[]
                k:i32[2] = select i j h
                l:f32[2] = gather[axis=0] c k
                m:f32[] = reduce_sum[axes=(0,)] l
                n:f32[2] = add g m
              in (n,) }"#]],
    );
}

#[test]
fn indexed_grad() {
    check(
        "make_jaxpr(grad(lambda x: sum(indexed(x))))(ones(4))",
        expect![[r#"
            { lambda a:i32[1] b:i32[1] c:f32[1] d:f32[4] ; e:f32[4]. let
                f:f32[2] = slice[start=(1,) limit=(3,) stride=(1,)] e
                g:f32[1] = slice[start=(0,) limit=(1,) stride=(1,)] e
                h:f32[] = reshape[shape=()] g
                i:i32[2] = concatenate[axis=0] a b
                j:bool[2] = lt i 0:i32[]
                k:i32[2] = add i 4:i32[]
                l:i32[2] = select j k i
                m:f32[2] = broadcast_in_dim[shape=(2,) dims=(0,)] c
                n:f32[] = reduce_sum[axes=(0,)] m
                o:f32[1] = reshape[shape=(1,)] n
                p:f32[2] = broadcast_in_dim[shape=(2,) dims=(0,)] o
                q:i32[2] = max l 0:i32[]
                r:i32[2] = min q 3:i32[]
                s:f32[4] = scatter_add[axis=0] d r p
                t:f32[2] = mul m f
                u:f32[] = reduce_sum[axes=(0,)] t
                v:f32[2] = mul m h
                w:f32[1] = reshape[shape=(1,)] u
                x:f32[4] = pad[lo=(0,) hi=(3,) interior=(0,)] w 0.0:f32[]
                y:f32[4] = add s x
                z:f32[4] = pad[lo=(1,) hi=(1,) interior=(0,)] v 0.0:f32[]
                ba:f32[4] = add y z
              in (ba,) }"#]],
    );
}

#[test]
fn indexed_vmap() {
    check(
        "make_jaxpr(vmap(indexed))(ones((2, 4)))",
        expect![[r#"
            { lambda a:i32[1] b:i32[1] ; c:f32[2,4]. let
                d:f32[2,2] = slice[start=(0,1) limit=(2,3) stride=(1,1)] c
                e:f32[2,1] = slice[start=(0,0) limit=(2,1) stride=(1,1)] c
                f:f32[2] = reshape[shape=(2,)] e
                g:f32[2,1] = reshape[shape=(2,1)] f
                h:f32[2,2] = mul d g
                i:i32[2] = concatenate[axis=0] a b
                j:bool[2] = lt i 0:i32[]
                k:i32[2] = add i 4:i32[]
                l:i32[2] = select j k i
                m:f32[2,2] = gather[axis=1] c l
                n:f32[2] = reduce_sum[axes=(1,)] m
                o:f32[2,1] = reshape[shape=(2,1)] n
                p:f32[2,2] = add h o
              in (p,) }"#]],
    );
}

#[test]
fn sliced_jacfwd_jacrev() {
    check(
        "make_jaxpr(jacfwd(jacrev(lambda x: sum(sliced(x) ** 2))))(ones(4))",
        expect![[r#"
            { lambda a:f32[1,1] ; b:f32[4]. let
                c:i32[4,4] = iota[dtype=int32 shape=(4,4) dim=0]
                d:i32[4,4] = iota[dtype=int32 shape=(4,4) dim=1]
                e:i32[4,4] = add d 0:i32[]
                f:bool[4,4] = eq c e
                g:f32[4,4] = convert[dtype=float32] f
                h:f32[3] = slice[start=(1,) limit=(4,) stride=(1,)] b
                i:f32[4,3] = slice[start=(0,1) limit=(4,4) stride=(1,1)] g
                j:f32[1] = slice[start=(0,) limit=(1,) stride=(1,)] b
                k:f32[4,1] = slice[start=(0,0) limit=(4,1) stride=(1,1)] g
                l:f32[] = reshape[shape=()] j
                m:f32[4] = reshape[shape=(4,)] k
                n:f32[3] = mul h l
                o:f32[4,3] = mul i l
                p:f32[4,1] = reshape[shape=(4,1)] m
                q:f32[4,3] = mul h p
                r:f32[4,3] = add o q
                s:f32[3] = slice[start=(0,) limit=(3,) stride=(1,)] b
                t:f32[4,3] = slice[start=(0,0) limit=(4,3) stride=(1,1)] g
                u:f32[3] = sub n s
                v:f32[4,3] = neg t
                w:f32[4,3] = add r v
                x:f32[1,3] = broadcast_in_dim[shape=(1,3) dims=(0,1)] a
                y:f32[1,3] = mul x u
                z:f32[4,1,3] = reshape[shape=(4,1,3)] w
                ba:f32[4,1,3] = mul x z
                bb:f32[1,3] = mul x u
                bc:f32[4,1,3] = reshape[shape=(4,1,3)] w
                bd:f32[4,1,3] = mul x bc
                be:f32[1,3] = add y bb
                bf:f32[4,1,3] = add ba bd
                bg:f32[4,1,3] = neg bf
                bh:f32[4,1,4] = pad[lo=(0,0,0) hi=(0,0,1) interior=(0,0,0)] bg 0.0:f32[]
                bi:f32[4,1,3] = mul bf h
                bj:f32[4,1,3] = reshape[shape=(4,1,3)] i
                bk:f32[4,1,3] = mul be bj
                bl:f32[4,1,3] = add bi bk
                bm:f32[4,1] = reduce_sum[axes=(2,)] bl
                bn:f32[4,1,3] = mul bf l
                bo:f32[4,1,1] = reshape[shape=(4,1,1)] m
                bp:f32[4,1,3] = mul be bo
                bq:f32[4,1,3] = add bn bp
                br:f32[4,1,1] = reshape[shape=(4,1,1)] bm
                bs:f32[4,1,4] = pad[lo=(0,0,0) hi=(0,0,3) interior=(0,0,0)] br 0.0:f32[]
                bt:f32[4,1,4] = add bh bs
                bu:f32[4,1,4] = pad[lo=(0,0,1) hi=(0,0,0) interior=(0,0,0)] bq 0.0:f32[]
                bv:f32[4,1,4] = add bt bu
                bw:f32[4,1,4] = slice[start=(0,0,0) limit=(4,1,4) stride=(1,1,1)] bv
                bx:f32[4,4] = reshape[shape=(4,4)] bw
                by:f32[4,4] = transpose[perm=(1,0)] bx
                bz:f32[4,4] = slice[start=(0,0) limit=(4,4) stride=(1,1)] by
              in (bz,) }"#]],
    );
}

// ---------------------------------------------------------------------------
// scan

#[test]
fn scan_plain() {
    check(
        "make_jaxpr(cumprod)(ones(3))",
        expect![[r#"
            { lambda ; a:f32[3]. let
                b:f32[] c:f32[3] = scan[length=3 n_consts=0 n_carry=1 reverse=false] body={ lambda ; a:f32[] b:f32[]. let
                    c:f32[] = mul a b
                  in (c, c) } 1.0:f32[] a
              in (c,) }"#]],
    );
}

#[test]
fn scan_grad() {
    check(
        "make_jaxpr(grad(lambda xs: sum(cumprod(xs))))(ones(3))",
        expect![[r#"
            { lambda a:f32[1] ; b:f32[3]. let
                c:f32[] d:f32[3] e:f32[3] f:f32[3] = scan[length=3 n_consts=0 n_carry=1 reverse=false] body={ lambda ; a:f32[] b:f32[]. let
                    c:f32[] = mul a b
                  in (c, c, b, a) } 1.0:f32[] b
                g:f32[3] = broadcast_in_dim[shape=(3,) dims=(0,)] a
                h:f32[] i:f32[3] = scan[length=3 n_consts=0 n_carry=1 reverse=true] body={ lambda ; a:f32[] b:f32[] c:f32[] d:f32[]. let
                    e:f32[] = add a d
                    f:f32[] = mul e c
                    g:f32[] = mul e b
                  in (g, f) } 0.0:f32[] e f g
              in (i,) }"#]],
    );
}

#[test]
fn scan_vmap() {
    check(
        "make_jaxpr(vmap(cumprod))(ones((2, 3)))",
        expect![[r#"
            { lambda ; a:f32[2,3]. let
                b:f32[2] = broadcast_in_dim[shape=(2,) dims=()] 1.0:f32[]
                c:f32[3,2] = transpose[perm=(1,0)] a
                d:f32[2] e:f32[3,2] = scan[length=3 n_consts=0 n_carry=1 reverse=false] body={ lambda ; a:f32[2] b:f32[2]. let
                    c:f32[2] = mul a b
                  in (c, c) } b c
                f:f32[2,3] = transpose[perm=(1,0)] e
              in (f,) }"#]],
    );
}

// ---------------------------------------------------------------------------
// cond

#[test]
fn cond_plain() {
    check(
        "make_jaxpr(branch)(1.0)",
        expect![[r#"
            { lambda ; a:f32[]. let
                b:bool[] = gt a 0.0:f32[]
                c:i32[] = convert[dtype=int32] b
                d:f32[] = cond branch0={ lambda ; a:f32[]. let
                    b:f32[] = mul a a
                  in (b,) } branch1={ lambda ; a:f32[]. let
                    b:f32[] = sin a
                  in (b,) } c a
              in (d,) }"#]],
    );
}

#[test]
fn cond_grad() {
    check(
        "make_jaxpr(grad(branch))(1.0)",
        expect![[r#"
            { lambda ; a:f32[]. let
                b:bool[] = gt a 0.0:f32[]
                c:i32[] = convert[dtype=int32] b
                d:f32[] e:f32[] f:f32[] = cond branch0={ lambda ; a:f32[]. let
                    b:f32[] = mul a a
                  in (b, a, 0.0:f32[]) } branch1={ lambda ; a:f32[]. let
                    b:f32[] = sin a
                    c:f32[] = cos a
                  in (b, 0.0:f32[], c) } c a
                g:f32[] = cond branch0={ lambda ; a:f32[] b:f32[] c:f32[]. let
                    d:f32[] = mul c a
                    e:f32[] = mul c a
                    f:f32[] = add d e
                  in (f,) } branch1={ lambda ; a:f32[] b:f32[] c:f32[]. let
                    d:f32[] = mul c b
                  in (d,) } c e f 1.0:f32[]
              in (g,) }"#]],
    );
}

#[test]
fn cond_vmap() {
    check(
        "make_jaxpr(vmap(branch))(ones(3))",
        expect![[r#"
            { lambda ; a:f32[3]. let
                b:bool[3] = gt a 0.0:f32[]
                c:i32[3] = convert[dtype=int32] b
                d:f32[3] = mul a a
                e:f32[3] = sin a
                f:bool[3] = ge c 1:i32[]
                g:f32[3] = select f e d
              in (g,) }"#]],
    );
}

// ---------------------------------------------------------------------------
// The type checker on a hand-built graph

fn aval(shape: &[usize]) -> Aval {
    Aval {
        shape: Shape::from_slice(shape),
        dtype: DType::F32,
    }
}

/// `b = sin a` with `a: f32[3]`, its output declared as `decl_b`.
fn sin_graph(decl_b: Aval) -> Graph {
    Graph {
        types: vec![aval(&[3]), decl_b],
        invars: vec![0],
        eqns: vec![Eqn {
            prim: Prim::Unary(UnaryOp::Sin),
            inputs: vec![Atom::Var(0)],
            outputs: vec![1],
            line: None,
        }],
        outvars: vec![Atom::Var(1)],
        weak_outs: Vec::new(),
    }
}

#[test]
fn typecheck_accepts_a_well_typed_graph() {
    typecheck(&sin_graph(aval(&[3]))).unwrap();
}

#[test]
fn typecheck_names_the_equation_with_a_wrong_output_type() {
    let err = typecheck(&sin_graph(aval(&[4]))).unwrap_err();
    expect!["ill-typed graph: equation 0 (sin) declares f32[4] but its rule gives f32[3]"]
        .assert_eq(&err.message);
}

// ---------------------------------------------------------------------------
// jit: the graph after each compiler pass, and the fused kernels.

const PASSES_SRC: &str =
    "jit(lambda x, b: sum(where(x > 0.0, x, 0.1 * x) * 1.0 + b * 2.0 + b * 2.0, axis=-1))";

fn check_pass(pass: &str, expect: Expect) {
    check(
        &format!("{PASSES_SRC}.ir(ones((4, 3)), ones(3), after={pass:?})"),
        expect,
    );
}

#[test]
fn pass_traced() {
    check_pass(
        "traced",
        expect![[r#"
            { lambda ; a:f32[4,3] b:f32[3]. let
                c:bool[4,3] = gt a 0.0:f32[]
                d:f32[4,3] = mul 0.1:f32[] a
                e:f32[4,3] = select c a d
                f:f32[4,3] = mul e 1.0:f32[]
                g:f32[3] = mul b 2.0:f32[]
                h:f32[4,3] = add f g
                i:f32[3] = mul b 2.0:f32[]
                j:f32[4,3] = add h i
                k:f32[4] = reduce_sum[axes=(1,)] j
              in (k,) }"#]],
    );
}

#[test]
fn pass_fold() {
    check_pass(
        "fold",
        expect![[r#"
            { lambda ; a:f32[4,3] b:f32[3]. let
                c:bool[4,3] = gt a 0.0:f32[]
                d:f32[4,3] = mul 0.1:f32[] a
                e:f32[4,3] = select c a d
                f:f32[4,3] = mul e 1.0:f32[]
                g:f32[3] = mul b 2.0:f32[]
                h:f32[4,3] = add f g
                i:f32[3] = mul b 2.0:f32[]
                j:f32[4,3] = add h i
                k:f32[4] = reduce_sum[axes=(1,)] j
              in (k,) }"#]],
    );
}

#[test]
fn pass_simplify() {
    check_pass(
        "simplify",
        expect![[r#"
            { lambda ; a:f32[4,3] b:f32[3]. let
                c:bool[4,3] = gt a 0.0:f32[]
                d:f32[4,3] = mul 0.1:f32[] a
                e:f32[4,3] = select c a d
                f:f32[3] = mul b 2.0:f32[]
                g:f32[4,3] = add e f
                h:f32[3] = mul b 2.0:f32[]
                i:f32[4,3] = add g h
                j:f32[4] = reduce_sum[axes=(1,)] i
              in (j,) }"#]],
    );
}

#[test]
fn pass_cse() {
    check_pass(
        "cse",
        expect![[r#"
            { lambda ; a:f32[4,3] b:f32[3]. let
                c:bool[4,3] = gt a 0.0:f32[]
                d:f32[4,3] = mul 0.1:f32[] a
                e:f32[4,3] = select c a d
                f:f32[3] = mul b 2.0:f32[]
                g:f32[4,3] = add e f
                h:f32[4,3] = add g f
                i:f32[4] = reduce_sum[axes=(1,)] h
              in (i,) }"#]],
    );
}

/// Reverse mode through a product makes `transpose(dot_general(..))`; the
/// epilogue pass swaps the operands instead (the old product is dead).
#[test]
fn pass_dot_transpose() {
    check(
        "jit(lambda a, b: (a @ b).T + 1.0).ir(ones((2, 3)), ones((3, 4)), after=\"dot_transpose\")",
        expect![[r#"
            { lambda ; a:f32[2,3] b:f32[3,4]. let
                c:f32[2,4] = dot_general[contract=((1,),(0,)) batch=((),())] a b
                d:f32[4,2] = dot_general[contract=((0,),(1,)) batch=((),())] b a
                e:f32[4,2] = add d 1.0:f32[]
              in (e,) }"#]],
    );
}

#[test]
fn pass_dce() {
    check_pass(
        "dce",
        expect![[r#"
            { lambda ; a:f32[4,3] b:f32[3]. let
                c:bool[4,3] = gt a 0.0:f32[]
                d:f32[4,3] = mul 0.1:f32[] a
                e:f32[4,3] = select c a d
                f:f32[3] = mul b 2.0:f32[]
                g:f32[4,3] = add e f
                h:f32[4,3] = add g f
                i:f32[4] = reduce_sum[axes=(1,)] h
              in (i,) }"#]],
    );
}

#[test]
fn pass_fuse() {
    check_pass(
        "fuse",
        expect![[r#"
            { lambda ; a:f32[4,3] b:f32[3]. let
                c:f32[3] = mul b 2.0:f32[]
                d:f32[4] = fused[ops=9 inputs=2 outputs=1] a c
              in (d,) }"#]],
    );
}

/// Work that a kernel grows past (it reads nothing of the kernel and moves
/// before it) is fused among itself, not left as single operations: a
/// backward pass computed between a reduction and its last reader.
#[test]
fn work_moved_before_a_kernel_is_fused_too() {
    check(
        "jit(lambda x, y: (x * 2.0, (y * 3.0 + 1.0) * y, x * 2.0 + 1.0)).ir(ones((4, 3)), ones(5))",
        expect![[r#"
            { lambda ; a:f32[4,3] b:f32[5]. let
                c:f32[5] = fused[ops=6 inputs=1 outputs=1] b
                d:f32[4,3] e:f32[4,3] = fused[ops=5 inputs=1 outputs=2] a
              in (d, c, e) }"#]],
    );
}

#[test]
fn fused_kernel_text() {
    check(
        &format!("{PASSES_SRC}.kernels(ones((4, 3)), ones(3))"),
        expect![[r#"
            kernel f32[4,3] reduce 1 {
              in0: f32[4,3] strides (3,1)
              in1: f32[3] strides (0,1)
              r0 = load in0
              r1 = const 0
              r2 = gt r0 r1
              r3 = const 0.10000000149011612
              r4 = mul r3 r0
              r5 = select r2 r0 r4
              r6 = load in1
              r7 = add r5 r6
              r8 = add r7 r6
              out0 = sum r8
            }"#]],
    );
}

#[test]
fn softmax_under_jit_is_one_kernel_reading_its_reductions_back() {
    check(
        "jit(lambda x: softmax(x, axis=-1)).ir(ones((8, 16)))",
        expect![[r#"
            { lambda ; a:f32[8,16]. let
                b:f32[8] c:f32[8] d:f32[8,16] = fused[ops=6 inputs=1 outputs=3] a
              in (d,) }"#]],
    );
}

// ---------------------------------------------------------------------------
// Epilogue fusion: a product read only by elementwise operations takes them
// as its epilogue; one whose result is needed elsewhere stays a product.

const MLP_LAYER: &str = "jit(lambda x, w, b: tanh(x @ w + b))";

/// Fusion makes the epilogue's kernel; the product is still its own.
#[test]
fn pass_fuse_leaves_the_product() {
    check(
        &format!("{MLP_LAYER}.ir(ones((8, 3)), ones((3, 4)), ones(4), after=\"fuse\")"),
        expect![[r#"
            { lambda ; a:f32[8,3] b:f32[3,4] c:f32[4]. let
                d:f32[8,4] = dot_general[contract=((1,),(0,)) batch=((),())] a b
                e:f32[8,4] = fused[ops=4 inputs=2 outputs=1] d c
              in (e,) }"#]],
    );
}

/// GELU's derivative reads `tanh` and powers of the pre-activation: fusion
/// leaves them as outputs of the forward kernel, kept alive for the
/// backward pass...
const GELU_GRAD: &str = "jit(value_and_grad(lambda h, w: sum(gelu(h) @ w)))";

#[test]
fn pass_fuse_keeps_gelus_intermediates_for_the_backward_pass() {
    check(
        &format!("{GELU_GRAD}.ir(ones((8, 16)), ones((16, 4)), after=\"fuse\")"),
        expect![[r#"
            { lambda a:f32[1,1] ; b:f32[8,16] c:f32[16,4]. let
                d:f32[8,16] e:f32[8,16] f:f32[8,16] g:f32[8,16] h:f32[8,16] = fused[ops=17 inputs=1 outputs=5] b
                i:f32[8,4] = dot_general[contract=((1,),(0,)) batch=((),())] h c
                j:f32[] k:f32[8,4] = fused[ops=2 inputs=2 outputs=2] i a
                l:f32[8,16] = dot_general[contract=((1,),(1,)) batch=((),())] k c
                m:f32[8,16] = fused[ops=22 inputs=6 outputs=1] l d g f b e
              in (j, m) }"#]],
    );
}

/// ...and `remat` has the backward kernel compute them again from `h`,
/// which it reads anyway: the forward kernel writes only `gelu(h)`.
#[test]
fn pass_remat_recomputes_them_from_the_pre_activation() {
    check(
        &format!("{GELU_GRAD}.ir(ones((8, 16)), ones((16, 4)), after=\"remat\")"),
        expect![[r#"
            { lambda a:f32[1,1] ; b:f32[8,16] c:f32[16,4]. let
                d:f32[8,16] = fused[ops=17 inputs=1 outputs=1] b
                e:f32[8,4] = dot_general[contract=((1,),(0,)) batch=((),())] d c
                f:f32[] g:f32[8,4] = fused[ops=2 inputs=2 outputs=2] e a
                h:f32[8,16] = dot_general[contract=((1,),(1,)) batch=((),())] g c
                i:f32[8,16] = fused[ops=29 inputs=2 outputs=1] h b
              in (f, i) }"#]],
    );
}

/// The pass after it folds that kernel into the product.
#[test]
fn pass_fold_epilogues_makes_a_fused_matmul() {
    check(
        &format!("{MLP_LAYER}.ir(ones((8, 3)), ones((3, 4)), ones(4), after=\"fold_epilogues\")"),
        expect![[r#"
            { lambda ; a:f32[8,3] b:f32[3,4] c:f32[4]. let
                d:f32[8,4] = fused_matmul[ops=4 inputs=3 outputs=1] a b c
              in (d,) }"#]],
    );
}

#[test]
fn matmul_epilogue_kernel_text() {
    check(
        &format!("{MLP_LAYER}.kernels(ones((8, 3)), ones((3, 4)), ones(4))"),
        expect![[r#"
            matmul f32[8,4] = dot f32[8,3] f32[3,4] contract (1) (0) batch () () {
              in0: f32[8,4] strides (4,1) = product
              in1: f32[4] strides (0,1)
              r0 = load in0
              r1 = load in1
              r2 = add r0 r1
              r3 = tanh r2
              out0 = r3
            }"#]],
    );
}

/// The product is also an output: it must be stored, so nothing folds into it.
#[test]
fn pass_fold_epilogues_keeps_a_product_used_twice() {
    check(
        "jit(lambda x, w, b: (x @ w, tanh(x @ w + b))).ir(ones((8, 3)), ones((3, 4)), ones(4), after=\"fold_epilogues\")",
        expect![[r#"
            { lambda ; a:f32[8,3] b:f32[3,4] c:f32[4]. let
                d:f32[8,4] = dot_general[contract=((1,),(0,)) batch=((),())] a b
                e:f32[8,4] = fused[ops=4 inputs=2 outputs=1] d c
              in (d, e) }"#]],
    );
}

/// The product is read by a reduction over its rows as well as by the
/// elementwise group: both need the whole product, so it stays a product.
#[test]
fn pass_fold_epilogues_keeps_a_product_read_by_a_reduction() {
    check(
        "jit(lambda x, w, b: (lambda p: tanh(p + b) * sum(p, axis=0))(x @ w)).ir(ones((8, 3)), ones((3, 4)), ones(4), after=\"fold_epilogues\")",
        expect![[r#"
            { lambda ; a:f32[8,3] b:f32[3,4] c:f32[4]. let
                d:f32[8,4] = dot_general[contract=((1,),(0,)) batch=((),())] a b
                e:f32[4] = reduce_sum[axes=(0,)] d
                f:f32[8,4] = fused[ops=6 inputs=3 outputs=1] d c e
              in (f,) }"#]],
    );
}
