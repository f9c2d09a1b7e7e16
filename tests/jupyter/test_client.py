"""The arr kernel under jupyter_client: interrupts keep state, bad messages are
dropped without stopping the kernel, queued cells are aborted after an error,
restart works, and memory stays flat over many executions.
Run by tests/jupyter.rs (JUPYTER_DATA_DIR points at the installed kernelspec)."""

import json
import os
import signal
import subprocess
import sys
import time
import unittest

from jupyter_client.manager import start_new_kernel

TIMEOUT = 20


def iopub_until_idle(kc, msg_id):
    """The iopub messages caused by msg_id, up to its idle status."""
    out = []
    while True:
        msg = kc.get_iopub_msg(timeout=TIMEOUT)
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        if msg["msg_type"] == "status":
            if msg["content"]["execution_state"] == "idle":
                return out
            continue
        out.append(msg)


def run(kc, code, **kw):
    """Execute code; the reply content and the iopub outputs."""
    msg_id = kc.execute(code, **kw)
    reply = kc.get_shell_msg(timeout=TIMEOUT)
    while reply["parent_header"].get("msg_id") != msg_id:
        reply = kc.get_shell_msg(timeout=TIMEOUT)
    return reply["content"], iopub_until_idle(kc, msg_id)


def value(kc, code):
    reply, outputs = run(kc, code)
    assert reply["status"] == "ok", reply
    results = [m for m in outputs if m["msg_type"] == "execute_result"]
    return results[-1]["content"]["data"]["text/plain"] if results else None


def kernel_pid(km):
    return km.provisioner.process.pid


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError("no VmRSS")


