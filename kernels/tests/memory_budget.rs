//! The memory budget with the counting allocator installed: many small
//! allocations, none of them large, spend a user limit, and the check at a
//! safe point says so before the live bytes pass the limit by more than a step.

use arr_kernels::memory::{self, Counting, Exhausted};

#[global_allocator]
static ALLOCATOR: Counting = Counting;

#[test]
fn many_small_allocations_spend_the_user_limit() {
    let limit = 64 << 20;
    arr_kernels::limits::set_user_limit(Some(limit));
    let base = memory::live_bytes();
    let mut held: Vec<Box<[u8; 100]>> = Vec::new();
    let verdict = loop {
        held.push(Box::new([1; 100]));
        if let Some(why) = memory::exhausted() {
            break why;
        }
        assert!(
            memory::live_bytes() < base + 2 * limit,
            "no verdict at {} live bytes",
            memory::live_bytes()
        );
    };
    let Exhausted::OverLimit { live, limit: l } = verdict else {
        panic!("{verdict:?}");
    };
    assert_eq!(l, limit);
    assert!(live > limit && live < limit + (8 << 20), "{live}");
    assert!(verdict
        .to_string()
        .contains("over the memory limit of 67108864 bytes"));
    // Freed, the values no longer count, and the budget is not spent.
    drop(held);
    assert!(memory::live_bytes() < base + (1 << 20));
    for _ in 0..1000 {
        std::hint::black_box(Box::new([0u8; 100]));
        assert_eq!(memory::exhausted(), None);
    }
    arr_kernels::limits::set_user_limit(None);
}
