//! Sharded arrays: the device grid of `visualize_sharding` on 1-, 2- and
//! 3-D meshes (snapshots), types with their sharding, uneven blocks, the
//! layout kept by elementwise operations and by pmap's outputs, the
//! per-device memory accounting, and the errors.

use arr_runtime::{Session, Value};
use expect_test::expect;

fn session() -> Session {
    arr_stdlib::session()
}

/// The text `src` prints (through `visualize_sharding`, `print`...).
use arr_testkit::check_output as check;

#[test]
fn one_dimensional_mesh() {
    check(
        "visualize_sharding(shard(ones(10), mesh(4, 'x'), P('x')))",
        expect![[r#"
            f32[10@x] on Mesh('x': 4) (P('x'))
            +--------+--------+--------+--------+
            | cpu 0  | cpu 1  | cpu 2  | cpu 3  |
            | [0:3]  | [3:6]  | [6:9]  | [9:10] |
            | f32[3] | f32[3] | f32[3] | f32[1] |
            |  12 B  |  12 B  |  12 B  |  4 B   |
            +--------+--------+--------+--------+
        "#]],
    );
}

#[test]
fn two_dimensional_mesh_with_replication() {
    check(
        "m = mesh((2, 2), ('data', 'model'))\n\
         visualize_sharding(shard(ones((4, 6)), m, P('data', 'model')))\n\
         visualize_sharding(shard(ones((4, 6)), m, P('data')))",
        expect![[r#"
            f32[4@data,6@model] on Mesh('data': 2, 'model': 2) (P('data', 'model'))
            +------------+------------+
            |   cpu 0    |   cpu 1    |
            | [0:2, 0:3] | [0:2, 3:6] |
            |  f32[2,3]  |  f32[2,3]  |
            |    24 B    |    24 B    |
            +------------+------------+
            |   cpu 2    |   cpu 3    |
            | [2:4, 0:3] | [2:4, 3:6] |
            |  f32[2,3]  |  f32[2,3]  |
            |    24 B    |    24 B    |
            +------------+------------+
            f32[4@data,6] on Mesh('data': 2, 'model': 2) (P('data', None))
            +----------+
            | cpu 0,1  |
            |  [0:2]   |
            | f32[2,6] |
            |   48 B   |
            +----------+
            | cpu 2,3  |
            |  [2:4]   |
            | f32[2,6] |
            |   48 B   |
            +----------+
        "#]],
    );
}

#[test]
fn three_dimensional_mesh() {
    check(
        "m = mesh((2, 2, 2), ('a', 'b', 'c'))\n\
         visualize_sharding(shard(ones((2, 4, 6)), m, P('a', ('b', 'c'))))",
        expect![[r#"
            f32[2@a,4@(b,c),6] on Mesh('a': 2, 'b': 2, 'c': 2) (P('a', ('b', 'c'), None))
            +------------+------------+------------+------------+
            |   cpu 0    |   cpu 1    |   cpu 2    |   cpu 3    |
            | [0:1, 0:1] | [0:1, 1:2] | [0:1, 2:3] | [0:1, 3:4] |
            | f32[1,1,6] | f32[1,1,6] | f32[1,1,6] | f32[1,1,6] |
            |    24 B    |    24 B    |    24 B    |    24 B    |
            +------------+------------+------------+------------+
            |   cpu 4    |   cpu 5    |   cpu 6    |   cpu 7    |
            | [1:2, 0:1] | [1:2, 1:2] | [1:2, 2:3] | [1:2, 3:4] |
            | f32[1,1,6] | f32[1,1,6] | f32[1,1,6] | f32[1,1,6] |
            |    24 B    |    24 B    |    24 B    |    24 B    |
            +------------+------------+------------+------------+
        "#]],
    );
}

#[test]
fn layouts_follow_values() {
    check(
        "m = mesh((4, 2), ('data', 'model'))\n\
         x = device_put(arange(48.0).reshape(8, 6), NamedSharding(m, P('data', 'model')))\n\
         print(x.sharding)\n\
         y = sin(x) * 2.0 + x\n\
         print(y.sharding, sum(y - (sin(arange(48.0)) * 2.0 + arange(48.0)).reshape(8, 6)))\n\
         print((x @ ones(6)).sharding)\n\
         z = pmap(lambda a: a + axis_index('i'), axis_name='i')(zeros((4, 3)))\n\
         print(z.sharding, z[3, 0])\n\
         print(type(shard(ones((5, 7)), m, P(None, 'model'))))",
        expect![[r#"
            NamedSharding(mesh=Mesh('data': 4, 'model': 2, axis_types=(Auto, Auto)), spec=P('data', 'model'), memory_kind=device)
            NamedSharding(mesh=Mesh('data': 4, 'model': 2, axis_types=(Auto, Auto)), spec=P('data', 'model'), memory_kind=device) 0.0
            NamedSharding(mesh=Mesh('data': 4, 'model': 2, axis_types=(Auto, Auto)), spec=P('data',), memory_kind=device)
            NamedSharding(mesh=Mesh('i': 4, axis_types=(Auto,)), spec=P('i', None), memory_kind=device) 3.0
            f32[5,7@model]
        "#]],
    );
}

#[test]
fn devices_account_for_resident_shards() {
    let mut s = session();
    let resident = |s: &mut Session| -> Vec<u64> {
        let _ = s;
        arr_kernels::devices::snapshot(4)
            .iter()
            .map(|d| d.resident_bytes)
            .collect()
    };
    let before = resident(&mut s);
    s.run_script("<s>", "w = shard(ones((400, 10)), mesh(4, 'd'), P('d'))")
        .unwrap();
    let during = resident(&mut s);
    for d in 0..4 {
        // 100 rows of 10 float32 per device (other tests may hold arrays too).
        assert!(
            during[d] >= before[d] + 4000,
            "device {d}: {during:?} vs {before:?}"
        );
    }
    let report = arr_stdlib::mesh_report();
    assert!(
        report.contains("f32[400@d,10] on Mesh('d': 4) P('d', None)"),
        "{report}"
    );
    s.run_script("<s>", "w = None").unwrap();
    assert!(!arr_stdlib::mesh_report().contains("f32[400@d,10]"));
}

#[test]
fn errors_name_the_problem() {
    let cases = [
        ("mesh((2, 2), ('a',))", "2 axis sizes but 1 axis names"),
        ("mesh(16, 'x')", "device 8 does not exist"),
        ("shard(ones(4), mesh(2, 'x'), P('y'))", "has no axis 'y'"),
        (
            "shard(ones(4), mesh(2, 'x'), P('x', None))",
            "more than the array's rank 1",
        ),
        (
            "shard(ones((4, 4)), mesh(2, 'x'), P('x', 'x'))",
            "mesh axis 'x' shards two dimensions",
        ),
        ("device_put(ones(3), 3)", "sharding must be a NamedSharding"),
    ];
    for (src, want) in cases {
        let mut s = session();
        let err = s.run_script("<s>", src).expect_err(src).render();
        assert!(err.contains(want), "{src}: {err}");
        // Nothing already computed is lost: the session still works.
        assert!(matches!(s.run_entry("1 + 1"), Ok(Some(Value::Int(2)))));
    }
}
