#!/usr/bin/env python3
"""A real SMTP server for tests (Debian python3-aiosmtpd): writes each message it
accepts to DIR/<n>.eml (atomically), with the envelope in X-Envelope-* headers.
With REFUSE_EACH, it first answers "451 try again later" REFUSE_EACH times to each
message (by Message-ID), writing each refused one to DIR/<ns>-<n>.refused.
Usage: smtp_sink.py PORT DIR [REFUSE_EACH]. Prints "ready" once listening."""
import email
import os
import signal
import sys
import threading
import time

from aiosmtpd.controller import Controller


class Sink:
    def __init__(self, folder, refuse_each):
        self.folder = folder
        self.refuse_each = refuse_each
        self.refused = {}  # Message-ID -> times refused
        self.n = 0

    def write(self, name, content):
        tmp = os.path.join(self.folder, "." + name)
        with open(tmp, "wb") as f:
            f.write(content)
        os.rename(tmp, os.path.join(self.folder, name))

    async def handle_DATA(self, server, session, envelope):
        self.n += 1
        head = f"X-Envelope-From: {envelope.mail_from}\r\nX-Envelope-To: {','.join(envelope.rcpt_tos)}\r\n".encode()
        message_id = email.message_from_bytes(envelope.original_content).get("Message-ID", "")
        if self.refused.get(message_id, 0) < self.refuse_each:
            self.refused[message_id] = self.refused.get(message_id, 0) + 1
            self.write(f"{time.time_ns()}-{self.n}.refused", head + envelope.original_content)
            return "451 4.3.0 Try again later"
        self.write(f"{time.time_ns()}-{self.n}.eml", head + envelope.original_content)
        return "250 Message accepted for delivery"


def main():
    port, folder = int(sys.argv[1]), sys.argv[2]
    refuse_each = int(sys.argv[3]) if len(sys.argv) > 3 else 0
    os.makedirs(folder, exist_ok=True)
    controller = Controller(Sink(folder, refuse_each), hostname="127.0.0.1", port=port)
    controller.start()
    print("ready", flush=True)
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    signal.signal(signal.SIGINT, lambda *_: done.set())
    done.wait()
    controller.stop()


if __name__ == "__main__":
    main()