class ArrKernelClientTests(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.km, cls.kc = start_new_kernel(kernel_name="arr")

    @classmethod
    def tearDownClass(cls):
        cls.kc.stop_channels()
        cls.km.shutdown_kernel(now=False)
        assert not cls.km.is_alive()

    def test_execution_count_and_outputs(self):
        kc = self.kc
        reply, outputs = run(kc, "print('a')\nprint('b')\neprint('e')\n40 + 2")
        self.assertEqual(reply["status"], "ok")
        count = reply["execution_count"]
        kinds = [m["msg_type"] for m in outputs]
        self.assertEqual(kinds[0], "execute_input")
        self.assertEqual(kinds[-1], "execute_result")
        stdout = "".join(m["content"]["text"] for m in outputs
                         if m["msg_type"] == "stream" and m["content"]["name"] == "stdout")
        self.assertEqual(stdout, "a\nb\n")
        self.assertIn("stderr", [m["content"].get("name") for m in outputs])
        # silent runs are not counted and publish nothing but their effects
        reply, outputs = run(kc, "1 + 1", silent=True)
        self.assertEqual([m["msg_type"] for m in outputs], [])
        reply, _ = run(kc, "2")
        self.assertEqual(reply["execution_count"], count + 1)

    def test_many_prints_arrive_whole_and_in_order(self):
        reply, outputs = run(self.kc, "for i in range(2000):\n    print(i)\neprint('end')\n'last'")
        self.assertEqual(reply["status"], "ok")
        streams = [m for m in outputs if m["msg_type"] == "stream"]
        stdout = "".join(m["content"]["text"] for m in streams if m["content"]["name"] == "stdout")
        self.assertEqual(stdout, "".join(f"{i}\n" for i in range(2000)))
        # stderr after all of stdout, and the result after both
        self.assertEqual(streams[-1]["content"], {"name": "stderr", "text": "end\n"})
        self.assertEqual(outputs[-1]["msg_type"], "execute_result")

    def test_display_update_and_user_expressions(self):
        reply, outputs = run(self.kc, "display(1, display_id='d')\nupdate_display(2, 'd')",
                             user_expressions={"v": "3 * 3", "bad": "nope"})
        kinds = [m["msg_type"] for m in outputs]
        self.assertIn("display_data", kinds)
        self.assertIn("update_display_data", kinds)
        update = [m for m in outputs if m["msg_type"] == "update_display_data"][0]
        self.assertEqual(update["content"]["transient"]["display_id"], "d")
        self.assertEqual(update["content"]["data"]["text/plain"], "2")
        ue = reply["user_expressions"]
        self.assertEqual(ue["v"]["data"]["text/plain"], "9")
        self.assertEqual(ue["bad"]["status"], "error")
        # user expressions do not replace the cell's result `_`
        run(self.kc, "123", user_expressions={"v": "4"})
        self.assertEqual(value(self.kc, "_"), "123")

    def test_progress_is_one_display_updated_in_place(self):
        reply, outputs = run(self.kc, "t = 0\nfor i in progress(range(5), desc='sum'):\n    t = t + i\nt")
        self.assertEqual(reply["status"], "ok")
        displays = [m for m in outputs if m["msg_type"] == "display_data"]
        updates = [m for m in outputs if m["msg_type"] == "update_display_data"]
        self.assertEqual(len(displays), 1, outputs)
        display_id = displays[0]["content"]["transient"]["display_id"]
        self.assertTrue(updates and all(
            u["content"]["transient"]["display_id"] == display_id for u in updates))
        final = updates[-1]["content"]["data"]
        self.assertTrue(final["text/plain"].startswith("sum: 5/5 ["), final)
        self.assertIn("<progress", final["text/html"])
        results = [m for m in outputs if m["msg_type"] == "execute_result"]
        self.assertEqual(results[-1]["content"]["data"]["text/plain"], "10")

    def test_tables_are_html(self):
        reply, outputs = run(self.kc, "table({'w': ones((2, 3)), 'b': zeros(3)})")
        data = [m for m in outputs if m["msg_type"] == "execute_result"][0]["content"]["data"]
        self.assertIn("<th>mean</th>", data["text/html"])
        self.assertIn("┆ float32 ┆ (2, 3)", data["text/plain"])
        reply, outputs = run(self.kc, ":mesh")
        self.assertEqual(reply["status"], "ok")
        data = [m for m in outputs if m["msg_type"] == "execute_result"][0]["content"]["data"]
        self.assertIn("devices (cpu)", data["text/plain"])
        self.assertIn("<th>collective ms</th>", data["text/html"])

    def test_live_device_view_while_pmap_runs(self):
        code = (
            "f = pmap(lambda x: psum(x * 2.0, 'i'), axis_name='i')\n"
            "x = ones((8, 256))\n"
            "t0 = perf_counter()\n"
            "while perf_counter() - t0 < 1.8:\n"
            "    y = f(x)\n"
            "float(y[0, 0])"
        )
        reply, outputs = run(self.kc, code)
        self.assertEqual(reply["status"], "ok", reply)
        views = [m for m in outputs if m["msg_type"] in ("display_data", "update_display_data")
                 and m["content"]["transient"]["display_id"].startswith("arr-devices-")]
        self.assertTrue(views, [m["msg_type"] for m in outputs])
        self.assertEqual(views[0]["msg_type"], "display_data")
        self.assertTrue(all(v["msg_type"] == "update_display_data" for v in views[1:]))
        self.assertGreater(len(views), 1)
        final = views[-1]["content"]["data"]["text/plain"]
        self.assertIn("finished", final)
        self.assertIn("cpu:0", final)
        self.assertIn("collectives", final)
        # The summary comes before the cell's result, which is its last output.
        self.assertEqual(outputs[-1]["msg_type"], "execute_result")
        self.assertEqual(outputs[-1]["content"]["data"]["text/plain"], "16.0")
        # A quick cell shows no view.
        _, outputs = run(self.kc, "y = f(x)")
        self.assertFalse([m for m in outputs if m["msg_type"] == "display_data"])

    def test_repl_commands(self):
        reply, outputs = run(self.kc, ":time 20 + 1")
        self.assertEqual(reply["status"], "ok")
        text = "".join(m["content"]["text"] for m in outputs if m["msg_type"] == "stream")
        self.assertIn("21\ntime: ", text)
        reply, _ = run(self.kc, ":nonsense")
        self.assertEqual(reply["status"], "error")
        # help(name) and name? open the pager, like ?name
        for code in ["help(sum)", "sum?"]:
            reply, _ = run(self.kc, code)
            self.assertEqual(reply["payload"][0]["source"], "page")
            self.assertIn("sum(", reply["payload"][0]["data"]["text/plain"])

    def test_errors_have_name_value_traceback(self):
        reply, outputs = run(self.kc, "undefined_name + 1")
        self.assertEqual(reply["status"], "error")
        self.assertEqual(reply["ename"], "NameError")
        self.assertTrue(reply["traceback"])
        self.assertEqual([m["msg_type"] for m in outputs][-1], "error")

    def test_comms(self):
        kc = self.kc
        msg = kc.session.msg("comm_open", {"comm_id": "c1", "target_name": "nothing", "data": {}})
        kc.shell_channel.send(msg)
        outputs = iopub_until_idle(kc, msg["header"]["msg_id"])
        self.assertEqual([m["msg_type"] for m in outputs], ["comm_close"])
        self.assertEqual(outputs[0]["content"]["comm_id"], "c1")
        msg_id = kc.comm_info()
        reply = kc.get_shell_msg(timeout=TIMEOUT)
        self.assertEqual(reply["parent_header"]["msg_id"], msg_id)
        self.assertEqual(reply["content"]["comms"], {})

    def test_interrupt_by_message_keeps_variables(self):
        self.interrupt_long_cell(lambda: self.km.interrupt_kernel())

    def test_interrupt_by_sigint_keeps_variables(self):
        self.interrupt_long_cell(lambda: os.kill(kernel_pid(self.km), signal.SIGINT))

    def interrupt_long_cell(self, interrupt):
        kc = self.kc
        self.assertEqual(value(kc, "kept = 41\nkept + 1"), "42")
        msg_id = kc.execute("i = 0\nwhile True:\n    i = i + 1\n")
        time.sleep(0.5)
        # control is served while the cell runs
        request = kc.session.msg("kernel_info_request")
        kc.control_channel.send(request)
        reply = kc.get_control_msg(timeout=5)
        self.assertEqual(reply["parent_header"]["msg_id"], request["header"]["msg_id"])
        self.assertEqual(reply["content"]["language_info"]["name"], "arr")
        interrupt()
        reply = kc.get_shell_msg(timeout=TIMEOUT)
        self.assertEqual(reply["parent_header"]["msg_id"], msg_id)
        self.assertEqual(reply["content"]["status"], "error")
        self.assertEqual(reply["content"]["ename"], "KeyboardInterrupt")
        iopub_until_idle(kc, msg_id)
        self.assertEqual(value(kc, "kept"), "41")
        self.assertEqual(value(kc, "i > 0"), "True")

    def test_interrupt_stops_every_kind_of_program_within_2_s(self):
        """Eager, jit, pmap, shard_map, sharded jit and a long trace, each a
        cell that would run for minutes, stop within 2 s of an
        interrupt_request; control answers while devices work, the variables
        are kept, the interrupted assignment never happens, and the next
        program of the same kind runs on the same devices."""
        kc = self.kc
        setup = "\n".join([
            "keep = 41",
            "x = ones((1500, 1500)) / 1500.0",
            "a = ones((300, 300)) / 300.0",
            "f = lambda n: jit(lambda a: fori_loop(0, n, lambda i, c: tanh(c @ a), a))",
            "xs = ones((8, 200, 200)) / 200.0",
            "pb = lambda i, c: psum(tanh(c @ c), 'i') / 8.0",
            "g = lambda n: pmap(lambda a: fori_loop(0, n, pb, a), axis_name='i')",
            "m = mesh((8,), ('d',))",
            "sb = lambda i, c: psum(tanh(c @ c.T @ c), 'd') / 8.0",
            "h = lambda n: shard_map(lambda b: fori_loop(0, n, sb, b), m, P('d'), P('d'))",
            "b = ones((64, 200)) / 200.0",
            "s = NamedSharding(m, P('d'))",
            "jb = lambda i, c: tanh(c @ c.T @ c) * 0.5 + mean(c)",
            "k = lambda n: jit(lambda a: fori_loop(0, n, jb, a), in_shardings=s, out_shardings=s)",
            "def long(a, n):",
            "    for i in range(n):",
            "        a = a * 1.0001 + 0.5",
            "    return a",
        ])
        reply, _ = run(kc, setup)
        self.assertEqual(reply["status"], "ok", reply)
        cases = [
            ("y = [(x @ x @ x @ x @ x @ x @ x @ x).sum() for _ in range(1000)]",
             "(x @ x).shape", "(1500, 1500)"),
            ("y = f(1000000)(a)", "f(3)(a).shape", "(300, 300)"),
            ("y = g(1000000)(xs)", "g(3)(xs).shape", "(8, 200, 200)"),
            ("y = h(1000000)(b)", "h(3)(b).shape", "(64, 200)"),
            ("y = k(1000000)(b)", "k(3)(b).shape", "(64, 200)"),
            ("y = jit(long, static_argnums=1)(ones(3), 1000000)",
             "jit(long, static_argnums=1)(zeros(2), 2).shape", "(2,)"),
        ]
        for code, after, want in cases:
            msg_id = kc.execute(code)
            time.sleep(2.5)
            # control is served while the program runs (on device workers too)
            request = kc.session.msg("kernel_info_request")
            kc.control_channel.send(request)
            info = kc.get_control_msg(timeout=5)
            self.assertEqual(info["parent_header"]["msg_id"], request["header"]["msg_id"])
            start = time.monotonic()
            self.km.interrupt_kernel()
            reply = kc.get_shell_msg(timeout=TIMEOUT)
            took = time.monotonic() - start
            self.assertEqual(reply["parent_header"]["msg_id"], msg_id)
            self.assertEqual(reply["content"]["status"], "error", code)
            self.assertEqual(reply["content"]["ename"], "KeyboardInterrupt", code)
            self.assertLess(took, 2.0, code)
            sys.stderr.write(f"{code}: stopped {took:.3f} s after interrupt_request\n")
            iopub_until_idle(kc, msg_id)
            reply, _ = run(kc, "y")
            self.assertEqual(reply["ename"], "NameError", code)
            self.assertEqual(value(kc, "keep"), "41")
            self.assertEqual(value(kc, after), want, code)

    def test_queued_cells_are_aborted_after_an_error(self):
        kc = self.kc
        ids = [kc.execute(c) for c in ["1 / 0", "never = 1", "never"]]
        replies = {}
        while len(replies) < 3:
            r = kc.get_shell_msg(timeout=TIMEOUT)
            replies[r["parent_header"]["msg_id"]] = r["content"]
        self.assertEqual([replies[i]["status"] for i in ids], ["error", "aborted", "aborted"])
        for i in ids:
            iopub_until_idle(kc, i)
        # later cells run again, and the aborted assignment never happened
        reply, _ = run(kc, "never")
        self.assertEqual(reply["ename"], "NameError")
        # without stop_on_error nothing is aborted
        ids = [kc.execute("1 / 0", stop_on_error=False), kc.execute("after = 5")]
        statuses = {}
        while len(statuses) < 2:
            r = kc.get_shell_msg(timeout=TIMEOUT)
            statuses[r["parent_header"]["msg_id"]] = r["content"]["status"]
        self.assertEqual([statuses[i] for i in ids], ["error", "ok"])
        for i in ids:
            iopub_until_idle(kc, i)

    def test_bad_messages_are_dropped(self):
        kc = self.kc
        sock = kc.shell_channel.socket
        msg = kc.session.msg("execute_request", {
            "code": "forged = 1", "silent": False, "store_history": True,
            "user_expressions": {}, "allow_stdin": False, "stop_on_error": True})
        frames = kc.session.serialize(msg)  # [<IDS|MSG>, signature, header, parent, metadata, content]
        bad = list(frames)
        bad[1] = b"0" * len(bad[1])
        sock.send_multipart(bad)
        sock.send_multipart([b"junk"])
        sock.send_multipart([b"<IDS|MSG>", b"", b"{not json", b"{}", b"{}", b"{}"])
        # correctly signed, but not a message
        garbage = [b"{not json", b"{}", b"{}", b"{}"]
        sock.send_multipart([b"<IDS|MSG>", kc.session.sign(garbage)] + garbage)
        no_type = [b"{}", b"{}", b"{}", b"{}"]
        sock.send_multipart([b"<IDS|MSG>", kc.session.sign(no_type)] + no_type)
        tampered = list(frames)
        tampered[5] = json.dumps({"code": "forged = 2"}).encode()
        sock.send_multipart(tampered)
        # the same on control: a forged shutdown is ignored
        forged = kc.session.serialize(kc.session.msg("shutdown_request", {"restart": False}))
        forged[1] = b"f" * len(forged[1])
        kc.control_channel.socket.send_multipart(forged)
        kc.control_channel.socket.send_multipart([b"<IDS|MSG>", b"x"])
        request = kc.session.msg("kernel_info_request")
        kc.control_channel.send(request)
        reply = kc.get_control_msg(timeout=5)
        self.assertEqual(reply["parent_header"]["msg_id"], request["header"]["msg_id"])
        self.assertTrue(self.km.is_alive())
        # the kernel still answers, and ran neither forged cell
        self.assertEqual(kc.kernel_info(reply=True, timeout=5)["content"]["status"], "ok")
        reply, _ = run(kc, "forged")
        self.assertEqual(reply["ename"], "NameError")

    def test_odd_content_gets_answers(self):
        kc = self.kc
        odd = [
            ("execute_request", {"code": 5, "silent": "yes"}),
            ("complete_request", {"code": "zer", "cursor_pos": "end"}),
            ("complete_request", {"code": "é = zer", "cursor_pos": 1000}),
            ("inspect_request", {"code": "", "cursor_pos": 0}),
            ("inspect_request", {"code": "no_such_name", "cursor_pos": 3}),
            ("history_request", {"hist_access_type": "tail", "n": -5}),
            ("history_request", {"hist_access_type": "search", "pattern": "[[[*"}),
            ("is_complete_request", {}),
            ("no_such_request", {}),
        ]
        for msg_type, content in odd:
            msg = kc.session.msg(msg_type, content)
            kc.shell_channel.send(msg)
            iopub_until_idle(kc, msg["header"]["msg_id"])
        while True:
            try:
                kc.get_shell_msg(timeout=0.5)
            except Exception:
                break
        self.assertEqual(value(kc, "1 + 1"), "2")

    def test_memory_is_stable_over_many_executions(self):
        kc = self.kc
        pid = kernel_pid(self.km)
        code = "m = ones((100, 100)) * 2\nprint(m.sum())\nm.sum()"
        for _ in range(200):
            run(kc, code)
        before = rss_kib(pid)
        for _ in range(1000):
            run(kc, code)
        after = rss_kib(pid)
        # 1000 cells keep a little history; anything more is a leak
        self.assertLess(after - before, 16 * 1024, f"RSS grew from {before} to {after} KiB")


class ArrKernelOrphanTests(unittest.TestCase):
    def test_kernel_exits_when_its_parent_dies(self):
        # A launcher that starts the kernel the way jupyter_client does
        # (JPY_PARENT_PID = itself), prints the kernel's pid and dies.
        launcher = (
            "import os, subprocess, sys\n"
            "from jupyter_client.connect import write_connection_file\n"
            "from jupyter_client.kernelspec import KernelSpecManager\n"
            "spec = KernelSpecManager().get_kernel_spec('arr')\n"
            "fname, _ = write_connection_file()\n"
            "argv = [a.replace('{connection_file}', fname) for a in spec.argv]\n"
            "env = dict(os.environ, JPY_PARENT_PID=str(os.getpid()))\n"
            "p = subprocess.Popen(argv, env=env, start_new_session=True,\n"
            "                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
            "print(p.pid, flush=True)\n"
            "import time; time.sleep(1)\n"  # the kernel has started watching
            "os._exit(0)\n"
        )
        out = subprocess.run([sys.executable, "-c", launcher], capture_output=True,
                             text=True, check=True)
        pid = int(out.stdout.strip())
        deadline = time.time() + 10
        while os.path.exists(f"/proc/{pid}") and time.time() < deadline:
            with open(f"/proc/{pid}/stat") as f:
                if f.read().split(") ")[-1].startswith("Z"):
                    break  # exited, waiting to be reaped
            time.sleep(0.1)
        alive = os.path.exists(f"/proc/{pid}")
        if alive:
            with open(f"/proc/{pid}/stat") as f:
                alive = not f.read().split(") ")[-1].startswith("Z")
        if alive:
            os.kill(pid, signal.SIGKILL)
        self.assertFalse(alive, "the orphaned kernel kept running")


class ArrKernelRestartTests(unittest.TestCase):
    def test_restart(self):
        km, kc = start_new_kernel(kernel_name="arr")
        try:
            self.assertEqual(value(kc, "before = 1\nbefore"), "1")
            old_pid = kernel_pid(km)
            km.restart_kernel(now=False)
            self.assertNotEqual(kernel_pid(km), old_pid)
            kc.wait_for_ready(timeout=TIMEOUT)
            reply, _ = run(kc, "before")
            self.assertEqual(reply["ename"], "NameError")
            self.assertEqual(value(kc, "1 + 1"), "2")
            # the counter started afresh: before, 1 + 1, and now this cell
            reply, _ = run(kc, "3")
            self.assertEqual(reply["execution_count"], 3)
        finally:
            kc.stop_channels()
            km.shutdown_kernel(now=False)

    def test_shutdown_on_shell(self):
        km, kc = start_new_kernel(kernel_name="arr")
        try:
            msg = kc.session.msg("shutdown_request", {"restart": False})
            kc.shell_channel.send(msg)
            reply = kc.get_shell_msg(timeout=TIMEOUT)
            self.assertEqual(reply["msg_type"], "shutdown_reply")
            deadline = time.time() + 5
            while km.is_alive() and time.time() < deadline:
                time.sleep(0.05)
            self.assertFalse(km.is_alive())
        finally:
            kc.stop_channels()
            km.shutdown_kernel(now=True)


if __name__ == "__main__":
    unittest.main()
