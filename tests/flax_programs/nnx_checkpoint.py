# Flax's "save and load checkpoints" guide with Orbax: save an NNX state,
# restore it into an abstract model's state, as a pure dict too; the os
# preamble of multi-device programs.
import os
os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=8"

from flax import nnx
import numpy as np
import jax
from jax import numpy as jnp
import orbax.checkpoint as ocp
import tempfile


class TwoLayerMLP(nnx.Module):
    def __init__(self, dim, rngs: nnx.Rngs):
        self.linear1 = nnx.Linear(dim, dim, rngs=rngs, use_bias=False)
        self.linear2 = nnx.Linear(dim, dim, rngs=rngs, use_bias=False)

    def __call__(self, x):
        x = self.linear1(x)
        return self.linear2(x)


x = jax.random.normal(jax.random.key(42), (3, 4))
model = TwoLayerMLP(4, rngs=nnx.Rngs(0))
y = model(x)
ckpt_dir = ocp.test_utils.erase_and_create_empty(os.path.join(tempfile.mkdtemp(), 'my-checkpoints'))
_, state = nnx.split(model)
nnx.display(state)

checkpointer = ocp.StandardCheckpointer()
checkpointer.save(ckpt_dir / 'state', state)

abstract_model = nnx.eval_shape(lambda: TwoLayerMLP(4, rngs=nnx.Rngs(0)))
graphdef, abstract_state = nnx.split(abstract_model)
state_restored = checkpointer.restore(ckpt_dir / 'state', abstract_state)
jax.tree.map(np.testing.assert_array_equal, state, state_restored)
print('NNX State restored: ')
model = nnx.merge(graphdef, state_restored)
assert model(x).shape == (3, 4)
print(jnp.allclose(model(x), y))

pure_dict_state = nnx.to_pure_dict(state)
checkpointer.save(ckpt_dir / 'pure_dict', pure_dict_state)
restored_pure_dict = checkpointer.restore(ckpt_dir / 'pure_dict')
abstract_model = nnx.eval_shape(lambda: TwoLayerMLP(4, rngs=nnx.Rngs(0)))
graphdef, abstract_state = nnx.split(abstract_model)
nnx.replace_by_pure_dict(abstract_state, restored_pure_dict)
model = nnx.merge(graphdef, abstract_state)
print(model(x)[0], jax.device_count())
