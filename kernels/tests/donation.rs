//! Donation (`Array::donate`): every handle of the donated array is
//! deleted, the buffer comes back unshared unless another array shares it,
//! a sharded array's shards and resident bytes go with it, and pinned
//! arrays (the runtime's shared values) are never donated. One test: the
//! device counters are global to the process.

use arr_kernels::sharding::{Mesh, Placement};
use arr_kernels::{devices, Array, Buffer};
use std::sync::atomic::Ordering;
use std::sync::Arc;

fn resident(devs: &[usize]) -> Vec<u64> {
    devs.iter()
        .map(|&d| devices::stats(d).resident_bytes.load(Ordering::Relaxed))
        .collect()
}

#[test]
fn donation_deletes_every_handle_and_frees_the_buffer() {
    // A plain array: both handles are deleted; the buffer is unshared.
    let a = Array::new(&[4], Buffer::F32(vec![1.0, 2.0, 3.0, 4.0]));
    let alias = a.clone();
    let at = a.buffer_address().unwrap();
    let mut given = a
        .donate("it was donated to a test")
        .expect("first donation");
    assert_eq!(alias.deleted(), Some("it was donated to a test"));
    assert!(a.deleted().is_some());
    assert!(
        a.donate("again").is_none(),
        "a deleted array has nothing to give"
    );
    assert_eq!(given.buffer_address().unwrap(), at);
    assert!(
        given.buffer_mut().is_some(),
        "the donated buffer is unshared"
    );
    assert_eq!(given.to_f64_vec().unwrap(), vec![1.0, 2.0, 3.0, 4.0]);

    // A reshaped view shares the buffer: it stays valid, and the donated
    // buffer is shared (so nothing writes into it).
    let b = Array::new(&[2, 2], Buffer::F32(vec![5.0; 4]));
    let view = b.reshape(&[4]);
    let mut given = b.donate("donated").unwrap();
    assert!(view.deleted().is_none());
    assert!(given.buffer_mut().is_none());
    assert_eq!(view.to_f64_vec().unwrap(), vec![5.0; 4]);
    assert!(given.into_buffer().is_err());

    // A pinned handle is never donated.
    let pinned = Array::scalar_f32(2.0).pinned();
    assert!(pinned.donate("no").is_none());
    assert!(pinned.deleted().is_none());

    // A sharded array: its shards are deleted too, the devices' resident
    // bytes drop back, and it is no longer listed.
    let devs = vec![0, 1, 2, 3];
    let mesh = Arc::new(Mesh::new(vec![4], vec!["x".into()], devs.clone()).unwrap());
    let p = Arc::new(Placement::new(mesh, vec![vec![0]], 1).unwrap());
    let before = resident(&devs);
    let whole = Array::new(&[8], Buffer::F32((0..8).map(|i| i as f32).collect()));
    let s = whole.distribute(p).unwrap();
    drop(whole);
    assert_eq!(
        resident(&devs),
        before.iter().map(|b| b + 8).collect::<Vec<_>>(),
        "two f32s a device"
    );
    assert!(Array::live_sharded().iter().any(|x| x.same(&s)));
    // Another handle of the same layout shares the shards: they stay its.
    let other = s.handle().unwrap();
    let first_shard = s.donate_shard(0, "donated").unwrap();
    assert!(
        first_shard.same(&other.shards().unwrap()[0]),
        "shared, not taken"
    );
    assert!(other.shards().unwrap()[0].deleted().is_none());
    drop(first_shard);
    let given = s.donate("donated").unwrap();
    assert_eq!(
        given.to_f64_vec().unwrap(),
        (0..8).map(f64::from).collect::<Vec<_>>()
    );
    assert!(given.placement().is_none(), "the program gets a host array");
    assert!(other.deleted().is_none());
    assert_eq!(other.to_f64_vec().unwrap(), given.to_f64_vec().unwrap());
    assert!(!Array::live_sharded().iter().any(|x| x.same(&s)));
    assert!(Array::live_sharded().iter().any(|x| x.same(&other)));
    drop(other);
    assert_eq!(resident(&devs), before);
    drop(s);
    assert_eq!(resident(&devs), before, "released once, not again on drop");
    // Held alone, each shard's buffer goes to the program at its position.
    let mesh = Arc::new(Mesh::new(vec![4], vec!["x".into()], devs.clone()).unwrap());
    let p = Arc::new(Placement::new(mesh, vec![vec![0]], 1).unwrap());
    let t = Array::new(&[8], Buffer::F32(vec![1.0; 8]))
        .distribute(p)
        .unwrap();
    let at: Vec<usize> = t
        .shards()
        .unwrap()
        .iter()
        .map(|s| s.buffer_address().unwrap())
        .collect();
    for (pos, &addr) in at.iter().enumerate() {
        let mut b = t.donate_shard(pos, "donated").unwrap();
        assert_eq!(b.buffer_address().unwrap(), addr);
        assert!(b.buffer_mut().is_some(), "unshared");
        assert!(t.shards().unwrap()[pos].deleted().is_some());
    }
    assert!(t.delete("donated"));
    assert_eq!(resident(&devs), before);
}
