#!/usr/bin/env python3
"""bench/tfb/data.py FILE: writes the TechEmpower test data into a new SQLite file.

World: 10,000 rows (id 1..10000, randomNumber 1..10000); Fortune: the 12 rows of the TFB
specification (one with a <script> tag, one in Japanese). The random numbers come from a fixed
seed, so every run (and both servers, which get copies of one file) see the same data. The file
is in WAL mode, as zever's SQLite adapter opens it. It refuses to overwrite an existing file.
"""
import os
import random
import sqlite3
import sys

FORTUNES = [
    (1, "fortune: No such file or directory"),
    (2, "A computer scientist is someone who fixes things that aren't broken."),
    (3, "After enough decimal places, nobody gives a damn."),
    (4, "A bad random number generator: 1, 1, 1, 1, 1, 4.33e+67, 1, 1, 1"),
    (5, "A computer program does what you tell it to do, not what you want it to do."),
    (6, "Emacs is a nice operating system, but I prefer UNIX. \u2014 Tom Christaensen"),
    (7, "Any program that runs right is obsolete."),
    (8, "A list is only as strong as its weakest link. \u2014 Donald Knuth"),
    (9, "Feature: A bug with seniority."),
    (10, "Computers make very fast, very accurate mistakes."),
    (11, "<script>alert(\"This should not be displayed in a browser alert box.\");</script>"),
    (12, "\u30d5\u30ec\u30fc\u30e0\u30ef\u30fc\u30af\u306e\u30d9\u30f3\u30c1\u30de\u30fc\u30af"),
]


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: data.py FILE")
    path = sys.argv[1]
    if os.path.exists(path):
        sys.exit("data.py: %s exists" % path)
    rng = random.Random(20261202)
    db = sqlite3.connect(path)
    db.execute("PRAGMA journal_mode = WAL")
    db.execute("CREATE TABLE World (id INTEGER PRIMARY KEY, randomNumber INTEGER NOT NULL)")
    db.execute("CREATE TABLE Fortune (id INTEGER PRIMARY KEY, message TEXT NOT NULL)")
    db.executemany("INSERT INTO World VALUES (?, ?)",
                   ((i, rng.randint(1, 10000)) for i in range(1, 10001)))
    db.executemany("INSERT INTO Fortune VALUES (?, ?)", FORTUNES)
    db.commit()
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()


if __name__ == "__main__":
    main()
