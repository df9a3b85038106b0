# spec/support/sigv4_botocore.py: the Authorization header botocore (the AWS SDK's own signer)
# computes for each request case on stdin (JSON), at the case's fixed time, as a JSON list:
# the reference adapters.storage.sigv4 is checked against (spec/zever/storage_s3_spec.lua).
import sys, json, datetime
from botocore.auth import S3SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
cases = json.load(sys.stdin)
out = []
for c in cases:
    url = "http://" + c["host"] + c["path_encoded"] + (("?" + c["query_string"]) if c.get("query_string") else "")
    headers = dict(c.get("headers") or {})
    req = AWSRequest(method=c["method"], url=url, data=(c["payload"] or "").encode() if c.get("payload") is not None else None, headers=headers)
    if c.get("payload") is None:
        req.headers["X-Amz-Content-SHA256"] = "UNSIGNED-PAYLOAD"
    auth = S3SigV4Auth(Credentials(c["access_key"], c["secret_key"]), "s3", c["region"])
    # botocore reads the time from datetime.datetime.utcnow: pin it
    t = datetime.datetime.utcfromtimestamp(c["time"])
    class FixedDT(datetime.datetime):
        @classmethod
        def utcnow(cls): return t
        @classmethod
        def now(cls, tz=None): return t.replace(tzinfo=tz) if tz else t
    import botocore.auth as ba
    ba.datetime.datetime = FixedDT
    auth.add_auth(req)
    out.append(req.headers["Authorization"])
print(json.dumps(out))
