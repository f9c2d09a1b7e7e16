//! SPMD execution on the device workers: one compiled per-device program
//! runs on every device of a mesh at once, each on its own block of the
//! inputs, with collectives exchanging values between the workers. This is
//! the machinery under `pmap`, `shard_map` and sharded `jit`; their
//! arr-facing argument handling is in the standard library, and the SPMD
//! partitioner of sharded `jit` is a compiler stage (`jit/partition.rs`).
//!
//! * `blocks.rs` — cutting each device's block out of an array (its own
//!   shard when the array keeps one per device, a donated shard's buffer),
//!   and putting the devices' results together as a sharded array.
//! * `program.rs` — compiling a function for one device's block with the
//!   device axes bound, the cache of such programs by signature, and running
//!   a program on device workers with a communicator per group of devices.
//! * `pmap.rs` — `pmap` on devices: slices of the mapped axes in, outputs
//!   stacked over the devices that computed them; a pmap of a pmap on a grid.
//! * `shard_map.rs` — `shard_map` on a mesh, and under a transformation as
//!   nested named vmaps, one per mesh axis.

pub mod blocks;
pub mod pmap;
pub mod program;
pub mod shard_map;
