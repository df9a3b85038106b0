#!/usr/bin/env bash
# bench/check_bench.sh: `zever check` end to end on a 200-entity schema.
#
# Generates into a temporary folder a valid schema of 200 entities (8 fields each with
# attributes, a belongs_to / has_many chain between neighbours, an index), an enum, a service
# with 250 RPCs (routes, auth, errors), a job and a schedule, spread over 10 files of one module.
# Checks that `bin/zever check` finds no error in it, then times the whole process (start-up, reading,
# lexing, parsing, resolving, printing nothing) with hyperfine and prints a Go-style line with the
# median. Target (issue 9): <= 50 ms. ENTITIES=n changes the size; RUNS=n the number of runs.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=bin/zever
entities=${ENTITIES:-200}
runs=${RUNS:-30}
dir=$(mktemp -d)
json=$(mktemp)
trap 'rm -rf "$dir" "$json"' EXIT
# KEEP_SCHEMA=folder: generate the schema there and keep it (bench/lsp_bench.sh uses it).
if [ -n "${KEEP_SCHEMA:-}" ]; then rm -rf "$dir"; dir=$KEEP_SCHEMA; trap 'rm -f "$json"' EXIT; fi
[ -n "${KEEP:-}" ] && trap 'rm -f "$json"; echo "schema kept in $dir" >&2' EXIT
mkdir -p "$dir/schema/shop"

python3 - "$dir/schema/shop" "$entities" <<'PY'
import sys
out, n = sys.argv[1], int(sys.argv[2])
files = 10
per = (n + files - 1) // files

def entity(i):
    e = ["// Item%03d is entity number %d of the generated schema." % (i, i),
         "entity Item%03d {" % i,
         "  id: uuid @primary",
         "  name: string @validate(min_len: 1, max_len: 200)",
         "  slug: string @unique @validate(max_len: 120)",
         "  email: string? @validate(format: email)",
         "  count: int32 @default(0) @validate(gte: 0)",
         "  price: float64? @validate(gt: 0)",
         "  active: bool @default(true)",
         "  status: Status @default(draft)",
         "  created_at: timestamp"]
    if i > 0:
        e.append("  belongs_to owner: Item%03d? @foreign_key(owner_id) @on_delete(set_null)" % (i - 1))
    if i < n - 1:
        e.append("  has_many children: Item%03d @foreign_key(owner_id)" % (i + 1))
    e.append("  index(name, created_at)")
    e.append("}")
    return "\n".join(e) + "\n"

for f in range(files):
    body = [entity(i) for i in range(f * per, min(n, (f + 1) * per))]
    if f == 0:
        body.insert(0, "enum Status { draft, published, archived }\n")
    open("%s/items%02d.zen" % (out, f), "w").write("\n".join(body))

rpcs = []
for i in range(n):
    rpcs.append('  rpc GetItem%03d(id: uuid) -> Item%03d {\n'
                '    http: GET "/items%03d/{id}"\n    auth: required\n    errors: { not_found }\n  }' % (i, i, i))
for i in range(0, n, 4):
    rpcs.append('  rpc CreateItem%03d(name: string @validate(min_len: 1), slug: string) -> Item%03d {\n'
                '    http: POST "/items%03d"\n    auth: required\n'
                '    errors: { already_exists, invalid_argument("slug is taken") }\n  }' % (i, i, i))
open("%s/service.zen" % out, "w").write(
    'service Shop {\n  prefix: "/v1"\n' + "\n".join(rpcs) + "\n}\n\n"
    "job Reindex(item_id: uuid) { queue: search  retry: max_attempts(5), backoff(exponential, base: 10s) }\n\n"
    'schedule Nightly { cron: "0 3 * * *"  dispatch: Reindex(item_id: "00000000-0000-0000-0000-000000000000") }\n')
PY

bytes=$(cat "$dir"/schema/shop/*.zen | wc -c)
if ! "$bin" check "$dir/schema" >/dev/null 2>"$json"; then
  echo "check_bench: the generated schema has errors:" >&2
  "$bin" check "$dir/schema" | head -20 >&2
  exit 1
fi
hyperfine --warmup 5 --runs "$runs" -N --export-json "$json" "$bin check $dir/schema" >/dev/null 2>&1
python3 - "$json" "$entities" "$bytes" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["results"][0]
# Wall time is what the target is about; user+system CPU (means) shows what a busy machine adds.
print("BenchmarkCheck%sEntities%s %10d %12.0f ns/op  (median %.2f ms, mean %.2f ms, min %.2f ms;"
      " cpu %.2f ms user+sys; %s bytes of .zen)" % (
    sys.argv[2], " " * max(1, 14 - len(sys.argv[2])), len(r["times"]), r["median"] * 1e9,
    r["median"] * 1e3, r["mean"] * 1e3, r["min"] * 1e3, (r["user"] + r["system"]) * 1e3, sys.argv[3]))
PY
