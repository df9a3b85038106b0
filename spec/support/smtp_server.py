#!/usr/bin/env python3
"""spec/support/smtp_server.py: an SMTP sink for the #smtp specs (aiosmtpd on loopback).

Each accepted message is stored as DIR/<n>.eml (the DATA payload after un-dot-stuffing, bytes
as received) with DIR/<n>.json beside it ({"from":..., "to":[...]}). Options:

  --port N --dir DIR            where to listen (127.0.0.1) and store
  --auth USER:PASS              require AUTH (PLAIN and LOGIN) before MAIL
  --cert FILE --key FILE        offer STARTTLS (or, with --implicit, speak TLS from the start)
  --only PLAIN|LOGIN            offer only that AUTH mechanism
  --reject ADDR                 answer 550 to RCPT TO:<ADDR> (repeatable)
  --mode silent|drop-data       misbehave: never answer anything / close the connection in DATA

It prints "ready" on stdout once listening. It must not relay anything anywhere.
"""
import argparse
import asyncio
import json
import os
import ssl
import sys


def parse():
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--dir", required=True)
    p.add_argument("--auth")
    p.add_argument("--cert")
    p.add_argument("--key")
    p.add_argument("--implicit", action="store_true")
    p.add_argument("--reject", action="append", default=[])
    p.add_argument("--mode", default="normal")
    p.add_argument("--only", help="offer only this AUTH mechanism (PLAIN or LOGIN)")
    return p.parse_args()


class Sink:
    def __init__(self, folder, reject):
        self.folder = folder
        self.reject = {r.lower() for r in reject}
        self.n = 0

    async def handle_RCPT(self, server, session, envelope, address, rcpt_options):
        if address.lower() in self.reject:
            return "550 5.1.1 no such user here"
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server, session, envelope):
        self.n += 1
        base = os.path.join(self.folder, "%d" % self.n)
        with open(base + ".json", "w") as f:
            json.dump({"from": envelope.mail_from, "to": envelope.rcpt_tos}, f)
        with open(base + ".tmp", "wb") as f:
            f.write(envelope.original_content or envelope.content)
        os.rename(base + ".tmp", base + ".eml")
        return "250 OK queued as %d" % self.n


async def misbehave(mode, port):
    async def client(reader, writer):
        if mode == "silent":
            await reader.read(1 << 20)  # never answers; waits for the client to give up
        else:  # drop-data: a normal dialogue until DATA, then the connection drops mid-body
            writer.write(b"220 sink ESMTP\r\n")
            while True:
                line = await reader.readline()
                if not line:
                    break
                verb = line[:4].upper()
                if verb == b"EHLO":
                    writer.write(b"250-sink\r\n250 SIZE 1000000\r\n")
                elif verb == b"DATA":
                    writer.write(b"354 go ahead\r\n")
                    await writer.drain()
                    await reader.read(10)
                    break
                elif verb == b"QUIT":
                    writer.write(b"221 bye\r\n")
                    break
                else:
                    writer.write(b"250 OK\r\n")
                await writer.drain()
        writer.close()

    srv = await asyncio.start_server(client, "127.0.0.1", port)
    print("ready", flush=True)
    async with srv:
        await srv.serve_forever()


def main():
    a = parse()
    if a.mode != "normal":
        asyncio.run(misbehave(a.mode, a.port))
        return
    from aiosmtpd.controller import Controller
    from aiosmtpd.smtp import AuthResult

    kw = {"hostname": "127.0.0.1", "port": a.port}
    ctx = None
    if a.cert:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(a.cert, a.key)
    if a.auth:
        user, pw = a.auth.split(":", 1)

        def check(server, session, envelope, mechanism, auth_data):
            ok = auth_data.login.decode() == user and auth_data.password.decode() == pw
            # handled=False: aiosmtpd answers a refusal with 535 itself (with the default,
            # True, it answers nothing and the client waits out its timeout).
            return AuthResult(success=ok, handled=False)

        kw["authenticator"] = check
        kw["auth_required"] = True
        # aiosmtpd only counts STARTTLS as TLS; implicit TLS is TLS from the first byte.
        kw["auth_require_tls"] = bool(a.cert) and not a.implicit
        if a.only:
            kw["auth_exclude_mechanism"] = [m for m in ("PLAIN", "LOGIN") if m != a.only]
    if ctx and a.implicit:
        kw["ssl_context"] = ctx
    elif ctx:
        kw["tls_context"] = ctx
        kw["require_starttls"] = True
    ctrl = Controller(Sink(a.dir, a.reject), **kw)
    ctrl.start()
    print("ready", flush=True)
    try:
        asyncio.get_event_loop().run_forever()
    except KeyboardInterrupt:
        pass
    finally:
        ctrl.stop()


if __name__ == "__main__":
    main()
