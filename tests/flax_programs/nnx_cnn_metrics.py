# The Flax NNX MNIST tutorial's CNN and training loop, on synthetic 28x28
# images: Conv, avg_pool, Linear, MultiMetric, nnx.jit'd train and eval steps.
from functools import partial

import jax
import jax.numpy as jnp
from flax import nnx
import optax


class CNN(nnx.Module):
    """A simple CNN model."""

    def __init__(self, *, rngs: nnx.Rngs):
        self.conv1 = nnx.Conv(1, 8, kernel_size=(3, 3), rngs=rngs)
        self.conv2 = nnx.Conv(8, 16, kernel_size=(3, 3), rngs=rngs)
        self.avg_pool = partial(nnx.avg_pool, window_shape=(2, 2), strides=(2, 2))
        self.linear1 = nnx.Linear(16 * 7 * 7, 32, rngs=rngs)
        self.linear2 = nnx.Linear(32, 10, rngs=rngs)

    def __call__(self, x):
        x = self.avg_pool(nnx.relu(self.conv1(x)))
        x = self.avg_pool(nnx.relu(self.conv2(x)))
        x = x.reshape(x.shape[0], -1)  # flatten
        x = nnx.relu(self.linear1(x))
        x = self.linear2(x)
        return x


model = CNN(rngs=nnx.Rngs(0))
y = model(jnp.ones((1, 28, 28, 1)))
print(y.shape, y[0, :3])

learning_rate = 0.005
momentum = 0.9
optimizer = nnx.Optimizer(model, optax.adamw(learning_rate, momentum), wrt=nnx.Param)
metrics = nnx.MultiMetric(
    accuracy=nnx.metrics.Accuracy(),
    loss=nnx.metrics.Average('loss'),
)

key = jax.random.key(42)
images = jax.random.uniform(key, (64, 28, 28, 1))
labels = (images[:, :14, :, 0].mean(axis=(1, 2)) * 20).astype(jnp.int32) % 10


def loss_fn(model: CNN, batch):
    logits = model(batch['image'])
    loss = optax.softmax_cross_entropy_with_integer_labels(logits=logits, labels=batch['label']).mean()
    return loss, logits


@nnx.jit
def train_step(model: CNN, optimizer: nnx.Optimizer, metrics: nnx.MultiMetric, batch):
    """Train for a single step."""
    grad_fn = nnx.value_and_grad(loss_fn, has_aux=True)
    (loss, logits), grads = grad_fn(model, batch)
    metrics.update(loss=loss, logits=logits, labels=batch['label'])  # In-place updates.
    optimizer.update(model, grads)  # In-place updates.


@nnx.jit
def eval_step(model: CNN, metrics: nnx.MultiMetric, batch):
    loss, logits = loss_fn(model, batch)
    metrics.update(loss=loss, logits=logits, labels=batch['label'])  # In-place updates.


metrics_history = {'train_loss': [], 'train_accuracy': []}
for step in range(8):
    batch = {'image': images[(step % 4) * 16:(step % 4 + 1) * 16], 'label': labels[(step % 4) * 16:(step % 4 + 1) * 16]}
    train_step(model, optimizer, metrics, batch)
    if step % 4 == 3:
        for metric, value in metrics.compute().items():
            metrics_history[f'train_{metric}'].append(value)
        metrics.reset()
        print(step, metrics_history['train_loss'][-1], metrics_history['train_accuracy'][-1])

eval_step(model, metrics, {'image': images, 'label': labels})
print({k: round(float(v), 3) for k, v in metrics.compute().items()})
print(nnx.max_pool(images[:1], (3, 3), strides=(2, 2), padding='SAME').shape)
