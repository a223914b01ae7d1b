"""One interactive `bash --login` per container whose state (cwd, variables, jobs) persists.

Each command travels base64-encoded into a file that the shell itself sources, with stdin
from /dev/null, so it can neither read the following commands nor break the framing with
unbalanced quotes (a syntax error in `eval` derails bash's own reader; one in a sourced file
does not, and `command .` keeps a POSIX sh from exiting on it). A random end marker, numbered
per command, carries the exit code and the pid of the shell that ran it back.

A task's `start` is sourced with the shell's own stdin instead, as AgentBench types it into its
one interactive shell: `su - jack` then starts jack's shell, which reads every later command
(`whoami` -> jack). The files the framing writes are named by the pid of the shell that writes
them, so the user who took over can write his own, and a timeout kills what that shell started,
not the shell. When it exits, the shell below (root's) answers again, with the marker of the
`start` that launched it.
"""

from __future__ import annotations

import base64
import os
import re
import secrets
import select
import shlex
import subprocess
import time
from dataclasses import dataclass

from loraloop.errors import EnvironmentFailure

ANSI = re.compile(rb"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07]*\x07|\x1b[@-Z\\-_]")
# Per shell ($$, expanded by the shell that reads the line), in /tmp where every user may write.
JOBS_FILE = "/tmp/.loraloop_jobs.$$"
COMMAND_FILE = "/tmp/.loraloop_cmd.$$"
STATE_FILE = "/tmp/.loraloop_state.$$"
COMMAND_FILE_NAME = re.compile(r"/tmp/\.loraloop_cmd\.\d+: ")
# What another shell needs to continue where this one stopped: variables (less bash's own),
# functions, aliases, options, umask and the working directory (a POSIX sh, e.g. the dash a
# `su - jack` may start: variables, exports, umask, directory). Jobs keep running in the container.
SAVE_STATE = (
    'if [ -n "$BASH_VERSION" ]; then '
    "{ declare -p $(compgen -v | grep -Ev '^(BASH.*|FUNCNAME|PIPESTATUS|GROUPS|DIRSTACK|PPID|UID|EUID|"
    "RANDOM|SRANDOM|SECONDS|LINENO|EPOCH.*|SHLVL|HIST.*|COMP.*|_|__ll_rc|SHELLOPTS)$'); declare -f; "
    "alias -p; shopt -p; shopt -po; umask -p; printf 'cd %q\\n' \"$PWD\"; } >| " + STATE_FILE + " 2>/dev/null; "
    'else { set; export -p; echo "umask $(umask)"; echo \'cd "$PWD"\'; } >| ' + STATE_FILE + " 2>/dev/null; fi; "
)
# The saved state to go on from (the newest, whoever's shell wrote it), its owner, and who we are.
FIND_STATE = (
    'f=$(ls -t /tmp/.loraloop_state.* 2>/dev/null | head -n 1); [ -n "$f" ] && echo "$(stat -c %U "$f") $(id -un) $f"'
)
KILL_TREE = (
    "keep=\" $(tr '\\n' ' ' < /tmp/.loraloop_jobs.{pid} 2>/dev/null) \"; "
    "tree() {{ for c in $(ps -o pid= --ppid $1); do tree $c; done; kill -KILL $1 2>/dev/null; }}; "
    'for p in $(ps -o pid= --ppid {pid}); do case "$keep" in *" $p "*) ;; *) tree $p;; esac; done'
)


@dataclass
class CommandResult:
    """Output (ANSI stripped, capped) and exit code of one command; timed_out when it was killed."""

    output: str
    exit_code: int | None
    timed_out: bool = False
    truncated_bytes: int = 0


