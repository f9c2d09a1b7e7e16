# Flax NNX (`from flax import nnx`), written in arr over the surface: modules
# are objects whose attributes are their state, variables (`nnx.Param`) hold
# arrays, `nnx.Rngs` hands out keys as Flax's streams do (fold_in of a key
# with a counter), and the layers compute what Flax's compute from the same
# parameters, drawing their initial values in Flax's order.
#
# A module or variable is a pytree node whose children are its attributes
# that hold arrays (`_register_object_pytree`: decided at each walk, by
# name), so `jax.jit`, `jax.grad`, `jax.tree.map` take modules as they are,
# as Flax 0.12's pytree modules. `nnx.split` / `nnx.state` walk the object
# graph (a variable reached twice, a tied weight, is one entry) into `State`s
# keyed by path (with the arrays objects hold outside variables); `nnx.merge`
# copies the graph's structure and puts the states' variables in it (the
# merged module shares them with the states, as in Flax 0.12).
# `nnx.jit` runs the function under `jit` and copies the state the function
# left in its module arguments back into the caller's objects, so updates
# made inside (an optimiser step, a counter) persist, as in Flax.
#
# Every name carries the `_nnx_` prefix (modules.rs maps `nnx.X` to
# `_nnx_X`). Classes are made with `type(name, ...)` so that they print with
# Flax's names. Loaded at the first `import flax` (lib.rs's LIBRARIES).

@_register_object_pytree
class _nnx_PytreeBase:
    """An object whose attributes are its state (nnx.Pytree)."""

    def __setattr__(self, name, value):
        # nnx.data(x) / nnx.static(x): the attribute is a child, or not,
        # whatever it holds (`__pytree_data__`, read by the object node's walk).
        data = None
        if isinstance(value, _nnx_MarkedBase):
            data, value = value.data, value.value
        elif is_dataclass(type(self)):
            # A dataclass field says it with metadata={'static': ...}.
            for f in fields(type(self)):
                if f.name == name and "static" in f.metadata:
                    data = not f.metadata["static"]
        if data is not None:
            marks = dict(vars(self).get("__pytree_data__", {}))
            marks[name] = data
            _object_setattr(self, "__pytree_data__", marks)
        _object_setattr(self, name, value)

    def __repr__(self):
        return _nnx_object_repr(self, "")

    def __init_subclass__(cls, pytree=True, **kwargs):
        # Flax's `pytree=False` (what nnx.Object is) keeps instances out of
        # JAX's pytrees, for NNX's transforms only; arr's NNX transforms and
        # JAX's take them as pytrees either way, so the flag changes nothing.
        super().__init_subclass__(**kwargs)

_nnx_Pytree = type("Pytree", (_nnx_PytreeBase,), {})
_nnx_Object = _nnx_Pytree

