//! Exceptions and the statements around them, end to end: try/except/else/
//! finally, raise, exception classes and instances, errors of the runtime
//! caught by their Python class, with, del, and the smaller syntax (sets,
//! `:=`, `{x=}` f-strings) with the builtins that go with them. Every
//! expectation is what CPython (with JAX, for the array cases) prints for
//! the same program.

use arr_testkit::check_output as check;
use expect_test::expect;

/// try/except/else/finally: return, break and continue through finally, nesting,
/// re-raise, tuples of classes, raise of a non-exception, the unbound handler
/// name, raise from, KeyboardInterrupt past `except Exception`.
#[test]
fn try_except_else_finally_control_flow() {
    check(
        r#"
def f(x):
    try:
        if x == 0:
            return "zero"
        r = 10 // x
    except ZeroDivisionError:
        return "div"
    else:
        return f"ok {r}"
    finally:
        print("finally", x)


print(f(0), f(5))


def g():
    try:
        return "body"
    finally:
        return "finally wins"


print(g())


def h():
    for i in range(5):
        try:
            if i == 1:
                continue
            if i == 3:
                break
            print("body", i)
        finally:
            print("fin", i)
    return i


print(h())


def nested():
    try:
        try:
            [1, 2][5]
        except KeyError:
            print("not here")
        finally:
            print("inner finally")
    except LookupError as e:
        print("outer", type(e).__name__)


nested()


def reraise():
    try:
        {}["k"]
    except KeyError as e:
        print("handling", repr(e))
        raise


try:
    reraise()
except Exception as e:
    print("reraised", type(e).__name__, e.args)
try:
    raise ValueError
except (TypeError, ValueError) as e:
    print("tuple", repr(e), e.args)
try:
    raise ValueError("bad", 3)
except Exception as e:
    print(str(e), repr(e), e.args)
try:
    raise 5
except TypeError as e:
    print("TypeError:", e)
try:
    1 / 0
except ZeroDivisionError as err:
    pass
try:
    err
except NameError as e:
    print("unbound:", e)
try:
    undefined_name
except:
    print("bare except")
try:
    raise RuntimeError("wrapped") from KeyError("missing")
except RuntimeError as outer:
    print(type(outer).__name__, repr(outer.__cause__))
try:
    try:
        raise KeyboardInterrupt
    except Exception:
        print("wrong")
except BaseException as e:
    print("base", type(e).__name__)
"#,
        expect![[r#"
            finally 0
            finally 5
            zero ok 2
            finally wins
            body 0
            fin 0
            fin 1
            body 2
            fin 2
            fin 3
            3
            inner finally
            outer IndexError
            handling KeyError('k')
            reraised KeyError ('k',)
            tuple ValueError() ()
            ('bad', 3) ValueError('bad', 3) ('bad', 3)
            TypeError: exceptions must derive from BaseException
            unbound: name 'err' is not defined
            bare except
            RuntimeError KeyError('missing')
            base KeyboardInterrupt
        "#]],
    );
}

/// The class hierarchy (Python's and jax.errors'), instances' args, str,
/// repr, type and isinstance.
#[test]
fn exception_classes_and_instances() {
    check(
        r#"
for exc in [ZeroDivisionError, OverflowError, IndexError, KeyError, ValueError, RecursionError,
            NotImplementedError, MemoryError, FileNotFoundError]:
    try:
        raise exc("m")
    except ArithmeticError:
        print(exc.__name__, "ArithmeticError")
    except LookupError:
        print(exc.__name__, "LookupError")
    except RuntimeError:
        print(exc.__name__, "RuntimeError")
    except OSError:
        print(exc.__name__, "OSError")
    except Exception:
        print(exc.__name__, "Exception")
e = ValueError("bad", 3)
print(isinstance(e, ValueError), isinstance(e, Exception), isinstance(e, TypeError))
print(type(e).__name__, type(e) is ValueError, IOError is OSError, repr(ValueError()))
print(str(KeyError("k")), str(ValueError("v")), str(ValueError()), ValueError)
print(ConcretizationTypeError.__base__.__base__.__name__, TracerBoolConversionError.__base__.__name__)
print(NonConcreteBooleanIndexError.__base__.__base__.__name__)
print(issubclass(TracerBoolConversionError, TypeError), issubclass(KeyError, (ValueError, LookupError)))
print(issubclass(KeyboardInterrupt, Exception), issubclass(ModuleNotFoundError, ImportError))
"#,
        expect![[r#"
            ZeroDivisionError ArithmeticError
            OverflowError ArithmeticError
            IndexError LookupError
            KeyError LookupError
            ValueError Exception
            RecursionError RuntimeError
            NotImplementedError RuntimeError
            MemoryError Exception
            FileNotFoundError OSError
            True True False
            ValueError True True ValueError()
            'k' v  <class 'ValueError'>
            TypeError ConcretizationTypeError
            IndexError
            True True
            False True
        "#]],
    );
}

/// Errors the runtime raises, caught as the classes JAX raises: shape
/// mismatches, indexing, dict keys, division, concretization under jit.
#[test]
fn runtime_errors_are_caught_by_their_python_class() {
    check(
        r#"
a = jnp.ones((2, 3))
b = jnp.ones((4,))
for name, thunk in [("matmul", lambda: a @ b), ("add", lambda: a + b),
                    ("reshape", lambda: a.reshape(5)), ("same rank", lambda: jnp.ones(3) + jnp.ones(4))]:
    try:
        thunk()
    except TypeError as e:
        print(name, "TypeError")
    except ValueError as e:
        print(name, "ValueError")
try:
    jnp.arange(3)[0, 0]
except IndexError:
    print("IndexError")
try:
    {"a": 1}["b"]
except KeyError as e:
    print("KeyError", e, repr(e), e.args)
try:
    1 / 0
except ArithmeticError as e:
    print(type(e).__name__)
try:
    [][0]
except LookupError as e:
    print(type(e).__name__)


def relu(x):
    if x > 0:
        return x
    return 0.0 * x


for label, fn, arg in [("bool", relu, 2.0), ("range", lambda n: jnp.arange(n), 3), ("int", lambda x: int(x), 1.5)]:
    try:
        jit(fn)(arg)
    except TracerBoolConversionError as e:
        print(label, type(e).__name__, isinstance(e, ConcretizationTypeError))
    except ConcretizationTypeError as e:
        print(label, type(e).__name__, isinstance(e, TypeError))
"#,
        expect![[r#"
            matmul TypeError
            add ValueError
            reshape TypeError
            same rank TypeError
            IndexError
            KeyError 'b' KeyError('b') ('b',)
            ZeroDivisionError
            IndexError
            bool TracerBoolConversionError True
            range ConcretizationTypeError True
            int ConcretizationTypeError True
        "#]],
    );
}

/// The with protocol (nullcontext, suppress: propagation and suppression,
/// several items, return inside) and del of names, items and keys.
#[test]
fn with_statement_and_del() {
    check(
        r#"
with nullcontext(5) as v:
    print("inside", v)
try:
    with nullcontext():
        raise ValueError("through")
except ValueError as e:
    print("propagated", e)
with nullcontext(1) as p, nullcontext(2) as q:
    print(p + q)
with suppress(ZeroDivisionError):
    1 / 0
    print("not reached")
print("after suppress")
try:
    with suppress(KeyError):
        raise IndexError("not suppressed")
except IndexError as e:
    print("escaped", e)


def early():
    for i in range(3):
        with suppress(ValueError):
            if i == 1:
                return i
    return -1


print(early())
x = 1
del x
try:
    x
except NameError as e:
    print(e)
d = {"a": 1, "b": 2}
del d["a"]
print(d)
l = [1, 2, 3, 4]
del l[1], l[-1]
print(l)


def f():
    y = 1
    del y
    return y


try:
    f()
except UnboundLocalError:
    print("unbound local")
try:
    del d["zz"]
except KeyError as e:
    print(repr(e))
"#,
        expect![[r#"
            inside 5
            propagated through
            3
            after suppress
            escaped not suppressed
            1
            name 'x' is not defined
            {'b': 2}
            [1, 3]
            unbound local
            KeyError('zz')
        "#]],
    );
}

/// Sets, assignment expressions, self-documenting f-strings, divmod,
/// min/max with key, str methods, `**` in dict displays, iter/next, `%` formatting.
#[test]
fn sets_walrus_fstrings_and_builtins() {
    check(
        r#"
s = {3, 1, 2}
print(s, len(s), 2 in s, 5 not in s)
s.add(4)
s.discard(1)
s.remove(2)
print(s, sorted(s), {1, 2} | {2, 3}, {1, 2} & {2, 3}, {1, 2} - {2, 3}, {1, 2} ^ {2, 3})
print(set(), set([1, 1, 2]), {x % 3 for x in range(10)}, {1, 2} == {2, 1})
print(isinstance(s, set), bool(set()), {"b", "a"} | {"c"} == {"a", "b", "c"})
try:
    s.remove(99)
except KeyError as e:
    print("KeyError", e)
if (n := len([1, 2, 3])) > 2:
    print("n is", n)
print([y for x in range(5) if (y := x * x) > 4])
x = 3.14159
name = "arr"
print(f"{x=}", f"{x = }", f"{x=:.2f}", f"{name!r}", f"{name!s}", f"{name=!s}", f"{1 + 2=}")
print(f"{x == 3=}", f"{x!r:>10}|")
print(divmod(17, 5), divmod(-7, 2), divmod(7.5, 2))
d = {"bb": 2, "a": 1, "ccc": 3}
print(min(d, key=len), max(d, key=lambda k: d[k]), max([3, 1, 2], key=lambda v: -v), min("hello"))
print("a,b,c".split(","), "Hello World".count("o"), "hello".find("l"), "hello world".title())
print("xx/a//".rstrip("/"), "--a-".lstrip("-"), " a ".strip(), "abc".index("c"), (1, 2, 1).index(1), (1, 2, 1).count(1))
print({**d, "a": 10, **{"z": 0}})
it = iter([10, 20, 30])
print(next(it), next(it, -1), list(it), next(it, "done"))
try:
    next(it)
except StopIteration as e:
    print("StopIteration", repr(e))
print("%d%%" % 7, "%5.2f|%-4s|%+d|%03d|%s" % (3.14159, "ab", 5, 7, [1]), "%r %x" % ("q", 255))
"#,
        expect![[r#"
            {1, 2, 3} 3 True True
            {3, 4} [3, 4] {1, 2, 3} {2} {1} {1, 3}
            set() {1, 2} {0, 1, 2} True
            True False True
            KeyError 99
            n is 3
            [9, 16]
            x=3.14159 x = 3.14159 x=3.14 'arr' arr name=arr 1 + 2=3
            x == 3=False    3.14159|
            (3, 2) (-4, 1) (3.0, 1.5)
            a ccc 1 e
            ['a', 'b', 'c'] 2 2 Hello World
            xx/a a- a 2 0 2
            {'bb': 2, 'a': 10, 'ccc': 3, 'z': 0}
            10 20 [30] done
            StopIteration StopIteration()
            7%  3.14|ab  |+5|007|[1] 'q' ff
        "#]],
    );
}

/// Generators: `yield`, `yield from`, a bare `yield`, generators consumed
/// by `next`, `for`, `list`, unpacking and `sum`; a hot loop that yields
/// stays interpreted (every value is kept); `yield` outside a function or
/// in a comprehension is a SyntaxError at its place.
#[test]
fn generators_yield_their_values_in_order() {
    check(
        r#"
def squares(n):
    for i in range(n):
        yield i * i
    yield from [10, 20]
    got = yield
    print("got", got)


def chain(*gens):
    for g in gens:
        yield from g


it = squares(3)
print(type(it).__name__, next(it), next(it), list(it))
print(list(chain(squares(1), iter("ab"))), sum(x * x for x in chain(range(4))))
first, *rest = squares(2)
print(first, rest)


def running(xs):
    total = 0.0
    for x in xs:
        total = total + x
        yield total


print(list(running(range(300)))[-3:], sum(running([1.0, 2.0])))
print([int(v) for v in running(array([1, 2, 3]))])
"#,
        expect![[r#"
            got None
            generator 0 1 [4, 10, 20, None]
            got None
            [0, 10, 20, None, 'a', 'b'] 14
            got None
            0 [1, 10, 20, None]
            [44253.0, 44551.0, 44850.0] 4.0
            [1, 3, 6]
        "#]],
    );
    let mut s = arr_testkit::session();
    for bad in [
        "yield 1",
        "class C:\n    yield 1",
        "def f():\n    return [(yield i) for i in range(3)]",
    ] {
        let err = arr_testkit::error_of(&mut s, bad);
        assert!(err.contains("SyntaxError: 'yield'"), "{bad}: {err}");
    }
}

/// A hot function with a try statement stays interpreted (a handler could
/// catch the tracer's own errors), so its results are the interpreter's;
/// MemoryError and the TypeError of a non-manager are caught like others.
#[test]
fn try_in_hot_code_memory_errors_and_bad_managers() {
    check(
        r#"
def f(x):
    try:
        if x > 0:
            return x
        return -x
    except TypeError:
        return 0.0


total = 0.0
for i in range(300):
    total += f(jnp.float32(i) - 100)
print(total)
try:
    big = [0] * (10 ** 13)
except MemoryError:
    print("MemoryError caught")
try:
    with 5:
        pass
except TypeError as e:
    print("TypeError", type(e).__name__)
"#,
        expect![[r#"
            24950.0
            MemoryError caught
            TypeError TypeError
        "#]],
    );
}

/// An exception nobody catches is reported as arr reports errors, under
/// the name of its class, with the traceback and the source line.
#[test]
fn an_uncaught_exception_is_reported_under_its_class() {
    check(
        r#"
def f():
    raise ConcretizationTypeError("custom")
try:
    f()
except ValueError:
    pass
"#,
        expect![[r#"
            Traceback (most recent call last):
              test.arr:5:5 in <module>
                f()
              test.arr:3:5 in f
                raise ConcretizationTypeError("custom")
            ConcretizationTypeError: custom at test.arr:3:5
              |
            3 |     raise ConcretizationTypeError("custom")
              |     ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
        "#]],
    );
}

/// `jax_debug_nans`: an eager operation that makes a NaN raises
/// FloatingPointError naming it; a jitted function whose output holds one
/// runs again op by op to name it; `jax.debug_nans(False)` scopes it off;
/// without the flag a NaN is a value. (JAX's own runs print a notice on
/// stdout besides, which this does not copy.)
#[test]
fn debug_nans_raises_floating_point_error() {
    check(
        r#"
import jax
import jax.numpy as jnp

print(jax.config.jax_debug_nans)
jax.config.update("jax_debug_nans", True)
print(jax.config.jax_debug_nans)


def f(x):
    w = 3 * jnp.square(x)
    return jnp.log(-w)


try:
    f(5.)
except FloatingPointError as e:
    print("eager:", type(e).__name__, e)
try:
    jax.jit(f)(5.)
except ArithmeticError as e:
    print("jit:", type(e).__name__, e)
print(jax.jit(jnp.log)(2.0))
with jax.debug_nans(False):
    print(jax.jit(f)(5.), f(5.))
print(jax.config.jax_debug_nans)
jax.config.update("jax_debug_nans", False)
print(f(5.), jnp.divide(0., 0.))
"#,
        expect![[r#"
            False
            True
            eager: FloatingPointError invalid value (nan) encountered in log
            jit: FloatingPointError invalid value (nan) encountered in log
            0.6931472
            nan nan
            True
            nan nan
        "#]],
    );
}
