"""Asks a rank's PyTorch worker server one handler over its unix socket and writes the answer to a file.

usage: ask_worker.py SOCKET HANDLER OUT

The worker server answers handlers on POST only; exits 1, saying the status, on any other answer than 200.
"""
import http.client
import socket
import sys


class UnixConnection(http.client.HTTPConnection):
    def __init__(self, path):
        super().__init__("localhost", timeout=30)
        self.path = path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(30)
        self.sock.connect(self.path)


def main():
    sock, handler, out = sys.argv[1:4]
    conn = UnixConnection(sock)
    conn.request("POST", "/handler/" + handler)
    answer = conn.getresponse()
    body = answer.read()
    if answer.status != 200:
        print(f"{sock}: {handler} answered {answer.status}: {body[:200]!r}", file=sys.stderr)
        return 1
    with open(out, "wb") as f:
        f.write(body)
    return 0


if __name__ == "__main__":
    sys.exit(main())
