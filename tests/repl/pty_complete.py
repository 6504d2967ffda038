"""Drives the tirlua REPL through a pseudo-terminal (readline is used only on a terminal):
types lines with TAB in them and prints everything the REPL wrote.
usage: python3 pty_complete.py TIRLUA LINE...   (a literal \\t in LINE is a TAB key)"""
import os, pty, select, sys, time

def main():
    exe, lines = sys.argv[1], sys.argv[2:]
    pid, fd = pty.fork()
    if pid == 0:
        env = dict(os.environ, TERM="dumb", INPUTRC="/dev/null")
        os.execve(exe, [exe], env)
    out = b""

    def drain(t):
        nonlocal out
        end = time.time() + t
        while time.time() < end:
            r, _, _ = select.select([fd], [], [], 0.05)
            if r:
                try:
                    data = os.read(fd, 4096)
                except OSError:
                    return
                if not data:
                    return
                out += data

    drain(1.0)
    for line in lines:
        os.write(fd, line.replace("\\t", "\t").encode() + b"\n")
        drain(0.6)
    os.write(fd, b"\x04")  # EOF ends the REPL
    drain(0.5)
    try:
        os.waitpid(pid, 0)
    except ChildProcessError:
        pass
    sys.stdout.write(out.decode("utf-8", "replace"))

main()
