"""The lab's canaries as semantic gates: a model's code answer run in a real sandbox
(its own network namespace, CPU, memory and wall limits, a throwaway folder) with
answers that are right, wrong, loop, allocate and try the network; and one prompt sent
under several ids giving one answer."""

from __future__ import annotations

import time

from registry.contracts.sandbox import run_python
from registry.contracts.semantic import semantic_gates
from registry.formats.rundir import BenchRow
from registry.recipe.schema import CodeGate, SameAnswerGate


def row(text: str, index: int = 0, prompt: str = "code", tokens: list[int] | None = None
        ) -> BenchRow:
    return BenchRow(suite="canaries", index=index, prompt_id=prompt, prompt_sha256="0" * 64,
                    text=text, token_ids=tokens or [1, 2, 3])


def code_gate(**kw) -> CodeGate:
    return CodeGate(kind="code", prompts=["code"], expected_stdout="4183", **kw)


def judged(text: str, **kw):
    verdict = semantic_gates([row(text)], [code_gate(**kw)])
    return verdict.status.value, verdict.reasons


def test_a_right_answer_in_a_fenced_block_passes():
    answer = "Here it is:\n```python\nprint(47 * 89)\n```\nThat prints the product."
    assert judged(answer) == ("passed", [])


def test_a_wrong_answer_fails_naming_what_it_printed():
    status, reasons = judged("```python\nprint(47 + 89)\n```")
    assert status == "failed" and "printed '136'" in reasons[0]


def test_an_answer_that_loops_is_stopped_at_its_limit():
    started = time.monotonic()
    status, reasons = judged("```python\nwhile True:\n    pass\n```", timeout_s=1)
    assert status == "failed" and "timeout after 1 s" in reasons[0]
    assert time.monotonic() - started < 10


def test_an_answer_that_allocates_hits_its_memory_limit():
    status, reasons = judged("x = bytearray(1 << 31)\nprint(4183)", memory_mib=128)
    assert status == "failed" and "MemoryError" in reasons[0]


def test_an_answer_has_no_network_not_even_loopback(tmp_path):
    import contextlib
    import socket
    import threading

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    port = server.getsockname()[1]
    server.settimeout(3)  # the listener gives up after the answer has had its chance
    reached = []

    def listen() -> None:
        with contextlib.suppress(OSError):  # timed out: nobody came
            reached.append(server.accept())

    listener = threading.Thread(target=listen, daemon=True)
    listener.start()
    code = (f"import socket\nsocket.create_connection(('127.0.0.1', {port}), timeout=2)\n"
            "print(4183)")
    status, reasons = judged(code)
    assert status == "failed" and "Network is unreachable" in reasons[0]
    listener.join()
    assert not reached
    server.close()


def test_an_answer_writes_only_in_its_own_folder():
    import shutil
    import tempfile
    from pathlib import Path

    folder = Path(tempfile.mkdtemp(prefix="registry-canary-"))  # under /tmp, reachable
    target = folder / "planted"
    target.write_text("mine")
    for path in (folder, target):
        path.chmod(0o777)  # anyone may write it: only the read-only mount stops the answer
    ran = run_python(f"open({str(target)!r}, 'w').write('x')")
    assert ran.ran and "Read-only file system" in ran.stderr and target.read_text() == "mine"
    ran = run_python("import os\nopen('scratch', 'w').write('ok')\n"
                     "print(os.getcwd() == os.environ['HOME'], open('scratch').read())")
    assert ran.stdout.split() == ["True", "ok"]  # its own throwaway folder is writable
    shutil.rmtree(folder)


def test_one_prompt_under_several_ids_gives_one_answer():
    gate = SameAnswerGate(kind="same-answer", prompts=["r1", "r2", "r3"])
    same = [row("a", i, f"r{i + 1}", [5, 6, 7]) for i in range(3)]
    assert semantic_gates(same, [gate]).status.value == "passed"
    differ = [*same[:2], row("b", 2, "r3", [5, 6, 8])]
    verdict = semantic_gates(differ, [gate])
    assert verdict.status.value == "failed" and "differs from prompt 'r1'" in verdict.reasons[0]
    missing = semantic_gates(same[:2], [gate])
    assert missing.status.value == "failed" and "no row for prompts ['r3']" in missing.reasons[0]