class _nnx_VariableBase(_nnx_Pytree):
    """A box for a value of a module's state; its type (Param, BatchStat,
    Cache...) is what filters select. Operators and array functions take it
    as its value."""

    __array_attribute__ = "value"

    def __init__(self, value, *, eager_sharding=None, hijax=False, ref=False, **metadata):
        if isinstance(value, (_nnx_VariableBase, _nnx_VariableMetadataBase)):
            metadata = {**value.get_metadata(), **metadata}
            value = value.raw_value
        # Flax 0.12's flags: hijax and ref variables are not modelled (always
        # False); eager_sharding is kept where it is False (repr shows it).
        metadata.pop("hijax", None)
        metadata.pop("ref", None)
        inherited = metadata.pop("eager_sharding", None)
        if eager_sharding is None:
            eager_sharding = inherited
        for old in ("sharding", "sharding_names"):
            if old in metadata:
                metadata["out_sharding"] = metadata.pop(old)
        eager = _nnx_eager_sharding[-1] if eager_sharding is None else eager_sharding
        if not eager:
            metadata["eager_sharding"] = False
        if eager and metadata.get("out_sharding", None) and isinstance(value, array):
            value = _nnx_shard_value(value, metadata["out_sharding"], metadata.get("sharding_rules", None), metadata.get("mesh", None))
        self.value = value
        self._var_metadata = metadata

    def __getitem__(self, index):
        if index is Ellipsis:
            return self.value
        return self.value[index]

    def __setitem__(self, index, new):
        if index is Ellipsis:
            old = self.value
            if isinstance(old, array) and not isinstance(new, _nnx_VariableBase):
                new = broadcast_to(asarray(new, dtype=old.dtype), old.shape)
            self.value = new
        else:
            self.value = self.value.at[index].set(new)

    def __getattr__(self, name):
        metadata = self.get_metadata()
        if name in metadata:
            return metadata[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def get_value(self):
        return self.value

    def set_value(self, value):
        self.value = value

    def get_metadata(self):
        metadata = dict(self._var_metadata)
        eager = metadata.pop("eager_sharding", True)
        return {**metadata, "hijax": False, "ref": False, "eager_sharding": eager}

    def replace(self, value=None, **metadata):
        return type(self)(self.value if value is None else value, **{**self._var_metadata, **metadata})

    def copy(self):
        return type(self)(self.value, **self._var_metadata)

    @property
    def raw_value(self):
        return self.value

    @property
    def sharding_names(self):
        return self._var_metadata.get("out_sharding", None)

    @property
    def shape(self):
        return self.value.shape if type(self.value).__name__ == "ShapeDtypeStruct" else shape(self.value)

    @property
    def dtype(self):
        return self.value.dtype

    @property
    def ndim(self):
        return self.value.ndim if type(self.value).__name__ == "ShapeDtypeStruct" else ndim(self.value)

    @property
    def size(self):
        return self.value.size if type(self.value).__name__ == "ShapeDtypeStruct" else size(self.value)

    @property
    def T(self):
        return self.value.T

    @property
    def sharding(self):
        return self.value.sharding

    def __len__(self):
        return len(self.value)

    def __iter__(self):
        return iter(self.value)

    def astype(self, dtype):
        return self.value.astype(dtype)

    def reshape(self, *shape):
        return self.value.reshape(*shape)

    def sum(self, *args, **kwargs):
        return self.value.sum(*args, **kwargs)

    def mean(self, *args, **kwargs):
        return self.value.mean(*args, **kwargs)

    def __bool__(self):
        return bool(self.value)

    def __repr__(self):
        return _nnx_variable_repr(self)

_nnx_Variable = type("Variable", (_nnx_VariableBase,), {})
_nnx_Param = type("Param", (_nnx_Variable,), {})
_nnx_BatchStat = type("BatchStat", (_nnx_Variable,), {})
_nnx_Cache = type("Cache", (_nnx_Variable,), {})
_nnx_Intermediate = type("Intermediate", (_nnx_Variable,), {})
_nnx_Perturbation = type("Perturbation", (_nnx_Intermediate,), {})
_nnx_RngState = type("RngState", (_nnx_Variable,), {})
_nnx_RngKey = type("RngKey", (_nnx_RngState,), {})
_nnx_RngCount = type("RngCount", (_nnx_RngState,), {})
_nnx_OptState = type("OptState", (_nnx_Variable,), {})
_nnx_OptArray = type("OptArray", (_nnx_OptState,), {})
_nnx_OptVariable = type("OptVariable", (_nnx_OptState,), {})

class _nnx_MarkedBase:
    """What nnx.data / nnx.static return: a value to assign to a Pytree's
    attribute, marking the attribute as a pytree child (data) or as part of
    the structure (static) whatever it holds."""

    def __init__(self, value, data):
        self.value = value
        self.data = data

_nnx_missing = _nnx_MarkedBase(None, None)

def _nnx_data(value=_nnx_missing, **kwargs):
    if value is _nnx_missing:
        return field(metadata={"static": False}, **kwargs)
    return _nnx_MarkedBase(value, True)

def _nnx_static(value=_nnx_missing, **kwargs):
    if value is _nnx_missing:
        return field(metadata={"static": True}, **kwargs)
    return _nnx_MarkedBase(value, False)

def _nnx_dataclass(cls=None, *, init=True, eq=True, order=False, unsafe_hash=False,
                   match_args=True, kw_only=False, slots=False, weakref_slot=False):
    """nnx.dataclass: dataclasses.dataclass for Pytrees (Flax's repr kept)."""
    if cls is None:
        return partial(_nnx_dataclass, init=init, eq=eq, kw_only=kw_only)
    return dataclass(cls, init=init, eq=eq, kw_only=kw_only, repr=False)

def _nnx_find_duplicates(node, *, only=Ellipsis):
    """nnx.find_duplicates: the paths of each object or variable reached
    more than once (shared references), one list per shared node."""
    paths = {}
    order = []
    def walk(path, value):
        if isinstance(value, (_nnx_PytreeBase, array)):
            if id(value) in paths:
                paths[id(value)].append(path)
                return
            paths[id(value)] = [path]
            order.append(id(value))
        for k, child in _nnx_children(value):
            walk(path + (k,), child)
    walk((), node)
    return [paths[i] for i in order if len(paths[i]) > 1]

def _nnx_is_data(value):
    """nnx.is_data: arrays, variables and Flax objects are data; other
    values (containers included) are static unless marked."""
    return isinstance(value, (array, _nnx_PytreeBase))


# ---- sharding metadata ----

class _nnx_VariableMetadataBase:
    """A value an initialiser made with metadata for the variable that will
    hold it (what `with_partitioning` initialisers return)."""

    def __init__(self, raw_value, metadata):
        self.raw_value = raw_value
        self.metadata = metadata

    def get_metadata(self):
        return dict(self.metadata)

_nnx_VariableMetadata = type("VariableMetadata", (_nnx_VariableMetadataBase,), {})

def _nnx_with_metadata(initializer, **metadata):
    def init(*args, **kwargs):
        value = initializer(*args, **kwargs)
        if isinstance(value, _nnx_VariableMetadataBase):
            return _nnx_VariableMetadata(value.raw_value, {**value.metadata, **metadata})
        return _nnx_VariableMetadata(value, metadata)
    return init

def _nnx_with_partitioning(initializer, sharding, mesh=None, **metadata):
    return _nnx_with_metadata(initializer, out_sharding=sharding, mesh=mesh, **metadata)

_nnx_eager_sharding = [True]
_nnx_axis_rules = [()]

class _nnx_use_eager_sharding:
    """Whether variables with `out_sharding` are laid out as they are made
    (Flax's default); a setting, or a context restoring the previous one."""

    def __init__(self, value):
        self.previous = _nnx_eager_sharding[-1]
        _nnx_eager_sharding.append(value)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        _nnx_eager_sharding.append(self.previous)
        return False

def _nnx_using_eager_sharding():
    return _nnx_eager_sharding[-1]

class _nnx_logical_axis_rules:
    """A context in which logical axis names map to mesh axes:
    `with nnx.logical_axis_rules([("batch", "data"), ("mlp", "model")]):`."""

    def __init__(self, rules):
        self.rules = tuple(tuple(r) for r in rules)

    def __enter__(self):
        _nnx_axis_rules.append(self.rules)
        return self

    def __exit__(self, *exc):
        _nnx_axis_rules.pop()
        return False

def _nnx_set_logical_axis_rules(rules):
    _nnx_axis_rules[0] = tuple(tuple(r) for r in rules)

def _nnx_get_logical_axis_rules():
    return _nnx_axis_rules[-1]

def _nnx_apply_rules(names, local_rules=None):
    """Logical axis names as mesh axes, by the context's rules and the
    variable's own (`sharding_rules`), the variable's first."""
    rules = {}
    for alias, on_mesh in tuple(_nnx_axis_rules[-1]) + tuple(local_rules or ()):
        rules[alias] = on_mesh
    return tuple(rules[n] if (isinstance(n, str) and n in rules) else n for n in names)

def _nnx_shard_value(value, out_sharding, sharding_rules, mesh):
    names = _nnx_apply_rules(tuple(out_sharding), sharding_rules)
    if mesh is None:
        if get_abstract_mesh().empty:
            raise ValueError(f"An auto mesh context or metadata is required if creating a variable with annotation out_sharding={tuple(out_sharding)}: make the model under `with jax.set_mesh(mesh):`, or pass mesh= to with_partitioning.")
        return reshard(value, P(*names))
    return with_sharding_constraint(value, NamedSharding(mesh, P(*names)))

def _nnx_var_pspec(v):
    metadata = v._var_metadata
    if metadata.get("out_sharding", None):
        return P(*_nnx_apply_rules(tuple(metadata["out_sharding"]), metadata.get("sharding_rules", None)))
    return P()

def _nnx_get_partition_spec(tree):
    """The PartitionSpec of every variable of tree (a State or module), from
    its `out_sharding` names and the logical axis rules."""
    def spec(x):
        if isinstance(x, _nnx_VariableBase):
            return x.replace(_nnx_var_pspec(x))
        if isinstance(x, array):
            return P()
        return None
    return tree_map(spec, tree, is_leaf=lambda x: isinstance(x, _nnx_VariableBase))

def _nnx_get_named_sharding(tree, mesh):
    specs = _nnx_get_partition_spec(tree)
    return tree_map(lambda p: NamedSharding(mesh, p), specs, is_leaf=lambda x: isinstance(x, PartitionSpec))

# ---- modules ----

class _nnx_ModuleBase(_nnx_Pytree):
    """The base of layers and of a user's models (nnx.Module)."""

    def iter_modules(self):
        return _nnx_iter_modules(self)

    def iter_children(self):
        return [(k, v) for k, v in _nnx_attributes(self) if isinstance(v, _nnx_ModuleBase)]

    def set_attributes(self, *filters, raise_if_not_found=True, **attributes):
        found = set()
        for _, m in _nnx_modules_preorder(self):
            for name, value in attributes.items():
                if name in vars(m):
                    setattr(m, name, value)
                    found.add(name)
        missing = [n for n in attributes if n not in found]
        if raise_if_not_found and missing:
            raise ValueError(f"Could not find at least one instance of the following attributes: {missing}")

    def train(self, **attributes):
        self.set_attributes(deterministic=False, use_running_average=False, **attributes, raise_if_not_found=False)

    def eval(self, **attributes):
        self.set_attributes(deterministic=True, use_running_average=True, **attributes, raise_if_not_found=False)

    def sow(self, variable_type, name, value, reduce_fn=None, init_fn=None):
        """Module.sow: under nnx.capture, reduce value into the capture
        buffer of variable_type (False when none is of that type); outside
        it, into the attribute `name` (Flax's deprecated form). By default
        the values of successive calls are collected in a tuple."""
        if isinstance(variable_type, str):
            variable_type = _nnx_Intermediate
        reduce_fn = (lambda xs, x: xs + (x,)) if reduce_fn is None else reduce_fn
        init_fn = (lambda: ()) if init_fn is None else init_fn
        if "__captures__" in vars(self):
            for var in self.__captures__:
                if type(var) == variable_type:
                    var.value[name] = reduce_fn(var.value[name] if name in var.value else init_fn(), value)
                    return True
            return False
        if name in vars(self):
            old = getattr(self, name)
            if not isinstance(old, _nnx_VariableBase):
                raise ValueError(f"Expected '{name}' to be a Variable, got {type(old).__name__}")
            if type(old) != variable_type:
                raise ValueError(f"Expected '{name}' to be of type '{variable_type.__name__}', got '{type(old).__name__}'")
            old.value = reduce_fn(old.value, value)
        else:
            setattr(self, name, variable_type(reduce_fn(init_fn(), value)))
        return True

    def perturb(self, name, value, variable_type=None):
        """Module.perturb: value plus the perturbation stored under name in
        the capture buffer of variable_type (zeros at the first capture), so
        the gradient with respect to the perturbation is the gradient with
        respect to the intermediate value."""
        if variable_type is None or isinstance(variable_type, str):
            variable_type = _nnx_Perturbation
        if "__captures__" in vars(self):
            for var in self.__captures__:
                if type(var) == variable_type:
                    if name not in var.value:
                        var.value[name] = tree_map(zeros_like, value)
                    return var.value[name] + value
            return value
        if name not in vars(self):
            setattr(self, name, variable_type(tree_map(zeros_like, value)))
        elif not isinstance(getattr(self, name), variable_type):
            raise ValueError(f"Expected '{name}' to be of type '{variable_type.__name__}', got '{type(getattr(self, name)).__name__}'")
        return getattr(self, name).value + value

_nnx_Module = type("Module", (_nnx_ModuleBase,), {})

class _nnx_ListBase(_nnx_Module):
    """A list that is part of a module's state (nnx.List): its items are
    attributes, so functions among them stay static structure."""

    def __init__(self, items=()):
        self._length = 0
        for item in items:
            self.append(item)

    def append(self, item):
        setattr(self, str(self._length), item)
        self._length = self._length + 1

    def extend(self, items):
        for item in items:
            self.append(item)

    def _index(self, i):
        if i < 0:
            i = i + self._length
        if i < 0 or i >= self._length:
            raise IndexError("list index out of range")
        return str(i)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [getattr(self, str(k)) for k in range(self._length)[i]]
        return getattr(self, self._index(i))

    def __setitem__(self, i, item):
        setattr(self, self._index(i), item)

    def __len__(self):
        return self._length

    def __iter__(self):
        return iter([getattr(self, str(k)) for k in range(self._length)])

    def __repr__(self):
        return _nnx_object_repr(self, "")

_nnx_List = type("List", (_nnx_ListBase,), {})

class _nnx_DictBase(_nnx_Module):
    """A dict that is part of a module's state (nnx.Dict): its entries are
    attributes (keys are names), so functions among them stay static
    structure."""

    def __init__(self, *args, **kwargs):
        for name, value in dict(*args, **kwargs).items():
            setattr(self, name, value)

    def _keys(self):
        return [k for k in vars(self) if not k.startswith("__")]

    def __getitem__(self, key):
        if isinstance(key, str) and key in self._keys():
            return getattr(self, key)
        raise KeyError(key)

    def __setitem__(self, key, value):
        setattr(self, key, value)

    def __delitem__(self, key):
        if key not in self._keys():
            raise KeyError(key)
        delattr(self, key)

    def __contains__(self, key):
        return key in self._keys()

    def __iter__(self):
        return iter(self._keys())

    def __len__(self):
        return len(self._keys())

    def __hash__(self):
        return id(self)

    def keys(self):
        return self._keys()

    def values(self):
        return [getattr(self, k) for k in self._keys()]

    def items(self):
        return [(k, getattr(self, k)) for k in self._keys()]

    def get(self, key, default=None):
        return getattr(self, key) if key in self._keys() else default

    def pop(self, key, *default):
        if key in self._keys():
            value = getattr(self, key)
            delattr(self, key)
            return value
        if default:
            return default[0]
        raise KeyError(key)

    def update(self, *args, **kwargs):
        for name, value in dict(*args, **kwargs).items():
            setattr(self, name, value)

_nnx_Dict = type("Dict", (_nnx_DictBase,), {})


def _nnx_attributes(node):
    """The attributes of an object in name order (lists by index); the
    library's own bookkeeping (`__pytree_data__`, `__captures__`) left out."""
    if isinstance(node, _nnx_ListBase):
        return [(k, node[k]) for k in range(len(node))]
    return [(k, getattr(node, k)) for k in sorted(vars(node)) if not k.startswith("__")]

def _nnx_sorted_keys(keys):
    """Keys in Flax's order: numbers first (by value), then the rest by name."""
    return sorted(keys, key=lambda k: (0, k, "") if isinstance(k, int) else (1, 0, str(k)))

def _nnx_is_namedtuple(value):
    return isinstance(value, tuple) and hasattr(type(value), "_fields")

def _nnx_children(value):
    """(key, child) pairs of a node of the object graph: an object's
    attributes, a State's entries, a named tuple's fields, a list's or
    tuple's items, a dict's entries by key."""
    if isinstance(value, _nnx_VariableBase):
        return []
    if isinstance(value, _nnx_StateBase):
        mapping = value._mapping
        return [(k, mapping[k]) for k in _nnx_sorted_keys(mapping.keys())]
    if isinstance(value, _nnx_PytreeBase):
        return _nnx_attributes(value)
    if _nnx_is_namedtuple(value):
        return [(f, getattr(value, f)) for f in type(value)._fields]
    if isinstance(value, (list, tuple)):
        return list(enumerate(value))
    if isinstance(value, dict):
        return [(k, value[k]) for k in _nnx_sorted_keys(value.keys())]
    return []

def _nnx_iter_graph(node):
    """(path, value) of every object and variable reachable from node, each
    once (the first path that reaches it), parents first (the library's own
    walk; nnx.iter_graph is _nnx_iter_graph_public)."""
    seen = set()
    out = []
    def walk(path, value):
        if isinstance(value, (_nnx_PytreeBase, list, dict)):
            if id(value) in seen:
                return
            seen.add(id(value))
        if isinstance(value, _nnx_PytreeBase):
            out.append((path, value))
        for k, child in _nnx_children(value):
            walk(path + (k,), child)
    walk((), node)
    return out

def _nnx_iter_graph_public(node, *, graph=None):
    """nnx.iter_graph: (path, value) of every node and leaf under node, static
    values included, each node once, children before their parent (Flax's
    stack walk: None and () count as nodes without children)."""
    visited = set()
    out = []
    stack = [((), node, False)]
    while stack:
        path, value, traversed = stack.pop()
        is_node = value is None or isinstance(value, (_nnx_PytreeBase, list, tuple, dict))
        if traversed or not is_node:
            out.append((path, value))
            continue
        if id(value) in visited:
            continue
        visited.add(id(value))
        if isinstance(value, _nnx_VariableBase):
            out.append((path, value))
            continue
        stack.append((path, value, True))
        children = [] if value is None else _nnx_children(value)
        if isinstance(value, _nnx_ListBase):
            children = children + [("_length", len(value))]
        for k, child in reversed(children):
            stack.append((path + (k,), child, False))
    return out

def _nnx_variables_of(node):
    """(path, leaf) of node's state, in path order: each variable once, and
    the arrays its objects hold outside variables (data, as Flax 0.12 takes
    them), and what an attribute marked with nnx.data holds."""
    seen = set()
    out = []
    def walk(path, value):
        if isinstance(value, _nnx_VariableBase):
            if id(value) not in seen:
                seen.add(id(value))
                out.append((path, value))
            return
        if isinstance(value, array):
            out.append((path, value))
            return
        if not isinstance(value, (_nnx_PytreeBase, list, tuple, dict)):
            return
        if isinstance(value, (_nnx_PytreeBase, list, dict)):
            if id(value) in seen:
                return
            seen.add(id(value))
        marks = {}
        if isinstance(value, _nnx_PytreeBase) and not isinstance(value, (_nnx_StateBase, _nnx_ListBase)):
            marks = vars(value).get("__pytree_data__", {})
        for k, child in _nnx_children(value):
            mark = marks.get(k, None)
            if mark is False:
                continue
            if mark is True and isinstance(child, (bool, int, float)):
                out.append((path + (k,), child))
                continue
            walk(path + (k,), child)
    walk((), node)
    return out

# ---- filters ----

class _nnx_FilterBase:
    """Flax's filter predicates (nnx.filterlib): callable as f(path, value)."""

    def __init__(self, *filters, exact=True):
        self.filters = filters
        self.exact = exact

    def __call__(self, path, x):
        return _nnx_matches(self, path, x)

    def __repr__(self):
        name = type(self).__name__
        if name == "PathContains":
            return f"PathContains({self.filters[0]!r}, exact={self.exact})"
        if name in ("Any", "All", "Not"):
            return name + "(" + ", ".join(repr(_nnx_to_predicate(f)) for f in self.filters) + ")"
        return name + "(" + ", ".join(repr(f) for f in self.filters) + ")"

    def __eq__(self, other):
        return type(self) == type(other) and self.filters == other.filters

    def __hash__(self):
        return hash((type(self).__name__, self.filters))

def _nnx_to_predicate(f):
    """nnx.filterlib.to_predicate: a filter as a predicate f(path, value)."""
    if isinstance(f, str):
        return _nnx_WithTag(f)
    if isinstance(f, type):
        return _nnx_OfType(f)
    if f is True or f is Ellipsis:
        return _nnx_Everything()
    if f is False or f is None:
        return _nnx_Nothing()
    if callable(f):
        return f
    if isinstance(f, (list, tuple)):
        return _nnx_Any(*f)
    raise TypeError(f"Invalid collection filter: {f!r}. ")

_nnx_Not = type("Not", (_nnx_FilterBase,), {})
_nnx_All = type("All", (_nnx_FilterBase,), {})
_nnx_Any = type("Any", (_nnx_FilterBase,), {})
_nnx_PathContains = type("PathContains", (_nnx_FilterBase,), {})
_nnx_OfType = type("OfType", (_nnx_FilterBase,), {})
_nnx_Everything = type("Everything", (_nnx_FilterBase,), {})
_nnx_Nothing = type("Nothing", (_nnx_FilterBase,), {})
_nnx_WithTag = type("WithTag", (_nnx_FilterBase,), {})
_nnx_PathIn = type("PathIn", (_nnx_FilterBase,), {})

def _nnx_matches(f, path, v):
    if f is Ellipsis or f is True:
        return True
    if f is None or f is False:
        return False
    if isinstance(f, type):
        return isinstance(v, f)
    if isinstance(f, str):
        return hasattr(v, "tag") and v.tag == f
    if isinstance(f, (list, tuple)):
        return any(_nnx_matches(g, path, v) for g in f)
    if isinstance(f, _nnx_Not):
        return not _nnx_matches(f.filters[0], path, v)
    if isinstance(f, _nnx_All):
        return all(_nnx_matches(g, path, v) for g in f.filters)
    if isinstance(f, _nnx_Any):
        return any(_nnx_matches(g, path, v) for g in f.filters)
    if isinstance(f, _nnx_PathContains):
        if f.exact:
            return f.filters[0] in path
        return any(str(f.filters[0]) in str(part) for part in path)
    if isinstance(f, _nnx_WithTag):
        return hasattr(v, "tag") and v.tag == f.filters[0]
    if isinstance(f, _nnx_PathIn):
        return tuple(path) in [tuple(p) for p in f.filters]
    if isinstance(f, _nnx_OfType):
        return isinstance(v, f.filters[0])
    if isinstance(f, _nnx_Everything):
        return True
    if isinstance(f, _nnx_Nothing):
        return False
    if callable(f):
        return f(path, v)
    raise TypeError(f"Invalid filter: {f!r}")

# ---- state ----

class _nnx_StateBase(_nnx_Pytree):
    """Variables by path (nnx.State): a nested mapping whose leaves are
    variables; a pytree whose leaves are their arrays."""

    def __init__(self, mapping=None):
        self._mapping = {} if mapping is None else dict(mapping)

    def _wrap(self, v):
        if isinstance(v, dict):
            return _nnx_State(v)
        return v

    def __getitem__(self, k):
        return self._wrap(self._mapping[k])

    def __setitem__(self, k, v):
        self._mapping[k] = v._mapping if isinstance(v, _nnx_StateBase) else v

    def __getattr__(self, name):
        if name in self._mapping:
            return self._wrap(self._mapping[name])
        raise AttributeError(f"'State' object has no attribute '{name}'")

    def __contains__(self, k):
        return k in self._mapping

    def __len__(self):
        return len(self._mapping)

    def __iter__(self):
        return iter(self._mapping.keys())

    def keys(self):
        return self._mapping.keys()

    def values(self):
        return [self._wrap(v) for v in self._mapping.values()]

    def items(self):
        return [(k, self._wrap(v)) for k, v in self._mapping.items()]

    def flat_state(self):
        return _nnx_flat(self._mapping, ())

    @classmethod
    def from_flat_path(cls, flat):
        """A State from {path: variable} (or (path, variable) pairs)."""
        return _nnx_nest(list(flat.items()) if isinstance(flat, dict) else list(flat))

    def to_pure_dict(self):
        return _nnx_pure(self._mapping)

    def replace_by_pure_dict(self, pure):
        for path, v in _nnx_flat(self._mapping, ()):
            p = pure
            for k in path:
                p = p[k]
            v.value = p

    def filter(self, *filters):
        return _nnx_state_split(self.flat_state(), filters, True)

    def split(self, first, *filters):
        return _nnx_state_split(self.flat_state(), (first,) + filters, False)

    def merge(self, *states):
        return _nnx_state_merge((self,) + states)

    def __repr__(self):
        return "State(" + _nnx_mapping_repr(self._mapping, "") + ")"

_nnx_State = type("State", (_nnx_StateBase,), {})
_nnx_GraphState = _nnx_State

def _nnx_flat(mapping, path):
    out = []
    for k in _nnx_sorted_keys(mapping.keys()):
        v = mapping[k]
        if isinstance(v, dict):
            out.extend(_nnx_flat(v, path + (k,)))
        else:
            out.append((path + (k,), v))
    return out

def _nnx_pure(mapping):
    out = {}
    for k, v in mapping.items():
        out[k] = _nnx_pure(v) if isinstance(v, dict) else (v.value if isinstance(v, _nnx_VariableBase) else v)
    return out

def _nnx_nest(flat):
    """A State from (path, variable) pairs."""
    root = {}
    for path, v in flat:
        d = root
        for k in path[:-1]:
            if k not in d:
                d[k] = {}
            d = d[k]
        d[path[-1]] = v
    return _nnx_State(root)

def _nnx_state_split(flat, filters, only_first):
    """One State per filter; each variable goes to the first filter it
    matches. (`filter` keeps the matches of any; `split` needs every
    variable placed.)"""
    if only_first:
        return _nnx_nest([(p, v) for p, v in flat if any(_nnx_matches(f, p, v) for f in filters)])
    groups = [[] for _ in filters]
    for p, v in flat:
        placed = False
        for i, f in enumerate(filters):
            if _nnx_matches(f, p, v):
                groups[i].append((p, v))
                placed = True
                break
        if not placed:
            raise ValueError(f"Non-exhaustive filters, got a non-empty remainder: {p} ({type(v).__name__}). Add '...' as the last filter.")
    return tuple(_nnx_nest(g) for g in groups)

def _nnx_state_merge(states):
    flat = []
    for s in states:
        flat.extend(_nnx_flat(s._mapping, ()) if isinstance(s, _nnx_StateBase) else _nnx_flat(s, ()))
    return _nnx_nest(flat)

def _nnx_state(node, *filters):
    if isinstance(node, _nnx_StateBase):
        flat = node.flat_state()
    else:
        flat = _nnx_variables_of(node)
    if not filters:
        return _nnx_nest(flat)
    states = _nnx_state_split(flat, filters + (Ellipsis,), False)[: len(filters)]
    return states[0] if len(filters) == 1 else states

_nnx_variables = _nnx_state

def _nnx_pop(node, *filters):
    """nnx.pop: the state of the variables matching filters (one State per
    filter), removed from the objects that held them (sown intermediates)."""
    if not filters:
        raise ValueError("Expected at least one filter")
    states = _nnx_state(node, *filters)
    popped = [states] if len(filters) == 1 else list(states)
    for path, obj in _nnx_iter_graph(node):
        if isinstance(obj, _nnx_VariableBase):
            continue
        for k, v in _nnx_children(obj):
            if isinstance(v, _nnx_VariableBase) and any(_nnx_matches(f, path + (k,), v) for f in filters):
                if isinstance(obj, _nnx_PytreeBase) and not isinstance(obj, _nnx_ListBase):
                    delattr(obj, k)
    return states

@register_static
class _nnx_GraphDefBase:
    """The structure of an object graph (nnx.GraphDef): a copy of it, whose
    variables `merge` fills from states. Two compare equal when their
    graphs have the same structure (types, attribute names, static values,
    variable types and metadata, sharing), as Flax's."""

    def __init__(self, template):
        self.template = template
        self._signature = None

    def signature(self):
        if self._signature is None:
            self._signature = _nnx_graph_signature(self.template)
        return self._signature

    def __eq__(self, other):
        if self is other:
            return True
        return isinstance(other, _nnx_GraphDefBase) and self.signature() == other.signature()

    def __ne__(self, other):
        return not self.__eq__(other)

    def __hash__(self):
        return hash(self.signature())

    def __repr__(self):
        return f"GraphDef({type(self.template).__name__})"

_nnx_GraphDef = type("GraphDef", (_nnx_GraphDefBase,), {})

def _nnx_hashable(x):
    """x if it can be hashed (a static value of a graph), else its text."""
    try:
        hash(x)
        return x
    except TypeError:
        return ("unhashable", type(x).__name__, repr(x))

def _nnx_graph_signature(node):
    """A hashable description of the structure of the graph under node: what
    makes two GraphDefs equal."""
    index = {}
    def sig(value):
        if isinstance(value, (_nnx_PytreeBase, list, dict)):
            if id(value) in index:
                return ("ref", index[id(value)])
            index[id(value)] = len(index)
        if isinstance(value, _nnx_VariableBase):
            meta = tuple((k, _nnx_hashable(m)) for k, m in value._var_metadata.items())
            return ("variable", type(value).__name__, meta)
        if isinstance(value, array):
            return ("array",)
        if isinstance(value, _nnx_PytreeBase):
            return ("object", type(value).__name__, tuple((k, sig(v)) for k, v in _nnx_children(value)))
        if isinstance(value, (list, tuple, dict)):
            return (type(value).__name__, tuple((k, sig(v)) for k, v in _nnx_children(value)))
        return ("static", _nnx_hashable(value))
    return sig(node)

def _nnx_graphdef(node):
    return _nnx_GraphDef(_copy_deepcopy(node))

def _nnx_split(node, *filters):
    flat = _nnx_variables_of(node)
    if not filters:
        states = (_nnx_nest(flat),)
    else:
        states = _nnx_state_split(flat, filters, False)
    return (_nnx_graphdef(node),) + tuple(states)

def _nnx_flat_of(s):
    if isinstance(s, _nnx_StateBase):
        return s.flat_state()
    if isinstance(s, dict):
        return _nnx_flat(s, ())
    return list(s)

def _nnx_merge(graphdef, state=None, *states, copy=False):
    """nnx.merge: a new graph of graphdef's structure holding the variables
    of the states themselves (copies of them with copy=True), as Flax 0.12:
    the merged module and the states share their variables."""
    all_states = ([] if state is None else [state]) + list(states)
    if copy:
        return _nnx_merge_copy(graphdef, *all_states)
    node = _copy_deepcopy(graphdef.template)
    here = {p: v for p, v in _nnx_variables_of(node)}
    swap = {}
    rest = []
    for s in all_states:
        for path, v in _nnx_flat_of(s):
            old = here.get(path, None)
            if isinstance(v, _nnx_VariableBase) and isinstance(old, _nnx_VariableBase):
                swap[id(old)] = v
            else:
                rest.append((path, v))
    if swap:
        node = _nnx_swap_variables(node, swap, set())
    _nnx_update(node, rest)
    for _, obj in _nnx_iter_graph(node):
        if not isinstance(obj, _nnx_VariableBase):
            _nnx_sort_attributes(obj)
    return node

def _nnx_merge_copy(graphdef, *states):
    """A new graph of graphdef's structure with its own variables holding
    the states' values (what the library's transforms rebuild modules with)."""
    node = _copy_deepcopy(graphdef.template)
    _nnx_transform_update(node, *states)
    return node

def _nnx_rebuilt_tuple(old, items):
    if all(a is b for a, b in zip(items, old)):
        return old
    return type(old)(*items) if _nnx_is_namedtuple(old) else tuple(items)

def _nnx_swap_variables(value, swap, seen):
    """value with every variable whose id is in swap replaced by swap's
    (objects, lists and dicts changed in place; tuples rebuilt)."""
    if isinstance(value, _nnx_VariableBase):
        return swap.get(id(value), value)
    if isinstance(value, tuple):
        return _nnx_rebuilt_tuple(value, [_nnx_swap_variables(x, swap, seen) for x in value])
    if not isinstance(value, (_nnx_PytreeBase, list, dict)):
        return value
    if id(value) in seen:
        return value
    seen.add(id(value))
    if isinstance(value, _nnx_StateBase):
        _nnx_swap_variables(value._mapping, swap, seen)
    elif isinstance(value, list):
        for i in range(len(value)):
            new = _nnx_swap_variables(value[i], swap, seen)
            if new is not value[i]:
                value[i] = new
    elif isinstance(value, dict):
        for k in list(value.keys()):
            new = _nnx_swap_variables(value[k], swap, seen)
            if new is not value[k]:
                value[k] = new
    else:
        for k, v in list(vars(value).items()):
            new = _nnx_swap_variables(v, swap, seen)
            if new is not v:
                _object_setattr(value, k, new)
    return value

def _nnx_update(node, *states):
    """Set the variables of node at the paths of states to their values
    (other leaves, and paths node lacks, are set as they are)."""
    here = {p: v for p, v in _nnx_variables_of(node)}
    for s in states:
        for path, v in _nnx_flat_of(s):
            mine = here.get(path, None)
            if isinstance(mine, _nnx_VariableBase):
                mine.value = v.value if isinstance(v, _nnx_VariableBase) else v
            else:
                _nnx_set_path(node, path, v)

def _nnx_set_path(node, path, v):
    """Set what node holds at path to v; returns node (a tuple on the way is
    rebuilt and set back into its parent; missing dict levels are made)."""
    if not path:
        return v
    k, last = path[0], len(path) == 1
    if isinstance(node, tuple):
        items = list(node)
        items[k] = _nnx_set_path(items[k], path[1:], v)
        return _nnx_rebuilt_tuple(node, items)
    container = node._mapping if isinstance(node, _nnx_StateBase) else node
    if isinstance(container, dict):
        present = k in container
        child = None if last else (container[k] if present else {})
    elif isinstance(container, (list, _nnx_ListBase)):
        present = True
        child = None if last else container[k]
    else:
        present = True
        child = None if last else getattr(container, k)
    new = _nnx_set_path(child, path[1:], v)
    if last or not present or new is not child:
        if isinstance(container, (list, dict, _nnx_ListBase)):
            container[k] = new
        else:
            setattr(container, k, new)
    return node

def _nnx_clone(node, variables=True, *, arrays=False, graph=None):
    """nnx.clone: a deep copy (new objects and variables, the same arrays);
    variables=False shares the variables."""
    if not variables:
        return _nnx_recursive_map(lambda path, m: m, node)
    node = _copy_deepcopy(node)
    _nnx_transform_update(node)
    return node

def _nnx_to_pure_dict(tree):
    """A state (or a dict of them) as nested dicts of arrays, without the
    Variable boxes (nnx.pure, nnx.as_pure, nnx.to_pure_dict); any other
    tree as it is."""
    if isinstance(tree, _nnx_StateBase):
        return _nnx_pure(tree._mapping)
    return _nnx_pure(tree) if isinstance(tree, dict) else tree

def _nnx_replace_by_pure_dict(state, pure):
    """Set the state's variables from nested dicts of arrays (keys as
    to_pure_dict gives them; digit strings stand for list indices)."""
    state.replace_by_pure_dict(_nnx_restore_int_paths(pure))

def _nnx_restore_int_paths(pure):
    if not isinstance(pure, dict):
        return pure
    return {(int(k) if isinstance(k, str) and k.isdigit() else k): _nnx_restore_int_paths(v) for k, v in pure.items()}

def _nnx_to_flat_state(state):
    return state.flat_state()

def _nnx_from_flat_state(flat):
    return _nnx_nest(flat)

def _nnx_display(*args):
    for a in args:
        print(a)

# ---- copying state back (nnx.jit, nnx.grad) ----

def _nnx_copy_back(old, new, seen):
    """Make old's state new's, object by object, keeping old's identity (so a
    caller's references to its submodules stay valid)."""
    if id(old) in seen:
        return
    seen.add(id(old))
    if isinstance(old, _nnx_PytreeBase) and type(old) == type(new):
        for k, v in vars(new).items():
            mine = vars(old).get(k, None)
            if isinstance(mine, _nnx_PytreeBase) and type(mine) == type(v):
                _nnx_copy_back(mine, v, seen)
            elif type(mine) == list and type(v) == list and len(mine) == len(v):
                for i in range(len(mine)):
                    if isinstance(mine[i], _nnx_PytreeBase):
                        _nnx_copy_back(mine[i], v[i], seen)
                    else:
                        mine[i] = v[i]
            elif isinstance(mine, dict) and isinstance(v, dict):
                for key in v:
                    if key in mine and isinstance(mine[key], _nnx_PytreeBase):
                        _nnx_copy_back(mine[key], v[key], seen)
                    else:
                        mine[key] = v[key]
            else:
                setattr(old, k, v)
        if not isinstance(old, _nnx_VariableBase):
            _nnx_sort_attributes(old)
    elif isinstance(old, (list, tuple)) and isinstance(new, (list, tuple)):
        for a, b in zip(old, new):
            _nnx_copy_back(a, b, seen)
    elif isinstance(old, dict) and isinstance(new, dict):
        for key in old:
            if key in new:
                _nnx_copy_back(old[key], new[key], seen)

def _nnx_sort_attributes(obj):
    """Put obj's attributes in name order, as Flax leaves an object that a
    transform (nnx.jit, nnx.grad, nnx.vmap) updated (its repr then lists
    them so)."""
    names = list(vars(obj))
    if names == sorted(names):
        # The usual case after the first transform: nothing to move (each
        # delattr would rebuild the object's pytree node).
        return
    items = sorted(vars(obj).items(), key=lambda kv: kv[0])
    for k, _ in items:
        delattr(obj, k)
    for k, v in items:
        _object_setattr(obj, k, v)

def _nnx_transform_update(node, *states):
    """nnx.update as a transform ends: the state set back, each object's
    attributes then in name order (as Flax leaves them)."""
    _nnx_update(node, *states)
    for _, obj in _nnx_iter_graph(node):
        if not isinstance(obj, _nnx_VariableBase):
            _nnx_sort_attributes(obj)

def _nnx_holds_objects(x):
    return any(isinstance(v, _nnx_PytreeBase) for v in tree_leaves(x, is_leaf=lambda v: isinstance(v, _nnx_PytreeBase)))

def _nnx_shared_paths(node):
    """(path, first path) of each object or variable reached again under
    node (what a pytree walk would copy apart)."""
    first = {}
    shared = []
    def walk(path, value):
        if isinstance(value, (_nnx_PytreeBase, list, dict)):
            if id(value) in first:
                shared.append((path, first[id(value)]))
                return
            first[id(value)] = path
        if isinstance(value, _nnx_VariableBase):
            return
        if isinstance(value, (_nnx_PytreeBase, list, tuple, dict)):
            for k, child in _nnx_children(value):
                walk(path + (k,), child)
    walk((), node)
    return shared

def _nnx_get_path(node, path):
    for k in path:
        if isinstance(node, _nnx_StateBase):
            node = node._mapping[k]
        elif isinstance(node, (list, tuple, dict, _nnx_ListBase)):
            node = node[k]
        else:
            node = getattr(node, k)
    return node

def _nnx_jit(fun=None, *, static_argnums=None, static_argnames=None, donate_argnums=None,
             donate_argnames=None, in_shardings=None, out_shardings=None, **kwargs):
    """jax.jit for functions of modules: what the function does to the
    modules it is given (an optimiser step, a counter) persists."""
    if fun is None:
        return partial(_nnx_jit, static_argnums=static_argnums, static_argnames=static_argnames,
                       donate_argnums=donate_argnums, donate_argnames=donate_argnames,
                       in_shardings=in_shardings, out_shardings=out_shardings, **kwargs)
    statics = () if static_argnums is None else ((static_argnums,) if isinstance(static_argnums, int) else tuple(static_argnums))

    # The caller's arguments while a call runs: a trace (which runs pure)
    # looks at what objects and variables they share.
    calling = [None]

    def pure(*args, **kw):
        shared = []
        if calling[0] is not None:
            given, given_kw = calling[0]
            shared = _nnx_shared_paths([[None if i in statics else a for i, a in enumerate(given)], given_kw])
        if shared:
            # What the arguments share (tied layers, a model its optimizer
            # holds too), which the pytree walk copied apart, is one again.
            args = list(args)
            root = [args, kw]
            for path, first in shared:
                _nnx_set_path(root, path, _nnx_get_path(root, first))
        out = fun(*args, **kw)
        moved = [a if (i not in statics and _nnx_holds_objects(a)) else None for i, a in enumerate(args)]
        moved_kw = {k: (v if _nnx_holds_objects(v) else None) for k, v in kw.items()}
        return out, moved, moved_kw

    jit_kwargs = {}
    if static_argnums is not None:
        jit_kwargs["static_argnums"] = static_argnums
    if static_argnames is not None:
        jit_kwargs["static_argnames"] = static_argnames
    if donate_argnums is not None:
        jit_kwargs["donate_argnums"] = donate_argnums
    if donate_argnames is not None:
        jit_kwargs["donate_argnames"] = donate_argnames
    if in_shardings is not None:
        jit_kwargs["in_shardings"] = in_shardings
    if out_shardings is not None:
        jit_kwargs["out_shardings"] = (out_shardings, None, None)
    compiled = jit(pure, **jit_kwargs)

    def wrapped(*args, **kw):
        calling[0] = (args, kw)
        try:
            out, moved, moved_kw = compiled(*args, **kw)
        finally:
            calling[0] = None
        seen = set()
        for a, b in zip(args, moved):
            if b is not None:
                _nnx_copy_back(a, b, seen)
        for k, b in moved_kw.items():
            if b is not None:
                _nnx_copy_back(kw[k], b, seen)
        return out

    return wraps(fun)(wrapped)

# ---- graph copies with changed attributes: view, with_attributes, recursive_map ----

def _nnx_clone_objects(node, memo):
    """A copy of the object graph under node: new objects, lists and dicts
    (each shared one copied once), the same variables and arrays (Flax's
    clone(variables=False))."""
    if isinstance(node, _nnx_VariableBase) or not isinstance(node, (_nnx_PytreeBase, list, tuple, dict)):
        return node
    if id(node) in memo:
        return memo[id(node)]
    if isinstance(node, dict):
        out = {}
        memo[id(node)] = out
        for k, v in node.items():
            out[k] = _nnx_clone_objects(v, memo)
        return out
    if isinstance(node, list):
        out = []
        memo[id(node)] = out
        out.extend([_nnx_clone_objects(v, memo) for v in node])
        return out
    if isinstance(node, tuple):
        return tuple(_nnx_clone_objects(v, memo) for v in node)
    out = _copy_copy(node)
    memo[id(node)] = out
    if isinstance(node, _nnx_ListBase):
        for i in range(len(node)):
            out[i] = _nnx_clone_objects(node[i], memo)
    else:
        for k, v in vars(node).items():
            setattr(out, k, _nnx_clone_objects(v, memo))
    return out

def _nnx_recursive_map(f, node, *, graph=None):
    """nnx.recursive_map: f(path, node) applied to every node of a copy of
    the graph (variables shared), children before their parents; f's result
    replaces the node."""
    node = _nnx_clone_objects(node, {})
    results = {}
    def walk(path, value):
        if id(value) in results:
            return results[id(value)]
        if not isinstance(value, _nnx_VariableBase):
            for k, child in _nnx_children(value):
                new = walk(path + (k,), child)
                if new is not child:
                    if isinstance(value, _nnx_PytreeBase) and not isinstance(value, _nnx_ListBase):
                        setattr(value, k, new)
                    elif not isinstance(value, tuple):
                        value[k] = new
        out = f(path, value)
        if isinstance(value, (_nnx_PytreeBase, list, dict)):
            results[id(value)] = out
        return out
    return walk((), node)

def _nnx_view(node, *, only=Ellipsis, raise_if_not_found=True, graph=None, **kwargs):
    """nnx.view: a copy of the module sharing its variables, each module's
    set_view called with the arguments it takes (deterministic=...,
    use_running_average=...), as Flax's views."""
    remaining = set(kwargs)
    def set_mode(path, m):
        if hasattr(m, "set_view") and _nnx_matches(only, path, m):
            import inspect
            params = inspect.signature(m.set_view).parameters
            if any(p.kind == "VAR_KEYWORD" for p in params.values()):
                m.set_view(**kwargs)
                remaining.clear()
            else:
                m.set_view(**{k: v for k, v in kwargs.items() if k in params})
                for k in params:
                    remaining.discard(k)
        return m
    out = _nnx_recursive_map(set_mode, node)
    if raise_if_not_found and remaining:
        raise ValueError(f"Unused keys found in nnx.view: {sorted(remaining)}")
    return out

def _nnx_view_info(node, *, only=Ellipsis, graph=None):
    """nnx.view_info: the set_view arguments of each kind of module in node,
    with their descriptions from set_view's docstring, as Flax writes them."""
    import inspect
    classes = {}
    for path, m in _nnx_iter_graph(node):
        if hasattr(m, "set_view") and _nnx_matches(only, path, m):
            classes[type(m).__qualname__] = type(m)
    out = []
    for name in sorted(classes):
        method = classes[name].set_view
        out.append(f"{name}:")
        params = inspect.signature(method).parameters
        doc = inspect.getdoc(method)
        if isinstance(doc, str):
            start, end = doc.find("Args:\n"), doc.find("Returns:\n")
            described = _nnx_docstring_args(doc[start + 6:(len(doc) if end == -1 else end)])
            for pname, p in params.items():
                if pname in ("self", "args", "kwargs"):
                    continue
                if p.default is inspect.Parameter.empty:
                    out.append(f"  {pname}: {p.annotation}")
                else:
                    out.append(f"  {pname}: {p.annotation} = {p.default}")
                out.append(described[pname])
        else:
            out.append(f"  set_view{inspect.signature(method)}")
    return "\n".join(out)

def _nnx_docstring_args(doc):
    """The `Args:` entries of a Google-style docstring: name -> its
    description, each line indented by four spaces (Flax's parser)."""
    lines = doc.split("\n")
    starts = [i for i, l in enumerate(lines) if l.startswith("  ") and not l.startswith("    ")]
    starts.append(len(lines))
    out = {}
    for i in range(len(starts) - 1):
        first = lines[starts[i]]
        colon = first.find(":")
        desc = [" " * 4 + first[colon + 1:].strip()] + lines[starts[i] + 1:starts[i + 1]]
        out[first[:colon].strip()] = "\n".join(desc)
    return out

def _nnx_with_attributes(node, *, only=Ellipsis, raise_if_not_found=True, graph=None, **attributes):
    """nnx.with_attributes: a copy of the module sharing its variables, with
    attributes set on every module (of the filter `only`) that has them."""
    remaining = set(attributes)
    def set_attrs(path, m):
        if isinstance(m, _nnx_ModuleBase) and _nnx_matches(only, path, m):
            for name, value in attributes.items():
                if hasattr(m, name):
                    setattr(m, name, value)
                    remaining.discard(name)
        return m
    out = _nnx_recursive_map(set_attrs, node)
    if remaining and raise_if_not_found:
        raise ValueError(f"Could not find at least one instance of the following attributes: {sorted(remaining)}")
    return out

# ---- capturing intermediates: nnx.capture ----

def _nnx_capture(fn, *var_types, init=None, method_outputs=None):
    """nnx.capture: fn wrapped to return (result, State of the values sown
    into var_types) (one State per type; result alone without types). Each
    module reachable from the module argument (fn itself, a bound method's
    module, or fn's first argument) gets a `__captures__` buffer per type
    for the call, filled from `init` (perturbations) where given;
    method_outputs sows every public method's output. Called with variable
    types only, it is a decorator."""
    if isinstance(fn, type) and issubclass(fn, _nnx_VariableBase):
        types = (fn,) + var_types
        return lambda actual: _nnx_capture(actual, *types, init=init, method_outputs=method_outputs)
    owner = None
    if isinstance(fn, _nnx_ModuleBase):
        owner = fn
    elif hasattr(fn, "__self__") and isinstance(fn.__self__, _nnx_ModuleBase):
        owner = fn.__self__

    def wrapper(*args, **kwargs):
        module = args[0] if owner is None else owner
        by_path = {}
        if init is not None:
            for path, v in _nnx_flat(init._mapping if isinstance(init, _nnx_StateBase) else init, ()):
                by_path.setdefault(path[:-1], {})[path[-1]] = v
        modules = _nnx_modules_preorder(module)
        for path, m in modules:
            buffers = {t: {} for t in var_types}
            for name, v in by_path.get(path, {}).items():
                buffers.setdefault(type(v), {})[name] = v.value
            _object_setattr(m, "__captures__", tuple(t(d) for t, d in buffers.items()))
        wrapped = []
        if method_outputs is not None:
            for cls in {type(m): None for _, m in modules}:
                wrapped.extend(_nnx_add_capturing(cls, method_outputs))
        try:
            result = fn(*args, **kwargs)
        finally:
            for cls, name, method in reversed(wrapped):
                if method is None:
                    delattr(cls, name)
                else:
                    setattr(cls, name, method)
        flat = []
        for path, m in _nnx_modules_preorder(module):
            if "__captures__" in vars(m):
                for var in m.__captures__:
                    if type(var) in var_types:
                        flat.extend((path + (k,), type(var)(v)) for k, v in var.value.items())
                delattr(m, "__captures__")
        if not var_types:
            return result
        states = _nnx_state_split(flat, var_types + (Ellipsis,), False)[: len(var_types)]
        return (result,) + tuple(states) if len(var_types) > 1 else (result, states[0])
    return wrapper

def _nnx_add_capturing(cls, variable_type):
    """Wrap the public methods (and __call__) defined by cls itself so that
    each sows its output under the method's name; returns what to restore.
    A layer of this library is `type(name, (_nnx_<name>Base,), {})`: its
    base's methods are its own, as they are the class's in Flax."""
    own = dict(vars(cls))
    if len(cls.__bases__) == 1 and cls.__bases__[0].__name__ == "_nnx_" + cls.__name__ + "Base":
        own = {**vars(cls.__bases__[0]), **own}
    out = []
    for name, method in own.items():
        if callable(method) and not isinstance(method, type) and (not name.startswith("_") or name == "__call__"):
            def wrap(name, method):
                def sowing(self, *args, **kwargs):
                    result = method(self, *args, **kwargs)
                    self.sow(variable_type, name, result)
                    return result
                return sowing
            out.append((cls, name, vars(cls).get(name, None)))
            setattr(cls, name, wrap(name, method))
    return out

def _nnx_merge_state(state, *states, copy=False):
    """nnx.merge_state: one State of the variables of all states (later
    ones win on the same path)."""
    return _nnx_state_merge((state,) + states)

# nnx.graph: the object graph's functions under Flax's module name.
_nnx_graph_Key = object

def _nnx_graph_flatten(node, *, with_paths=True, graph=None):
    """nnx.graph.flatten: (graphdef, the (path, variable) pairs of node's
    state, in path order)."""
    return _nnx_graphdef(node), _nnx_variables_of(node)

def _nnx_cached_partial(f, *cached_args):
    """nnx.cached_partial: f with its first arguments (modules, optimisers)
    bound. Flax caches the graph traversal of those objects; arr's nnx.jit
    writes the state a call leaves back into the same objects, so binding
    them is all there is to do."""
    return partial(f, *cached_args)

def _nnx_iter_modules(node, *, graph=None):
    """nnx.iter_modules: (path, module) of every module under node, itself
    included, submodules before the modules holding them (Flax's order)."""
    return [(p, m) for p, m in _nnx_iter_graph_public(node) if isinstance(m, _nnx_ModuleBase)]

def _nnx_modules_preorder(node):
    """(path, module) of every module under node, parents first."""
    return [(p, m) for p, m in _nnx_iter_graph(node) if isinstance(m, _nnx_ModuleBase)]

def _nnx_iter_children(node, *, graph=None):
    """nnx.iter_children: (name, module) of node's direct submodules."""
    return node.iter_children()

# ---- control flow over modules: cond, switch, fori_loop, while_loop ----

def _nnx_pure_of(f):
    """f as a function that also returns the arguments holding objects (to
    copy their new state back into the caller's objects)."""
    def pure(*args):
        out = f(*args)
        return out, [a if _nnx_holds_objects(a) else None for a in args]
    return pure

def _nnx_copy_back_all(args, moved):
    seen = set()
    for a, b in zip(args, moved):
        if b is not None:
            _nnx_copy_back(a, b, seen)

def _nnx_cond(pred, true_fun, false_fun, *operands, **kwargs):
    """nnx.cond: lax.cond whose branches may update the modules they are given."""
    out, moved = cond(pred, _nnx_pure_of(true_fun), _nnx_pure_of(false_fun), *operands)
    _nnx_copy_back_all(operands, moved)
    return out

def _nnx_switch(index, branches, *operands, **kwargs):
    """nnx.switch: lax.switch whose branches may update the modules they are given."""
    out, moved = switch(index, [_nnx_pure_of(b) for b in branches], *operands)
    _nnx_copy_back_all(operands, moved)
    return out

def _nnx_carry_back(init_val, out):
    """The loop's result with the caller's objects (updated in place) where
    the carry held objects."""
    if _nnx_is_object(init_val):
        _nnx_copy_back(init_val, out, set())
        return init_val
    if isinstance(init_val, (tuple, list)) and len(init_val) == len(out):
        items = [_nnx_carry_back(a, b) for a, b in zip(init_val, out)]
        return items if isinstance(init_val, list) else tuple(items)
    return out

def _nnx_fori_loop(lower, upper, body_fun, init_val, *, unroll=None):
    """nnx.fori_loop: lax.fori_loop over a carry that may hold modules (their updates persist)."""
    return _nnx_carry_back(init_val, fori_loop(lower, upper, body_fun, init_val))

def _nnx_while_loop(cond_fun, body_fun, init_val):
    """nnx.while_loop: lax.while_loop over a carry that may hold modules (their updates persist)."""
    return _nnx_carry_back(init_val, while_loop(cond_fun, body_fun, init_val))

# ---- flax.traverse_util ----

class _traverse_util_EmptyNode:
    """What flatten_dict(keep_empty_nodes=True) puts where a dict was empty."""

    def __repr__(self):
        return "_EmptyNode()"

_traverse_util_empty_node = _traverse_util_EmptyNode()

def _traverse_util_flatten_dict(xs, keep_empty_nodes=False, is_leaf=None, sep=None):
    """flax.traverse_util.flatten_dict: nested dicts as one dict keyed by
    paths (tuples, or strings joined by sep)."""
    out = {}
    def walk(x, prefix):
        if isinstance(x, dict) and not (is_leaf is not None and is_leaf(prefix, x)):
            if not x and keep_empty_nodes and prefix:
                out[prefix if sep is None else sep.join(prefix)] = _traverse_util_empty_node
            for k, v in x.items():
                walk(v, prefix + (k,))
        else:
            out[prefix if sep is None else sep.join(prefix)] = x
    if not isinstance(xs, dict):
        xs = dict(xs)
    walk(xs, ())
    return out

def _traverse_util_unflatten_dict(xs, sep=None):
    """flax.traverse_util.unflatten_dict: a dict keyed by paths as nested dicts."""
    out = {}
    for path, value in xs.items():
        if sep is not None:
            path = path.split(sep)
        cursor = out
        for k in path[:-1]:
            if k not in cursor:
                cursor[k] = {}
            cursor = cursor[k]
        cursor[path[-1]] = {} if value is _traverse_util_empty_node else value
    return out

def _traverse_util_path_aware_map(f, nested_dict):
    """flax.traverse_util.path_aware_map: f(path, leaf) over nested dicts."""
    flat = _traverse_util_flatten_dict(nested_dict, keep_empty_nodes=True)
    return _traverse_util_unflatten_dict({k: (v if v is _traverse_util_empty_node else f(k, v))
                                          for k, v in flat.items()})

# ---- lifted transforms over modules: vmap, scan, split_rngs ----

class _nnx_CarryBase:
    """The marker of the carried argument and result of nnx.scan."""

    def __repr__(self):
        return "Carry"

_nnx_Carry = type("Carry", (_nnx_CarryBase,), {})()

def _nnx_is_object(x):
    return isinstance(x, _nnx_PytreeBase) and not isinstance(x, _nnx_StateBase)

def _nnx_lift(x):
    """x as (pure value, graphdef): an object becomes its state."""
    if _nnx_is_object(x):
        graphdef, state = _nnx_split(x)
        return state, graphdef
    return x, None

def _nnx_lower(x, graphdef):
    return x if graphdef is None else _nnx_merge_copy(graphdef, x)

def _nnx_lift_out(out):
    """An output (an object, or a tuple or list of outputs) as pure values
    and the graphdefs to rebuild its objects with."""
    if isinstance(out, (tuple, list)) and not _nnx_is_object(out):
        parts = [_nnx_lift_out(o) for o in out]
        return tuple(p[0] for p in parts), ("seq", type(out) == list, [p[1] for p in parts])
    value, graphdef = _nnx_lift(out)
    return value, ("one", graphdef)

def _nnx_lower_out(value, how):
    if how[0] == "seq":
        items = [_nnx_lower_out(v, h) for v, h in zip(value, how[2])]
        return items if how[1] else tuple(items)
    return _nnx_lower(value, how[1])

class _nnx_StateAxesBase:
    """nnx.StateAxes({filter: axis, ...}): a module argument's state split
    by filters, each part mapped over its own axis (None: broadcast)."""

    def __init__(self, filter_axes):
        items = list(filter_axes.items()) if isinstance(filter_axes, dict) else list(filter_axes)
        self.filters = tuple(k for k, _ in items)
        self.axes = tuple(v for _, v in items)

    def items(self):
        return list(zip(self.filters, self.axes))

    def __repr__(self):
        return "StateAxes(" + repr(dict(self.items())) + ")"

_nnx_StateAxes = type("StateAxes", (_nnx_StateAxesBase,), {})

def _nnx_vmap(f=None, *, in_axes=0, out_axes=0, axis_name=None, axis_size=None, spmd_axis_name=None,
              transform_metadata={}):
    """jax.vmap over functions of modules: a module argument is mapped over
    its state's axis (or each part of it over its own, with nnx.StateAxes;
    a new leading axis for the modules it returns), and what the function
    does to the modules it is given persists."""
    if f is None:
        return partial(_nnx_vmap, in_axes=in_axes, out_axes=out_axes, axis_name=axis_name, axis_size=axis_size,
                       transform_metadata=transform_metadata)

    def wrapped(*args):
        axes = tuple(in_axes) if isinstance(in_axes, (tuple, list)) else (in_axes,) * len(args)
        if len(axes) != len(args):
            raise ValueError(f"vmap in_axes must have one entry per argument: {len(axes)} for {len(args)} arguments")
        # Each module argument as its states (one per filter) and how to rebuild it.
        plans, xs, arg_axes = [], [], []
        for a, ax in zip(args, axes):
            if _nnx_is_object(a):
                filters, part_axes = (ax.filters, ax.axes) if isinstance(ax, _nnx_StateAxesBase) else ((Ellipsis,), (ax,))
                graphdef, *states = _nnx_split(a, *filters)
                plans.append((graphdef, filters))
                xs.append(tuple(states))
                arg_axes.append(tuple(part_axes))
            else:
                plans.append(None)
                xs.append(a)
                arg_axes.append(ax)
        shapes = []

        def pure(*parts):
            given = [x if plan is None else _nnx_merge_copy(plan[0], *x) for x, plan in zip(parts, plans)]
            value, how = _nnx_lift_out(f(*given))
            shapes.append(how)
            states = tuple(None if plan is None else tuple(_nnx_split(g, *plan[1])[1:])
                           for g, plan in zip(given, plans))
            return value, states

        state_axes = tuple(None if plan is None else ax for ax, plan in zip(arg_axes, plans))
        kwargs = {} if axis_size is None else {"axis_size": axis_size}
        if axis_name is not None:
            kwargs["axis_name"] = axis_name
        value, states = vmap(pure, in_axes=tuple(arg_axes), out_axes=(out_axes, state_axes), **kwargs)(*xs)
        for a, plan, st in zip(args, plans, states):
            if plan is not None:
                _nnx_transform_update(a, *st)
        out = _nnx_lower_out(value, shapes[-1])
        if _nnx_PARTITION_NAME in transform_metadata and isinstance(out_axes, int):
            _nnx_add_axis(out, out_axes, transform_metadata[_nnx_PARTITION_NAME])
        return out

    return wraps(f)(wrapped)

_nnx_PARTITION_NAME = "partition_name"

def _nnx_add_axis(tree, index, name):
    """The variables made under a transform that added an axis at index
    (nnx.vmap's transform_metadata={nnx.PARTITION_NAME: name}): their
    sharding names get name (a mesh axis, or None) there too."""
    for _, v in _nnx_iter_graph(tree):
        if isinstance(v, _nnx_VariableBase) and v._var_metadata.get("out_sharding", None):
            names = list(v._var_metadata["out_sharding"])
            while len(names) < index:
                names.append(None)
            names.insert(index, name)
            v._var_metadata["out_sharding"] = tuple(names)

def _nnx_scan(f=None, *, length=None, reverse=False, unroll=1, _split_transpose=False,
              in_axes=(_nnx_Carry, 0), out_axes=(_nnx_Carry, 0), transform_metadata={}):
    """lax.scan over functions of modules: the argument marked nnx.Carry is
    carried, those with an axis are scanned (a module over its state's
    leading axis: scan over layers), None ones broadcast; out_axes says
    which results are the carry and which are stacked."""
    if f is None:
        return partial(_nnx_scan, length=length, reverse=reverse, unroll=unroll, in_axes=in_axes, out_axes=out_axes)

    def wrapped(*args):
        axes = tuple(in_axes) if isinstance(in_axes, (tuple, list)) else (in_axes,) * len(args)
        if len(axes) != len(args):
            raise ValueError(f"scan in_axes must have one entry per argument: {len(axes)} for {len(args)} arguments")
        carries = [i for i, ax in enumerate(axes) if isinstance(ax, _nnx_CarryBase)]
        if len(carries) > 1:
            raise ValueError("nnx.scan: at most one argument can be nnx.Carry")
        scanned = [i for i, ax in enumerate(axes) if isinstance(ax, int) and not isinstance(ax, bool)]
        lifted = [_nnx_lift(a) for a in args]
        def leading(x, ax):
            return x if ax == 0 else tree_map(lambda v: moveaxis(v, ax, 0), x)
        carry0 = lifted[carries[0]][0] if carries else None
        xs = tuple(leading(lifted[i][0], axes[i]) for i in scanned)
        shapes = []

        def body(carry, x):
            given = list(args)
            for k, i in enumerate(scanned):
                given[i] = _nnx_lower(x[k], lifted[i][1])
            if carries:
                given[carries[0]] = _nnx_lower(carry, lifted[carries[0]][1])
            out = f(*given)
            if isinstance(out_axes, _nnx_CarryBase):
                new_carry, ys = out, None
            else:
                parts = list(out) if isinstance(out, (tuple, list)) else [out]
                new_carry = None
                stacked = []
                for part, ax in zip(parts, out_axes):
                    if isinstance(ax, _nnx_CarryBase):
                        new_carry = part
                    else:
                        stacked.append(part)
                ys = tuple(stacked)
            if carries:
                new_carry, how = _nnx_lift_out(new_carry)
                shapes.append(how)
            updates = tuple(_nnx_state(given[i]) if lifted[i][1] is not None else None for i in scanned)
            return new_carry, (ys, updates)

        carry, (ys, updates) = scan(body, carry0, xs, length=length, reverse=reverse)
        for k, i in enumerate(scanned):
            if lifted[i][1] is not None:
                _nnx_update(args[i], updates[k] if axes[i] == 0 else tree_map(lambda v: moveaxis(v, 0, axes[i]), updates[k]))
        carry = _nnx_lower_out(carry, shapes[-1]) if carries else None
        if isinstance(out_axes, _nnx_CarryBase):
            return carry
        results = []
        k = 0
        for ax in out_axes:
            if isinstance(ax, _nnx_CarryBase):
                results.append(carry)
            else:
                results.append(ys[k] if ax == 0 else tree_map(lambda v: moveaxis(v, 0, ax), ys[k]))
                k = k + 1
        return tuple(results)

    return wraps(f)(wrapped)

class _nnx_SplitBackups:
    """The streams split_rngs changed, restored on exit (a context)."""

    def __init__(self, backups):
        self.backups = backups

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        _nnx_restore_rngs(self.backups)
        return False

def _nnx_restore_rngs(backups):
    for stream, key, count in (backups.backups if isinstance(backups, _nnx_SplitBackups) else backups):
        stream.key.value = key
        stream.count.value = count

def _nnx_split_rngs(node=None, *, splits, only=Ellipsis, squeeze=False, graph=None, graph_updates=None):
    """Split every random stream reachable from node into `splits` streams
    (a key per split, counts from zero), as Flax: a decorator restoring them
    after the call, or, given a node, the backups to restore."""
    if node is None:
        def decorator(f):
            def wrapper(*args, **kwargs):
                with _nnx_split_rngs((args, kwargs), splits=splits, only=only, squeeze=squeeze):
                    return f(*args, **kwargs)
            return wraps(f)(wrapper)
        return decorator
    if squeeze and splits != 1:
        raise ValueError("squeeze=True is only supported for splits=1")
    backups = []
    for path, stream in _nnx_iter_graph(node):
        if isinstance(stream, _nnx_RngStreamBase) and _nnx_matches(only, path, stream):
            key = stream()
            backups.append((stream, stream.key[...], stream.count[...]))
            key = random.split(key, splits)
            if squeeze:
                key = key[0]
            stream.key.value = key
            count_shape = tuple(shape(stream.count[...])) if squeeze else ((splits,) if isinstance(splits, int) else tuple(splits)) + tuple(shape(stream.count[...]))
            stream.count.value = zeros(count_shape, dtype=uint32)
    return _nnx_SplitBackups(backups)

def _nnx_reseed(node, *, graph=None, policy="scalars_only", **stream_keys):
    """nnx.reseed: each stream named in stream_keys restarts from a key drawn
    from Rngs(**stream_keys) (its count back to 0), as Flax reseeds."""
    rngs = _nnx_Rngs(**stream_keys)
    for path, stream in _nnx_iter_graph(node):
        if isinstance(stream, _nnx_RngStreamBase) and stream.tag in stream_keys:
            key = rngs[stream.tag]()
            target = tuple(stream.key[...].shape)
            if policy == "scalars_only":
                if target != ():
                    raise ValueError(f"Cannot reseed stream at path {path!r} because it has a non-scalar key: "
                                     f"found key with shape {target}. If all devices should have the same key, "
                                     "use policy='match_shape'.")
            elif policy == "match_shape":
                if target != ():
                    key = random.split(key, target)
            else:
                key = policy(path, key, target)
            stream.key.value = key
            stream.count.value = zeros(tuple(key.shape), dtype=uint32)

class _nnx_DiffStateBase:
    def __init__(self, argnum, filter):
        self.argnum = argnum
        self.filter = filter

_nnx_DiffState = type("DiffState", (_nnx_DiffStateBase,), {})

def _nnx_grad_transform(f, argnums, has_aux, with_value, holomorphic=False, allow_int=False):
    single = not isinstance(argnums, (tuple, list))
    nums = (argnums,) if single else tuple(argnums)

    def wrapped(*args, **kwargs):
        plans = []
        diff = []
        for n in nums:
            wrt = _nnx_Param
            if isinstance(n, _nnx_DiffStateBase):
                n, wrt = n.argnum, n.filter
            a = args[n]
            if isinstance(a, _nnx_PytreeBase) and not isinstance(a, _nnx_StateBase):
                graphdef, params, rest = _nnx_split(a, wrt, Ellipsis)
                plans.append((n, graphdef, rest))
                diff.append(params)
            else:
                plans.append((n, None, None))
                diff.append(a)

        def pure(diff):
            new_args = list(args)
            for (n, graphdef, rest), d in zip(plans, diff):
                new_args[n] = d if graphdef is None else _nnx_merge_copy(graphdef, d, rest)
            out = f(*new_args, **kwargs)
            value, aux = out if has_aux else (out, None)
            states = [None if graphdef is None else _nnx_state(new_args[n]) for (n, graphdef, _) in plans]
            return value, (aux, states)

        (value, (aux, states)), grads = value_and_grad(pure, has_aux=True)(tuple(diff))
        for (n, graphdef, _), s in zip(plans, states):
            if graphdef is not None:
                _nnx_transform_update(args[n], s)
        grads = grads[0] if single else grads
        if with_value:
            return ((value, aux), grads) if has_aux else (value, grads)
        return (grads, aux) if has_aux else grads

    return wraps(f)(wrapped)

def _nnx_grad(f=None, argnums=0, *, has_aux=False, holomorphic=False, allow_int=False, reduce_axes=()):
    if f is None:
        return partial(_nnx_grad, argnums=argnums, has_aux=has_aux, holomorphic=holomorphic, allow_int=allow_int)
    return _nnx_grad_transform(f, argnums, has_aux, False, holomorphic, allow_int)

def _nnx_value_and_grad(f=None, argnums=0, *, has_aux=False, holomorphic=False, allow_int=False, reduce_axes=()):
    if f is None:
        return partial(_nnx_value_and_grad, argnums=argnums, has_aux=has_aux, holomorphic=holomorphic, allow_int=allow_int)
    return _nnx_grad_transform(f, argnums, has_aux, True, holomorphic, allow_int)

def _nnx_eval_shape(f, *args, **kwargs):
    """What f returns with every variable's array replaced by its
    ShapeDtypeStruct (shape, dtype and sharding): an abstract model to
    restore a checkpoint into. (f runs: its arrays are made, then dropped.)"""
    out = f(*args, **kwargs)
    for _, v in _nnx_iter_graph(out):
        if isinstance(v, _nnx_VariableBase) and isinstance(v.value, array):
            # jax.eval_shape gives its sharding as JAX's would: the array's
            # layout, replicated under a context mesh, none otherwise.
            value = v.value
            v.value = eval_shape(lambda: value)
    if _nnx_is_object(out):
        _nnx_transform_update(out)
    return out

def _nnx_get_abstract_model(init_fn, mesh, *, graph=None):
    """nnx.get_abstract_model: (graphdef, abstract state) of the model
    init_fn makes under mesh, each leaf a ShapeDtypeStruct with the sharding
    its variable's annotations give (to restore a checkpoint into)."""
    with set_mesh(mesh):
        abs_model = _nnx_eval_shape(init_fn)
        gdef, abs_state = _nnx_split(abs_model)
        shardings = _nnx_get_named_sharding(abs_state, mesh)
        abs_state = tree_map(lambda a, s: ShapeDtypeStruct(a.shape, a.dtype, sharding=s), abs_state, shardings)
    return gdef, abs_state

def _nnx_as_abstract(tree, graph=None):
    """nnx.as_abstract: abstract variables (ShapeDtypeStructs) with the
    sharding their out_sharding annotation gives over their mesh or the
    context mesh, where they have none yet."""
    for _, v in _nnx_iter_graph(tree):
        if isinstance(v, _nnx_VariableBase) and type(v.value).__name__ == "ShapeDtypeStruct":
            names = v.get_metadata().get("out_sharding", None)
            if names is not None and (v.value.sharding is None or v.value.sharding.spec == PartitionSpec()):
                spec = P(*_nnx_apply_rules(tuple(names), v.get_metadata().get("sharding_rules", None)))
                mesh = v.get_metadata().get("mesh", None)
                sharding = spec if mesh is None else NamedSharding(mesh, spec)
                v.value = ShapeDtypeStruct(v.value.shape, v.value.dtype, sharding=sharding)
    return tree


def _nnx_remat(f=None, **kwargs):
    if f is None:
        return partial(_nnx_remat, **kwargs)
    return f

_nnx_checkpoint = _nnx_remat

# ---- random streams ----

def _nnx_random_method(f):
    def method(self, *args, **kwargs):
        return f(self(), *args, **kwargs)
    return method

def _nnx_initializer_method(make):
    def method(self, *args, **kwargs):
        init = make(*args, **kwargs)
        def keyless(*init_args, **init_kwargs):
            return init(self(), *init_args, **init_kwargs)
        return keyless
    return method

class _nnx_RngMethods:
    """jax.random's functions and jax.nn.initializers' constructors as
    methods of Rngs and RngStream: each call draws the next key (Flax's
    `rngs.normal((2, 3))`, `rngs.params.uniform(...)`)."""

def _nnx_add_rng_methods():
    import jax
    for name in ["bits", "uniform", "randint", "permutation", "choice", "normal",
                 "multivariate_normal", "truncated_normal", "bernoulli", "beta", "cauchy",
                 "dirichlet", "exponential", "gamma", "loggamma", "poisson", "gumbel",
                 "categorical", "laplace", "logistic", "pareto", "t", "chisquare", "f",
                 "rademacher", "maxwell", "double_sided_maxwell", "weibull_min", "orthogonal",
                 "generalized_normal", "ball", "rayleigh", "wald", "geometric", "triangular",
                 "lognormal", "binomial", "multinomial"]:
        if hasattr(jax.random, name):
            setattr(_nnx_RngMethods, name, _nnx_random_method(getattr(jax.random, name)))
    for name in ["delta_orthogonal", "glorot_normal", "glorot_uniform", "he_normal",
                 "he_uniform", "kaiming_normal", "kaiming_uniform", "lecun_normal",
                 "lecun_uniform", "variance_scaling", "xavier_normal", "xavier_uniform"]:
        if hasattr(jax.nn.initializers, name):
            setattr(_nnx_RngMethods, name,
                    _nnx_initializer_method(getattr(jax.nn.initializers, name)))

_nnx_add_rng_methods()

class _nnx_RngStreamBase(_nnx_Pytree, _nnx_RngMethods):
    """One stream of keys (nnx.RngStream): each call folds the stream's
    counter into its key and counts on."""

    def __init__(self, key, *, tag="default"):
        if isinstance(key, int):
            key = random.key(key)
        elif isinstance(key, array) and key.dtype == uint32:
            key = random.wrap_key_data(key)
        self.tag = tag
        self.key = _nnx_RngKey(key, tag=tag)
        self.count = _nnx_RngCount(zeros(key.shape, dtype=uint32), tag=tag)

    def __call__(self):
        key = random.fold_in(self.key[...], self.count[...])
        self.count[...] = self.count[...] + 1
        return key

    def split(self, k):
        return type(self)(random.split(self(), k), tag=self.tag)

    def fork(self, *, split=None):
        key = self()
        if split is not None:
            key = random.split(key, split)
        return type(self)(key, tag=self.tag)

_nnx_RngStream = type("RngStream", (_nnx_RngStreamBase,), {})

class _nnx_RngsBase(_nnx_Pytree, _nnx_RngMethods):
    """Named streams of keys (nnx.Rngs): `rngs.params()` draws from the
    'params' stream, or from 'default' when there is none."""

    def __init__(self, default=None, **rngs):
        if default is not None:
            if isinstance(default, dict):
                rngs = {**default, **rngs}
            else:
                rngs["default"] = default
        for tag, key in rngs.items():
            if isinstance(key, _nnx_RngStreamBase):
                key = key.key[...]
            setattr(self, tag, _nnx_RngStream(key, tag=tag))

    def _stream(self, name, error):
        streams = vars(self)
        if name in streams:
            return streams[name]
        if "default" not in streams:
            raise error(f"No RngStream named '{name}' found in Rngs.")
        return streams["default"]

    def __getitem__(self, name):
        return self._stream(name, KeyError)

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return self._stream(name, AttributeError)

    def __call__(self):
        return self.default()

    def __contains__(self, name):
        return name in vars(self)

    def __len__(self):
        return len(vars(self))

    def __iter__(self):
        return iter(list(vars(self).keys()))

    def items(self):
        return list(vars(self).items())

    def fork(self, *, split=None):
        return _nnx_Rngs(**{name: s.fork(split=split) for name, s in vars(self).items()})

    def split(self, k):
        return _nnx_Rngs(**{name: s.split(k) for name, s in vars(self).items()})

_nnx_Rngs = type("Rngs", (_nnx_RngsBase,), {})

# ---- initialisers ----

def _nnx_zeros_init():
    return _init_zeros

def _nnx_ones_init():
    return _init_ones

_nnx_default_kernel_init = lecun_normal()
_nnx_default_embed_init = _init_variance_scaling(1.0, "fan_in", "normal", out_axis=0)

_nnx_dot_general = dot_general
_nnx_conv_general_dilated = conv_general_dilated

def _nnx_promote_dtype(arrays, dtype=None, inexact=True):
    return _nnx_promote(arrays, dtype)

def _nnx_canonical_tuple(x):
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)

