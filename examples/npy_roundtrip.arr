# Save arrays to .npy / .npz files (readable by NumPy) and load them back.

path = argv[1] if len(argv) > 1 else "roundtrip"
a = arange(6.0).reshape(2, 3)
b = array([1, 2, 3], dtype=int32)
save(path + ".npy", a)
back = load(path + ".npy")
print(back.dtype, back.shape, bool(all(back == a)))

savez(path + ".npz", a, labels=b)
d = loadz(path + ".npz")
print(sorted(d.keys()))
print(d["arr_0"], d["labels"], d["labels"].dtype)
