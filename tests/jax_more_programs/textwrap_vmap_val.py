# textwrap, and peeking at a vmap tracer's batched value (x.val), as the transformations guide does.
import textwrap
import jax, jax.numpy as jnp
print(textwrap.fill("The quick brown fox jumps over the lazy dog " * 4, width=30))
print(textwrap.dedent("""
    a
      b
    c"""))
print(textwrap.indent("x\ny\n\nz", "> "))
jax.vmap(lambda x: print(x.val))(jnp.arange(3.0))