def _nnx_promote(arrays, dtype=None):
    """Flax's promote_dtype: every array of the tuple to dtype, or to their
    common type (None stays None)."""
    present = [a for a in arrays if a is not None]
    if dtype is None:
        dtype = result_type(*present) if present else float32
    return tuple(None if a is None else asarray(a, dtype=dtype) for a in arrays)

# ---- layers ----

class _nnx_LinearBase(_nnx_Module):
    def __init__(self, in_features, out_features, *, use_bias=True, dtype=None, param_dtype=float32,
                 precision=None, kernel_init=None, bias_init=None, dot_general=None, promote_dtype=None,
                 preferred_element_type=None, rngs=None, kernel_metadata={}, bias_metadata={}):
        dot_general_fn = _nnx_dot_general if dot_general is None else dot_general
        kernel_init = _nnx_default_kernel_init if kernel_init is None else kernel_init
        bias_init = _init_zeros if bias_init is None else bias_init
        self.kernel = _nnx_Param(kernel_init(rngs.params(), (in_features, out_features), param_dtype), **kernel_metadata)
        if use_bias:
            self.bias = _nnx_Param(bias_init(rngs.params(), (out_features,), param_dtype), **bias_metadata)
        else:
            self.bias = None
        self.in_features = in_features
        self.out_features = out_features
        self.use_bias = use_bias
        self.dtype = dtype
        self.param_dtype = param_dtype
        self.precision = precision
        self.dot_general = dot_general_fn
        self.promote_dtype = _nnx_promote_dtype
        self.preferred_element_type = preferred_element_type

    def __call__(self, inputs, out_sharding=None):
        bias = None if self.bias is None else self.bias[...]
        inputs, kernel, bias = _nnx_promote((inputs, self.kernel[...], bias), self.dtype)
        y = self.dot_general(inputs, kernel, (((ndim(inputs) - 1,), (0,)), ((), ())))
        if bias is not None:
            y = y + reshape(bias, (1,) * (ndim(y) - 1) + (-1,))
        return y

