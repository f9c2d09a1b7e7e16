# Key paths through every kind of pytree node, as the pytrees guide prints them.
import collections
from dataclasses import dataclass
import jax
import jax.numpy as jnp

ATuple = collections.namedtuple("ATuple", ('name',))
tree = [1, {'k1': 2, 'k2': (3, 4)}, ATuple('foo')]
flattened, _ = jax.tree_util.tree_flatten_with_path(tree)
for key_path, value in flattened:
    print(f'Value of tree{jax.tree_util.keystr(key_path)}: {value}')
for key_path, _ in flattened:
    print(f'Key path of tree{jax.tree_util.keystr(key_path)}: {repr(key_path)}')


@jax.tree_util.register_dataclass
@dataclass
class Params:
    w: jax.Array
    b: jax.Array


class Special:
    def __init__(self, x, y):
        self.x = x
        self.y = y


jax.tree_util.register_pytree_node(
    Special, lambda s: ((s.x, s.y), None), lambda _, c: Special(*c))

t = {'p': Params(jnp.ones(2), jnp.zeros(1)), 's': Special(1.0, 2.0)}
for path, leaf in jax.tree_util.tree_leaves_with_path(t):
    print(jax.tree_util.keystr(path), repr(path), jnp.shape(leaf))
print(jax.tree_util.tree_map_with_path(lambda p, x: len(p), t)['s'].y)
print(jax.tree_util.keystr((jax.tree_util.GetAttrKey('a'), jax.tree_util.SequenceKey(0)), simple=True, separator='/'))
print(jax.tree_util.DictKey('k') == jax.tree_util.DictKey('k'), jax.tree_util.FlattenedIndexKey(2))
