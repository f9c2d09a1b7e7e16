# contextlib, written in arr: contextmanager, a generator function as a context
# manager (its code before the `yield` is __enter__, after it __exit__; an error of
# the `with` body is raised at the `yield`). nullcontext and suppress are builtins.
# Loaded at the first `import contextlib` (lib.rs's LIBRARIES).

class _GeneratorContextManager:
    def __init__(self, gen):
        self.gen = gen

    def __enter__(self):
        try:
            return next(self.gen)
        except StopIteration:
            raise RuntimeError("generator didn't yield") from None

    def __exit__(self, typ, value, traceback):
        if typ is None:
            try:
                next(self.gen)
            except StopIteration:
                return False
            raise RuntimeError("generator didn't stop")
        try:
            self.gen.throw(value)
        except StopIteration as exc:
            # The generator caught the error and ended: the error is swallowed.
            return exc is not value
        except BaseException as exc:
            if exc is value:
                return False
            raise
        raise RuntimeError("generator didn't stop after throw()")


def contextmanager(func):
    """contextlib.contextmanager: a generator function that yields once becomes a
    function whose calls are context managers."""
    def helper(*args, **kwds):
        return _GeneratorContextManager(func(*args, **kwds))
    return helper