class ShellSession:
    """A persistent bash inside a running container, driven through `docker exec -i`."""

    def __init__(self, container: str, *, output_cap: int = 65536, save_state: bool = False) -> None:
        self.container = container
        self.output_cap = output_cap
        self.save_state = False  # a new shell must not overwrite the state it is about to restore
        self._token = f"__LORALOOP_{secrets.token_hex(8)}"
        self._seq = 0
        self._last = 0  # the command whose marker came last
        self._taken_over: set[int] = set()  # `start` commands whose shell still reads our lines
        self._proc = subprocess.Popen(
            ["docker", "exec", "-i", container, "bash", "--login"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        assert self._proc.stdin is not None and self._proc.stdout is not None  # both PIPE, so both open
        self._stdin, self._stdout = self._proc.stdin, self._proc.stdout
        self._buffer = b""
        self.pid = 0  # the shell that reads our lines (set by every marker: it changes after `su`)
        first = self.run("true", timeout=30)
        if first.exit_code is None:  # e.g. a fork bomb holds every pid the container may have
            self.close()
            said = " ".join(first.output.split())[:300] or "no output"
            raise EnvironmentFailure(f"no shell could start in container {container}: {said}")
        self.save_state = save_state

    @property
    def alive(self) -> bool:
        """False once the shell has exited (e.g. the agent ran `exit`)."""
        return self._proc.poll() is None

    def _send(self, command: str, *, own_stdin: bool = False) -> int | None:
        """Write one framed command line; return its number (None when bash is gone)."""
        self._seq += 1
        encoded = base64.b64encode(command.encode()).decode()
        stdin = "" if own_stdin else " </dev/null"
        # A `start` that took over returns only when its shell exits: the state saved is that shell's.
        save = SAVE_STATE if self.save_state and not own_stdin else ""
        line = (
            f"printf %s {encoded} | base64 -d >| {COMMAND_FILE}; {{ command . {COMMAND_FILE}; }}{stdin} 2>&1; "
            f"__ll_rc=$?; jobs -p >| {JOBS_FILE} 2>/dev/null; {save}"
            f"printf '\\n%s_%d %d %d\\n' {self._token} {self._seq} $__ll_rc $$\n"
        )
        try:
            self._stdin.write(line.encode())
            self._stdin.flush()
        except BrokenPipeError:
            return None
        return self._seq

    def run(self, command: str, timeout: float = 20.0) -> CommandResult:
        """Run a command in the shell; kill what it started if it outlives `timeout` seconds.

        A shell that took over at `start` and exits here hands back to the shell below it, whose
        `start` marker ends the command with the exit code of the shell that took over.
        """
        seq = self._send(command) if self.alive else None
        if seq is None:
            return CommandResult("bash has exited", None)
        got = self._wait(seq, timeout)
        if got is None:
            self._kill_foreground()
            got = self._wait(seq, 5.0) or CommandResult("", None)
            got.timed_out = True
        return got

    def start(self, command: str, timeout: float = 20.0) -> CommandResult:
        """Run a task's `start` as AgentBench does, on the shell's own stdin, and return once a shell
        answers: the same one, or the one `start` began (`su - jack`), which then runs every command.

        The output is what `start` printed; the exit code is None while its shell has taken over.
        """
        first = self._send(command, own_stdin=True) if self.alive else None
        probe = self._send("true") if first is not None else None
        if first is None or probe is None:
            return CommandResult("bash has exited", None)
        self._taken_over.add(first)  # until its marker shows it returned
        output, code, timed_out = "", None, False
        deadline = time.monotonic() + timeout
        while True:
            got = self._wait(probe, deadline - time.monotonic())
            if got is None and not timed_out:  # `start` holds the shell: kill what it runs, as for a command
                self._kill_foreground()
                deadline, timed_out = time.monotonic() + 5.0, True
            elif got is None or self._last == probe:
                return CommandResult(output, code, timed_out=timed_out)
            else:  # `start` returned: its shell stays the one that reads our lines
                output, code = got.output, got.exit_code

    def _wait(self, seq: int, timeout: float) -> CommandResult | None:
        """Read until command `seq` ends, or until a shell that took over at `start` exits (the
        marker of that `start` comes); skip a late marker of a command given up on. None on timeout."""
        deadline = time.monotonic() + timeout
        while True:
            got = self._read_until_marker(max(deadline - time.monotonic(), 0.0))
            if got is None:
                return None
            result, self._last = got
            if self._last == seq or self._last in self._taken_over:
                self._taken_over.discard(self._last)
                return result

    def restore(self) -> None:
        """Continue from the state the last state-saving shell in this container left behind, as
        the user whose shell saved it (`su` again when that was not this shell's user)."""
        saving, self.save_state = self.save_state, False  # the lookup must not save a newer state
        try:
            found = self.run(FIND_STATE, timeout=30).output.split()
            if len(found) != 3:
                return
            owner, me, path = found
            if owner != me:
                self.start(f"su {shlex.quote(owner)}", timeout=30)  # his own shell, which wrote the state
            self.save_state = saving
            self.run(f". {path} >/dev/null 2>&1; true", timeout=30)
        finally:
            self.save_state = saving

    def _read_until_marker(self, timeout: float) -> tuple[CommandResult, int] | None:
        """The output up to the next marker and the number of the command it ends; None on timeout."""
        deadline = time.monotonic() + timeout
        fd = self._stdout.fileno()
        kept, dropped = bytearray(self._buffer), 0
        self._buffer = b""
        pattern = re.compile(rb"\n?" + re.escape(self._token.encode()) + rb"_(\d+) (-?\d+) (\d+)\n")
        tail_room = len(self._token) + 64
        while True:
            match = pattern.search(kept)
            if match:
                output, rest = kept[: match.start()], kept[match.end() :]
                self._buffer = bytes(rest)
                self.pid = int(match.group(3))
                return self._result(bytes(output), int(match.group(2)), dropped), int(match.group(1))
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            ready, _, _ = select.select([fd], [], [], remaining)
            if not ready:
                return None
            chunk = os.read(fd, 65536)
            if not chunk:
                return self._result(bytes(kept), None, dropped), self._seq
            kept += chunk
            excess = len(kept) - self.output_cap - tail_room
            if excess > 0:  # keep the head for the agent and a tail that may hold the marker
                tail = kept[-tail_room:]
                dropped += len(kept) - self.output_cap - len(tail)
                kept = kept[: self.output_cap] + tail

    def _result(self, raw: bytes, code: int | None, dropped: int) -> CommandResult:
        text = ANSI.sub(b"", raw).decode("utf-8", errors="replace").replace("\r\n", "\n")
        # bash names the sourced file first ("FILE: line 1: …"), dash after its own name ("-sh: 1: FILE: …")
        text = COMMAND_FILE_NAME.sub(lambda m: "bash: " if m.start() == 0 or text[m.start() - 1] == "\n" else "", text)
        return CommandResult(text, code, truncated_bytes=dropped)

    def _kill_foreground(self) -> None:
        script = KILL_TREE.format(pid=self.pid)
        subprocess.run(["docker", "exec", self.container, "sh", "-c", script], capture_output=True, timeout=30)

    def close(self) -> None:
        """End the shell process (the container is removed by its owner)."""
        if self._proc.poll() is None:
            try:
                self._stdin.close()
            except OSError:
                pass
            try:
                self._proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
