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
use arr_runtime::{Session, Value};
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
    let mut session: Session = arr_stdlib::session();
    session
        .run_script("<prelude>", PRELUDE)
        .unwrap_or_else(|e| panic!("prelude failed:\n{}", e.render()));
    let actual = match session.run_entry(src) {
        Ok(Some(Value::Str(s))) => s.to_string(),
        Ok(other) => panic!("{src} gave {other:?}, not a string"),
        Err(e) => format!("error: {}: {}", e.kind.name(), e.message),
    };
    expect.assert_eq(&actual);
}

// ---------------------------------------------------------------------------
// poly: 3x^3 - 2x^2 + x

#[test]
fn poly_plain() {
    check(
        "make_jaxpr(poly)(1.0)",
        expect![[r#"
        { lambda  ; a:f32[]. let
            b:f32[] = pow a 3.0:f32[]
            c:f32[] = mul 3.0:f32[] b
            d:f32[] = pow a 2.0:f32[]
            e:f32[] = mul 2.0:f32[] d
            f:f32[] = sub c e
            g:f32[] = add f a
          in (g) }"#]],
    );
}

#[test]
fn poly_grad() {
    check(
        "make_jaxpr(grad(poly))(1.0)",
        expect![[r#"
        { lambda  ; a:f32[]. let
            b:f32[] = pow a 3.0:f32[]
            c:f32[] = sub 3.0:f32[] 1.0:f32[]
            d:f32[] = pow a c
            e:f32[] = mul 3.0:f32[] d
            f:bool[] = eq 3.0:f32[] 0.0:f32[]
            g:f32[] = select f 0.0:f32[] e
            h:f32[] = mul 3.0:f32[] b
            i:f32[] = pow a 2.0:f32[]
            j:f32[] = sub 2.0:f32[] 1.0:f32[]
            k:f32[] = pow a j
            l:f32[] = mul 2.0:f32[] k
            m:bool[] = eq 2.0:f32[] 0.0:f32[]
            n:f32[] = select m 0.0:f32[] l
            o:f32[] = mul 2.0:f32[] i
            p:f32[] = sub h o
            q:f32[] = add p a
            r:f32[] = neg 1.0:f32[]
            s:f32[] = mul r 2.0:f32[]
            t:f32[] = mul s n
            u:f32[] = add 1.0:f32[] t
            v:f32[] = mul 1.0:f32[] 3.0:f32[]
            w:f32[] = mul v g
            x:f32[] = add u w
          in (x) }"#]],
    );
}

#[test]
fn poly_jvp() {
    check(
        "make_jaxpr(lambda x, t: jvp(poly, (x,), (t,)))(1.0, 1.0)",
        expect![[r#"
            { lambda  ; a:f32[] b:f32[]. let
                c:f32[] = pow a 3.0:f32[]
                d:f32[] = sub 3.0:f32[] 1.0:f32[]
                e:f32[] = pow a d
                f:f32[] = mul 3.0:f32[] e
                g:bool[] = eq 3.0:f32[] 0.0:f32[]
                h:f32[] = select g 0.0:f32[] f
                i:f32[] = mul b h
                j:f32[] = mul 3.0:f32[] c
                k:f32[] = mul 3.0:f32[] i
                l:f32[] = pow a 2.0:f32[]
                m:f32[] = sub 2.0:f32[] 1.0:f32[]
                n:f32[] = pow a m
                o:f32[] = mul 2.0:f32[] n
                p:bool[] = eq 2.0:f32[] 0.0:f32[]
                q:f32[] = select p 0.0:f32[] o
                r:f32[] = mul b q
                s:f32[] = mul 2.0:f32[] l
                t:f32[] = mul 2.0:f32[] r
                u:f32[] = sub j s
                v:f32[] = neg t
                w:f32[] = add k v
                x:f32[] = add u a
                y:f32[] = add w b
              in (x, y) }"#]],
    );
}

#[test]
fn poly_vmap() {
    check(
        "make_jaxpr(vmap(poly))(ones(4))",
        expect![[r#"
        { lambda  ; a:f32[4]. let
            b:f32[4] = pow a 3.0:f32[]
            c:f32[4] = mul 3.0:f32[] b
            d:f32[4] = pow a 2.0:f32[]
            e:f32[4] = mul 2.0:f32[] d
            f:f32[4] = sub c e
            g:f32[4] = add f a
          in (g) }"#]],
    );
}

#[test]
fn poly_grad_grad() {
    check(
        "make_jaxpr(grad(grad(poly)))(1.0)",
        expect![[r#"
        { lambda  ; a:f32[]. let
            b:f32[] = pow a 3.0:f32[]
            c:f32[] = sub 3.0:f32[] 1.0:f32[]
            d:f32[] = pow a c
            e:f32[] = mul 3.0:f32[] d
            f:bool[] = eq 3.0:f32[] 0.0:f32[]
            g:f32[] = select f 0.0:f32[] e
            h:f32[] = sub 3.0:f32[] 1.0:f32[]
            i:f32[] = pow a h
            j:f32[] = sub h 1.0:f32[]
            k:f32[] = pow a j
            l:f32[] = mul h k
            m:bool[] = eq h 0.0:f32[]
            n:f32[] = select m 0.0:f32[] l
            o:f32[] = mul 3.0:f32[] i
            p:bool[] = eq 3.0:f32[] 0.0:f32[]
            q:f32[] = select p 0.0:f32[] o
            r:f32[] = mul 3.0:f32[] b
            s:f32[] = pow a 2.0:f32[]
            t:f32[] = sub 2.0:f32[] 1.0:f32[]
            u:f32[] = pow a t
            v:f32[] = mul 2.0:f32[] u
            w:bool[] = eq 2.0:f32[] 0.0:f32[]
            x:f32[] = select w 0.0:f32[] v
            y:f32[] = sub 2.0:f32[] 1.0:f32[]
            z:f32[] = pow a y
            ba:f32[] = sub y 1.0:f32[]
            bb:f32[] = pow a ba
            bc:f32[] = mul y bb
            bd:bool[] = eq y 0.0:f32[]
            be:f32[] = select bd 0.0:f32[] bc
            bf:f32[] = mul 2.0:f32[] z
            bg:bool[] = eq 2.0:f32[] 0.0:f32[]
            bh:f32[] = select bg 0.0:f32[] bf
            bi:f32[] = mul 2.0:f32[] s
            bj:f32[] = sub r bi
            bk:f32[] = add bj a
            bl:f32[] = neg 1.0:f32[]
            bm:f32[] = mul bl 2.0:f32[]
            bn:f32[] = mul bm bh
            bo:f32[] = add 1.0:f32[] bn
            bp:f32[] = mul 1.0:f32[] 3.0:f32[]
            bq:f32[] = mul bp q
            br:f32[] = add bo bq
            bs:f32[] = mul 1.0:f32[] bp
            bt:f32[] = mul 1.0:f32[] bm
            bu:f32[] = select bg 0.0:f32[] bt
            bv:f32[] = mul bu 2.0:f32[]
            bw:f32[] = mul bv be
            bx:f32[] = select p 0.0:f32[] bs
            by:f32[] = mul bx 3.0:f32[]
            bz:f32[] = mul by n
            ca:f32[] = add bw bz
          in (ca) }"#]],
    );
}

// ---------------------------------------------------------------------------
// tanh(x @ w)

#[test]
fn layer_plain() {
    check(
        "make_jaxpr(layer)(ones((3, 2)), ones(3))",
        expect![[r#"
        { lambda  ; a:f32[3,2] b:f32[3]. let
            c:f32[1,3] = reshape[shape=(1,3)] b
            d:f32[1,2] = dot_general[contract=((1,),(0,)) batch=((),())] c a
            e:f32[2] = reshape[shape=(2,)] d
            f:f32[2] = tanh e
          in (f) }"#]],
    );
}

#[test]
fn layer_grad() {
    check(
        "make_jaxpr(grad(layer_sum))(ones((3, 2)), ones(3))",
        expect![[r#"
            { lambda  ; a:f32[3,2] b:f32[3]. let
                c:f32[1,3] = reshape[shape=(1,3)] b
                d:f32[1,2] = dot_general[contract=((1,),(0,)) batch=((),())] c a
                e:f32[2] = reshape[shape=(2,)] d
                f:f32[2] = tanh e
                g:f32[2] = mul f f
                h:f32[2] = sub 1.0:f32[] g
                i:f32[] = reduce_sum[axes=(0,)] f
                j:f32[1] = reshape[shape=(1,)] 1.0:f32[]
                k:f32[2] = broadcast_in_dim[shape=(2,) dims=(0,)] j
                l:f32[2] = mul k h
                m:f32[1,2] = reshape[shape=(1,2)] l
                n:f32[2,3] = dot_general[contract=((0,),(0,)) batch=((),())] m c
                o:f32[3,2] = transpose[perm=(1,0)] n
              in (o) }"#]],
    );
}

#[test]
fn layer_vmap() {
    check(
        "make_jaxpr(vmap(layer, in_axes=(None, 0)))(ones((3, 2)), ones((5, 3)))",
        expect![[r#"
            { lambda  ; a:f32[3,2] b:f32[5,3]. let
                c:f32[5,1,3] = reshape[shape=(5,1,3)] b
                d:f32[5,1,2] = dot_general[contract=((2,),(0,)) batch=((),())] c a
                e:f32[5,2] = reshape[shape=(5,2)] d
                f:f32[5,2] = tanh e
              in (f) }"#]],
    );
}

#[test]
fn layer_vmap_grad() {
    check(
        "make_jaxpr(vmap(grad(layer_sum), in_axes=(None, 0)))(ones((3, 2)), ones((5, 3)))",
        expect![[r#"
            { lambda  ; a:f32[3,2] b:f32[5,3]. let
                c:f32[5,1,3] = reshape[shape=(5,1,3)] b
                d:f32[5,1,2] = dot_general[contract=((2,),(0,)) batch=((),())] c a
                e:f32[5,2] = reshape[shape=(5,2)] d
                f:f32[5,2] = tanh e
                g:f32[5,2] = mul f f
                h:f32[5,2] = sub 1.0:f32[] g
                i:f32[5] = reduce_sum[axes=(1,)] f
                j:f32[1] = reshape[shape=(1,)] 1.0:f32[]
                k:f32[2] = broadcast_in_dim[shape=(2,) dims=(0,)] j
                l:f32[5,2] = mul k h
                m:f32[5,1,2] = reshape[shape=(5,1,2)] l
                n:f32[5,2,3] = dot_general[contract=((1,),(1,)) batch=((0,),(0,))] m c
                o:f32[5,3,2] = transpose[perm=(0,2,1)] n
              in (o) }"#]],
    );
}

#[test]
fn layer_hessian_jacfwd_jacrev() {
    check(
        "w = ones((3, 2))\nmake_jaxpr(jacfwd(jacrev(lambda x: layer_sum(w, x))))(ones(3))",
        expect![[r#"
            { lambda a:f32[3,2] ; b:f32[3]. let
                c:i32[3,3] = iota[dtype=int32 shape=(3,3) dim=0] 
                d:i32[3,3] = iota[dtype=int32 shape=(3,3) dim=1] 
                e:i32[3,3] = add d 0:i32[]
                f:bool[3,3] = eq c e
                g:f32[3,3] = convert[dtype=float32] f
                h:f32[1,3] = reshape[shape=(1,3)] b
                i:f32[3,1,3] = reshape[shape=(3,1,3)] g
                j:f32[1,2] = dot_general[contract=((1,),(0,)) batch=((),())] h a
                k:f32[3,1,2] = dot_general[contract=((2,),(0,)) batch=((),())] i a
                l:f32[2] = reshape[shape=(2,)] j
                m:f32[3,2] = reshape[shape=(3,2)] k
                n:f32[2] = tanh l
                o:f32[2] = mul n n
                p:f32[2] = sub 1.0:f32[] o
                q:f32[3,2] = mul m p
                r:f32[2] = mul n n
                s:f32[3,2] = mul q n
                t:f32[3,2] = mul n q
                u:f32[3,2] = add s t
                v:f32[2] = sub 1.0:f32[] r
                w:f32[3,2] = neg u
                x:f32[] = reduce_sum[axes=(0,)] n
                y:f32[3] = reduce_sum[axes=(1,)] q
                z:i32[1,1] = iota[dtype=int32 shape=(1,1) dim=0] 
                ba:i32[1,1] = iota[dtype=int32 shape=(1,1) dim=1] 
                bb:i32[1,1] = add ba 0:i32[]
                bc:bool[1,1] = eq z bb
                bd:f32[1,1] = convert[dtype=float32] bc
                be:f32[1] = reshape[shape=(1,)] bd
                bf:f32[1,1] = reshape[shape=(1,1)] be
                bg:f32[1,2] = broadcast_in_dim[shape=(1,2) dims=(0,1)] bf
                bh:f32[1,2] = mul bg v
                bi:f32[3,1,2] = reshape[shape=(3,1,2)] w
                bj:f32[3,1,2] = mul bg bi
                bk:f32[1,1,2] = reshape[shape=(1,1,2)] bh
                bl:f32[3,1,1,2] = reshape[shape=(3,1,1,2)] bj
                bm:f32[1,1,3] = dot_general[contract=((2,),(1,)) batch=((),())] bk a
                bn:f32[3,1,1,3] = dot_general[contract=((3,),(1,)) batch=((),())] bl a
                bo:f32[1,3] = reshape[shape=(1,3)] bm
                bp:f32[3,1,3] = reshape[shape=(3,1,3)] bn
                bq:f32[1,3] = slice[start=(0,0) limit=(1,3) stride=(1,1)] bo
                br:f32[3,1,3] = slice[start=(0,0,0) limit=(3,1,3) stride=(1,1,1)] bp
                bs:f32[3] = reshape[shape=(3,)] bq
                bt:f32[3,3] = reshape[shape=(3,3)] br
                bu:f32[3,3] = transpose[perm=(1,0)] bt
                bv:f32[3,3] = slice[start=(0,0) limit=(3,3) stride=(1,1)] bu
              in (bv) }"#]],
    );
}

// ---------------------------------------------------------------------------
// softmax

#[test]
fn softmax_plain() {
    check(
        "make_jaxpr(softmax)(ones(4))",
        expect![[r#"
        { lambda  ; a:f32[4]. let
            b:f32[] = reduce_max[axes=(0,)] a
            c:f32[1] = reshape[shape=(1,)] b
            d:f32[4] = sub a c
            e:f32[4] = exp d
            f:f32[] = reduce_sum[axes=(0,)] e
            g:f32[1] = reshape[shape=(1,)] f
            h:f32[4] = div e g
          in (h) }"#]],
    );
}

#[test]
fn softmax_jvp() {
    check(
        "make_jaxpr(lambda x, t: jvp(softmax, (x,), (t,)))(ones(4), ones(4))",
        expect![[r#"
            { lambda  ; a:f32[4] b:f32[4]. let
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
        { lambda  ; a:f32[2,4]. let
            b:f32[2] = reduce_max[axes=(1,)] a
            c:f32[2,1] = reshape[shape=(2,1)] b
            d:f32[2,4] = sub a c
            e:f32[2,4] = exp d
            f:f32[2] = reduce_sum[axes=(1,)] e
            g:f32[2,1] = reshape[shape=(2,1)] f
            h:f32[2,4] = div e g
          in (h) }"#]],
    );
}

// ---------------------------------------------------------------------------
// indexing

#[test]
fn indexed_plain() {
    check(
        "make_jaxpr(indexed)(ones(4))",
        expect![[r#"
        { lambda  ; a:f32[4]. let
            b:f32[2] = slice[start=(1,) limit=(3,) stride=(1,)] a
            c:f32[1] = slice[start=(0,) limit=(1,) stride=(1,)] a
            d:f32[] = reshape[shape=()] c
            e:f32[2] = mul b d
            f:i32[1] = reshape[shape=(1,)] 0:i32[]
            g:i32[1] = reshape[shape=(1,)] 2:i32[]
            h:i32[2] = concatenate[axis=0] f g
            i:bool[2] = lt h 0:i32[]
            j:i32[2] = add h 4:i32[]
            k:i32[2] = select i j h
            l:f32[2] = gather[axis=0] a k
            m:f32[] = reduce_sum[axes=(0,)] l
            n:f32[2] = add e m
          in (n) }"#]],
    );
}

#[test]
fn indexed_grad() {
    check(
        "make_jaxpr(grad(lambda x: sum(indexed(x))))(ones(4))",
        expect![[r#"
            { lambda a:f32[4] ; b:f32[4]. let
                c:f32[2] = slice[start=(1,) limit=(3,) stride=(1,)] b
                d:f32[1] = slice[start=(0,) limit=(1,) stride=(1,)] b
                e:f32[] = reshape[shape=()] d
                f:f32[2] = mul c e
                g:i32[1] = reshape[shape=(1,)] 0:i32[]
                h:i32[1] = reshape[shape=(1,)] 2:i32[]
                i:i32[2] = concatenate[axis=0] g h
                j:bool[2] = lt i 0:i32[]
                k:i32[2] = add i 4:i32[]
                l:i32[2] = select j k i
                m:f32[2] = gather[axis=0] b l
                n:f32[] = reduce_sum[axes=(0,)] m
                o:f32[2] = add f n
                p:f32[] = reduce_sum[axes=(0,)] o
                q:f32[1] = reshape[shape=(1,)] 1.0:f32[]
                r:f32[2] = broadcast_in_dim[shape=(2,) dims=(0,)] q
                s:f32[] = reduce_sum[axes=(0,)] r
                t:f32[1] = reshape[shape=(1,)] s
                u:f32[2] = broadcast_in_dim[shape=(2,) dims=(0,)] t
                v:f32[4] = scatter_add[axis=0] a l u
                w:f32[2] = mul r c
                x:f32[] = reduce_sum[axes=(0,)] w
                y:f32[2] = mul r e
                z:f32[1] = reshape[shape=(1,)] x
                ba:f32[4] = pad[lo=(0,) hi=(3,) interior=(0,)] z 0.0:f32[]
                bb:f32[4] = add v ba
                bc:f32[4] = pad[lo=(1,) hi=(1,) interior=(0,)] y 0.0:f32[]
                bd:f32[4] = add bb bc
              in (bd) }"#]],
    );
}

#[test]
fn indexed_vmap() {
    check(
        "make_jaxpr(vmap(indexed))(ones((2, 4)))",
        expect![[r#"
            { lambda  ; a:f32[2,4]. let
                b:f32[2,2] = slice[start=(0,1) limit=(2,3) stride=(1,1)] a
                c:f32[2,1] = slice[start=(0,0) limit=(2,1) stride=(1,1)] a
                d:f32[2] = reshape[shape=(2,)] c
                e:f32[2,1] = reshape[shape=(2,1)] d
                f:f32[2,2] = mul b e
                g:i32[1] = reshape[shape=(1,)] 0:i32[]
                h:i32[1] = reshape[shape=(1,)] 2:i32[]
                i:i32[2] = concatenate[axis=0] g h
                j:bool[2] = lt i 0:i32[]
                k:i32[2] = add i 4:i32[]
                l:i32[2] = select j k i
                m:f32[2,2] = gather[axis=1] a l
                n:f32[2] = reduce_sum[axes=(1,)] m
                o:f32[2,1] = reshape[shape=(2,1)] n
                p:f32[2,2] = add f o
              in (p) }"#]],
    );
}

#[test]
fn sliced_jacfwd_jacrev() {
    check(
        "make_jaxpr(jacfwd(jacrev(lambda x: sum(sliced(x) ** 2))))(ones(4))",
        expect![[r#"
            { lambda  ; a:f32[4]. let
                b:i32[4,4] = iota[dtype=int32 shape=(4,4) dim=0] 
                c:i32[4,4] = iota[dtype=int32 shape=(4,4) dim=1] 
                d:i32[4,4] = add c 0:i32[]
                e:bool[4,4] = eq b d
                f:f32[4,4] = convert[dtype=float32] e
                g:f32[3] = slice[start=(1,) limit=(4,) stride=(1,)] a
                h:f32[4,3] = slice[start=(0,1) limit=(4,4) stride=(1,1)] f
                i:f32[1] = slice[start=(0,) limit=(1,) stride=(1,)] a
                j:f32[4,1] = slice[start=(0,0) limit=(4,1) stride=(1,1)] f
                k:f32[] = reshape[shape=()] i
                l:f32[4] = reshape[shape=(4,)] j
                m:f32[3] = mul g k
                n:f32[4,3] = mul h k
                o:f32[4,1] = reshape[shape=(4,1)] l
                p:f32[4,3] = mul g o
                q:f32[4,3] = add n p
                r:f32[3] = slice[start=(0,) limit=(3,) stride=(1,)] a
                s:f32[4,3] = slice[start=(0,0) limit=(4,3) stride=(1,1)] f
                t:f32[3] = sub m r
                u:f32[4,3] = neg s
                v:f32[4,3] = add q u
                w:f32[3] = pow t 2.0:f32[]
                x:f32[] = sub 2.0:f32[] 1.0:f32[]
                y:f32[3] = pow t x
                z:f32[3] = mul 2.0:f32[] y
                ba:bool[] = eq 2.0:f32[] 0.0:f32[]
                bb:f32[3] = select ba 0.0:f32[] z
                bc:f32[4,3] = mul v bb
                bd:f32[] = sub 2.0:f32[] 1.0:f32[]
                be:f32[3] = pow t bd
                bf:f32[] = sub bd 1.0:f32[]
                bg:f32[3] = pow t bf
                bh:f32[3] = mul bd bg
                bi:bool[] = eq bd 0.0:f32[]
                bj:f32[3] = select bi 0.0:f32[] bh
                bk:f32[4,3] = mul v bj
                bl:f32[3] = mul 2.0:f32[] be
                bm:f32[4,3] = mul 2.0:f32[] bk
                bn:bool[] = eq 2.0:f32[] 0.0:f32[]
                bo:f32[3] = select bn 0.0:f32[] bl
                bp:f32[4,3] = select bn 0.0:f32[] bm
                bq:f32[] = reduce_sum[axes=(0,)] w
                br:f32[4] = reduce_sum[axes=(1,)] bc
                bs:i32[1,1] = iota[dtype=int32 shape=(1,1) dim=0] 
                bt:i32[1,1] = iota[dtype=int32 shape=(1,1) dim=1] 
                bu:i32[1,1] = add bt 0:i32[]
                bv:bool[1,1] = eq bs bu
                bw:f32[1,1] = convert[dtype=float32] bv
                bx:f32[1] = reshape[shape=(1,)] bw
                by:f32[1,1] = reshape[shape=(1,1)] bx
                bz:f32[1,3] = broadcast_in_dim[shape=(1,3) dims=(0,1)] by
                ca:f32[1,3] = mul bz bo
                cb:f32[4,1,3] = reshape[shape=(4,1,3)] bp
                cc:f32[4,1,3] = mul bz cb
                cd:f32[1,3] = neg ca
                ce:f32[4,1,3] = neg cc
                cf:f32[1,4] = pad[lo=(0,0) hi=(0,1) interior=(0,0)] cd 0.0:f32[]
                cg:f32[4,1,4] = pad[lo=(0,0,0) hi=(0,0,1) interior=(0,0,0)] ce 0.0:f32[]
                ch:f32[1,3] = mul ca g
                ci:f32[4,1,3] = mul cc g
                cj:f32[4,1,3] = reshape[shape=(4,1,3)] h
                ck:f32[4,1,3] = mul ca cj
                cl:f32[4,1,3] = add ci ck
                cm:f32[1] = reduce_sum[axes=(1,)] ch
                cn:f32[4,1] = reduce_sum[axes=(2,)] cl
                co:f32[1,3] = mul ca k
                cp:f32[4,1,3] = mul cc k
                cq:f32[4,1,1] = reshape[shape=(4,1,1)] l
                cr:f32[4,1,3] = mul ca cq
                cs:f32[4,1,3] = add cp cr
                ct:f32[1,1] = reshape[shape=(1,1)] cm
                cu:f32[4,1,1] = reshape[shape=(4,1,1)] cn
                cv:f32[1,4] = pad[lo=(0,0) hi=(0,3) interior=(0,0)] ct 0.0:f32[]
                cw:f32[4,1,4] = pad[lo=(0,0,0) hi=(0,0,3) interior=(0,0,0)] cu 0.0:f32[]
                cx:f32[1,4] = add cf cv
                cy:f32[4,1,4] = add cg cw
                cz:f32[1,4] = pad[lo=(0,1) hi=(0,0) interior=(0,0)] co 0.0:f32[]
                da:f32[4,1,4] = pad[lo=(0,0,1) hi=(0,0,0) interior=(0,0,0)] cs 0.0:f32[]
                db:f32[1,4] = add cx cz
                dc:f32[4,1,4] = add cy da
                dd:f32[1,4] = slice[start=(0,0) limit=(1,4) stride=(1,1)] db
                de:f32[4,1,4] = slice[start=(0,0,0) limit=(4,1,4) stride=(1,1,1)] dc
                df:f32[4] = reshape[shape=(4,)] dd
                dg:f32[4,4] = reshape[shape=(4,4)] de
                dh:f32[4,4] = transpose[perm=(1,0)] dg
                di:f32[4,4] = slice[start=(0,0) limit=(4,4) stride=(1,1)] dh
              in (di) }"#]],
    );
}

// ---------------------------------------------------------------------------
// scan

#[test]
fn scan_plain() {
    check(
        "make_jaxpr(cumprod)(ones(3))",
        expect![[r#"
        { lambda  ; a:f32[3]. let
            b:f32[] c:f32[3] = scan[length=3 n_consts=0 n_carry=1 reverse=false] body={ lambda  ; a:f32[] b:f32[]. let
                c:f32[] = mul a b
              in (c, c) } 1.0:f32[] a
          in (c) }"#]],
    );
}

#[test]
fn scan_grad() {
    check(
        "make_jaxpr(grad(lambda xs: sum(cumprod(xs))))(ones(3))",
        expect![[r#"
            { lambda  ; a:f32[3]. let
                b:f32[] c:f32[3] d:f32[3] e:f32[3] = scan[length=3 n_consts=0 n_carry=1 reverse=false] body={ lambda  ; a:f32[] b:f32[]. let
                    c:f32[] = mul a b
                  in (c, c, b, a) } 1.0:f32[] a
                f:f32[] = reduce_sum[axes=(0,)] c
                g:f32[1] = reshape[shape=(1,)] 1.0:f32[]
                h:f32[3] = broadcast_in_dim[shape=(3,) dims=(0,)] g
                i:f32[] j:f32[3] = scan[length=3 n_consts=0 n_carry=1 reverse=true] body={ lambda  ; a:f32[] b:f32[] c:f32[] d:f32[]. let
                    e:f32[] = add a d
                    f:f32[] = mul e c
                    g:f32[] = mul e b
                  in (g, f) } 0.0:f32[] d e h
              in (j) }"#]],
    );
}

#[test]
fn scan_vmap() {
    check(
        "make_jaxpr(vmap(cumprod))(ones((2, 3)))",
        expect![[r#"
        { lambda  ; a:f32[2,3]. let
            b:f32[2] = broadcast_in_dim[shape=(2,) dims=()] 1.0:f32[]
            c:f32[3,2] = transpose[perm=(1,0)] a
            d:f32[2] e:f32[3,2] = scan[length=3 n_consts=0 n_carry=1 reverse=false] body={ lambda  ; a:f32[2] b:f32[2]. let
                c:f32[2] = mul a b
              in (c, c) } b c
            f:f32[2,3] = transpose[perm=(1,0)] e
          in (f) }"#]],
    );
}

// ---------------------------------------------------------------------------
// cond

#[test]
fn cond_plain() {
    check(
        "make_jaxpr(branch)(1.0)",
        expect![[r#"
        { lambda  ; a:f32[]. let
            b:bool[] = gt a 0.0:f32[]
            c:i32[] = convert[dtype=int32] b
            d:f32[] = cond branch0={ lambda  ; a:f32[]. let
                b:f32[] = mul a a
              in (b) } branch1={ lambda  ; a:f32[]. let
                b:f32[] = sin a
              in (b) } c a
          in (d) }"#]],
    );
}

#[test]
fn cond_grad() {
    check(
        "make_jaxpr(grad(branch))(1.0)",
        expect![[r#"
        { lambda  ; a:f32[]. let
            b:bool[] = gt a 0.0:f32[]
            c:i32[] = convert[dtype=int32] b
            d:f32[] e:f32[] f:f32[] = cond branch0={ lambda  ; a:f32[]. let
                b:f32[] = mul a a
              in (b, a, 0.0:f32[]) } branch1={ lambda  ; a:f32[]. let
                b:f32[] = sin a
                c:f32[] = cos a
              in (b, 0.0:f32[], c) } c a
            g:f32[] = cond branch0={ lambda  ; a:f32[] b:f32[] c:f32[]. let
                d:f32[] = mul c a
                e:f32[] = mul c a
                f:f32[] = add d e
              in (f) } branch1={ lambda  ; a:f32[] b:f32[] c:f32[]. let
                d:f32[] = mul c b
              in (d) } c e f 1.0:f32[]
          in (g) }"#]],
    );
}

#[test]
fn cond_vmap() {
    check(
        "make_jaxpr(vmap(branch))(ones(3))",
        expect![[r#"
        { lambda  ; a:f32[3]. let
            b:bool[3] = gt a 0.0:f32[]
            c:i32[3] = convert[dtype=int32] b
            d:f32[3] = mul a a
            e:f32[3] = sin a
            f:bool[3] = eq c 1:i32[]
            g:bool[3] = ge c 1:i32[]
            h:f32[3] = select g e d
          in (h) }"#]],
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
        }],
        outvars: vec![Atom::Var(1)],
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
