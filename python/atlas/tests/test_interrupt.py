"""Ctrl-C during a long read: a read whose store stops answering (it would wait for the client's
timeout and retries, minutes) raises the signal handler's exception within a second, and the
collection reads again once the store answers."""

import os
import signal
import socket
import threading
import time
from urllib.parse import urlsplit

import numpy as np
import pytest

import atlas_collections as ac


class Interrupted(Exception):
    """What the test's SIGINT handler raises (the default handler raises KeyboardInterrupt,
    which would also stop pytest if it escaped)."""


class StallingProxy:
    """A TCP proxy in front of the S3 test server that forwards every byte until `stall()`,
    then holds the server's answers back until `resume()`: a store that stops answering."""

    def __init__(self, upstream: tuple):
        self.upstream = upstream
        self.flowing = threading.Event()
        self.flowing.set()
        self.closed = threading.Event()
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        threading.Thread(target=self._accept, daemon=True).start()

    def stall(self):
        self.flowing.clear()

    def resume(self):
        self.flowing.set()

    def close(self):
        self.closed.set()
        self.flowing.set()
        self.listener.close()

    def _accept(self):
        while not self.closed.is_set():
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            server = socket.create_connection(self.upstream)
            threading.Thread(target=self._pump, args=(client, server, False), daemon=True).start()
            threading.Thread(target=self._pump, args=(server, client, True), daemon=True).start()

    def _pump(self, source, sink, answers):
        try:
            while True:
                data = source.recv(65536)
                if not data:
                    break
                while answers and not self.flowing.wait(0.05):
                    pass
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for s in (source, sink):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass


def test_ctrl_c_stops_a_read_whose_store_stopped_answering(s3_prefix, monkeypatch):
    values = np.arange(512 * 1024, dtype="float64")
    with ac.Writer(s3_prefix) as w:
        w.write("d", {"v": values})
    endpoint = urlsplit(os.environ["AWS_ENDPOINT_URL"])
    proxy = StallingProxy((endpoint.hostname, endpoint.port))
    for name in ("AWS_ENDPOINT_URL", "AWS_ENDPOINT"):
        monkeypatch.setenv(name, proxy.url)
    try:
        c = ac.open(s3_prefix)
        proxy.stall()

        def handler(signum, frame):
            raise Interrupted

        previous = signal.signal(signal.SIGINT, handler)
        timer = threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT))
        try:
            start = time.monotonic()
            timer.start()
            with pytest.raises(Interrupted):
                c["d"]["v"][:]
            elapsed = time.monotonic() - start
        finally:
            timer.cancel()
            signal.signal(signal.SIGINT, previous)
        assert 0.3 <= elapsed < 1.3, elapsed
        proxy.resume()
        np.testing.assert_array_equal(c["d"]["v"][:], values)
    finally:
        proxy.close()
