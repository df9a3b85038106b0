#!/usr/bin/env python3
"""bench/tfb/check.py NAME URL DBFILE: verifies one server's answers against the TechEmpower
rules before bench/tfb/run.sh measures it; exit 0 when every rule holds, 1 with the broken
rules listed otherwise.

Rules checked (TFB's requirements for each test type, as its verifier reads them):
  every response: 200, a Server and a Date header, a Content-Length equal to the body's length
    (or chunked), the content type of the test type;
  plaintext: the body is exactly "Hello, World!";
  json: the body decodes to exactly {"message": "Hello, World!"};
  db: one object with exactly the keys id and randomNumber, integers in 1..10000, equal to the
    database row (read from DBFILE);
  queries: ?queries= missing, 0, "foo" -> 1 row; 20 -> 20; 501 -> 500; every row as for db;
  updates: as queries, and afterwards the database holds every returned randomNumber (the last
    one of an id given twice), and some rows did change;
  fortunes: text/html; charset=utf-8, and the body is exactly the table of the 12 database rows
    plus "Additional fortune added at request time." (id 0), sorted by message, every message
    escaped (& < > " '), UTF-8 kept.
It reads the database only (sqlite3 in read-only mode); the server writes it.
"""
import http.client
import json
import sqlite3
import sys
import urllib.parse

TYPES = {
    "/plaintext": "text/plain",
    "/json": "application/json",
    "/db": "application/json",
    "/queries": "application/json",
    "/updates": "application/json",
    "/fortunes": "text/html; charset=utf-8",
}

ESC = {"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;"}


def escape(s):
    return "".join(ESC.get(c, c) for c in s)


class Checker:
    def __init__(self, name, url, dbfile):
        u = urllib.parse.urlsplit(url)
        self.name, self.host, self.port = name, u.hostname, u.port
        self.dbfile = dbfile
        self.failures = []

    def fail(self, path, msg):
        self.failures.append("%s %s: %s" % (self.name, path, msg))

    def get(self, path):
        c = http.client.HTTPConnection(self.host, self.port, timeout=10)
        c.request("GET", path)
        r = c.getresponse()
        body = r.read()
        headers = {k.lower(): v for k, v in r.getheaders()}
        c.close()
        base = path.split("?")[0]
        if r.status != 200:
            self.fail(path, "status %d" % r.status)
        for h in ("server", "date"):
            if h not in headers:
                self.fail(path, "no %s header" % h.capitalize())
        if "content-length" in headers:
            if int(headers["content-length"]) != len(body):
                self.fail(path, "Content-Length %s, body %d bytes" % (headers["content-length"],
                                                                    len(body)))
        elif headers.get("transfer-encoding") != "chunked":
            self.fail(path, "neither Content-Length nor chunked")
        ctype = headers.get("content-type", "")
        want = TYPES[base]
        if not (ctype == want or ctype.startswith(want + ";")):
            self.fail(path, "Content-Type %r, want %r" % (ctype, want))
        return body

    def db(self):
        return sqlite3.connect("file:%s?mode=ro" % self.dbfile, uri=True)

    def world(self, path, row, db):
        if not isinstance(row, dict) or set(row) != {"id", "randomNumber"}:
            self.fail(path, "not a World row: %r" % (row,))
            return False
        i, n = row["id"], row["randomNumber"]
        if type(i) is not int or type(n) is not int or not 1 <= i <= 10000 or \
                not 1 <= n <= 10000:
            self.fail(path, "values out of range: %r" % (row,))
            return False
        if db is not None:
            have = db.execute("SELECT randomNumber FROM World WHERE id = ?", (i,)).fetchone()
            if have is None or have[0] != n:
                self.fail(path, "row %r, database has %r" % (row, have))
                return False
        return True

    def json_of(self, path, body):
        try:
            return json.loads(body)
        except ValueError as e:
            self.fail(path, "invalid JSON (%s): %r" % (e, body[:80]))
            return None

    def rows(self, path, want, db):
        v = self.json_of(path, self.get(path))
        if not isinstance(v, list):
            self.fail(path, "not an array: %r" % (v,))
            return []
        if len(v) != want:
            self.fail(path, "%d rows, want %d" % (len(v), want))
        for row in v:
            self.world(path, row, db)
        return v

    def run(self):
        if self.get("/plaintext") != b"Hello, World!":
            self.fail("/plaintext", "body is not Hello, World!")
        if self.json_of("/json", self.get("/json")) != {"message": "Hello, World!"}:
            self.fail("/json", "body is not {\"message\":\"Hello, World!\"}")
        db = self.db()
        for _ in range(20):
            row = self.json_of("/db", self.get("/db"))
            if row is not None:
                self.world("/db", row, db)
        for q, want in ((None, 1), ("0", 1), ("foo", 1), ("1", 1), ("20", 20), ("501", 500)):
            path = "/queries" if q is None else "/queries?queries=" + q
            self.rows(path, want, db)
        before = dict(db.execute("SELECT id, randomNumber FROM World"))
        db.close()
        returned = {}
        for q, want in ((None, 1), ("foo", 1), ("20", 20), ("501", 500)):
            path = "/updates" if q is None else "/updates?queries=" + q
            for row in self.rows(path, want, None):
                if isinstance(row, dict) and "id" in row:
                    returned[row["id"]] = row["randomNumber"]
        db = self.db()
        after = dict(db.execute("SELECT id, randomNumber FROM World"))
        stale = [i for i, n in returned.items() if after.get(i) != n]
        if stale:
            self.fail("/updates", "%d returned rows not in the database (ids %r...)" %
                      (len(stale), stale[:5]))
        changed = sum(1 for i in returned if before.get(i) != after.get(i))
        if changed == 0:
            self.fail("/updates", "no row changed")
        fortunes = list(db.execute("SELECT id, message FROM Fortune"))
        db.close()
        fortunes.append((0, "Additional fortune added at request time."))
        fortunes.sort(key=lambda f: f[1].encode())
        want = ("<!DOCTYPE html><html><head><title>Fortunes</title></head><body><table>"
                "<tr><th>id</th><th>message</th></tr>" +
                "".join("<tr><td>%d</td><td>%s</td></tr>" % (i, escape(m)) for i, m in fortunes)
                + "</table></body></html>")
        got = self.get("/fortunes").decode("utf-8", "replace")
        if got.strip() != want:
            self.fail("/fortunes", "HTML differs from the expected table:\n got: %r\nwant: %r" %
                      (got, want))
        return self.failures


def main():
    if len(sys.argv) != 4:
        sys.exit("usage: check.py NAME URL DBFILE")
    failures = Checker(*sys.argv[1:]).run()
    for f in failures:
        print("check: " + f, file=sys.stderr)
    if failures:
        sys.exit(1)
    print("# %s: every TFB rule checked holds" % sys.argv[1])


if __name__ == "__main__":
    main()
