#!/usr/bin/env python3
"""A real SMTP server for tests (Debian python3-aiosmtpd): writes each message it
accepts to DIR/<n>.eml (atomically), with the envelope in X-Envelope-* headers.
Usage: smtp_sink.py PORT DIR. Prints "ready" once listening."""
import os
import signal
import sys
import threading
import time

from aiosmtpd.controller import Controller


class Sink:
    def __init__(self, folder):
        self.folder = folder
        self.n = 0

    async def handle_DATA(self, server, session, envelope):
        self.n += 1
        name = f"{time.time_ns()}-{self.n}.eml"
        head = f"X-Envelope-From: {envelope.mail_from}\r\nX-Envelope-To: {','.join(envelope.rcpt_tos)}\r\n".encode()
        tmp = os.path.join(self.folder, "." + name)
        with open(tmp, "wb") as f:
            f.write(head + envelope.original_content)
        os.rename(tmp, os.path.join(self.folder, name))
        return "250 Message accepted for delivery"


def main():
    port, folder = int(sys.argv[1]), sys.argv[2]
    os.makedirs(folder, exist_ok=True)
    controller = Controller(Sink(folder), hostname="127.0.0.1", port=port)
    controller.start()
    print("ready", flush=True)
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    signal.signal(signal.SIGINT, lambda *_: done.set())
    done.wait()
    controller.stop()


if __name__ == "__main__":
    main()