_nnx_Linear = type("Linear", (_nnx_LinearBase,), {})

class _nnx_LinearGeneralBase(_nnx_Module):
    def __init__(self, in_features, out_features, *, axis=-1, batch_axis={}, use_bias=True, dtype=None,
                 param_dtype=float32, kernel_init=None, bias_init=None, precision=None, promote_dtype=None,
                 dot_general=None, dot_general_cls=None, preferred_element_type=None, rngs=None,
                 kernel_metadata={}, bias_metadata={}):
        kernel_init = _nnx_default_kernel_init if kernel_init is None else kernel_init
        bias_init = _init_zeros if bias_init is None else bias_init
        self.in_features = _nnx_canonical_tuple(in_features)
        self.out_features = _nnx_canonical_tuple(out_features)
        self.axis = _nnx_canonical_tuple(axis)
        if batch_axis:
            raise NotImplementedError("LinearGeneral with batch_axis is not supported yet")
        if len(self.in_features) != len(self.axis):
            raise ValueError(f"in_features and axis must have the same length. Got {self.in_features} and {self.axis}.")
        self.batch_axis = {}
        self.use_bias = use_bias
        self.dtype = dtype
        self.param_dtype = param_dtype
        self.precision = precision
        self.dot_general = dot_general
        self.dot_general_cls = dot_general_cls
        self.promote_dtype = _nnx_promote_dtype
        self.preferred_element_type = preferred_element_type
        flat = (math_prod(self.in_features), math_prod(self.out_features))
        kernel = _nnx_reshaped(kernel_init(rngs.params(), flat, param_dtype), self.in_features + self.out_features)
        self.kernel = _nnx_Param(kernel, **kernel_metadata)
        if use_bias:
            bias = bias_init(rngs.params(), (math_prod(self.out_features),), param_dtype)
            self.bias = _nnx_Param(_nnx_reshaped(bias, self.out_features), **bias_metadata)
        else:
            self.bias = None

    def __call__(self, inputs, out_sharding=None):
        nd = ndim(inputs)
        axis = tuple(a % nd for a in self.axis)
        bias = None if self.bias is None else self.bias[...]
        inputs, kernel, bias = _nnx_promote((inputs, self.kernel[...], bias), self.dtype)
        contract = tuple(range(len(axis)))
        out = dot_general(inputs, kernel, ((axis, contract), ((), ())))
        if bias is not None:
            batch_ones = tuple(1 for a in range(nd) if a not in axis)
            out = out + reshape(bias, batch_ones + self.out_features)
        return out

