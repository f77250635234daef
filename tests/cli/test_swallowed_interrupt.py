"""A Ctrl-C that lands inside a garbage-collector callback (Dask's GC diagnosis runs one in
every process of a cluster) is "unraisable": Python prints "Exception ignored in" with a
traceback and carries on, so the run used to go on to its end. Under the command line's guard
the interrupt is delivered again and ends the run; nothing is printed. Each case runs in its
own interpreter (the re-delivered interrupt goes to the main thread); nothing is statistical."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

SCRIPT = textwrap.dedent("""
    import contextlib, gc, sys, time
    from stanlogz.cli import interrupts_not_swallowed
    fired = []
    def callback(phase, info):
        if phase == "start" and not fired:
            fired.append(True)
            raise KeyboardInterrupt
    guard = interrupts_not_swallowed() if sys.argv[1] == "guarded" else contextlib.nullcontext()
    try:
        with guard:
            gc.callbacks.append(callback)
            gc.collect()
            gc.callbacks.remove(callback)
            time.sleep(5)  # the re-delivered interrupt lands here, at once
            print("ran to the end")
    except KeyboardInterrupt:
        print("interrupted")
    assert fired
""")


@pytest.mark.parametrize("mode, out, ignored", [
    ("guarded", "interrupted", False),
    ("unguarded", "ran to the end", True),  # Python's own behaviour: the guard is needed
])
def test_an_interrupt_inside_a_gc_callback_ends_the_run(mode, out, ignored):
    run = subprocess.run([sys.executable, "-c", SCRIPT, mode], capture_output=True, text=True,
                         timeout=60)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == out
    assert ("Exception ignored" in run.stderr) is ignored, run.stderr
