"""A TCP proxy on 127.0.0.1 that cuts every connection through it on a
timer: abruptly toward the client (RST, as a dropped NAT entry or a dead
link looks to it), half-closed toward the server (so Google's emulator
sees the streams end instead of feeding dead ones forever). A fault the
tests inject: real networks do this, the emulator cannot."""

from __future__ import annotations

import socket
import struct
import threading

from emulators import free_port


class CutProxy:
    def __init__(self, upstream: str, every_s: float) -> None:
        host, port = upstream.rsplit(":", 1)
        self._up = (host, int(port))
        self.port = free_port()
        self.host_port = f"127.0.0.1:{self.port}"
        self.every_s = every_s
        self.cuts = 0
        self._lock = threading.Lock()
        self._pairs: list[tuple[socket.socket, socket.socket]] = []
        self._stop = threading.Event()
        self._cutting = threading.Event()
        self._cutting.set()
        self._srv = socket.create_server(("127.0.0.1", self.port))
        self._threads = [threading.Thread(target=self._accept, daemon=True),
                         threading.Thread(target=self._cutter, daemon=True)]
        for t in self._threads:
            t.start()

    def stop_cutting(self) -> None:
        self._cutting.clear()

    def close(self) -> None:
        self._stop.set()
        self._srv.close()
        with self._lock:
            pairs, self._pairs = self._pairs, []
        for c, u in pairs:
            for s in (c, u):
                try:
                    s.close()
                except OSError:
                    pass
        for t in self._threads:
            t.join(timeout=5)

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                client, _ = self._srv.accept()
            except OSError:
                return
            try:
                up = socket.create_connection(self._up, timeout=5)
                up.settimeout(None)
            except OSError:
                client.close()
                continue
            with self._lock:
                self._pairs.append((client, up))
            threading.Thread(target=self._pump, args=(client, up, True), daemon=True).start()
            threading.Thread(target=self._pump, args=(up, client, False), daemon=True).start()

    @staticmethod
    def _pump(src: socket.socket, dst: socket.socket, to_server: bool) -> None:
        dst_ok = True
        try:
            while data := src.recv(65536):
                if dst_ok:
                    try:
                        dst.sendall(data)
                    except OSError:
                        # The client is gone (cut): keep reading the server's
                        # side to its end, so the server sees the stream end
                        # cleanly instead of writing into a dead one.
                        dst_ok = False
        except OSError:
            pass
        for s, how in ((dst, "end"), (src, "close")):
            try:  # pass the end on: a half-close toward the server, a close toward the client
                if how == "close" and not to_server:
                    s.close()
                elif how == "end":
                    s.shutdown(socket.SHUT_WR) if to_server else s.close()
            except OSError:
                pass

    def _cutter(self) -> None:
        while not self._stop.wait(self.every_s):
            if not self._cutting.is_set():
                continue
            with self._lock:
                pairs, self._pairs = self._pairs, []
            for client, up in pairs:
                try:  # RST toward the client
                    client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    client.close()
                except OSError:
                    pass
                try:  # FIN toward the server; its pump reads it to its end
                    up.shutdown(socket.SHUT_WR)
                except OSError:
                    pass
                self.cuts += 1