_nnx_LinearGeneral = type("LinearGeneral", (_nnx_LinearGeneralBase,), {})

def _nnx_reshaped(value, shape):
    if isinstance(value, _nnx_VariableMetadataBase):
        return _nnx_VariableMetadata(reshape(value.raw_value, shape), value.metadata)
    return reshape(value, shape)

class _nnx_EinsumBase(_nnx_Module):
    def __init__(self, einsum_str, kernel_shape, bias_shape=None, *, dtype=None, param_dtype=float32,
                 precision=None, kernel_init=None, bias_init=None, promote_dtype=None, einsum_op=None,
                 rngs=None, kernel_metadata={}, bias_metadata={}):
        kernel_init = _nnx_default_kernel_init if kernel_init is None else kernel_init
        bias_init = _init_zeros if bias_init is None else bias_init
        self.kernel = _nnx_Param(kernel_init(rngs.params(), kernel_shape, param_dtype), **kernel_metadata)
        self.bias = None if bias_shape is None else _nnx_Param(bias_init(rngs.params(), bias_shape, param_dtype), **bias_metadata)
        self.einsum_str = einsum_str.replace(" ", "")
        self.dtype = dtype

    def __call__(self, inputs, einsum_str=None):
        spec = self.einsum_str if einsum_str is None else einsum_str.replace(" ", "")
        bias = None if self.bias is None else self.bias[...]
        inputs, kernel, bias = _nnx_promote((inputs, self.kernel[...], bias), self.dtype)
        y = einsum(spec, inputs, kernel)
        if bias is not None:
            y = y + bias
        return y

_nnx_Einsum = type("Einsum", (_nnx_EinsumBase,), {})

class _nnx_EmbedBase(_nnx_Module):
    def __init__(self, num_embeddings, features, *, dtype=None, param_dtype=float32, embedding_init=None,
                 promote_dtype=None, rngs=None, embedding_metadata={}):
        embedding_init = _nnx_default_embed_init if embedding_init is None else embedding_init
        self.embedding = _nnx_Param(embedding_init(rngs.params(), (num_embeddings, features), param_dtype), **embedding_metadata)
        self.num_embeddings = num_embeddings
        self.features = features
        self.dtype = param_dtype if dtype is None else dtype
        self.param_dtype = param_dtype
        self.promote_dtype = _nnx_promote_dtype

    def __call__(self, inputs, out_sharding=None):
        if not issubdtype(inputs.dtype, integer):
            raise ValueError("Input type must be an integer or unsigned integer.")
        embedding = asarray(self.embedding[...], dtype=self.dtype)
        if self.num_embeddings == 1:
            return broadcast_to(embedding, shape(inputs) + (self.features,))
        return take(embedding, inputs, axis=0)

    def attend(self, query, out_sharding=None):
        query, embedding = _nnx_promote((query, self.embedding[...]), self.dtype)
        return dot(query, embedding.T)

_nnx_Embed = type("Embed", (_nnx_EmbedBase,), {})

def _nnx_axes(nd, axes):
    return tuple(sorted(a % nd for a in _nnx_canonical_tuple(axes)))

def _nnx_normalize(x, mean, var, scale, bias, reduction_axes, feature_axes, epsilon):
    """Flax's _normalize: (x - mean) * rsqrt(var + eps) * scale + bias."""
    nd = ndim(x)
    reduction_axes = _nnx_axes(nd, reduction_axes)
    feature_axes = _nnx_axes(nd, feature_axes)
    stats_shape = list(shape(x))
    for a in reduction_axes:
        stats_shape[a] = 1
    mean = reshape(mean, tuple(stats_shape))
    var = reshape(var, tuple(stats_shape))
    feature_shape = [1] * nd
    for a in feature_axes:
        feature_shape[a] = shape(x)[a]
    y = x - mean
    mul = rsqrt(var + epsilon)
    if scale is not None:
        mul = mul * reshape(scale, tuple(feature_shape))
    y = y * mul
    if bias is not None:
        y = y + reshape(bias, tuple(feature_shape))
    return y

_nnx_mean = mean
_nnx_where = where

def _nnx_stats(x, axes, use_mean, use_fast_variance, mask=None):
    """Flax's _compute_stats (no axis_name): mean and variance over axes."""
    axes = _nnx_axes(ndim(x), axes)
    x = asarray(x, dtype=promote_types(x.dtype, float32))
    sq = lambda v: v * v
    def mean(v, axis, where):
        if where is None:
            return _nnx_mean(v, axis=axis)
        return sum(_nnx_where(where, v, 0), axis=axis) / sum(where, axis=axis)
    if use_mean:
        if use_fast_variance:
            mu = mean(x, axis=axes, where=mask)
            mu2 = mean(sq(x), axis=axes, where=mask)
            var = maximum(0.0, mu2 - sq(mu))
        else:
            mu = mean(x, axis=axes, where=mask)
            var = mean(sq(x - expand_dims(mu, axes)), axis=axes, where=mask)
    else:
        var = mean(sq(x), axis=axes, where=mask)
        mu = zeros_like(var)
    return mu, var

class _nnx_LayerNormBase(_nnx_Module):
    def __init__(self, num_features, *, epsilon=1e-6, dtype=None, param_dtype=float32, use_bias=True,
                 use_scale=True, bias_init=None, scale_init=None, reduction_axes=-1, feature_axes=-1,
                 axis_name=None, axis_index_groups=None, use_fast_variance=True, promote_dtype=None,
                 rngs=None, bias_metadata={}, scale_metadata={}):
        bias_init = _init_zeros if bias_init is None else bias_init
        scale_init = _init_ones if scale_init is None else scale_init
        self.scale = _nnx_Param(scale_init(rngs.params(), (num_features,), param_dtype), **scale_metadata) if use_scale else None
        self.bias = _nnx_Param(bias_init(rngs.params(), (num_features,), param_dtype), **bias_metadata) if use_bias else None
        self.num_features = num_features
        self.epsilon = epsilon
        self.dtype = dtype
        self.param_dtype = param_dtype
        self.use_bias = use_bias
        self.use_scale = use_scale
        self.reduction_axes = reduction_axes
        self.feature_axes = feature_axes
        self.axis_name = axis_name
        self.axis_index_groups = axis_index_groups
        self.use_fast_variance = use_fast_variance
        self.promote_dtype = _nnx_promote_dtype

    def __call__(self, x, *, mask=None):
        scale = None if self.scale is None else self.scale[...]
        bias = None if self.bias is None else self.bias[...]
        x, scale, bias = _nnx_promote((x, scale, bias), self.dtype)
        mu, var = _nnx_stats(x, self.reduction_axes, True, self.use_fast_variance, mask)
        return _nnx_normalize(x, mu, var, scale, bias, self.reduction_axes, self.feature_axes, self.epsilon)

_nnx_LayerNorm = type("LayerNorm", (_nnx_LayerNormBase,), {})

class _nnx_GroupNormBase(_nnx_Module):
    def __init__(self, num_features, num_groups=32, group_size=None, *, epsilon=1e-6, dtype=None,
                 param_dtype=float32, use_bias=True, use_scale=True, bias_init=None, scale_init=None,
                 reduction_axes=None, axis_name=None, axis_index_groups=None, use_fast_variance=True,
                 promote_dtype=None, rngs=None, bias_metadata={}, scale_metadata={}):
        self.feature_axis = -1
        if (num_groups is None and group_size is None) or (num_groups is not None and group_size is not None):
            raise ValueError("Either `num_groups` or `group_size` should be specified. If `group_size` "
                             "is to be specified, pass `num_groups=None` as argument to override the "
                             "default `num_groups` value of 32.")
        if group_size is not None:
            if num_features % group_size != 0:
                raise ValueError(f"Number of features ({num_features}) is not multiple of the group size ({group_size}).")
            self.num_groups = num_features // group_size
            self.group_size = group_size
        else:
            if not isinstance(num_groups, int) or num_groups <= 0 or num_features % num_groups != 0:
                raise ValueError(f"Number of groups ({num_groups}) does not divide the number of channels ({num_features}).")
            self.num_groups = num_groups
            self.group_size = num_features // num_groups
        bias_init = _init_zeros if bias_init is None else bias_init
        scale_init = _init_ones if scale_init is None else scale_init
        self.scale = _nnx_Param(scale_init(rngs.params(), (num_features,), param_dtype), **scale_metadata) if use_scale else None
        self.bias = _nnx_Param(bias_init(rngs.params(), (num_features,), param_dtype), **bias_metadata) if use_bias else None
        self.epsilon = epsilon
        self.dtype = dtype
        self.param_dtype = param_dtype
        self.use_bias = use_bias
        self.use_scale = use_scale
        self.reduction_axes = reduction_axes
        self.axis_name = axis_name
        self.axis_index_groups = axis_index_groups
        self.use_fast_variance = use_fast_variance
        self.promote_dtype = _nnx_promote_dtype

    def __call__(self, x, *, mask=None):
        """Group normalization: statistics over the extra axes and each group of
        group_size channels (all axes but the leading batch one by default)."""
        nd = ndim(x)
        axes = self.reduction_axes if self.reduction_axes is not None else list(range(1, nd - 1)) + [-1]
        axes = sorted(_nnx_axes(nd, axes))
        group_shape = tuple(shape(x)[:-1]) + (self.num_groups, self.group_size)
        if mask is not None:
            mask = reshape(mask, tuple(shape(mask)[:-1]) + (self.num_groups, self.group_size))
        scale = None if self.scale is None else self.scale[...]
        bias = None if self.bias is None else self.bias[...]
        x, scale, bias = _nnx_promote((x, scale, bias), self.dtype)
        mu, var = _nnx_stats(reshape(x, group_shape), list(axes[:-1]) + [-1], True,
                             self.use_fast_variance, mask)
        mu = repeat(mu, self.group_size, axis=1)
        var = repeat(var, self.group_size, axis=1)
        return _nnx_normalize(x, mu, var, scale, bias, axes[:-1], (self.feature_axis,), self.epsilon)

_nnx_GroupNorm = type("GroupNorm", (_nnx_GroupNormBase,), {})

class _nnx_RMSNormBase(_nnx_Module):
    def __init__(self, num_features, *, epsilon=1e-6, dtype=None, param_dtype=float32, use_scale=True,
                 scale_init=None, reduction_axes=-1, feature_axes=-1, axis_name=None, axis_index_groups=None,
                 use_fast_variance=True, promote_dtype=None, rngs=None, scale_metadata={}):
        scale_init = _init_ones if scale_init is None else scale_init
        self.scale = _nnx_Param(scale_init(rngs.params(), (num_features,), param_dtype), **scale_metadata) if use_scale else None
        self.num_features = num_features
        self.epsilon = epsilon
        self.dtype = dtype
        self.param_dtype = param_dtype
        self.use_scale = use_scale
        self.reduction_axes = reduction_axes
        self.feature_axes = feature_axes
        self.axis_name = axis_name
        self.axis_index_groups = axis_index_groups
        self.use_fast_variance = use_fast_variance
        self.promote_dtype = _nnx_promote_dtype

    def __call__(self, x, mask=None):
        scale = None if self.scale is None else self.scale[...]
        x, scale = _nnx_promote((x, scale), self.dtype)
        mu, var = _nnx_stats(x, self.reduction_axes, False, self.use_fast_variance, mask)
        return _nnx_normalize(x, mu, var, scale, None, self.reduction_axes, self.feature_axes, self.epsilon)

_nnx_RMSNorm = type("RMSNorm", (_nnx_RMSNormBase,), {})

class _nnx_BatchNormBase(_nnx_Module):
    def set_view(self, use_running_average: bool | None = None):
        """Class method used by ``nnx.view``.

        Args:
          use_running_average: if True, the stored batch statistics will be
            used instead of computing the batch statistics on the input.
        """
        if use_running_average is not None:
            self.use_running_average = use_running_average

    def __init__(self, num_features, *, use_running_average=False, axis=-1, momentum=0.99, epsilon=1e-5,
                 dtype=None, param_dtype=float32, use_bias=True, use_scale=True, bias_init=None,
                 scale_init=None, axis_name=None, axis_index_groups=None, use_fast_variance=True,
                 promote_dtype=None, rngs=None, bias_metadata={}, scale_metadata={}):
        bias_init = _init_zeros if bias_init is None else bias_init
        scale_init = _init_ones if scale_init is None else scale_init
        feature_shape = (num_features,)
        self.mean = _nnx_BatchStat(zeros(feature_shape, dtype=float32))
        self.var = _nnx_BatchStat(ones(feature_shape, dtype=float32))
        self.scale = _nnx_Param(scale_init(rngs.params(), feature_shape, param_dtype), **scale_metadata) if use_scale else None
        self.bias = _nnx_Param(bias_init(rngs.params(), feature_shape, param_dtype), **bias_metadata) if use_bias else None
        self.num_features = num_features
        self.use_running_average = use_running_average
        self.axis = axis
        self.momentum = momentum
        self.epsilon = epsilon
        self.dtype = dtype
        self.param_dtype = param_dtype
        self.use_bias = use_bias
        self.use_scale = use_scale
        self.axis_name = axis_name
        self.axis_index_groups = axis_index_groups
        self.use_fast_variance = use_fast_variance
        self.promote_dtype = _nnx_promote_dtype

    def __call__(self, x, use_running_average=None, *, mask=None):
        use_running_average = self.use_running_average if use_running_average is None else use_running_average
        feature_axes = _nnx_axes(ndim(x), self.axis)
        reduction_axes = tuple(a for a in range(ndim(x)) if a not in feature_axes)
        if use_running_average:
            mu, var = self.mean[...], self.var[...]
        else:
            mu, var = _nnx_stats(x, reduction_axes, True, self.use_fast_variance, mask)
            self.mean[...] = self.momentum * self.mean[...] + (1 - self.momentum) * mu
            self.var[...] = self.momentum * self.var[...] + (1 - self.momentum) * var
        scale = None if self.scale is None else self.scale[...]
        bias = None if self.bias is None else self.bias[...]
        return _nnx_normalize(x, mu, var, scale, bias, reduction_axes, feature_axes, self.epsilon)

_nnx_BatchNorm = type("BatchNorm", (_nnx_BatchNormBase,), {})

class _nnx_DropoutBase(_nnx_Module):
    def set_view(self, deterministic: bool | None = None):
        """Class method used by ``nnx.view``.

        Args:
          deterministic: if True, disables dropout masking.
        """
        if deterministic is not None:
            self.deterministic = deterministic

    def __init__(self, rate, *, broadcast_dims=(), deterministic=False, rng_collection="dropout", rngs=None):
        self.rate = rate
        self.broadcast_dims = broadcast_dims
        self.deterministic = deterministic
        self.rng_collection = rng_collection
        if isinstance(rngs, _nnx_RngsBase):
            self.rngs = rngs[rng_collection].fork()
        elif isinstance(rngs, _nnx_RngStreamBase):
            self.rngs = rngs.fork()
        elif rngs is None:
            self.rngs = None
        else:
            raise TypeError(f"rngs must be a Rngs, RngStream or None, but got {type(rngs)}.")

    def __call__(self, inputs, *, deterministic=None, rngs=None):
        deterministic = self.deterministic if deterministic is None else deterministic
        if deterministic is None:
            raise ValueError("No `deterministic` argument was provided to Dropout.")
        if self.rate == 0.0 or deterministic:
            return inputs
        if self.rate == 1.0:
            return zeros_like(inputs)
        rngs = self.rngs if rngs is None else rngs
        if isinstance(rngs, _nnx_RngsBase):
            key = rngs[self.rng_collection]()
        elif isinstance(rngs, _nnx_RngStreamBase):
            key = rngs()
        elif isinstance(rngs, array):
            key = rngs
        else:
            raise TypeError(f"rngs must be a Rngs, RngStream or array, but got {type(rngs)}.")
        keep_prob = 1.0 - self.rate
        mask_shape = list(shape(inputs))
        for d in self.broadcast_dims:
            mask_shape[d] = 1
        mask = random.bernoulli(key, p=keep_prob, shape=tuple(mask_shape))
        mask = broadcast_to(mask, shape(inputs))
        return _lax_select(mask, inputs / keep_prob, zeros_like(inputs))

