"""jupyter_kernel_test's protocol conformance suite against the installed
arr kernelspec (run by tests/jupyter.rs with JUPYTER_DATA_DIR pointing at it)."""

import os
import unittest

import jupyter_kernel_test

LOGO = os.path.join(
    os.path.dirname(os.path.abspath(__file__)),
    "..", "..", "repl", "src", "kernel", "logo", "logo-64x64.png",
)


class ArrKernelTests(jupyter_kernel_test.KernelTests):
    kernel_name = "arr"
    language_name = "arr"
    file_extension = ".arr"

    code_hello_world = "print('hello, world')"
    code_stderr = "eprint('oops')"

    completion_samples = [
        {"text": "zeros_l", "matches": {"zeros_like"}},
        {"text": "random.spl", "matches": {"split"}},
        {"text": "x = linsp", "matches": {"linspace"}},
    ]

    complete_code_samples = ["1", "print('hello, world')", "def f(x):\n  return x*2\n\n\n"]
    incomplete_code_samples = ["print('''hello", "def f(x):\n  x*2", "x = (1 +"]
    invalid_code_samples = ["x = = 1", "1 +* 2", ")"]

    code_page_something = "?sum"

    code_generate_error = "1 / 0"

    code_execute_result = [
        {"code": "1 + 2", "result": "3"},
        {"code": "'a' + 'b'", "result": "'ab'"},
        {"code": "ones(3)", "mime": "text/html"},
        {"code": "arange(4) * 2", "result": "i32[4]\n[0 2 4 6]"},
    ]

    code_display_data = [
        {"code": "display(ones((2, 2)))", "mime": "text/html"},
        {"code": "display(ones((2, 2)))", "mime": "text/plain"},
        {"code": f"display_image({LOGO!r})", "mime": "image/png"},
        {"code": "plot(arange(10.0) ** 2)", "mime": "image/png"},
        {"code": "hist(arange(100.0) % 7)\nshow()", "mime": "image/svg+xml"},
    ]

    supported_history_operations = ("tail", "range", "search")
    code_history_pattern = "1 + *"

    code_inspect_sample = "zeros"

    code_clear_output = "clear_output()"


if __name__ == "__main__":
    unittest.main()
