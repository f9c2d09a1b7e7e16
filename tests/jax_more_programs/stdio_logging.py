# print(file=...), sys.stdout/stderr, traceback and logging as plain Python programs use them.
from __future__ import annotations
import sys
import traceback
import logging
import jax
import jax.numpy as jnp

print("to stdout", file=sys.stdout)
print("to stderr, not in the output", file=sys.stderr)
sys.stdout.write("written: %d\n" % 3)
logging.warning("a warning goes to stderr")
logging.getLogger("arr").info("not shown")


def log_value(x):
    logging.warning(f'Logged value: {x}')


@jax.jit
def f(x):
    jax.debug.callback(log_value, x)
    return x * 2


print(f(1.0))
try:
    int("x")
except ValueError:
    text = traceback.format_exc()
    print(text.strip().splitlines()[0], "ValueError" in text)
print(traceback.format_exc().strip())
