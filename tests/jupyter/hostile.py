"""The hostile-input table in one arr kernel under jupyter_client: each case
must give its error (ename, and a line:col in the traceback) or print its
value, and a variable defined first must survive every case.
Run by tests/jupyter.rs with the cases as JSON (parsed from tests/hostile.txt
by the Rust side), the kernel's working folder holding the load fixtures."""

import json
import os
import queue
import re
import sys
import time

from jupyter_client.manager import start_new_kernel

CASE_TIMEOUT = 30
MAX_OUTPUT = 100 * 1024
PLACE = re.compile(r":\d+:\d+")


def start():
    km, kc = start_new_kernel(kernel_name="arr")
    reply = execute(kc, "keep = 41")
    assert reply["status"] == "ok" and not reply["timed_out"], reply
    return km, kc


def execute(kc, code, km=None):
    """Run code; status, stdout, error content, whether it timed out (then
    the kernel was interrupted) and whether the reply came at all."""
    msg_id = kc.execute(code)
    start_time = time.monotonic()
    timed_out = interrupted = False
    stdout, error, status = [], None, None
    idle = False
    while not idle:
        try:
            msg = kc.get_iopub_msg(timeout=1)
        except queue.Empty:
            elapsed = time.monotonic() - start_time
            if elapsed > CASE_TIMEOUT and not interrupted and km is not None:
                timed_out = interrupted = True
                km.interrupt_kernel()
            if elapsed > CASE_TIMEOUT + 15:
                return {"status": "no reply", "stdout": "".join(stdout), "error": error,
                        "timed_out": True}
            continue
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        kind, content = msg["msg_type"], msg["content"]
        if kind == "stream" and content["name"] == "stdout":
            stdout.append(content["text"])
        elif kind == "error":
            error = content
        elif kind == "status" and content["execution_state"] == "idle":
            idle = True
    while True:
        reply = kc.get_shell_msg(timeout=10)
        if reply["parent_header"].get("msg_id") == msg_id:
            status = reply["content"]["status"]
            if error is None and status == "error":
                error = reply["content"]
            break
    return {"status": status, "stdout": "".join(stdout), "error": error, "timed_out": timed_out}


def check(case, r):
    if r["timed_out"]:
        return "did not finish (interrupted)"
    err = r["error"] or {}
    text = r["stdout"] + "\n".join(err.get("traceback", [])) + err.get("evalue", "")
    if "panicked" in text or "RUST_BACKTRACE" in text:
        return "panicked"
    if len(text) > MAX_OUTPUT:
        return "printed more than 100 KiB"
    if "printed" in case:
        if r["status"] != "ok" or r["stdout"] != case["printed"]:
            return f"expected status ok printing {case['printed']!r}"
        return None
    if r["status"] != "error":
        return f"expected {'/'.join(case['kinds'])}"
    if err.get("ename") not in case["kinds"]:
        return f"expected {'/'.join(case['kinds'])}"
    if case["contains"] not in (err.get("evalue", "") + "\n".join(err.get("traceback", []))).lower():
        return f"expected a message containing {case['contains']!r}"
    if not PLACE.search("\n".join(err.get("traceback", [])) + err.get("evalue", "")):
        return "no line:col in the traceback"
    return None


def clip(r):
    text = json.dumps({k: r[k] for k in ("status", "stdout", "error")})
    return text if len(text) < 2000 else text[:2000] + f"… ({len(text)} bytes)"


def main():
    cases = json.load(open(sys.argv[1]))
    os.environ["ARR_MEMORY_LIMIT"] = "1G"
    os.environ["NO_COLOR"] = "1"
    km, kc = start()
    failures = []
    for i, case in enumerate(cases):
        r = execute(kc, case["code"], km)
        why = check(case, r)
        if why:
            failures.append(f"[kernel] {case['label']}\n  {why}; got {clip(r)}")
        if not km.is_alive() or r["status"] == "no reply":
            failures.append(f"[kernel] {case['label']}\n  the kernel died or stopped answering: restarted")
            kc.stop_channels()
            km.shutdown_kernel(now=True)
            km, kc = start()
            continue
        if i % 20 == 19 or i + 1 == len(cases):
            k = execute(kc, "print(keep)", km)
            if k["stdout"] != "41\n":
                failures.append(f"[kernel] after {case['label']}\n  keep did not survive: {clip(k)}")
                kc.stop_channels()
                km.shutdown_kernel(now=True)
                km, kc = start()
    kc.stop_channels()
    km.shutdown_kernel(now=True)
    if failures:
        print(f"{len(failures)} failures over {len(cases)} hostile cases (kernel):")
        print("\n".join(failures))
        sys.exit(1)
    print(f"{len(cases)} hostile cases passed in one kernel")


if __name__ == "__main__":
    main()