_nnx_Dropout = type("Dropout", (_nnx_DropoutBase,), {})

class _nnx_SequentialBase(_nnx_Module):
    def __init__(self, *fns):
        self.layers = _nnx_List(fns)

    def __call__(self, *args, rngs=None, **kwargs):
        if len(self.layers) == 0:
            if len(args) == 1:
                return args[0]
            return args if args else (kwargs if kwargs else None)
        output = None
        for i, f in enumerate(self.layers):
            if i > 0:
                if isinstance(output, tuple):
                    args, kwargs = output, {}
                elif isinstance(output, dict):
                    args, kwargs = (), output
                else:
                    args, kwargs = (output,), {}
            # A layer whose call takes `rngs` gets the Sequential's (Flax's rule).
            if rngs is not None and _nnx_has_keyword_arg(f, "rngs"):
                kwargs = {**kwargs, "rngs": rngs}
            output = f(*args, **kwargs)
        return output

def _nnx_has_keyword_arg(f, name):
    """Whether f (a function, or an object's __call__) takes name by keyword."""
    import inspect
    if type(f).__name__ not in ("function", "method"):
        f = getattr(f, "__call__", None)
    try:
        params = inspect.signature(f).parameters
    except ValueError:
        return False
    return name in params and params[name].kind in ("KEYWORD_ONLY", "POSITIONAL_OR_KEYWORD")

_nnx_Sequential = type("Sequential", (_nnx_SequentialBase,), {})

def _nnx_combine_masks(*masks, dtype=float32):
    masks = [m for m in masks if m is not None]
    if not masks:
        return None
    mask = masks[0]
    for other in masks[1:]:
        mask = logical_and(mask, other)
    return mask.astype(dtype)

def _nnx_make_attention_mask(query_input, key_input, pairwise_fn=multiply, extra_batch_dims=0, dtype=float32):
    mask = pairwise_fn(expand_dims(query_input, -1), expand_dims(key_input, -2))
    mask = expand_dims(mask, -3)
    mask = expand_dims(mask, tuple(range(extra_batch_dims)))
    return mask.astype(dtype)

def _nnx_make_causal_mask(x, extra_batch_dims=0, dtype=float32):
    idxs = broadcast_to(arange(shape(x)[-1], dtype=int32), shape(x))
    return _nnx_make_attention_mask(idxs, idxs, greater_equal, extra_batch_dims=extra_batch_dims, dtype=dtype)

def _nnx_dot_product_attention_weights(query, key, bias=None, mask=None, broadcast_dropout=True,
                                       dropout_rng=None, dropout_rate=0.0, deterministic=False, dtype=None,
                                       precision=None, module=None, promote_dtype=None, is_causal=False):
    query, key = _nnx_promote((query, key), dtype)
    dtype = query.dtype
    depth = shape(query)[-1]
    query = query / sqrt(asarray(depth, dtype=dtype))
    weights = einsum("...qhd,...khd->...hqk", query, key)
    if bias is not None:
        weights = weights + bias
    if mask is not None or is_causal:
        masks = [] if mask is None else [mask]
        if is_causal:
            T, S = shape(weights)[-2:]
            target = shape(weights) if mask is None else shape(mask)
            masks.append(broadcast_to(tril(ones((T, S), dtype=dtype)), target))
        weights = where(_nnx_combine_masks(*masks, dtype=dtype), weights, finfo(dtype).min)
    weights = softmax(weights).astype(dtype)
    if module is not None:
        module.sow(_nnx_Intermediate, "attention_weights", weights)
    if not deterministic and dropout_rate > 0.0:
        keep_prob = 1.0 - dropout_rate
        if broadcast_dropout:
            drop_shape = tuple([1] * (ndim(key) - 2)) + shape(weights)[-2:]
        else:
            drop_shape = shape(weights)
        keep = random.bernoulli(dropout_rng, keep_prob, drop_shape)
        weights = weights * (keep.astype(dtype) / asarray(keep_prob, dtype=dtype))
    return weights

def _nnx_dot_product_attention(query, key, value, bias=None, mask=None, broadcast_dropout=True,
                               dropout_rng=None, dropout_rate=0.0, deterministic=False, dtype=None,
                               precision=None, module=None, promote_dtype=None, is_causal=False):
    query, key, value = _nnx_promote((query, key, value), dtype)
    weights = _nnx_dot_product_attention_weights(query, key, bias, mask, broadcast_dropout, dropout_rng,
                                                 dropout_rate, deterministic, dtype, precision, module,
                                                 promote_dtype, is_causal)
    return einsum("...hqk,...khd->...qhd", weights, value)

class _nnx_MultiHeadAttentionBase(_nnx_Module):
    def set_view(self, deterministic: bool | None = None, decode: bool | None = None,
                 batch_size: int | Shape | None = None, max_length: int | None = None):
        """Class method used by ``nnx.view``.

        Args:
          deterministic: if True, the module is set to deterministic mode.
          decode: if True, the module is set to decode mode.
          batch_size: the batch size to use for the cache.
          max_length: the max length to use for the cache.
        """
        if deterministic is not None:
            self.deterministic = deterministic
        if decode is not None:
            self.decode = decode

    def __init__(self, num_heads, in_features, qkv_features=None, out_features=None, num_kv_heads=None,
                 in_kv_features=None, *, dtype=None, param_dtype=float32, broadcast_dropout=True,
                 dropout_rate=0.0, deterministic=None, precision=None, kernel_init=None,
                 out_kernel_init=None, bias_init=None, out_bias_init=None, use_bias=True,
                 attention_fn=None, decode=None, normalize_qk=False, rngs=None, keep_rngs=True,
                 kernel_metadata={}, out_kernel_metadata={}, bias_metadata={}, out_bias_metadata={}, **unused):
        kernel_init = _nnx_default_kernel_init if kernel_init is None else kernel_init
        bias_init = _init_zeros if bias_init is None else bias_init
        self.num_heads = num_heads
        self.in_features = in_features
        self.qkv_features = in_features if qkv_features is None else qkv_features
        self.out_features = in_features if out_features is None else out_features
        self.in_kv_features = in_features if in_kv_features is None else in_kv_features
        self.num_kv_heads = num_heads if num_kv_heads is None else num_kv_heads
        if self.num_heads % self.num_kv_heads != 0:
            raise ValueError(f"num_heads ({self.num_heads}) must be divisible by num_kv_heads ({self.num_kv_heads}).")
        if self.num_kv_heads != self.num_heads:
            raise NotImplementedError("grouped-query attention (num_kv_heads < num_heads) is not supported yet")
        if self.qkv_features % self.num_heads != 0:
            raise ValueError(f"Memory dimension ({self.qkv_features}) must be divisible by 'num_heads' heads ({self.num_heads}).")
        self.dtype = dtype
        self.param_dtype = param_dtype
        self.broadcast_dropout = broadcast_dropout
        self.dropout_rate = dropout_rate
        self.deterministic = deterministic
        self.use_bias = use_bias
        self.attention_fn = _nnx_dot_product_attention if attention_fn is None else attention_fn
        self.decode = decode
        self.normalize_qk = normalize_qk
        self.head_dim = self.qkv_features // self.num_heads
        def general(fin, fout):
            return _nnx_LinearGeneral(fin, fout, dtype=dtype, param_dtype=param_dtype, kernel_init=kernel_init,
                                      bias_init=bias_init, use_bias=use_bias, rngs=rngs,
                                      kernel_metadata=kernel_metadata, bias_metadata=bias_metadata)
        self.query = general(self.in_features, (self.num_heads, self.head_dim))
        self.key = general(self.in_kv_features, (self.num_kv_heads, self.head_dim))
        self.value = general(self.in_kv_features, (self.num_kv_heads, self.head_dim))
        if normalize_qk:
            self.query_ln = _nnx_LayerNorm(self.head_dim, use_bias=False, dtype=dtype, param_dtype=param_dtype, rngs=rngs)
            self.key_ln = _nnx_LayerNorm(self.head_dim, use_bias=False, dtype=dtype, param_dtype=param_dtype, rngs=rngs)
        else:
            self.query_ln = None
            self.key_ln = None
        self.out = _nnx_LinearGeneral((self.num_heads, self.head_dim), self.out_features, axis=(-2, -1),
                                      kernel_init=kernel_init if out_kernel_init is None else out_kernel_init,
                                      bias_init=bias_init if out_bias_init is None else out_bias_init,
                                      use_bias=use_bias, dtype=dtype, param_dtype=param_dtype, rngs=rngs,
                                      kernel_metadata=out_kernel_metadata or kernel_metadata,
                                      bias_metadata=out_bias_metadata or bias_metadata)
        self.rngs = rngs.dropout.fork() if keep_rngs and dropout_rate > 0 else None
        self.cached_key = None
        self.cached_value = None
        self.cache_index = None

    def __call__(self, inputs_q, inputs_k=None, inputs_v=None, *, mask=None, deterministic=None, rngs=None,
                 sow_weights=False, decode=None, is_causal=False, out_sharding=None, qkv_sharding=None):
        if rngs is None:
            rngs = self.rngs
        elif isinstance(rngs, _nnx_RngsBase):
            rngs = rngs.dropout
        if inputs_k is None:
            if inputs_v is not None:
                raise ValueError("`inputs_k` cannot be None if `inputs_v` is not None.")
            inputs_k = inputs_q
        if inputs_v is None:
            inputs_v = inputs_k
        if shape(inputs_q)[-1] != self.in_features:
            raise ValueError(f"Incompatible input dimension, got {shape(inputs_q)[-1]} but module expects {self.in_features}.")
        query = self.query(inputs_q)
        key = self.key(inputs_k)
        value = self.value(inputs_v)
        if self.normalize_qk:
            query = self.query_ln(query)
            key = self.key_ln(key)
        decode = self.decode if decode is None else decode
        if decode:
            if self.cached_key is None:
                raise ValueError("Autoregressive cache not initialized, call ``init_cache`` first.")
            cache_shape = shape(self.cached_key[...])
            batch_dims = cache_shape[:-3]
            max_length = cache_shape[-3]
            expected = tuple(batch_dims) + (1,) + tuple(cache_shape[-2:])
            if expected != shape(key):
                raise ValueError(f"Autoregressive cache shape error, expected key shape {expected} instead got {shape(key)}.")
            cur = self.cache_index[...]
            zero = asarray(0, dtype=cur.dtype)
            indices = (zero,) * len(batch_dims) + (cur, zero, zero)
            key = dynamic_update_slice(self.cached_key[...], key, indices)
            value = dynamic_update_slice(self.cached_value[...], value, indices)
            self.cached_key[...] = key
            self.cached_value[...] = value
            self.cache_index[...] = cur + 1
            mask = _nnx_combine_masks(mask, broadcast_to(arange(max_length) <= cur, tuple(batch_dims) + (1, 1, max_length)))
        if self.dropout_rate > 0.0:
            deterministic = self.deterministic if deterministic is None else deterministic
            if deterministic is None:
                raise ValueError("No `deterministic` argument was provided to MultiHeadAttention.")
            dropout_rng = None if deterministic else rngs()
        else:
            deterministic = True
            dropout_rng = None
        x = self.attention_fn(query, key, value, mask=mask, dropout_rng=dropout_rng, dropout_rate=self.dropout_rate,
                              broadcast_dropout=self.broadcast_dropout, deterministic=deterministic,
                              dtype=self.dtype, module=self if sow_weights else None, is_causal=is_causal)
        return self.out(x)

    def init_cache(self, input_shape, dtype=float32):
        cache_shape = tuple(input_shape[:-1]) + (self.num_kv_heads, self.head_dim)
        self.cached_key = _nnx_Cache(zeros(cache_shape, dtype=dtype))
        self.cached_value = _nnx_Cache(zeros(cache_shape, dtype=dtype))
        self.cache_index = _nnx_Cache(asarray(0, dtype=int32))

_nnx_MultiHeadAttention = type("MultiHeadAttention", (_nnx_MultiHeadAttentionBase,), {})

def _nnx_canonical_padding(padding, rank):
    if isinstance(padding, str):
        return padding
    if isinstance(padding, int):
        return [(padding, padding)] * rank
    if len(padding) == rank:
        return [(p, p) if isinstance(p, int) else tuple(p) for p in padding]
    raise ValueError(f"Invalid padding format: {padding}, should be str, int, or a sequence of len {rank} where each element is an int or pair of ints.")

