# jax.tree_util.all_leaves: scalars and arrays are leaves; containers, None and registered nodes are not (unless is_leaf says so).
import jax, jax.numpy as jnp
from jax import tree_util
print(tree_util.all_leaves([1, 2.0, jnp.ones(2)]), tree_util.all_leaves([1, [2]]), tree_util.all_leaves([None]), tree_util.all_leaves([]))
print(tree_util.all_leaves([(1, 2), 3], is_leaf=lambda x: isinstance(x, tuple)))
print(jax.tree_util.all_leaves(iter([1, {"a": 1}])))
