# orbax.checkpoint, written in arr over arr's checkpoints (`save_checkpoint`
# / `load_checkpoint`, distributed.rs: each block written once by a process
# holding it, an index written last, any mesh reading it back): a
# checkpointer saves a pytree and restores it into the structure, shapes,
# dtypes and shardings of a target (what `nnx.eval_shape` and `nnx.split`
# give, or arrays). A tree of dicts, lists and arrays is saved as it is; one
# with other nodes (Flax states, optax states) as its leaves, restored only
# into a target of the same structure. Loaded at the first `import orbax`.

import pathlib

def _orbax_erase_and_create_empty(path):
    """A new empty folder at path (what was there removed), as a Path."""
    path = _pathlib_Path(path)
    if path.exists():
        _shutil_rmtree(path)
    path.mkdir(parents=True)
    return path

_orbax_StandardSave = namedtuple("StandardSave", "item save_args", defaults=(None,))
_orbax_StandardRestore = namedtuple("StandardRestore", "item strict", defaults=(None, True))

def _orbax_plain(tree):
    """Whether tree is made of dicts (string or int keys), lists, tuples and leaves only."""
    if isinstance(tree, dict):
        return all(isinstance(k, (str, int)) and _orbax_plain(v) for k, v in tree.items())
    if isinstance(tree, (list, tuple)) and type(tree) in (list, tuple):
        return all(_orbax_plain(v) for v in tree)
    return not isinstance(tree, (list, tuple, dict)) and not _orbax_is_node(tree)

def _orbax_is_node(x):
    return len(tree_leaves(x)) != 1 or tree_leaves(x)[0] is not x

def _orbax_place(value, target, where):
    """value (restored) checked against target's shape and dtype, laid out
    as target is when target is a sharded array or carries a sharding."""
    if target is None or not hasattr(target, "shape"):
        return value
    if tuple(value.shape) != tuple(target.shape):
        raise ValueError(f"restore: {where} has shape {tuple(value.shape)} in the checkpoint, the target expects {tuple(target.shape)}")
    value = value.astype(target.dtype)
    sharding = getattr(target, "sharding", None)
    if sharding is not None and type(sharding).__name__ == "NamedSharding":
        value = device_put(value, sharding)
    return value

class _orbax_StandardCheckpointerBase:
    """Saves and restores pytrees of arrays (orbax's StandardCheckpointer)."""

    def __init__(self, *args, **kwargs):
        pass

    def save(self, directory, item=None, *, args=None, force=False, **kwargs):
        if args is not None:
            item = args.item
        path = str(directory)
        if _os_path_exists(path):
            if not force:
                raise ValueError(f"Destination {path} already exists. To overwrite, use force=True.")
            _shutil_rmtree(path)
        if _orbax_plain(item):
            save_checkpoint(path, {"plain": item})
        else:
            save_checkpoint(path, {"leaves": tree_leaves(item), "structure": str(tree_structure(item))})

    def restore(self, directory, target=None, *, args=None, strict=True, **kwargs):
        if args is not None:
            target = args.item
        path = str(directory)
        saved = load_checkpoint(path)
        if "plain" in saved:
            if target is None:
                return saved["plain"]
            leaves = tree_leaves(saved["plain"])
        else:
            leaves = saved["leaves"]
            if target is None:
                raise ValueError(f"restore: the checkpoint at {path} holds a tree of {saved['structure']}: pass the target to restore into (an abstract state of the same structure)")
        targets, structure = tree_flatten(target)
        if len(leaves) != len(targets):
            raise ValueError(f"restore: the checkpoint at {path} has {len(leaves)} arrays, the target's structure {structure} has {len(targets)}")
        placed = [_orbax_place(v, t, f"array {i} of {path}") for i, (v, t) in enumerate(zip(leaves, targets))]
        return tree_unflatten(structure, placed)

    def wait_until_finished(self):
        pass

    def close(self):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

_orbax_StandardCheckpointer = type("StandardCheckpointer", (_orbax_StandardCheckpointerBase,), {})
