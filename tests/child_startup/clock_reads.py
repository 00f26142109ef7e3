"""The wall clock of the test process and of every Python process the tests start: where it reads (the real
clock, or the suite's moved clock, `pytest --moved-clock`), and who reads it.

`install(shift_s, sink)` puts a `Recorder` at the bottom of time-machine's traveller stack: from then on
time.time, time.time_ns, datetime.now, datetime.utcnow, date.today, time.gmtime(), time.localtime(),
time.strftime without a time and clock_gettime(CLOCK_REALTIME) (everything time-machine moves) answer the real
clock plus `shift_s`, exactly, and tell `sink` where each reading came from. Monotonic clocks and sleeps are
left alone. A test that pins a clock itself (`time_machine.travel`, the `pinned_wall_clock` fixture) puts its
own traveller above this one, which then neither answers nor hears; code handed an injected clock
(`support.Clock`) reads no wall clock at all.

A reading counts when the code that asked for it is the project's (gpu_assist/, slackbot/, tests/), directly
or through the standard library (`datetime.date.today()`, `email.utils.formatdate()`, a dataclass's generated
`__init__`), but not through what only keeps books of its own (a log record's time, an HTTP server's Date
header: `BOOKKEEPING`) nor inside a third-party library (SQLAlchemy's pool, tornado, botocore's signing):
those decide nothing a test asserts. tests/conftest.py turns the readings into a verdict: a test whose outcome
may depend on the date or the hour is marked `clock`, and runs again at the moved clocks.

In a process the tests start, sitecustomize.py beside this file installs it with the shift and the log file
the environment names; each counted reading appends one line, `owner<TAB>pid<TAB>where`, to the log, where
`owner` is what the test process was running when the process was started (GPU_ASSIST_TEST_CLOCK_OWNER).
Such a process does not import time-machine (a third of a second at every start): its C part calls back into
whatever `sys.modules["time_machine"]` holds, here a stand-in module that loads the real one only when
something asks it for more than its traveller stack."""

from __future__ import annotations

import os
import sys
import types
from typing import Callable

SHIFT_ENV = "GPU_ASSIST_TEST_CLOCK_SHIFT_S"  # the moved clock's offset from the real one, in seconds
LOG_ENV = "GPU_ASSIST_TEST_CLOCK_LOG"  # where a started process appends its counted readings
OWNER_ENV = "GPU_ASSIST_TEST_CLOCK_OWNER"  # what the test process was running when it started this process

_REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_OURS = tuple(os.path.join(_REPO, folder) + os.sep for folder in ("gpu_assist", "slackbot", "tests"))
_INSTALLED_OURS = (f"{os.sep}site-packages{os.sep}gpu_assist{os.sep}", f"{os.sep}site-packages{os.sep}slackbot{os.sep}")
_NOT_OURS = os.path.join(_REPO, "tests", "child_startup") + os.sep  # this guard's own machinery
_STDLIB = os.path.dirname(os.__file__) + os.sep
# Standard library modules whose readings are books of their own: a log record's creation time, an HTTP server's
# Date header and access log lines.
BOOKKEEPING = tuple(_STDLIB + name for name in (
    "logging" + os.sep, "http" + os.sep + "server.py", "socketserver.py", "wsgiref" + os.sep))

OURS, THROUGH, ELSEWHERE = "ours", "through", "elsewhere"
_KINDS: dict[str, str] = {}


def kind_of(filename: str) -> str:
    """OURS for the project's code, THROUGH for the standard library (and code it generates, `<string>`), which
    a reading passes through to whoever called it, ELSEWHERE for bookkeeping and third-party code."""
    kind = _KINDS.get(filename)
    if kind is None:
        if filename.startswith(_NOT_OURS):
            kind = ELSEWHERE
        elif filename.startswith(_OURS) or any(part in filename for part in _INSTALLED_OURS):
            kind = OURS
        elif filename.startswith(BOOKKEEPING):
            kind = ELSEWHERE
        elif (filename.startswith(_STDLIB) and "site-packages" not in filename) or filename.startswith("<"):
            kind = THROUGH
        else:
            kind = ELSEWHERE
        _KINDS[filename] = kind
    return kind


def reader(frame) -> str | None:
    """`path:line (function)` of the project's code that asked for this reading, or None where it does not count."""
    while frame is not None:
        code = frame.f_code
        kind = kind_of(code.co_filename)
        if kind is OURS:
            return f"{os.path.relpath(code.co_filename, _REPO)}:{frame.f_lineno} ({code.co_name})"
        if kind is ELSEWHERE:
            return None
        frame = frame.f_back
    return None


class Recorder:
    """The bottom of time-machine's traveller stack. time-machine's C part asks the top traveller for `time_ns()`
    whenever a patched function runs, and builds every other answer from it."""

    is_clock_recorder = True  # one test process may hold two copies of this module (sitecustomize's, conftest's)

    def __init__(self, shift_ns: int, sink: Callable[[str], None] | None):
        import _time_machine

        self.shift_ns = shift_ns
        self.sink = sink
        self._real_ns = _time_machine.original_time_ns

    def time_ns(self) -> int:
        sink = self.sink
        if sink is not None:
            where = reader(sys._getframe(1))  # the Python code that called time.time() & co. (C has no frame)
            if where is not None:
                sink(where)
        return self._real_ns() + self.shift_ns


def _stand_in() -> types.ModuleType:
    """A `time_machine` module holding only the traveller stack, for a process that never imported the real one;
    asked for anything else (a test's `time_machine.travel`), it loads the real module, which takes the stack."""

    class StandIn(types.ModuleType):
        def __getattr__(self, name: str):
            import _time_machine

            stack = self.__dict__["traveller_stack"]
            _time_machine.unpatch()  # while the real module loads it has no stack: nothing may call back into it
            del sys.modules["time_machine"]
            try:
                import time_machine as real
            except BaseException:
                sys.modules["time_machine"] = self
                raise
            finally:
                _time_machine.patch()
            real.traveller_stack[:0] = stack
            self.__dict__["traveller_stack"] = real.traveller_stack
            return getattr(real, name)

    module = StandIn("time_machine", "a stand-in until something needs the real module (tests/child_startup)")
    module.traveller_stack = []
    return module


def install(shift_s: float, sink: Callable[[str], None] | None) -> Recorder:
    """From now on this process's wall clock reads the real one plus `shift_s` seconds, and tells `sink` where each
    counted reading came from (None: nobody listens)."""
    import _time_machine

    module = sys.modules.get("time_machine")
    if module is None:
        module = sys.modules["time_machine"] = _stand_in()
    recorder = Recorder(round(shift_s * 1_000_000_000), sink)
    stack = module.traveller_stack  # a pytest run started by a test replaces what its sitecustomize.py installed
    stack[:] = [recorder, *(traveller for traveller in stack if not getattr(traveller, "is_clock_recorder", False))]
    _time_machine.patch()
    return recorder


def log_sink(path: str) -> Callable[[str], None]:
    """A sink that appends `owner<TAB>pid<TAB>where` lines to `path` (one write per line on an O_APPEND file: whole
    lines, whichever process writes)."""
    owner = os.environ.get(OWNER_ENV, "")
    descriptor = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    os.set_inheritable(descriptor, False)

    def sink(where: str) -> None:
        os.write(descriptor, f"{owner}\t{os.getpid()}\t{where}\n".encode("utf-8", "replace"))

    return sink