class _nnx_ConvBase(_nnx_Module):
    def __init__(self, in_features, out_features, kernel_size, strides=1, *, padding="SAME", input_dilation=1,
                 kernel_dilation=1, feature_group_count=1, use_bias=True, mask=None, dtype=None,
                 param_dtype=float32, precision=None, kernel_init=None, bias_init=None,
                 conv_general_dilated=None, promote_dtype=None, preferred_element_type=None, rngs=None,
                 kernel_metadata={}, bias_metadata={}):
        kernel_init = _nnx_default_kernel_init if kernel_init is None else kernel_init
        bias_init = _init_zeros if bias_init is None else bias_init
        kernel_size = (kernel_size,) if isinstance(kernel_size, int) else tuple(kernel_size)
        kernel_shape = kernel_size + (in_features // feature_group_count, out_features)
        self.kernel_shape = kernel_shape
        self.kernel = _nnx_Param(kernel_init(rngs.params(), kernel_shape, param_dtype), **kernel_metadata)
        self.bias = _nnx_Param(bias_init(rngs.params(), (out_features,), param_dtype), **bias_metadata) if use_bias else None
        self.in_features = in_features
        self.out_features = out_features
        self.kernel_size = kernel_size
        self.strides = strides
        self.padding = padding
        self.input_dilation = input_dilation
        self.kernel_dilation = kernel_dilation
        self.feature_group_count = feature_group_count
        self.use_bias = use_bias
        self.mask = mask
        self.dtype = dtype
        self.param_dtype = param_dtype
        self.precision = precision
        self.conv_general_dilated = _nnx_conv_general_dilated if conv_general_dilated is None else conv_general_dilated
        self.promote_dtype = _nnx_promote_dtype
        self.preferred_element_type = preferred_element_type

    def __call__(self, inputs, out_sharding=None):
        k = self.kernel_size
        def each(v):
            v = 1 if v is None else v
            return (v,) * len(k) if isinstance(v, int) else tuple(v)
        batch_dims = ndim(inputs) - (len(k) + 1)
        if batch_dims != 1:
            batch_shape = shape(inputs)[:batch_dims]
            inputs = reshape(inputs, (-1,) + shape(inputs)[batch_dims:])
        strides, input_dilation, kernel_dilation = each(self.strides), each(self.input_dilation), each(self.kernel_dilation)
        padding = _nnx_canonical_padding(self.padding, len(k))
        if padding in ("CIRCULAR", "REFLECT"):
            spans = [(a - 1) * d + 1 for a, d in zip(k, kernel_dilation)]
            pads = [(0, 0)] + [((s - 1) // 2, s // 2) for s in spans] + [(0, 0)]
            inputs = pad(inputs, pads, mode="wrap" if padding == "CIRCULAR" else "reflect")
            padding = "VALID"
        elif padding == "CAUSAL":
            if len(k) != 1:
                raise ValueError("Causal padding is only implemented for 1D convolutions.")
            inputs = pad(inputs, [(0, 0), (kernel_dilation[0] * (k[0] - 1), 0), (0, 0)])
            padding = "VALID"
        nd = ndim(inputs)
        lhs_spec = (0, nd - 1) + tuple(range(1, nd - 1))
        rhs_spec = (nd - 1, nd - 2) + tuple(range(0, nd - 2))
        kernel = self.kernel[...]
        if self.mask is not None:
            kernel = kernel * self.mask
        bias = None if self.bias is None else self.bias[...]
        inputs, kernel, bias = _nnx_promote((inputs, kernel, bias), self.dtype)
        y = self.conv_general_dilated(inputs, kernel, strides, padding, lhs_dilation=input_dilation,
                                 rhs_dilation=kernel_dilation, dimension_numbers=(lhs_spec, rhs_spec, lhs_spec),
                                 feature_group_count=self.feature_group_count)
        if bias is not None:
            y = y + reshape(bias, (1,) * (ndim(y) - 1) + shape(bias))
        if batch_dims != 1:
            y = reshape(y, batch_shape + shape(y)[1:])
        return y

_nnx_Conv = type("Conv", (_nnx_ConvBase,), {})

def _nnx_conv_transpose_padding(k, s, padding):
    """jax.lax's padding of a transposed convolution's dimension (kernel k,
    stride s) for the forward convolution's 'SAME' or 'VALID'."""
    if padding == "SAME":
        pad_len = k + s - 2
        pad_a = k - 1 if s > k - 1 else -((-pad_len) // 2)
    elif padding == "VALID":
        pad_len = k + s - 2 + max(k - s, 0)
        pad_a = k - 1
    else:
        raise ValueError(f"Invalid padding mode: {padding}")
    return (pad_a, pad_len - pad_a)

def _nnx_conv_transpose(lhs, rhs, strides, padding, rhs_dilation, transpose_kernel):
    """lax.conv_transpose with channels-last operands (NH..C, H..IO): a
    convolution of the input dilated by the strides."""
    nd = ndim(lhs)
    lhs_spec = (0, nd - 1) + tuple(range(1, nd - 1))
    rhs_spec = (nd - 1, nd - 2) + tuple(range(0, nd - 2))
    k_sdims = shape(rhs)[: nd - 2]
    if isinstance(padding, str):
        effective = [(k - 1) * d + 1 for k, d in zip(k_sdims, rhs_dilation)]
        pads = [_nnx_conv_transpose_padding(k, s, padding) for k, s in zip(effective, strides)]
    else:
        pads = [tuple(p) for p in padding]
    if transpose_kernel:
        rhs = flip(rhs, axis=tuple(range(nd - 2)))
        rhs = swapaxes(rhs, nd - 1, nd - 2)
    return conv_general_dilated(lhs, rhs, (1,) * (nd - 2), pads, lhs_dilation=tuple(strides),
                                rhs_dilation=tuple(rhs_dilation), dimension_numbers=(lhs_spec, rhs_spec, lhs_spec))

class _nnx_ConvTransposeBase(_nnx_Module):
    def __init__(self, in_features, out_features, kernel_size, strides=None, *, padding="SAME",
                 kernel_dilation=None, use_bias=True, mask=None, dtype=None, param_dtype=float32,
                 precision=None, kernel_init=None, bias_init=None, transpose_kernel=False,
                 promote_dtype=None, preferred_element_type=None, rngs=None,
                 kernel_metadata={}, bias_metadata={}):
        kernel_init = _nnx_default_kernel_init if kernel_init is None else kernel_init
        bias_init = _init_zeros if bias_init is None else bias_init
        kernel_size = (kernel_size,) if isinstance(kernel_size, int) else tuple(kernel_size)
        self.kernel_size = kernel_size
        self.in_features = in_features
        self.out_features = out_features
        self.strides = strides
        self.padding = padding
        self.kernel_dilation = kernel_dilation
        self.use_bias = use_bias
        self.mask = mask
        self.dtype = dtype
        self.param_dtype = param_dtype
        self.precision = precision
        self.transpose_kernel = transpose_kernel
        self.promote_dtype = _nnx_promote_dtype
        self.preferred_element_type = preferred_element_type
        if transpose_kernel:
            kernel_shape = kernel_size + (out_features, in_features)
        else:
            kernel_shape = kernel_size + (in_features, out_features)
        self.kernel_shape = kernel_shape
        self.kernel = _nnx_Param(kernel_init(rngs.params(), kernel_shape, param_dtype), **kernel_metadata)
        if use_bias:
            self.bias = _nnx_Param(bias_init(rngs.params(), (out_features,), param_dtype), **bias_metadata)
        else:
            self.bias = None

    def __call__(self, inputs):
        k = self.kernel_size
        def each(v):
            v = 1 if v is None else v
            return (v,) * len(k) if isinstance(v, int) else tuple(v)
        batch_dims = ndim(inputs) - (len(k) + 1)
        if batch_dims != 1:
            batch_shape = tuple(shape(inputs)[:batch_dims])
            inputs = reshape(inputs, (-1,) + tuple(shape(inputs)[batch_dims:]))
        strides = each(self.strides)
        kernel_dilation = each(self.kernel_dilation)
        if self.mask is not None and tuple(shape(self.mask)) != tuple(self.kernel_shape):
            raise ValueError(f"Mask needs to have the same shape as weights. Shapes are: {tuple(shape(self.mask))}, {self.kernel_shape}")
        kernel = self.kernel[...]
        if self.mask is not None:
            kernel = kernel * self.mask
        padding = _nnx_canonical_padding(self.padding, len(k))
        if padding == "CIRCULAR":
            padding = "VALID"
        bias = None if self.bias is None else self.bias[...]
        inputs, kernel, bias = _nnx_promote((inputs, kernel, bias), self.dtype)
        y = _nnx_conv_transpose(inputs, kernel, strides, padding, kernel_dilation, self.transpose_kernel)
        if self.padding == "CIRCULAR":
            scaled = [xd * s for xd, s in zip(shape(inputs)[1:-1], strides)]
            diffs = [(-(yd - xd)) % (2 * xd) for yd, xd in zip(shape(y)[1:-1], scaled)]
            if self.transpose_kernel:
                total = [(d // 2, (d + 1) // 2) for d in diffs]
            else:
                total = [((d + 1) // 2, d // 2) for d in diffs]
            y = pad(y, [(0, 0)] + total + [(0, 0)])
            for i in range(1, ndim(y) - 1):
                ys = tuple(shape(y))
                y = reshape(y, ys[:i] + (-1, scaled[i - 1]) + ys[i + 1:])
                y = y.sum(axis=i)
        if bias is not None:
            y = y + reshape(bias, (1,) * (ndim(y) - 1) + (-1,))
        if batch_dims != 1:
            y = reshape(y, batch_shape + tuple(shape(y)[1:]))
        return y

_nnx_ConvTranspose = type("ConvTranspose", (_nnx_ConvTransposeBase,), {})

class _nnx_InstanceNormBase(_nnx_Module):
    def __init__(self, num_features, *, epsilon=1e-6, dtype=None, param_dtype=float32, use_bias=True,
                 use_scale=True, bias_init=None, scale_init=None, feature_axes=-1, axis_name=None,
                 axis_index_groups=None, use_fast_variance=True, promote_dtype=None, rngs=None,
                 bias_metadata={}, scale_metadata={}):
        bias_init = _init_zeros if bias_init is None else bias_init
        scale_init = _init_ones if scale_init is None else scale_init
        self.scale = _nnx_Param(scale_init(rngs.params(), (num_features,), param_dtype), **scale_metadata) if use_scale else None
        self.bias = _nnx_Param(bias_init(rngs.params(), (num_features,), param_dtype), **bias_metadata) if use_bias else None
        self.num_features = num_features
        self.epsilon = epsilon
        self.dtype = dtype
        self.param_dtype = param_dtype
        self.use_bias = use_bias
        self.use_scale = use_scale
        self.feature_axes = feature_axes
        self.axis_name = axis_name
        self.axis_index_groups = axis_index_groups
        self.use_fast_variance = use_fast_variance
        self.promote_dtype = _nnx_promote_dtype

    def __call__(self, x, *, mask=None):
        """Instance normalization: statistics of each example and feature over
        the other axes (all but the leading batch axis and the features)."""
        feature_axes = _nnx_axes(ndim(x), self.feature_axes)
        if 0 in feature_axes:
            raise ValueError("The channel axes cannot include the leading dimension as this is assumed to be the batch axis.")
        reduction_axes = tuple(i for i in range(1, ndim(x)) if i not in feature_axes)
        scale = None if self.scale is None else self.scale[...]
        bias = None if self.bias is None else self.bias[...]
        x, scale, bias = _nnx_promote((x, scale, bias), self.dtype)
        mu, var = _nnx_stats(x, reduction_axes, True, self.use_fast_variance, mask)
        return _nnx_normalize(x, mu, var, scale, bias, reduction_axes, feature_axes, self.epsilon)

_nnx_InstanceNorm = type("InstanceNorm", (_nnx_InstanceNormBase,), {})

# ---- recurrent layers ----

def _nnx_modified_orthogonal(key, shape, dtype=float32):
    """Flax's modified_orthogonal: an orthogonal matrix made in float32, then cast."""
    return _init_orthogonal()(key, shape).astype(dtype)

def _nnx_carry_stream(rngs, default):
    if rngs is None:
        rngs = default
    if isinstance(rngs, _nnx_RngsBase):
        rngs = rngs.carry
    if rngs is None:
        raise ValueError("RNGs must be provided to initialize the cell carry.")
    return rngs

class _nnx_RNNCellBaseBase(_nnx_Module):
    """The base of recurrent cells (nnx.RNNCellBase): call(carry, x) gives
    (new carry, output)."""

    def _carry_init(self, carry_init):
        if self.carry_init is None and carry_init is None:
            return _init_zeros
        return self.carry_init if carry_init is None else carry_init

    @property
    def num_feature_axes(self):
        return 1

_nnx_RNNCellBase = type("RNNCellBase", (_nnx_RNNCellBaseBase,), {})

class _nnx_LSTMCellBase(_nnx_RNNCellBase):
    def __init__(self, in_features, hidden_features, *, gate_fn=None, activation_fn=None, kernel_init=None,
                 recurrent_kernel_init=None, bias_init=None, dtype=None, param_dtype=float32, carry_init=None,
                 promote_dtype=None, keep_rngs=False, rngs=None, kernel_metadata={},
                 recurrent_kernel_metadata={}, bias_metadata={}):
        self.in_features = in_features
        self.hidden_features = hidden_features
        self.gate_fn = sigmoid if gate_fn is None else gate_fn
        self.activation_fn = tanh if activation_fn is None else activation_fn
        self.dtype = dtype
        self.param_dtype = param_dtype
        self.promote_dtype = _nnx_promote_dtype
        self.rngs = rngs.carry.fork() if keep_rngs else None
        kernel_init = _nnx_default_kernel_init if kernel_init is None else kernel_init
        recurrent_kernel_init = _nnx_modified_orthogonal if recurrent_kernel_init is None else recurrent_kernel_init
        bias_init = _init_zeros if bias_init is None else bias_init
        def dense_i():
            return _nnx_Linear(in_features, hidden_features, use_bias=False, kernel_init=kernel_init, dtype=dtype,
                               param_dtype=param_dtype, rngs=rngs, kernel_metadata=kernel_metadata)
        def dense_h():
            return _nnx_Linear(hidden_features, hidden_features, use_bias=True, kernel_init=recurrent_kernel_init,
                               bias_init=bias_init, dtype=dtype, param_dtype=param_dtype, rngs=rngs,
                               kernel_metadata=recurrent_kernel_metadata, bias_metadata=bias_metadata)
        self.ii = dense_i()
        self.if_ = dense_i()
        self.ig = dense_i()
        self.io = dense_i()
        self.hi = dense_h()
        self.hf = dense_h()
        self.hg = dense_h()
        self.ho = dense_h()
        self.carry_init = carry_init

    def __call__(self, carry, inputs):
        c, h = carry
        i = self.gate_fn(self.ii(inputs) + self.hi(h))
        f = self.gate_fn(self.if_(inputs) + self.hf(h))
        g = self.activation_fn(self.ig(inputs) + self.hg(h))
        o = self.gate_fn(self.io(inputs) + self.ho(h))
        new_c = f * c + i * g
        new_h = o * self.activation_fn(new_c)
        return (new_c, new_h), new_h

    def initialize_carry(self, input_shape, rngs=None, carry_init=None):
        rngs = _nnx_carry_stream(rngs, self.rngs)
        init = self._carry_init(carry_init)
        mem_shape = tuple(input_shape[:-1]) + (self.hidden_features,)
        c = init(rngs(), mem_shape, self.param_dtype)
        h = init(rngs(), mem_shape, self.param_dtype)
        return (c, h)

_nnx_LSTMCell = type("LSTMCell", (_nnx_LSTMCellBase,), {})

class _nnx_SimpleCellBase(_nnx_RNNCellBase):
    def __init__(self, in_features, hidden_features, *, dtype=float32, param_dtype=float32, carry_init=None,
                 residual=False, activation_fn=None, kernel_init=None, recurrent_kernel_init=None,
                 bias_init=None, promote_dtype=None, keep_rngs=False, rngs=None, kernel_metadata={},
                 recurrent_kernel_metadata={}, bias_metadata={}):
        self.in_features = in_features
        self.hidden_features = hidden_features
        self.dtype = dtype
        self.param_dtype = param_dtype
        self.residual = residual
        self.activation_fn = tanh if activation_fn is None else activation_fn
        self.promote_dtype = _nnx_promote_dtype
        self.rngs = rngs.carry.fork() if keep_rngs else None
        kernel_init = _nnx_default_kernel_init if kernel_init is None else kernel_init
        recurrent_kernel_init = _init_orthogonal() if recurrent_kernel_init is None else recurrent_kernel_init
        bias_init = _init_zeros if bias_init is None else bias_init
        self.dense_h = _nnx_Linear(hidden_features, hidden_features, use_bias=False, dtype=dtype,
                                   param_dtype=param_dtype, kernel_init=recurrent_kernel_init, rngs=rngs,
                                   kernel_metadata=recurrent_kernel_metadata)
        self.dense_i = _nnx_Linear(in_features, hidden_features, use_bias=True, dtype=dtype,
                                   param_dtype=param_dtype, kernel_init=kernel_init, bias_init=bias_init,
                                   rngs=rngs, kernel_metadata=kernel_metadata, bias_metadata=bias_metadata)
        self.carry_init = carry_init

    def __call__(self, carry, inputs):
        new_carry = self.dense_i(inputs) + self.dense_h(carry)
        if self.residual:
            new_carry = new_carry + carry
        new_carry = self.activation_fn(new_carry)
        return new_carry, new_carry

    def initialize_carry(self, input_shape, rngs=None, carry_init=None):
        rngs = _nnx_carry_stream(rngs, self.rngs)
        mem_shape = tuple(input_shape[:-1]) + (self.hidden_features,)
        return self._carry_init(carry_init)(rngs(), mem_shape, self.param_dtype)

_nnx_SimpleCell = type("SimpleCell", (_nnx_SimpleCellBase,), {})

class _nnx_GRUCellBase(_nnx_RNNCellBase):
    def __init__(self, in_features, hidden_features, *, gate_fn=None, activation_fn=None, kernel_init=None,
                 recurrent_kernel_init=None, bias_init=None, dtype=None, param_dtype=float32, carry_init=None,
                 promote_dtype=None, keep_rngs=False, rngs=None, kernel_metadata={},
                 recurrent_kernel_metadata={}, bias_metadata={}):
        self.in_features = in_features
        self.hidden_features = hidden_features
        self.gate_fn = sigmoid if gate_fn is None else gate_fn
        self.activation_fn = tanh if activation_fn is None else activation_fn
        self.dtype = dtype
        self.param_dtype = param_dtype
        self.promote_dtype = _nnx_promote_dtype
        self.rngs = rngs.carry.fork() if keep_rngs else None
        kernel_init = _nnx_default_kernel_init if kernel_init is None else kernel_init
        recurrent_kernel_init = _init_orthogonal() if recurrent_kernel_init is None else recurrent_kernel_init
        bias_init = _init_zeros if bias_init is None else bias_init
        self.dense_i = _nnx_Linear(in_features, 3 * hidden_features, use_bias=True, kernel_init=kernel_init,
                                   bias_init=bias_init, dtype=dtype, param_dtype=param_dtype, rngs=rngs,
                                   kernel_metadata=kernel_metadata, bias_metadata=bias_metadata)
        self.dense_h = _nnx_Linear(hidden_features, 3 * hidden_features, use_bias=False,
                                   kernel_init=recurrent_kernel_init, dtype=dtype, param_dtype=param_dtype,
                                   rngs=rngs, kernel_metadata=recurrent_kernel_metadata)
        self.carry_init = carry_init

    def __call__(self, carry, inputs):
        h = carry
        xi_r, xi_z, xi_n = split(self.dense_i(inputs), 3, axis=-1)
        hh_r, hh_z, hh_n = split(self.dense_h(h), 3, axis=-1)
        r = self.gate_fn(xi_r + hh_r)
        z = self.gate_fn(xi_z + hh_z)
        n = self.activation_fn(xi_n + r * hh_n)
        new_h = (1.0 - z) * n + z * h
        return new_h, new_h

    def initialize_carry(self, input_shape, rngs=None, carry_init=None):
        rngs = _nnx_carry_stream(rngs, self.rngs)
        mem_shape = tuple(input_shape[:-1]) + (self.hidden_features,)
        return self._carry_init(carry_init)(rngs(), mem_shape, self.param_dtype)

_nnx_GRUCell = type("GRUCell", (_nnx_GRUCellBase,), {})

def _nnx_flip_sequences(inputs, seq_lengths, num_batch_dims, time_major):
    """Flip sequences along the time axis, each within its length (padding
    stays at the end), as Flax's flip_sequences."""
    time_axis = 0 if time_major else num_batch_dims
    max_steps = shape(inputs)[time_axis]
    if seq_lengths is None:
        return flip(inputs, axis=time_axis)
    seq_lengths = expand_dims(seq_lengths, axis=time_axis)
    idxs = arange(max_steps - 1, -1, -1)
    if time_major:
        idxs = reshape(idxs, [max_steps] + [1] * num_batch_dims)
    else:
        idxs = reshape(idxs, [1] * num_batch_dims + [max_steps])
    idxs = (idxs + seq_lengths) % max_steps
    idxs = reshape(idxs, list(shape(idxs)) + [1] * (ndim(inputs) - ndim(idxs)))
    return take_along_axis(inputs, idxs, axis=time_axis)

class _nnx_RNNBase(_nnx_Module):
    """nnx.RNN: a cell applied over the time axis of a sequence (a scan)."""

    def __init__(self, cell, *, time_major=False, return_carry=False, reverse=False, keep_order=False,
                 unroll=1, state_axes=None, broadcast_rngs=None, rngs=True):
        self.cell = cell
        self.time_major = time_major
        self.return_carry = return_carry
        self.reverse = reverse
        self.keep_order = keep_order
        self.unroll = unroll
        if rngs is True:
            self.rngs = _nnx_RngStream(0, tag="carry")
        elif isinstance(rngs, _nnx_RngsBase):
            self.rngs = rngs.carry.fork()
        elif rngs is False:
            self.rngs = None
        else:
            raise ValueError(f"Expected rngs to be a jax.Array, int, Rngs, or bool. Got {type(rngs)}.")
        self.state_axes = state_axes or _nnx_StateAxes({Ellipsis: _nnx_Carry})
        self.broadcast_rngs = broadcast_rngs

    def __call__(self, inputs, *, initial_carry=None, seq_lengths=None, return_carry=None, time_major=None,
                 reverse=None, keep_order=None, rngs=None):
        return_carry = self.return_carry if return_carry is None else return_carry
        time_major = self.time_major if time_major is None else time_major
        reverse = self.reverse if reverse is None else reverse
        keep_order = self.keep_order if keep_order is None else keep_order
        nd = ndim(inputs)
        nfa = self.cell.num_feature_axes
        time_axis = 0 if time_major else nd - (nfa + 1)
        if time_axis < 0:
            time_axis = time_axis + nd
        in_shape = tuple(shape(inputs))
        batch_dims = in_shape[1:-nfa] if time_major else in_shape[:time_axis]
        if reverse:
            inputs = _nnx_flip_sequences(inputs, seq_lengths, len(batch_dims), time_major)
        if rngs is None:
            rngs = self.rngs
        if isinstance(rngs, _nnx_RngsBase):
            rngs = rngs.carry.fork()
        if initial_carry is None:
            carry = self.cell.initialize_carry(in_shape[:time_axis] + in_shape[time_axis + 1:], rngs)
        else:
            carry = initial_carry
        slice_carry = seq_lengths is not None and return_carry
        cell = self.cell
        def body(c, x):
            c, y = cell(c, x)
            return c, ((c, y) if slice_carry else y)
        carry, out = scan(body, carry, moveaxis(inputs, time_axis, 0))
        if slice_carry:
            carries, outputs = out
            last = seq_lengths - 1
            carry = tree_map(lambda x: x[last, arange(shape(x)[1])], carries)
        else:
            outputs = out
        outputs = tree_map(lambda y: moveaxis(y, 0, time_axis), outputs)
        if reverse and keep_order:
            outputs = _nnx_flip_sequences(outputs, seq_lengths, len(batch_dims), time_major)
        if return_carry:
            return carry, outputs
        return outputs

_nnx_RNN = type("RNN", (_nnx_RNNBase,), {})

def _nnx_pool(inputs, init, reduce_fn, window_shape, strides, padding):
    """flax's pool: reduce_window over the spatial axes (between the batch
    axes and the features)."""
    window_shape = tuple(window_shape)
    batch_dims = ndim(inputs) - (len(window_shape) + 1)
    strides = (1,) * len(window_shape) if strides is None else tuple(strides)
    strides = (1,) * batch_dims + strides + (1,)
    dims = (1,) * batch_dims + window_shape + (1,)
    single = batch_dims == 0
    if single:
        inputs = inputs[None]
        strides = (1,) + strides
        dims = (1,) + dims
    if not isinstance(padding, str):
        padding = ((0, 0),) * (len(dims) - len(window_shape) - 1) + tuple(tuple(p) for p in padding) + ((0, 0),)
    y = _lax_reduce_window(inputs, init, reduce_fn, dims, strides, padding)
    return squeeze(y, axis=0) if single else y

def _nnx_avg_pool(inputs, window_shape, strides=None, padding="VALID", count_include_pad=True):
    y = _nnx_pool(inputs, 0.0, add, window_shape, strides, padding)
    if count_include_pad:
        return y / math_prod(window_shape)
    div_shape = shape(inputs)[:-1] + (1,)
    if len(div_shape) - 2 == len(window_shape):
        div_shape = (1,) + div_shape[1:]
    return y / _nnx_pool(ones(div_shape), 0.0, add, window_shape, strides, padding)

def _nnx_max_pool(inputs, window_shape, strides=None, padding="VALID"):
    return _nnx_pool(inputs, -inf, maximum, window_shape, strides, padding)

def _nnx_min_pool(inputs, window_shape, strides=None, padding="VALID"):
    return _nnx_pool(inputs, inf, minimum, window_shape, strides, padding)

# ---- optimiser ----

def _nnx_opt_metadata(var):
    metadata = var.get_metadata()
    if "optimizer_sharding" in metadata:
        metadata["out_sharding"] = metadata.pop("optimizer_sharding")
    return metadata

def _nnx_mirrors(x, params):
    """Whether x (a part of an optax state) has the structure of the
    parameters' dict (the moments of Adam...): made from the parameters."""
    if not isinstance(x, dict) or not isinstance(params, dict) or not params:
        return False
    if set(x.keys()) != set(params.keys()):
        return False
    for k, p in params.items():
        if isinstance(p, dict):
            if not _nnx_mirrors(x[k], p):
                return False
        elif isinstance(x[k], dict):
            return False
    return True

def _nnx_to_opt_state(tree, params, param_vars):
    """An optax state with its arrays in variables, as Flax's to_opt_state:
    the parts made from the parameters a State of OptVariables (with the
    parameters' metadata), the other arrays OptArrays."""
    def mirror(x, vars_):
        out = {}
        for k in x:
            v, pv = x[k], vars_[k]
            if isinstance(pv, dict):
                out[k] = mirror(v, pv)
            elif isinstance(pv, _nnx_VariableBase) and v is not None:
                # (a MaskedNode too, where optax.masked leaves a parameter out)
                out[k] = _nnx_OptVariable(v, **_nnx_opt_metadata(pv))
            elif isinstance(v, array):
                out[k] = _nnx_OptArray(v)
            else:
                out[k] = v
        return out
    def wrap(x):
        if _nnx_mirrors(x, params):
            return _nnx_State(mirror(x, param_vars))
        if isinstance(x, array):
            return _nnx_OptArray(x)
        if _nnx_is_namedtuple(x):
            return type(x)(*[wrap(i) for i in x])
        if isinstance(x, tuple):
            return tuple(wrap(i) for i in x)
        if isinstance(x, list):
            return [wrap(i) for i in x]
        if isinstance(x, dict):
            return {k: wrap(v) for k, v in x.items()}
        return x
    return wrap(tree)

def _nnx_opt_pure(x):
    """An optimizer's state as optax made it: its variables' values, its
    States as dicts."""
    if isinstance(x, _nnx_VariableBase):
        return x.value
    if isinstance(x, _nnx_StateBase):
        return _nnx_opt_pure(x._mapping)
    if _nnx_is_namedtuple(x):
        return type(x)(*[_nnx_opt_pure(i) for i in x])
    if isinstance(x, tuple):
        return tuple(_nnx_opt_pure(i) for i in x)
    if isinstance(x, list):
        return [_nnx_opt_pure(i) for i in x]
    if isinstance(x, dict):
        return {k: _nnx_opt_pure(v) for k, v in x.items()}
    return x

def _nnx_opt_assign(old, new):
    """Put the new optax state's values in the old state's variables (in
    place, as Flax's nnx.update of opt_state); returns the state."""
    if isinstance(old, _nnx_VariableBase):
        old.value = new
        return old
    if isinstance(old, _nnx_StateBase):
        _nnx_opt_assign(old._mapping, new)
        return old
    if isinstance(old, tuple) and isinstance(new, tuple) and len(old) == len(new):
        return _nnx_rebuilt_tuple(old, [_nnx_opt_assign(o, n) for o, n in zip(old, new)])
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        for i in range(len(old)):
            old[i] = _nnx_opt_assign(old[i], new[i])
        return old
    if isinstance(old, dict) and isinstance(new, dict) and set(old.keys()) == set(new.keys()):
        for k in new:
            old[k] = _nnx_opt_assign(old[k], new[k])
        return old
    return new

class _nnx_OptimizerBase(_nnx_Pytree):
    """An optax transformation and its state for a model's variables of
    `wrt` (nnx.Optimizer): `update(model, grads)` steps the model. The optax
    state's arrays live in variables (OptArray, OptVariable), as Flax's."""

    def __init__(self, model, tx, *, wrt=None, graph=None):
        if wrt is None:
            raise TypeError("Missing required argument `wrt`. As of Flax 0.11.0 the `wrt` argument is required, e.g. `wrt=nnx.Param`.")
        self.graph = graph
        self.step = _nnx_OptState(asarray(0, dtype=uint32))
        self.tx = tx
        param_vars = _nnx_state(model, wrt)._mapping
        params = _nnx_pure(param_vars)
        self.opt_state = _nnx_to_opt_state(tx.init(params), params, param_vars)
        self.wrt = wrt

    def update(self, model, grads, **kwargs):
        params = _nnx_to_pure_dict(_nnx_state(model, self.wrt))
        grads = _nnx_to_pure_dict(_nnx_state(grads, self.wrt) if isinstance(grads, _nnx_StateBase) else grads)
        updates, new_opt_state = self.tx.update(grads, _nnx_opt_pure(self.opt_state), params, **kwargs)
        new_params = tree_map(lambda p, u: asarray(p + u).astype(asarray(p).dtype), params, updates)
        _nnx_update(model, new_params)
        self.opt_state = _nnx_opt_assign(self.opt_state, new_opt_state)
        self.step[...] = self.step[...] + 1
        return updates

_nnx_Optimizer = type("Optimizer", (_nnx_OptimizerBase,), {})

class _nnx_ModelAndOptimizerBase(_nnx_OptimizerBase):
    def __init__(self, model, tx, *, wrt=_nnx_Param):
        _nnx_OptimizerBase.__init__(self, model, tx, wrt=wrt)
        self.model = model

    def update(self, grads, **kwargs):
        return _nnx_OptimizerBase.update(self, self.model, grads, **kwargs)

_nnx_ModelAndOptimizer = type("ModelAndOptimizer", (_nnx_ModelAndOptimizerBase,), {})

# ---- metrics ----

class _nnx_MetricBase(_nnx_Pytree):
    pass

class _nnx_AverageBase(_nnx_MetricBase):
    def __init__(self, argname="values"):
        self.argname = argname
        self.total = _nnx_MetricState(asarray(0, dtype=float32))
        self.count = _nnx_MetricState(asarray(0, dtype=int32))

    def reset(self):
        self.total[...] = zeros_like(self.total[...])
        self.count[...] = zeros_like(self.count[...])

    def update(self, **kwargs):
        if self.argname not in kwargs:
            raise TypeError(f"Expected keyword argument '{self.argname}'")
        values = kwargs[self.argname]
        values = asarray(values)
        self.total[...] = self.total[...] + (values.sum() if ndim(values) > 0 else values)
        self.count[...] = self.count[...] + (size(values) if ndim(values) > 0 else 1)

    def compute(self):
        return self.total[...] / self.count[...]

_nnx_MetricState = type("MetricState", (_nnx_Variable,), {})
_nnx_Average = type("Average", (_nnx_AverageBase,), {})

class _nnx_AccuracyBase(_nnx_AverageBase):
    def __init__(self, threshold=None, argname="values"):
        _nnx_AverageBase.__init__(self, argname)
        self.threshold = threshold

    def update(self, *, logits, labels, **_):
        if self.threshold is not None:
            preds = (logits > self.threshold).astype(int32)
        else:
            preds = argmax(logits, axis=-1)
        _nnx_AverageBase.update(self, values=(preds == labels))

_nnx_Accuracy = type("Accuracy", (_nnx_AccuracyBase,), {})

class _nnx_MultiMetricBase(_nnx_MetricBase):
    def __init__(self, **metrics):
        self._metric_names = tuple(metrics.keys())
        for name, m in metrics.items():
            setattr(self, name, m)

    def reset(self):
        for name in self._metric_names:
            getattr(self, name).reset()

    def update(self, **kwargs):
        for name in self._metric_names:
            getattr(self, name).update(**kwargs)

    def compute(self):
        return {name: getattr(self, name).compute() for name in self._metric_names}

_nnx_MultiMetric = type("MultiMetric", (_nnx_MultiMetricBase,), {})

class _nnx_WelfordBase(_nnx_MetricBase):
    """nnx.metrics.Welford: the mean and variance of a stream of values
    (Welford's update, as Flax: batch means and variances merged)."""
    def __init__(self, argname="values"):
        self.argname = argname
        self.count = _nnx_MetricState(asarray(0, dtype=int32))
        self.mean = _nnx_MetricState(asarray(0, dtype=float32))
        self.m2 = _nnx_MetricState(asarray(0, dtype=float32))

    def reset(self):
        self.count[...] = asarray(0, dtype=uint32)
        self.mean[...] = asarray(0, dtype=float32)
        self.m2[...] = asarray(0, dtype=float32)

    def update(self, **kwargs):
        if self.argname not in kwargs:
            raise TypeError(f"Expected keyword argument '{self.argname}'")
        values = kwargs[self.argname]
        scalar = isinstance(values, (int, float))
        count = 1 if scalar else values.size
        original_count = self.count[...]
        self.count[...] += count
        delta = (values if scalar else values.mean()) - self.mean[...]
        self.mean[...] += delta * count / self.count[...]
        m2 = 0.0 if scalar else values.var() * count
        self.m2[...] += m2 + delta * delta * count * original_count / self.count[...]

    def compute(self):
        variance = self.m2[...] / self.count[...]
        standard_deviation = variance ** 0.5
        sem = standard_deviation / (self.count[...] ** 0.5)
        return _nnx_Statistics(mean=self.mean[...], standard_error_of_mean=sem,
                               standard_deviation=standard_deviation)

_nnx_Welford = type("Welford", (_nnx_WelfordBase,), {})

# ---- flax.struct ----

def _struct_field(pytree_node=True, *, metadata=None, **kwargs):
    """flax.struct.field: a dataclass field; pytree_node=False makes it static."""
    return field(metadata={**({} if metadata is None else metadata), "pytree_node": pytree_node},
                 **kwargs)

def _struct_dataclass(clz=None, **kwargs):
    """flax.struct.dataclass: a frozen dataclass registered as a pytree node
    (fields with pytree_node=False are its static part), with `.replace`."""
    if clz is None:
        return partial(_struct_dataclass, **kwargs)
    if "_flax_dataclass" in clz.__dict__:
        return clz
    if "frozen" not in kwargs:
        kwargs["frozen"] = True
    data_clz = dataclass(clz, **kwargs)
    data_fields = [f.name for f in fields(data_clz) if f.metadata.get("pytree_node", True)]
    meta_fields = [f.name for f in fields(data_clz) if not f.metadata.get("pytree_node", True)]
    data_clz.replace = _struct_replace
    register_dataclass(data_clz, data_fields, meta_fields)
    data_clz._flax_dataclass = True
    return data_clz

def _struct_replace(self, **updates):
    return replace(self, **updates)

class _struct_PyTreeNodeBase:
    """flax.struct.PyTreeNode: each subclass is a flax.struct.dataclass."""
    def __init_subclass__(cls, **kwargs):
        if "_struct_abstract" not in cls.__dict__:
            _struct_dataclass(cls, **kwargs)

_struct_PyTreeNode = type("PyTreeNode", (_struct_PyTreeNodeBase,), {"_struct_abstract": True})

# What nnx.metrics.Welford computes (a flax.struct.dataclass, as in Flax).
_nnx_Statistics = _struct_dataclass(type("Statistics", (), {"__annotations__": {
    "mean": object, "standard_error_of_mean": object, "standard_deviation": object}}))
_nnx_Metric = type("Metric", (_nnx_MetricBase,), {})

# ---- text ----
# Flax's reprs: a module names its variables' counts and bytes by type (the
# types in the order a walk by attribute name meets them) and shows arrays
# by shape; a variable or a state shows its values.

def _nnx_indent(text, pad):
    return text.replace("\n", "\n" + pad)

def _nnx_bytes_repr(n):
    if n > 1e9:
        return f"{n / 1e9:,.1f} GB"
    if n > 1e6:
        return f"{n / 1e6:,.1f} MB"
    if n > 1e3:
        return f"{n / 1e3:,.1f} KB"
    return f"{n:,} B"

def _nnx_size_bytes(value):
    size, nbytes = 0, 0
    for leaf in tree_leaves(value):
        if isinstance(leaf, array) or type(leaf).__name__ == "ShapeDtypeStruct":
            n = math_prod(leaf.shape)
            size = size + n
            nbytes = nbytes + n * leaf.dtype.itemsize
    return size, nbytes

def _nnx_size_repr(sb):
    return f"{sb[0]:,} ({_nnx_bytes_repr(sb[1])})"

def _nnx_collect_stats(node, stats_of):
    if id(node) in stats_of:
        return stats_of[id(node)]
    stats = {}
    stats_of[id(node)] = stats
    if isinstance(node, _nnx_VariableBase):
        kind = "RngState" if isinstance(node, _nnx_RngState) else type(node).__name__
        sb = _nnx_size_bytes(node.value)
        if sb[0]:
            stats[kind] = sb
        return stats
    for _, value in _nnx_children(node):
        if id(value) in stats_of:
            continue
        if isinstance(value, (_nnx_PytreeBase, list, tuple, dict)):
            for kind, sb in _nnx_collect_stats(value, stats_of).items():
                old = stats.get(kind, (0, 0))
                stats[kind] = (old[0] + sb[0], old[1] + sb[1])
    return stats

def _nnx_module_value_repr(v, stats_of, seen, abstract=True):
    """An attribute's value as Flax writes it in a module's repr: arrays (in
    variables too) of more than one element by shape and dtype (abstract),
    containers as Python writes them (a named tuple as a tuple), classes by
    name; modules, nnx.List and nnx.Dict by their own repr, which shows the
    values they hold in full."""
    if isinstance(v, _nnx_VariableBase):
        return _nnx_variable_repr(v, abstract)
    if isinstance(v, _nnx_StateBase):
        return "State(" + _nnx_mapping_repr(v._mapping, "", abstract) + ")"
    if isinstance(v, _nnx_PytreeBase):
        return _nnx_object_text(v, stats_of, seen)
    if isinstance(v, array):
        if abstract and math_prod(v.shape) > 1:
            return _nnx_abstract_array_repr(v)
        return repr(v)
    if isinstance(v, list):
        return "[" + ", ".join(_nnx_module_value_repr(x, stats_of, seen, abstract) for x in v) + "]"
    if isinstance(v, tuple):
        if len(v) == 1:
            return "(" + _nnx_module_value_repr(v[0], stats_of, seen, abstract) + ",)"
        return "(" + ", ".join(_nnx_module_value_repr(x, stats_of, seen, abstract) for x in v) + ")"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{k!r}: " + _nnx_module_value_repr(x, stats_of, seen, abstract) for k, x in v.items()) + "}"
    if isinstance(v, dtype):
        # Flax shows a dtype given as `jnp.float32` (a scalar type) by name.
        return str(v)
    if isinstance(v, type):
        return v.__name__
    if type(v).__name__ == "function":
        return _nnx_function_repr(v)
    return repr(v)

def _nnx_abstract_array_repr(v):
    dtype = str(v.dtype)
    if not dtype.startswith("key<"):
        dtype = f"dtype('{dtype}')"
    return f"Array(shape={v.shape}, dtype={dtype})"

def _nnx_function_repr(f):
    """A function as Python shows one (`<function name at 0x...>`), a
    partial as functools shows it, and this library's functions under
    Flax's names."""
    if hasattr(f, "func") and hasattr(f, "keywords"):
        parts = [_nnx_function_repr(f.func)] + [repr(a) for a in f.args]
        parts = parts + [f"{k}={v!r}" for k, v in f.keywords.items()]
        return "functools.partial(" + ", ".join(parts) + ")"
    name = f.__name__
    if name.startswith("_nnx_"):
        name = name[5:]
    return f"<function {name} at {hex(id(f))}>"

def _nnx_object_text(obj, stats_of, seen):
    if id(obj) in seen:
        return type(obj).__name__ + "(...)"
    seen.add(id(obj))
    stats = _nnx_collect_stats(obj, stats_of)
    comment = ""
    if stats:
        comment = " # " + ", ".join(f"{k}: {_nnx_size_repr(sb)}" for k, sb in stats.items())
        if len(stats) > 1:
            total = (sum(sb[0] for sb in stats.values()), sum(sb[1] for sb in stats.values()))
            comment = comment + f", Total: {_nnx_size_repr(total)}"
    if isinstance(obj, _nnx_ListBase):
        # Flax writes a List as a list of its items, without a size comment
        # (and its values in full).
        items = [_nnx_indent(_nnx_module_value_repr(x, stats_of, seen, False), "  ") for x in obj]
        if not items:
            return "List([])"
        return "List([\n  " + ",\n  ".join(items) + "\n])"
    if isinstance(obj, _nnx_DictBase):
        items = [f"{k!r}: " + _nnx_indent(_nnx_module_value_repr(x, stats_of, seen, False), "  ") for k, x in obj.items()]
        if not items:
            return "Dict({})"
        return "Dict({\n  " + ",\n  ".join(items) + "\n})"
    items = [(k, v) for k, v in vars(obj).items() if not k.startswith("_")]
    if not items:
        return type(obj).__name__ + "()" + comment
    lines = [type(obj).__name__ + "(" + comment]
    for i, (k, v) in enumerate(items):
        text = _nnx_indent(_nnx_module_value_repr(v, stats_of, seen), "  ")
        sep = "," if i < len(items) - 1 else ""
        lines.append(f"  {k}=" + text + sep)
    return "\n".join(lines) + "\n)"

def _nnx_object_repr(obj, pad):
    return _nnx_object_text(obj, {}, set())

def _nnx_variable_repr(var, abstract=False):
    v = var.value
    sb = _nnx_size_bytes(v)
    head = type(var).__name__ + "(" + (f" # {_nnx_size_repr(sb)}" if sb[0] else "")
    if abstract and isinstance(v, array) and math_prod(v.shape) > 1:
        text = _nnx_abstract_array_repr(v)
    elif isinstance(v, tuple):
        # (a named tuple as a tuple: optax's MaskedNode() is `()`)
        text = _nnx_module_value_repr(v, {}, set(), False)
    else:
        text = repr(v)
    lines = [head, "  value=" + _nnx_indent(text, "  ")]
    for k, m in var._var_metadata.items():
        lines[-1] = lines[-1] + ","
        lines.append(f"  {k}={m!r}")
    return "\n".join(lines) + "\n)"

def _nnx_mapping_repr(mapping, pad, abstract=False):
    if not mapping:
        return "{}"
    parts = []
    for k in mapping:
        v = mapping[k]
        if isinstance(v, dict):
            text = _nnx_mapping_repr(v, "  ", abstract)
        elif isinstance(v, _nnx_VariableBase):
            text = _nnx_indent(_nnx_variable_repr(v, abstract), "  ")
        elif abstract and isinstance(v, array) and math_prod(v.shape) > 1:
            text = _nnx_abstract_array_repr(v)
        else:
            text = _nnx_indent(repr(v), "  ")
        parts.append(f"  {k!r}: {text}")
    return _nnx_indent("{\n" + ",\n".join(parts) + "\n}", pad)

# ---- flax.training.train_state ----

class _ts_TrainStateBase:
    """flax.training.train_state.TrainState: a pytree of the step, the parameters,
    the optimiser state (and any extra fields given to create), with the model's
    apply_fn and the optax transformation tx as static fields."""

    def __init__(self, step, apply_fn, params, tx, opt_state, **extra):
        # Extra fields are those a subclass declares (`batch_stats: Any`).
        declared = []
        for c in type(self).__mro__:
            declared.extend(getattr(c, "__annotations__", {}))
        for k in extra:
            if k not in declared:
                raise TypeError(f"{type(self).__name__}.__init__() got an unexpected keyword argument '{k}'")
        self.step = step
        self.apply_fn = apply_fn
        self.params = params
        self.tx = tx
        self.opt_state = opt_state
        self._extra = tuple(extra)
        for k, v in extra.items():
            setattr(self, k, v)

    @classmethod
    def create(cls, *, apply_fn, params, tx, **kwargs):
        """A new state at step 0, the optimiser's state initialised from params."""
        return cls(step=0, apply_fn=apply_fn, params=params, tx=tx, opt_state=tx.init(params), **kwargs)

    def apply_gradients(self, *, grads, **kwargs):
        """One optimiser step: the updated parameters and optimiser state, step + 1."""
        updates, opt_state = self.tx.update(grads, self.opt_state, self.params)
        params = tree_map(lambda p, u: asarray(p + u).astype(asarray(p).dtype), self.params, updates)
        return self.replace(step=self.step + 1, params=params, opt_state=opt_state, **kwargs)

    def replace(self, **updates):
        fields = {"step": self.step, "apply_fn": self.apply_fn, "params": self.params,
                  "tx": self.tx, "opt_state": self.opt_state}
        for k in self._extra:
            fields[k] = getattr(self, k)
        fields.update(updates)
        return type(self)(**fields)

    def __repr__(self):
        extra = "".join(f", {k}={getattr(self, k)!r}" for k in self._extra)
        return f"TrainState(step={self.step!r}, apply_fn={self.apply_fn!r}, params={self.params!r}, tx={self.tx!r}, opt_state={self.opt_state!r}{extra})"

def _ts_flatten(s):
    children = (s.step, s.params, s.opt_state) + tuple(getattr(s, k) for k in s._extra)
    return children, (type(s), s.apply_fn, s.tx, s._extra)

def _ts_unflatten(aux, children):
    cls, apply_fn, tx, extra = aux
    fields = dict(zip(extra, children[3:]))
    return cls(step=children[0], apply_fn=apply_fn, params=children[1], tx=tx, opt_state=children[2], **fields)

register_pytree_node(_ts_TrainStateBase, _ts_flatten, _ts_unflatten)
_ts_TrainState = type("TrainState", (_ts_TrainStateBase,), {})
