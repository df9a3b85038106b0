#!/usr/bin/env python3
"""parse_mail.py: parses one RFC 5322 message with Python's standard email package and prints
what it understood as JSON, so a spec can compare it with what it asked the builder for.

    python3 spec/support/parse_mail.py FILE     (FILE holds the raw message bytes)

Output: {"headers": {name: decoded str, ...}  (lower-case names; repeated ones joined by "\n"),
         "addresses": {"from"|"to"|"cc"|"reply-to"|"bcc": [{"name", "email"}]},
         "content_type": str, "defects": [str], "tree": "multipart/mixed(...)",
         "parts": [{"content_type", "charset", "filename", "disposition", "encoding",
                    "text" (str, for text/*) | "data_hex" (bytes, otherwise), "defects"}]}
It uses policy.default (the modern parser) and nothing outside the standard library.
"""
import json
import sys
from email import message_from_bytes, policy


def tree(part):
    if part.is_multipart():
        return "%s(%s)" % (part.get_content_type(), ",".join(tree(p) for p in part.iter_parts()))
    return part.get_content_type()


def main():
    with open(sys.argv[1], "rb") as f:
        raw = f.read()
    msg = message_from_bytes(raw, policy=policy.default)
    headers, addresses = {}, {}
    for name, value in msg.items():
        key = name.lower()
        text = str(value)
        headers[key] = headers[key] + "\n" + text if key in headers else text
        if key in ("from", "to", "cc", "bcc", "reply-to"):
            addresses[key] = [{"name": a.display_name, "email": a.addr_spec}
                              for a in value.addresses]
    defects = [type(d).__name__ for d in msg.defects]
    parts = []
    for part in msg.walk():
        defects += [type(d).__name__ for d in part.defects]
        if part.is_multipart():
            continue
        entry = {
            "content_type": part.get_content_type(),
            "charset": part.get_content_charset(),
            "filename": part.get_filename(),
            "disposition": part.get_content_disposition(),
            "encoding": part.get("content-transfer-encoding"),
        }
        if part.get_content_maintype() == "text" and part.get_content_disposition() != "attachment":
            entry["text"] = part.get_content()
        else:
            entry["data_hex"] = part.get_payload(decode=True).hex()
        parts.append(entry)
    json.dump({"headers": headers, "addresses": addresses, "content_type": msg.get_content_type(),
               "defects": defects, "tree": tree(msg), "parts": parts}, sys.stdout)


if __name__ == "__main__":
    main()
