-- luacheck: no max line length
-- Golden rows for the SQL renderer (zever.sql) through the query builder (zever.db): each row
-- is { name, builder(db), sqlite SQL, postgres SQL, binds }. An expected SQL of the form
-- { error = "text" } means rendering for that dialect fails with a message containing text.
-- Every row that renders for sqlite is also executed against a real SQLite database holding
-- the fixture schema below, inside a transaction that is rolled back.

local zdb = require "zever.db"
local sql = require "zever.sql"

local NULL = zdb.null

local FIXTURE = [[
CREATE TABLE users (id INTEGER PRIMARY KEY, email TEXT UNIQUE, name TEXT, age INTEGER,
  status TEXT, role TEXT, team TEXT, score INTEGER, region TEXT, year INTEGER, deleted_at TEXT);
CREATE TABLE posts (id INTEGER PRIMARY KEY, user_id INTEGER REFERENCES users(id), title TEXT,
  body TEXT, views INTEGER DEFAULT 0);
CREATE TABLE jobs (id INTEGER PRIMARY KEY, queue TEXT, attempt INTEGER DEFAULT 0,
  claimed_by TEXT, run_at INTEGER);
CREATE TABLE tree (id INTEGER PRIMARY KEY, parent_id INTEGER, name TEXT);
CREATE TABLE "we""ird" (id INTEGER PRIMARY KEY, "odd col" TEXT);
INSERT INTO users (id, email, name, age, status, role, team, score, region, year)
  VALUES (1, 'ann@example.com', 'Ann', 31, 'active', 'admin', 'red', 10, 'eu', 2023),
         (2, 'bob@example.com', 'Bob', 17, 'inactive', 'user', 'blue', 7, 'us', 2024);
INSERT INTO posts (id, user_id, title, body) VALUES (1, 1, 'Hello', 'first');
INSERT INTO jobs (id, queue, attempt) VALUES (1, 'default', 0);
INSERT INTO tree (id, parent_id, name) VALUES (1, NULL, 'root'), (2, 1, 'leaf');
]]

local ERR = function(text) return { error = text } end

local rows = {
  -- select basics
  { "a bare select", function(db) return db:from("users") end,
    'SELECT * FROM "users"', 'SELECT * FROM "users"', {} },
  { "selected columns", function(db) return db:from("users"):select("id", "email") end,
    'SELECT "id", "email" FROM "users"', 'SELECT "id", "email" FROM "users"', {} },
  { "select called twice appends", function(db) return db:from("users"):select("id"):select("name") end,
    'SELECT "id", "name" FROM "users"', 'SELECT "id", "name" FROM "users"', {} },
  { "a qualified column", function(db) return db:from("users"):select("users.id") end,
    'SELECT "users"."id" FROM "users"', 'SELECT "users"."id" FROM "users"', {} },
  { "a qualified star", function(db) return db:from("users"):select("users.*") end,
    'SELECT "users".* FROM "users"', 'SELECT "users".* FROM "users"', {} },
  { "a column alias", function(db) return db:from("users"):select("email AS mail") end,
    'SELECT "email" AS "mail" FROM "users"', 'SELECT "email" AS "mail" FROM "users"', {} },
  { "a table alias", function(db) return db:from("users AS u"):select("u.id") end,
    'SELECT "u"."id" FROM "users" AS "u"', 'SELECT "u"."id" FROM "users" AS "u"', {} },
  { "distinct", function(db) return db:from("users"):select("team"):distinct() end,
    'SELECT DISTINCT "team" FROM "users"', 'SELECT DISTINCT "team" FROM "users"', {} },
  { "a select without from", function(db) return db:select(db.raw("1 + 1"):as("two")) end,
    'SELECT 1 + 1 AS "two"', 'SELECT 1 + 1 AS "two"', {} },
  { "a bound value in the select list", function(db) return db:select(db.val(5):as("five")) end,
    'SELECT ? AS "five"', 'SELECT $1 AS "five"', { 5 } },

  -- where
  { "where with an operator", function(db) return db:from("users"):where("age", ">", 18) end,
    'SELECT * FROM "users" WHERE "age" > ?', 'SELECT * FROM "users" WHERE "age" > $1', { 18 } },
  { "where with two arguments means equality", function(db) return db:from("users"):where("status", "active") end,
    'SELECT * FROM "users" WHERE "status" = ?', 'SELECT * FROM "users" WHERE "status" = $1', { "active" } },
  { "where with a table sorts its keys", function(db) return db:from("users"):where { status = "active", role = "admin" } end,
    'SELECT * FROM "users" WHERE "role" = ? AND "status" = ?',
    'SELECT * FROM "users" WHERE "role" = $1 AND "status" = $2', { "admin", "active" } },
  { "where with a table holding a list means IN", function(db) return db:from("users"):where { id = { 1, 2 } } end,
    'SELECT * FROM "users" WHERE "id" IN (?, ?)', 'SELECT * FROM "users" WHERE "id" IN ($1, $2)', { 1, 2 } },
  { "where with a table holding null means IS NULL", function(db) return db:from("users"):where { deleted_at = NULL } end,
    'SELECT * FROM "users" WHERE "deleted_at" IS NULL', 'SELECT * FROM "users" WHERE "deleted_at" IS NULL', {} },
  { "chained wheres join with AND", function(db) return db:from("users"):where("age", ">=", 18):where("team", "red") end,
    'SELECT * FROM "users" WHERE "age" >= ? AND "team" = ?',
    'SELECT * FROM "users" WHERE "age" >= $1 AND "team" = $2', { 18, "red" } },
  { "or_where joins with OR", function(db) return db:from("users"):where("age", "<", 18):or_where("role", "admin") end,
    'SELECT * FROM "users" WHERE "age" < ? OR "role" = ?',
    'SELECT * FROM "users" WHERE "age" < $1 OR "role" = $2', { 18, "admin" } },
  { "or_where with a table groups its keys", function(db)
      return db:from("users"):where("age", "<", 18):or_where { role = "admin", team = "red" } end,
    'SELECT * FROM "users" WHERE "age" < ? OR ("role" = ? AND "team" = ?)',
    'SELECT * FROM "users" WHERE "age" < $1 OR ("role" = $2 AND "team" = $3)', { 18, "admin", "red" } },
  { "a function makes a parenthesised group", function(db)
      return db:from("users"):where("status", "active"):where(function(q)
        q:where("age", ">", 18):or_where("role", "admin")
      end) end,
    'SELECT * FROM "users" WHERE "status" = ? AND ("age" > ? OR "role" = ?)',
    'SELECT * FROM "users" WHERE "status" = $1 AND ("age" > $2 OR "role" = $3)', { "active", 18, "admin" } },
  { "an or_where group", function(db)
      return db:from("users"):where("team", "red"):or_where(function(q) q:where("team", "blue"):where("age", ">", 30) end) end,
    'SELECT * FROM "users" WHERE "team" = ? OR ("team" = ? AND "age" > ?)',
    'SELECT * FROM "users" WHERE "team" = $1 OR ("team" = $2 AND "age" > $3)', { "red", "blue", 30 } },
  { "nested groups", function(db)
      return db:from("users"):where(function(q)
        q:where("a", 1):or_where(function(r) r:where("b", 2):where("c", 3) end)
      end) end,
    'SELECT * FROM "users" WHERE ("a" = ? OR ("b" = ? AND "c" = ?))',
    'SELECT * FROM "users" WHERE ("a" = $1 OR ("b" = $2 AND "c" = $3))', { 1, 2, 3 },
    skip_exec = true },
  { "an empty group is dropped", function(db) return db:from("users"):where(function() end):where("id", 1) end,
    'SELECT * FROM "users" WHERE "id" = ?', 'SELECT * FROM "users" WHERE "id" = $1', { 1 } },
  { "where_not negates a group", function(db) return db:from("users"):where_not(function(q) q:where("team", "red") end) end,
    'SELECT * FROM "users" WHERE NOT ("team" = ?)', 'SELECT * FROM "users" WHERE NOT ("team" = $1)', { "red" } },
  { "where equal to db.null is IS NULL", function(db) return db:from("users"):where("deleted_at", NULL) end,
    'SELECT * FROM "users" WHERE "deleted_at" IS NULL', 'SELECT * FROM "users" WHERE "deleted_at" IS NULL', {} },
  { "where not equal to nil is IS NOT NULL", function(db) return db:from("users"):where("deleted_at", "<>", nil) end,
    'SELECT * FROM "users" WHERE "deleted_at" IS NOT NULL',
    'SELECT * FROM "users" WHERE "deleted_at" IS NOT NULL', {} },
  { "!= renders as <>", function(db) return db:from("users"):where("team", "!=", "red") end,
    'SELECT * FROM "users" WHERE "team" <> ?', 'SELECT * FROM "users" WHERE "team" <> $1', { "red" } },
  { "<= and like", function(db) return db:from("users"):where("age", "<=", 40):where("name", "like", "A%") end,
    'SELECT * FROM "users" WHERE "age" <= ? AND "name" LIKE ?',
    'SELECT * FROM "users" WHERE "age" <= $1 AND "name" LIKE $2', { 40, "A%" } },
  { "operators are case-insensitive", function(db) return db:from("users"):where("name", "NOT LIKE", "B%") end,
    'SELECT * FROM "users" WHERE "name" NOT LIKE ?', 'SELECT * FROM "users" WHERE "name" NOT LIKE $1', { "B%" } },
  { "ilike is postgres only", function(db) return db:from("users"):where("name", "ilike", "a%") end,
    ERR "ilike is not supported by sqlite", 'SELECT * FROM "users" WHERE "name" ILIKE $1', { "a%" } },
  { "glob is sqlite only", function(db) return db:from("users"):where("name", "glob", "A*") end,
    'SELECT * FROM "users" WHERE "name" GLOB ?', ERR "glob is not supported by postgres", { "A*" } },
  { "is distinct from", function(db) return db:from("users"):where("team", "is distinct from", "red") end,
    'SELECT * FROM "users" WHERE "team" IS DISTINCT FROM ?',
    'SELECT * FROM "users" WHERE "team" IS DISTINCT FROM $1', { "red" } },
  { "an unknown operator fails", function(db) return db:from("users"):where("age", "=>", 1) end,
    ERR "unknown comparison operator", ERR "unknown comparison operator", {} },
  { "null compared with < fails", function(db) return db:from("users"):where("age", "<", NULL) end,
    ERR "NULL cannot be compared", ERR "NULL cannot be compared", {} },
  { "the 'in' operator takes a list", function(db) return db:from("users"):where("id", "in", { 1, 2, 3 }) end,
    'SELECT * FROM "users" WHERE "id" IN (?, ?, ?)', 'SELECT * FROM "users" WHERE "id" IN ($1, $2, $3)', { 1, 2, 3 } },
  { "where_in", function(db) return db:from("users"):where_in("team", { "red", "blue" }) end,
    'SELECT * FROM "users" WHERE "team" IN (?, ?)', 'SELECT * FROM "users" WHERE "team" IN ($1, $2)', { "red", "blue" } },
  { "where_not_in", function(db) return db:from("users"):where_not_in("id", { 5 }) end,
    'SELECT * FROM "users" WHERE "id" NOT IN (?)', 'SELECT * FROM "users" WHERE "id" NOT IN ($1)', { 5 } },
  { "where_in with an empty list matches nothing", function(db) return db:from("users"):where_in("id", {}) end,
    'SELECT * FROM "users" WHERE 1 = 0', 'SELECT * FROM "users" WHERE 1 = 0', {} },
  { "where_not_in with an empty list matches everything", function(db) return db:from("users"):where_not_in("id", {}) end,
    'SELECT * FROM "users" WHERE 1 = 1', 'SELECT * FROM "users" WHERE 1 = 1', {} },
  { "where_in with a subquery", function(db)
      return db:from("users"):where_in("id", db:from("posts"):select("user_id"):where("views", ">", 10)) end,
    'SELECT * FROM "users" WHERE "id" IN (SELECT "user_id" FROM "posts" WHERE "views" > ?)',
    'SELECT * FROM "users" WHERE "id" IN (SELECT "user_id" FROM "posts" WHERE "views" > $1)', { 10 } },
  { "or_where_in", function(db) return db:from("users"):where("age", 1):or_where_in("id", { 1, 2 }) end,
    'SELECT * FROM "users" WHERE "age" = ? OR "id" IN (?, ?)',
    'SELECT * FROM "users" WHERE "age" = $1 OR "id" IN ($2, $3)', { 1, 1, 2 } },
  { "where_between", function(db) return db:from("users"):where_between("age", 18, 65) end,
    'SELECT * FROM "users" WHERE "age" BETWEEN ? AND ?',
    'SELECT * FROM "users" WHERE "age" BETWEEN $1 AND $2', { 18, 65 } },
  { "where_not_between", function(db) return db:from("users"):where_not_between("age", 18, 65) end,
    'SELECT * FROM "users" WHERE "age" NOT BETWEEN ? AND ?',
    'SELECT * FROM "users" WHERE "age" NOT BETWEEN $1 AND $2', { 18, 65 } },
  { "where_null", function(db) return db:from("users"):where_null("deleted_at") end,
    'SELECT * FROM "users" WHERE "deleted_at" IS NULL', 'SELECT * FROM "users" WHERE "deleted_at" IS NULL', {} },
  { "where_not_null", function(db) return db:from("users"):where_not_null("deleted_at") end,
    'SELECT * FROM "users" WHERE "deleted_at" IS NOT NULL',
    'SELECT * FROM "users" WHERE "deleted_at" IS NOT NULL', {} },
  { "or_where_null", function(db) return db:from("users"):where("age", 1):or_where_null("age") end,
    'SELECT * FROM "users" WHERE "age" = ? OR "age" IS NULL',
    'SELECT * FROM "users" WHERE "age" = $1 OR "age" IS NULL', { 1 } },
  { "where_exists", function(db)
      return db:from("users"):where_exists(db:from("posts"):where("posts.user_id", ">", 0)) end,
    'SELECT * FROM "users" WHERE EXISTS (SELECT * FROM "posts" WHERE "posts"."user_id" > ?)',
    'SELECT * FROM "users" WHERE EXISTS (SELECT * FROM "posts" WHERE "posts"."user_id" > $1)', { 0 } },
  { "where_not_exists", function(db) return db:from("users"):where_not_exists(db:from("posts")) end,
    'SELECT * FROM "users" WHERE NOT (EXISTS (SELECT * FROM "posts"))',
    'SELECT * FROM "users" WHERE NOT (EXISTS (SELECT * FROM "posts"))', {} },
  { "a column compared with a column", function(db) return db:from("posts"):where("views", ">", db.col("user_id")) end,
    'SELECT * FROM "posts" WHERE "views" > "user_id"', 'SELECT * FROM "posts" WHERE "views" > "user_id"', {} },
  { "an expression on the left", function(db) return db:from("users"):where(db.fn.lower(db.col("email")), "a@b.c") end,
    'SELECT * FROM "users" WHERE lower("email") = ?', 'SELECT * FROM "users" WHERE lower("email") = $1', { "a@b.c" } },
  { "a raw condition with a bound value", function(db) return db:from("users"):where(db.raw("age % ? = 0", 2)) end,
    'SELECT * FROM "users" WHERE age % ? = 0', 'SELECT * FROM "users" WHERE age % $1 = 0', { 2 } },
  { "a raw fragment leaves quoted question marks alone", function(db)
      return db:from("users"):where(db.raw("name <> '?' AND age > ?", 1)) end,
    [[SELECT * FROM "users" WHERE name <> '?' AND age > ?]],
    [[SELECT * FROM "users" WHERE name <> '?' AND age > $1]], { 1 } },
  { "a raw fragment with the wrong number of values fails", function(db) return db:from("users"):where(db.raw("a = ?")) end,
    ERR "1 placeholders but 0 values", ERR "1 placeholders but 0 values", {} },

  -- LIKE helpers
  { "where_contains escapes and wraps", function(db) return db:from("users"):where_contains("name", "50%_off\\") end,
    [[SELECT * FROM "users" WHERE "name" LIKE ? ESCAPE '\']],
    [[SELECT * FROM "users" WHERE "name" LIKE $1 ESCAPE '\']], { "%50\\%\\_off\\\\%" } },
  { "where_starts_with", function(db) return db:from("users"):where_starts_with("email", "a_b") end,
    [[SELECT * FROM "users" WHERE "email" LIKE ? ESCAPE '\']],
    [[SELECT * FROM "users" WHERE "email" LIKE $1 ESCAPE '\']], { "a\\_b%" } },
  { "where_ends_with", function(db) return db:from("users"):where_ends_with("email", "@example.com") end,
    [[SELECT * FROM "users" WHERE "email" LIKE ? ESCAPE '\']],
    [[SELECT * FROM "users" WHERE "email" LIKE $1 ESCAPE '\']], { "%@example.com" } },
  { "or_where_contains", function(db) return db:from("users"):where("id", 1):or_where_contains("name", "n") end,
    [[SELECT * FROM "users" WHERE "id" = ? OR "name" LIKE ? ESCAPE '\']],
    [[SELECT * FROM "users" WHERE "id" = $1 OR "name" LIKE $2 ESCAPE '\']], { 1, "%n%" } },
  { "where_not_contains", function(db) return db:from("users"):where_not_contains("name", "%") end,
    [[SELECT * FROM "users" WHERE "name" NOT LIKE ? ESCAPE '\']],
    [[SELECT * FROM "users" WHERE "name" NOT LIKE $1 ESCAPE '\']], { "%\\%%" } },

  -- joins
  { "join", function(db) return db:from("users"):join("posts", "posts.user_id", "=", "users.id") end,
    'SELECT * FROM "users" JOIN "posts" ON "posts"."user_id" = "users"."id"',
    'SELECT * FROM "users" JOIN "posts" ON "posts"."user_id" = "users"."id"', {} },
  { "join without an operator means =", function(db) return db:from("users"):join("posts", "posts.user_id", "users.id") end,
    'SELECT * FROM "users" JOIN "posts" ON "posts"."user_id" = "users"."id"',
    'SELECT * FROM "users" JOIN "posts" ON "posts"."user_id" = "users"."id"', {} },
  { "left_join with aliases", function(db)
      return db:from("users as u"):left_join("posts as p", "p.user_id", "=", "u.id"):select("u.id", "p.title") end,
    'SELECT "u"."id", "p"."title" FROM "users" AS "u" LEFT JOIN "posts" AS "p" ON "p"."user_id" = "u"."id"',
    'SELECT "u"."id", "p"."title" FROM "users" AS "u" LEFT JOIN "posts" AS "p" ON "p"."user_id" = "u"."id"', {} },
  { "right_join", function(db) return db:from("users"):right_join("posts", "posts.user_id", "users.id") end,
    'SELECT * FROM "users" RIGHT JOIN "posts" ON "posts"."user_id" = "users"."id"',
    'SELECT * FROM "users" RIGHT JOIN "posts" ON "posts"."user_id" = "users"."id"', {} },
  { "cross_join", function(db) return db:from("users"):cross_join("jobs") end,
    'SELECT * FROM "users" CROSS JOIN "jobs"', 'SELECT * FROM "users" CROSS JOIN "jobs"', {} },
  { "two joins and a where", function(db)
      return db:from("users"):join("posts", "posts.user_id", "users.id"):left_join("jobs", "jobs.id", "posts.id")
        :where("users.id", 1) end,
    'SELECT * FROM "users" JOIN "posts" ON "posts"."user_id" = "users"."id" LEFT JOIN "jobs" ON "jobs"."id" = "posts"."id" WHERE "users"."id" = ?',
    'SELECT * FROM "users" JOIN "posts" ON "posts"."user_id" = "users"."id" LEFT JOIN "jobs" ON "jobs"."id" = "posts"."id" WHERE "users"."id" = $1',
    { 1 } },
  { "join on a subquery", function(db)
      return db:from("users"):join(db:from("posts"):select("user_id"):as("p"), "p.user_id", "users.id") end,
    'SELECT * FROM "users" JOIN (SELECT "user_id" FROM "posts") AS "p" ON "p"."user_id" = "users"."id"',
    'SELECT * FROM "users" JOIN (SELECT "user_id" FROM "posts") AS "p" ON "p"."user_id" = "users"."id"', {} },
  { "a bad join operator fails", function(db) return db:from("users"):join("posts", "a", "like", "b") end,
    ERR "bad join operator", ERR "bad join operator", {} },

  -- grouping
  { "group_by and having", function(db)
      return db:from("users"):select("team", db.fn.count():as("n")):group_by("team"):having(db.fn.count(), ">", 1) end,
    'SELECT "team", count(*) AS "n" FROM "users" GROUP BY "team" HAVING count(*) > ?',
    'SELECT "team", count(*) AS "n" FROM "users" GROUP BY "team" HAVING count(*) > $1', { 1 } },
  { "group_by removes duplicate terms", function(db) return db:from("users"):select("team"):group_by("team", "region", "team") end,
    'SELECT "team" FROM "users" GROUP BY "team", "region"', 'SELECT "team" FROM "users" GROUP BY "team", "region"', {} },
  { "group_by called twice keeps one copy", function(db)
      return db:from("users"):select("team"):group_by("team"):group_by("year"):group_by("team") end,
    'SELECT "team" FROM "users" GROUP BY "team", "year"', 'SELECT "team" FROM "users" GROUP BY "team", "year"', {} },
  { "group_by keeps terms with bound values", function(db)
      return db:from("users"):select(db.fn.substr(db.col("name"), 1, 2)):group_by(db.fn.substr(db.col("name"), 1, 2)) end,
    'SELECT substr("name", ?, ?) FROM "users" GROUP BY substr("name", ?, ?)',
    'SELECT substr("name", $1, $2) FROM "users" GROUP BY substr("name", $3, $4)', { 1, 2, 1, 2 } },
  { "rollup on postgres", function(db) return db:from("users"):select("team", "region"):group_by(db.rollup("team", "region")) end,
    ERR "rollup is not supported by sqlite",
    'SELECT "team", "region" FROM "users" GROUP BY ROLLUP ("team", "region")', {} },
  { "cube on postgres", function(db) return db:from("users"):select("team"):group_by(db.cube("team", "year")) end,
    ERR "cube is not supported by sqlite", 'SELECT "team" FROM "users" GROUP BY CUBE ("team", "year")', {} },
  { "rollup removes duplicates inside and around it", function(db)
      return db:from("users"):group_by("year", db.rollup("team", "region", "team"), "year", db.rollup("team", "region")) end,
    ERR "rollup is not supported by sqlite",
    'SELECT * FROM "users" GROUP BY "year", ROLLUP ("team", "region")', {} },
  { "having with a table", function(db)
      return db:from("users"):select("team"):group_by("team"):having { team = "red" } end,
    'SELECT "team" FROM "users" GROUP BY "team" HAVING "team" = ?',
    'SELECT "team" FROM "users" GROUP BY "team" HAVING "team" = $1', { "red" } },
  { "or_having", function(db)
      return db:from("users"):select("team"):group_by("team"):having("team", "red"):or_having("team", "blue") end,
    'SELECT "team" FROM "users" GROUP BY "team" HAVING "team" = ? OR "team" = ?',
    'SELECT "team" FROM "users" GROUP BY "team" HAVING "team" = $1 OR "team" = $2', { "red", "blue" } },
  { "rollup outside group_by fails", function(db) return db:from("users"):select(db.rollup("a")) end,
    ERR "rollup can only appear in group_by", ERR "rollup can only appear in group_by", {} },

  -- order, limit, offset
  { "order_by desc", function(db) return db:from("users"):order_by("age", "desc") end,
    'SELECT * FROM "users" ORDER BY "age" DESC', 'SELECT * FROM "users" ORDER BY "age" DESC', {} },
  { "order_by defaults to asc", function(db) return db:from("users"):order_by("name") end,
    'SELECT * FROM "users" ORDER BY "name" ASC', 'SELECT * FROM "users" ORDER BY "name" ASC', {} },
  { "two order_by calls", function(db) return db:from("users"):order_by("team"):order_by("score", "DESC") end,
    'SELECT * FROM "users" ORDER BY "team" ASC, "score" DESC', 'SELECT * FROM "users" ORDER BY "team" ASC, "score" DESC', {} },
  { "order_by a list of pairs", function(db) return db:from("users"):order_by { { "team", "asc" }, { "score", "desc" } } end,
    'SELECT * FROM "users" ORDER BY "team" ASC, "score" DESC', 'SELECT * FROM "users" ORDER BY "team" ASC, "score" DESC', {} },
  { "order_by an expression", function(db) return db:from("users"):order_by(db.fn.lower(db.col("name")), "desc") end,
    'SELECT * FROM "users" ORDER BY lower("name") DESC', 'SELECT * FROM "users" ORDER BY lower("name") DESC', {} },
  { "limit and offset are bound", function(db) return db:from("users"):limit(10):offset(20) end,
    'SELECT * FROM "users" LIMIT ? OFFSET ?', 'SELECT * FROM "users" LIMIT $1 OFFSET $2', { 10, 20 } },
  { "offset without limit", function(db) return db:from("users"):offset(5) end,
    'SELECT * FROM "users" LIMIT -1 OFFSET ?', 'SELECT * FROM "users" OFFSET $1', { 5 } },
  { "a typical select", function(db)
      return db:from("users"):select("id", "email"):where("age", ">", 18):where("status", "active")
        :where_in("role", { "admin", "user" }):order_by("id", "desc"):limit(20) end,
    'SELECT "id", "email" FROM "users" WHERE "age" > ? AND "status" = ? AND "role" IN (?, ?) ORDER BY "id" DESC LIMIT ?',
    'SELECT "id", "email" FROM "users" WHERE "age" > $1 AND "status" = $2 AND "role" IN ($3, $4) ORDER BY "id" DESC LIMIT $5',
    { 18, "active", "admin", "user", 20 } },

  -- CTEs and set operations
  { "with", function(db)
      return db:from("adults"):with("adults", db:from("users"):where("age", ">=", 18)):select("id") end,
    'WITH "adults" AS (SELECT * FROM "users" WHERE "age" >= ?) SELECT "id" FROM "adults"',
    'WITH "adults" AS (SELECT * FROM "users" WHERE "age" >= $1) SELECT "id" FROM "adults"', { 18 } },
  { "two CTEs", function(db)
      return db:from("a"):with("a", db:from("users"):select("id")):with("b", db:from("posts"):select("id"))
        :join("b", "b.id", "a.id") end,
    'WITH "a" AS (SELECT "id" FROM "users"), "b" AS (SELECT "id" FROM "posts") SELECT * FROM "a" JOIN "b" ON "b"."id" = "a"."id"',
    'WITH "a" AS (SELECT "id" FROM "users"), "b" AS (SELECT "id" FROM "posts") SELECT * FROM "a" JOIN "b" ON "b"."id" = "a"."id"', {} },
  { "with_recursive with columns", function(db)
      return db:from("cnt"):with_recursive("cnt", db:select(db.val(1)):union_all(
        db:from("cnt"):select(db.col("x") + 1):where("x", "<", 5)), { "x" }) end,
    'WITH RECURSIVE "cnt" ("x") AS (SELECT ? UNION ALL SELECT ("x" + ?) FROM "cnt" WHERE "x" < ?) SELECT * FROM "cnt"',
    'WITH RECURSIVE "cnt" ("x") AS (SELECT $1 UNION ALL SELECT ("x" + $2) FROM "cnt" WHERE "x" < $3) SELECT * FROM "cnt"',
    { 1, 1, 5 } },
  { "a recursive tree walk", function(db)
      return db:from("sub"):with_recursive("sub", db:from("tree"):select("id", "name"):where("id", 1):union(
        db:from("tree as t"):join("sub", "t.parent_id", "sub.id"):select("t.id", "t.name"))) end,
    'WITH RECURSIVE "sub" AS (SELECT "id", "name" FROM "tree" WHERE "id" = ? UNION SELECT "t"."id", "t"."name" FROM "tree" AS "t" JOIN "sub" ON "t"."parent_id" = "sub"."id") SELECT * FROM "sub"',
    'WITH RECURSIVE "sub" AS (SELECT "id", "name" FROM "tree" WHERE "id" = $1 UNION SELECT "t"."id", "t"."name" FROM "tree" AS "t" JOIN "sub" ON "t"."parent_id" = "sub"."id") SELECT * FROM "sub"',
    { 1 } },
  { "union", function(db) return db:from("users"):select("id"):union(db:from("posts"):select("id")) end,
    'SELECT "id" FROM "users" UNION SELECT "id" FROM "posts"', 'SELECT "id" FROM "users" UNION SELECT "id" FROM "posts"', {} },
  { "union_all with order and limit on the whole", function(db)
      return db:from("users"):select("id"):union_all(db:from("posts"):select("id")):order_by("id"):limit(3) end,
    'SELECT "id" FROM "users" UNION ALL SELECT "id" FROM "posts" ORDER BY "id" ASC LIMIT ?',
    'SELECT "id" FROM "users" UNION ALL SELECT "id" FROM "posts" ORDER BY "id" ASC LIMIT $1', { 3 } },
  { "binds of union members follow text order", function(db)
      return db:from("users"):select("id"):where("age", 1):union(db:from("users"):select("id"):where("age", 2)) end,
    'SELECT "id" FROM "users" WHERE "age" = ? UNION SELECT "id" FROM "users" WHERE "age" = ?',
    'SELECT "id" FROM "users" WHERE "age" = $1 UNION SELECT "id" FROM "users" WHERE "age" = $2', { 1, 2 } },
  { "a union member with its own limit", function(db)
      return db:from("users"):select("id"):union(db:from("posts"):select("id"):limit(1)) end,
    ERR "is not supported by sqlite",
    'SELECT "id" FROM "users" UNION (SELECT "id" FROM "posts" LIMIT $1)', { 1 } },
  { "intersect and except", function(db)
      return db:from("users"):select("id"):intersect(db:from("posts"):select("user_id")):except(db:from("jobs"):select("id")) end,
    'SELECT "id" FROM "users" INTERSECT SELECT "user_id" FROM "posts" EXCEPT SELECT "id" FROM "jobs"',
    'SELECT "id" FROM "users" INTERSECT SELECT "user_id" FROM "posts" EXCEPT SELECT "id" FROM "jobs"', {} },

  -- locking
  { "for_update", function(db) return db:from("jobs"):where("id", 1):for_update() end,
    ERR "for_update is not supported by sqlite", 'SELECT * FROM "jobs" WHERE "id" = $1 FOR UPDATE', { 1 } },
  { "for_update skip_locked", function(db) return db:from("jobs"):limit(1):for_update():skip_locked() end,
    ERR "for_update is not supported by sqlite", 'SELECT * FROM "jobs" LIMIT $1 FOR UPDATE SKIP LOCKED', { 1 } },
  { "for_share nowait", function(db) return db:from("jobs"):for_share():nowait() end,
    ERR "for_share is not supported by sqlite", 'SELECT * FROM "jobs" FOR SHARE NOWAIT', {} },
  { "skip_locked alone", function(db) return db:from("jobs"):skip_locked() end,
    ERR "skip_locked is not supported by sqlite", ERR "skip_locked needs for_update", {} },

  -- postgres-only: DISTINCT ON, arrays, containment and key-existence operators; JSON paths
  { "distinct_on", function(db) return db:from("users"):select("team", "name"):distinct_on("team"):order_by("team") end,
    ERR "distinct_on is not supported by sqlite", 'SELECT DISTINCT ON ("team") "team", "name" FROM "users" ORDER BY "team" ASC', {} },
  { "distinct_on an expression", function(db) return db:from("users"):distinct_on(db.fn.lower(db.col("team")), "region") end,
    ERR "distinct_on is not supported by sqlite", 'SELECT DISTINCT ON (lower("team"), "region") * FROM "users"', {} },
  { "a bound array", function(db) return db:from("users"):where("id", "=", db.fn.any(require("zever.db.expr").array { 1, "b", NULL })) end,
    ERR "db.array is not supported by sqlite", 'SELECT * FROM "users" WHERE "id" = any($1)', { '{1,"b",NULL}' } },
  { "array containment", function(db) return db:from("users"):where("tags", "@>", "{a}"):or_where("tags", "<@", "{b}"):or_where("tags", "&&", "{c}") end,
    ERR "@> is not supported by sqlite", 'SELECT * FROM "users" WHERE "tags" @> $1 OR "tags" <@ $2 OR "tags" && $3', { "{a}", "{b}", "{c}" } },
  { "jsonb key existence", function(db) return db:from("users"):where("data", "?", "k"):where("data", "?|", "{a,b}"):where("data", "?&", "{c}") end,
    ERR "? is not supported by sqlite", 'SELECT * FROM "users" WHERE "data" ? $1 AND "data" ?| $2 AND "data" ?& $3', { "k", "{a,b}", "{c}" } },
  { "jsonb key existence against a column", function(db) return db:from("users"):where("data", "?", db.col("name")) end,
    ERR "? is not supported by sqlite", ERR "'?' needs a bound value on its right", {} },
  { "a JSON path: a member, an index, as text", function(db) return db:select(db.val('{"a":[5,6]}'):get("a"):get_text(1):as("x")) end,
    'SELECT ((? -> CAST(? AS TEXT)) ->> CAST(? AS INTEGER)) AS "x"', 'SELECT (($1 -> CAST($2 AS TEXT)) ->> CAST($3 AS INTEGER)) AS "x"', { '{"a":[5,6]}', "a", 1 } },

  -- expressions
  { "arithmetic", function(db) return db:from("jobs"):select((db.col("attempt") + 1) * 2 - db.col("id") / 3) end,
    'SELECT ((("attempt" + ?) * ?) - ("id" / ?)) FROM "jobs"',
    'SELECT ((("attempt" + $1) * $2) - ("id" / $3)) FROM "jobs"', { 1, 2, 3 } },
  { "a number on the left of +", function(db) return db:from("jobs"):select((10 + db.col("attempt")):as("a")) end,
    'SELECT (? + "attempt") AS "a" FROM "jobs"', 'SELECT ($1 + "attempt") AS "a" FROM "jobs"', { 10 } },
  { "unary minus and modulo", function(db) return db:from("jobs"):select(-db.col("attempt"), db.col("id") % 2) end,
    'SELECT (-"attempt"), ("id" % ?) FROM "jobs"', 'SELECT (-"attempt"), ("id" % $1) FROM "jobs"', { 2 } },
  { "concatenation", function(db) return db:from("users"):select(db.col("name"):concat(" <"):as("label")) end,
    'SELECT ("name" || ?) AS "label" FROM "users"', 'SELECT ("name" || $1) AS "label" FROM "users"', { " <" } },
  { "a function of a column", function(db) return db:from("users"):select(db.fn.lower(db.col("email")):as("e")) end,
    'SELECT lower("email") AS "e" FROM "users"', 'SELECT lower("email") AS "e" FROM "users"', {} },
  { "string arguments of functions are values", function(db)
      return db:from("users"):select(db.fn.coalesce(db.col("deleted_at"), "never")) end,
    'SELECT coalesce("deleted_at", ?) FROM "users"', 'SELECT coalesce("deleted_at", $1) FROM "users"', { "never" } },
  { "count() is count(*)", function(db) return db:from("users"):select(db.fn.count()) end,
    'SELECT count(*) FROM "users"', 'SELECT count(*) FROM "users"', {} },
  { "count of a column", function(db) return db:from("users"):select(db.fn.count(db.col("deleted_at")):as("n")) end,
    'SELECT count("deleted_at") AS "n" FROM "users"', 'SELECT count("deleted_at") AS "n" FROM "users"', {} },
  { "a window function", function(db)
      return db:from("users"):select("name", db.fn.row_number():over { partition_by = "team", order_by = { "score", "desc" } }:as("rank")) end,
    'SELECT "name", row_number() OVER (PARTITION BY "team" ORDER BY "score" DESC) AS "rank" FROM "users"',
    'SELECT "name", row_number() OVER (PARTITION BY "team" ORDER BY "score" DESC) AS "rank" FROM "users"', {} },
  { "a window with several partitions and orders", function(db)
      return db:from("users"):select(db.fn.sum(db.col("score")):over { partition_by = { "team", "region" },
        order_by = { { "year", "asc" }, { "id", "desc" } } }) end,
    'SELECT sum("score") OVER (PARTITION BY "team", "region" ORDER BY "year" ASC, "id" DESC) FROM "users"',
    'SELECT sum("score") OVER (PARTITION BY "team", "region" ORDER BY "year" ASC, "id" DESC) FROM "users"', {} },
  { "an empty window", function(db) return db:from("users"):select(db.fn.count():over()) end,
    'SELECT count(*) OVER () FROM "users"', 'SELECT count(*) OVER () FROM "users"', {} },
  { "a subquery in the select list", function(db)
      return db:from("users"):select("id", db:from("posts"):select(db.fn.count()):where("posts.user_id", db.col("users.id")):as("posts")) end,
    'SELECT "id", (SELECT count(*) FROM "posts" WHERE "posts"."user_id" = "users"."id") AS "posts" FROM "users"',
    'SELECT "id", (SELECT count(*) FROM "posts" WHERE "posts"."user_id" = "users"."id") AS "posts" FROM "users"', {} },
  { "from a subquery", function(db) return db:from(db:from("users"):where("age", ">", 1):as("u")):select("u.id") end,
    'SELECT "u"."id" FROM (SELECT * FROM "users" WHERE "age" > ?) AS "u"',
    'SELECT "u"."id" FROM (SELECT * FROM "users" WHERE "age" > $1) AS "u"', { 1 } },
  { "a bad function name fails", function(db) return db:from("users"):select(require("zever.db.expr").node { require("zever.sql").op.FN, "x;y", {} }) end,
    ERR "bad function name", ERR "bad function name", {} },

  -- injection attempts
  { "a value with quotes is bound, not spliced", function(db) return db:from("users"):where("name", "x' OR '1'='1") end,
    'SELECT * FROM "users" WHERE "name" = ?', 'SELECT * FROM "users" WHERE "name" = $1', { "x' OR '1'='1" } },
  { "a value with a statement is bound", function(db) return db:from("users"):where("name", "1; DROP TABLE users; --") end,
    'SELECT * FROM "users" WHERE "name" = ?', 'SELECT * FROM "users" WHERE "name" = $1', { "1; DROP TABLE users; --" } },
  { "a double quote in an identifier is doubled", function(db) return db:from('we"ird'):select("odd col") end,
    'SELECT "odd col" FROM "we""ird"', 'SELECT "odd col" FROM "we""ird"', {} },
  { "an identifier carrying SQL stays one identifier", function(db) return db:from('users" WHERE 1=1; --'):select("id") end,
    'SELECT "id" FROM "users"" WHERE 1=1; --"', 'SELECT "id" FROM "users"" WHERE 1=1; --"', {}, exec_error = "schema" },
  { "a column name carrying SQL stays quoted", function(db) return db:from("users"):where('id" = 1 OR "1', 2) end,
    'SELECT * FROM "users" WHERE "id"" = 1 OR ""1" = ?', 'SELECT * FROM "users" WHERE "id"" = 1 OR ""1" = $1', { 2 },
    exec_error = "schema" },
  { "an empty identifier part fails", function(db) return db:from("users"):select("users.") end,
    ERR "bad identifier", ERR "bad identifier", {} },
  { "an empty alias fails", function(db) return db:from("users as ") end,
    ERR "bad identifier", ERR "bad identifier", {} },
  { "a space without AS is part of the name", function(db) return db:from("users u") end,
    'SELECT * FROM "users u"', 'SELECT * FROM "users u"', {}, exec_error = "schema" },
  { "a NUL byte in an identifier fails", function(db) return db:from("us\0ers") end,
    ERR "bad identifier", ERR "bad identifier", {} },
  { "a table as a value fails", function(db) return db:from("users"):where("id", "=", { 1 }) end,
    ERR "a table is not a value", ERR "a table is not a value", {} },

  -- insert
  { "insert one row (columns sorted)", function(db) return db:insert_into("users"):values { name = "Cy", email = "cy@x" } end,
    'INSERT INTO "users" ("email", "name") VALUES (?, ?)', 'INSERT INTO "users" ("email", "name") VALUES ($1, $2)',
    { "cy@x", "Cy" } },
  { "insert several rows in one statement", function(db)
      return db:insert_into("users"):values { { email = "c@x", age = 1 }, { email = "d@x", age = 2 } } end,
    'INSERT INTO "users" ("age", "email") VALUES (?, ?), (?, ?)',
    'INSERT INTO "users" ("age", "email") VALUES ($1, $2), ($3, $4)', { 1, "c@x", 2, "d@x" } },
  { "insert with an explicit null", function(db) return db:insert_into("users"):values { email = "e@x", name = NULL } end,
    'INSERT INTO "users" ("email", "name") VALUES (?, ?)', 'INSERT INTO "users" ("email", "name") VALUES ($1, $2)',
    { "e@x", NULL } },
  { "insert with an expression value", function(db)
      return db:insert_into("jobs"):values { queue = "q", run_at = db.raw("1 + 2") } end,
    'INSERT INTO "jobs" ("queue", "run_at") VALUES (?, 1 + 2)', 'INSERT INTO "jobs" ("queue", "run_at") VALUES ($1, 1 + 2)',
    { "q" } },
  { "insert default values", function(db) return db:insert_into("jobs"):values {} end,
    'INSERT INTO "jobs" DEFAULT VALUES', 'INSERT INTO "jobs" DEFAULT VALUES', {} },
  { "on_conflict do_nothing", function(db)
      return db:insert_into("users"):values { email = "ann@example.com" }:on_conflict("email"):do_nothing() end,
    'INSERT INTO "users" ("email") VALUES (?) ON CONFLICT ("email") DO NOTHING',
    'INSERT INTO "users" ("email") VALUES ($1) ON CONFLICT ("email") DO NOTHING', { "ann@example.com" } },
  { "on_conflict without columns do_nothing", function(db)
      return db:insert_into("users"):values { email = "ann@example.com" }:on_conflict():do_nothing() end,
    'INSERT INTO "users" ("email") VALUES (?) ON CONFLICT DO NOTHING',
    'INSERT INTO "users" ("email") VALUES ($1) ON CONFLICT DO NOTHING', { "ann@example.com" } },
  { "on_conflict do_update with excluded", function(db)
      return db:insert_into("users"):values { email = "ann@example.com", name = "Anne" }
        :on_conflict("email"):do_update { name = db.excluded("name") } end,
    'INSERT INTO "users" ("email", "name") VALUES (?, ?) ON CONFLICT ("email") DO UPDATE SET "name" = excluded."name"',
    'INSERT INTO "users" ("email", "name") VALUES ($1, $2) ON CONFLICT ("email") DO UPDATE SET "name" = excluded."name"',
    { "ann@example.com", "Anne" } },
  { "do_update with a list of columns and a value", function(db)
      return db:insert_into("users"):values { email = "ann@example.com", name = "A", age = 3 }
        :on_conflict("email"):do_update { "name", "age", status = "merged" } end,
    'INSERT INTO "users" ("age", "email", "name") VALUES (?, ?, ?) ON CONFLICT ("email") DO UPDATE SET "name" = excluded."name", "age" = excluded."age", "status" = ?',
    'INSERT INTO "users" ("age", "email", "name") VALUES ($1, $2, $3) ON CONFLICT ("email") DO UPDATE SET "name" = excluded."name", "age" = excluded."age", "status" = $4',
    { 3, "ann@example.com", "A", "merged" } },
  { "do_update without conflict columns fails", function(db)
      return db:insert_into("users"):values { email = "x" }:on_conflict():do_update { name = "n" } end,
    ERR "needs conflict columns", ERR "needs conflict columns", {} },
  { "insert returning", function(db) return db:insert_into("users"):values { email = "r@x" }:returning("id", "email") end,
    'INSERT INTO "users" ("email") VALUES (?) RETURNING "id", "email"',
    'INSERT INTO "users" ("email") VALUES ($1) RETURNING "id", "email"', { "r@x" } },
  { "insert with a CTE", function(db)
      return db:insert_into("jobs"):with("src", db:select(db.val("q"):as("queue"))):values { queue = "w" } end,
    'WITH "src" AS (SELECT ? AS "queue") INSERT INTO "jobs" ("queue") VALUES (?)',
    'WITH "src" AS (SELECT $1 AS "queue") INSERT INTO "jobs" ("queue") VALUES ($2)', { "q", "w" } },

  -- update
  { "update with an expression and a value (sorted)", function(db)
      return db:update("jobs"):set { attempt = db.col("attempt") + 1, claimed_by = "" }:where("id", 1) end,
    'UPDATE "jobs" SET "attempt" = ("attempt" + ?), "claimed_by" = ? WHERE "id" = ?',
    'UPDATE "jobs" SET "attempt" = ("attempt" + $1), "claimed_by" = $2 WHERE "id" = $3', { 1, "", 1 } },
  { "update set(col, value)", function(db) return db:update("users"):set("name", "X"):set("age", NULL) end,
    'UPDATE "users" SET "name" = ?, "age" = ?', 'UPDATE "users" SET "name" = $1, "age" = $2', { "X", NULL } },
  { "update with a group and returning", function(db)
      return db:update("users"):set { status = "gone" }:where(function(q) q:where("age", "<", 18):or_where_null("role") end)
        :returning("id") end,
    'UPDATE "users" SET "status" = ? WHERE ("age" < ? OR "role" IS NULL) RETURNING "id"',
    'UPDATE "users" SET "status" = $1 WHERE ("age" < $2 OR "role" IS NULL) RETURNING "id"', { "gone", 18 } },
  { "update where_in a subquery", function(db)
      return db:update("users"):set { role = "author" }:where_in("id", db:from("posts"):select("user_id")) end,
    'UPDATE "users" SET "role" = ? WHERE "id" IN (SELECT "user_id" FROM "posts")',
    'UPDATE "users" SET "role" = $1 WHERE "id" IN (SELECT "user_id" FROM "posts")', { "author" } },
  { "update with nothing to set fails", function(db) return db:update("users"):where("id", 1) end,
    ERR "set needs at least one column", ERR "set needs at least one column", {} },

  -- delete
  { "delete with where", function(db) return db:delete_from("jobs"):where("attempt", ">", 5) end,
    'DELETE FROM "jobs" WHERE "attempt" > ?', 'DELETE FROM "jobs" WHERE "attempt" > $1', { 5 } },
  { "delete everything", function(db) return db:delete_from("jobs") end,
    'DELETE FROM "jobs"', 'DELETE FROM "jobs"', {} },
  { "delete with like and returning", function(db)
      return db:delete_from("users"):where_ends_with("email", "@spam.test"):returning("id") end,
    [[DELETE FROM "users" WHERE "email" LIKE ? ESCAPE '\' RETURNING "id"]],
    [[DELETE FROM "users" WHERE "email" LIKE $1 ESCAPE '\' RETURNING "id"]], { "%@spam.test" } },
  { "delete with a CTE", function(db)
      return db:delete_from("jobs"):with("old", db:from("jobs"):select("id"):where("attempt", ">", 3))
        :where_in("id", db:from("old"):select("id")) end,
    'WITH "old" AS (SELECT "id" FROM "jobs" WHERE "attempt" > ?) DELETE FROM "jobs" WHERE "id" IN (SELECT "id" FROM "old")',
    'WITH "old" AS (SELECT "id" FROM "jobs" WHERE "attempt" > $1) DELETE FROM "jobs" WHERE "id" IN (SELECT "id" FROM "old")',
    { 3 } },
  { "delete with where_not_null", function(db) return db:delete_from("users"):where_not_null("deleted_at") end,
    'DELETE FROM "users" WHERE "deleted_at" IS NOT NULL', 'DELETE FROM "users" WHERE "deleted_at" IS NOT NULL', {} },
}

local ROLLBACK = {}

describe("zever.sql", function()
  local db

  setup(function()
    db = assert(zdb.open("sqlite::memory:"))
    assert(db:exec(FIXTURE))
  end)

  teardown(function()
    db:close()
  end)

  it("has at least 100 golden rows", function()
    assert.is_true(#rows >= 100, #rows .. " rows")
  end)

  describe("golden rows", function()
    for _, row in ipairs(rows) do
      local name, build, want_sqlite, want_pg, want_binds = row[1], row[2], row[3], row[4], row[5]
      for _, case in ipairs { { "sqlite", want_sqlite }, { "postgres", want_pg } } do
        local dialect, want = case[1], case[2]
        it("renders " .. name .. " for " .. dialect, function()
          -- Twice: the first render may fill the shape cache, the second may come from it.
          local ok, text, binds = pcall(function() return build(db):to_sql(dialect) end)
          local ok2, text2, binds2 = pcall(function() return build(db):to_sql(dialect) end)
          assert.are.equal(ok, ok2)
          assert.are.equal(text, text2)
          assert.are.same(binds, binds2)
          if type(want) == "table" then
            assert.is_false(ok, "expected an error, got " .. tostring(text))
            assert.truthy(tostring(text):find(want.error, 1, true), tostring(text))
          else
            assert.is_true(ok, tostring(text))
            assert.are.equal(want, text)
            assert.are.same(want_binds, binds)
          end
        end)
      end
      if type(want_sqlite) == "string" and not row.skip_exec then
        it("runs " .. name .. " on SQLite", function()
          local ok, e = pcall(db.transaction, db, function(tx)
            local text, binds = build(tx):to_sql("sqlite")
            local res, err = tx:try(function(t) return t:query(text, binds) end)
            if row.exec_error then
              assert.is_nil(res)
              assert.are.equal(row.exec_error, err.code)
            else
              assert(res, tostring(err))
            end
            error(ROLLBACK)
          end)
          assert.is_false(ok)
          assert.are.equal(ROLLBACK, e)
        end)
      end
    end
  end)

  describe("escape_like", function()
    local cases = {
      { "plain text", "abc", "abc" },
      { "a percent", "50%", "50\\%" },
      { "an underscore", "a_b", "a\\_b" },
      { "a backslash", "a\\b", "a\\\\b" },
      { "all three", "%_\\", "\\%\\_\\\\" },
      { "the empty string", "", "" },
      { "bytes above ASCII", "\195\169%", "\195\169\\%" },
    }
    for _, c in ipairs(cases) do
      it("escapes " .. c[1], function()
        assert.are.equal(c[3], sql.escape_like(c[2]))
      end)
    end
  end)

  describe("quote", function()
    it("quotes dotted names part by part", function()
      assert.are.equal('"a"."b"', sql.quote("a.b"))
      assert.are.equal('"x""y"', sql.quote('x"y'))
    end)
  end)

  describe("render", function()
    it("rejects an unknown dialect", function()
      assert.has_error(function() sql.render({ sql.op.SELECT, "t" }, "mysql") end)
    end)

    it("fails on a query that contains itself instead of recursing forever", function()
      local q = db:from("users")
      q:where_in("id", q)
      local text, err = sql.render(q, "sqlite")
      assert.is_nil(text)
      assert.truthy(err:find("nested deeper"))
    end)

    it("keeps many grouping terms in order and drops only repeats", function()
      local q = db:from("users")
      local cols, want = {}, {}
      for i = 1, 100 do
        cols[#cols + 1] = "c" .. (i % 70)
        if i <= 70 then want[#want + 1] = '"c' .. (i % 70) .. '"' end
      end
      q:group_by(unpack(cols))
      local text = q:to_sql()
      assert.are.equal('SELECT * FROM "users" GROUP BY ' .. table.concat(want, ", "), text)
    end)
  end)

  describe("SLOT", function()
    local op, SLOT = sql.op, sql.SLOT
    local S, I, U, D = SLOT.select, SLOT.insert, SLOT.update, SLOT.delete
    local where = { { op.CMP, 0, "id", "=", 7 } }
    local cases = {
      { "select", { op.SELECT, [S.from] = "users", [S.columns] = { "id" }, [S.distinct] = true,
          [S.where] = where, [S.group] = { "id" }, [S.having] = { { op.CMP, 0, "id", ">", 1 } },
          [S.order] = { "id", 1 }, [S.limit] = 2, [S.offset] = 3 },
        'SELECT DISTINCT "id" FROM "users" WHERE "id" = ? GROUP BY "id" HAVING "id" > ? '
          .. 'ORDER BY "id" DESC LIMIT ? OFFSET ?', { 7, 1, 2, 3 } },
      { "insert", { op.INSERT, [I.table] = "users", [I.columns] = { "id", "name" },
          [I.rows] = { { 1, "a" } }, [I.conflict] = { "id" }, [I.action] = 2,
          [I.set] = { "name", "b" }, [I.returning] = { "id" } },
        'INSERT INTO "users" ("id", "name") VALUES (?, ?) ON CONFLICT ("id") DO UPDATE SET '
          .. '"name" = ? RETURNING "id"', { 1, "a", "b" } },
      { "update", { op.UPDATE, [U.table] = "users", [U.set] = { "name", "b" }, [U.where] = where,
          [U.returning] = { "id" } },
        'UPDATE "users" SET "name" = ? WHERE "id" = ? RETURNING "id"', { "b", 7 } },
      { "delete", { op.DELETE, [D.table] = "users", [D.where] = where, [D.returning] = { "id" } },
        'DELETE FROM "users" WHERE "id" = ? RETURNING "id"', { 7 } },
    }
    for _, row in ipairs(cases) do
      it("names the slots the renderer reads in a " .. row[1], function()
        local text, binds = sql.render(row[2], "sqlite")
        assert.are.equal(row[3], text)
        assert.are.same(row[4], binds)
      end)
    end

    it("check_slots accepts the layout and names a slot that drifted", function()
      assert.has_no.errors(function() sql.check_slots("update", { set = 3, where = 4 }) end)
      assert.has_error(function() sql.check_slots("select", { where = 7 }) end,
        "sql: the select slot 'where' is 7 here but 6 in zever.sql (lx_sql.h)")
      assert.has_error(function() sql.check_slots("select", { wat = 3 }) end,
        "sql: the select slot 'wat' is 3 here but nil in zever.sql (lx_sql.h)")
      assert.has_error(function() sql.check_slots("merge", {}) end,
        "sql.check_slots: no statement kind 'merge'")
    end)

    it("numbers each statement's slots from 2 without a gap", function()
      for kind, slots in pairs(SLOT) do
        local seen, n = {}, 0
        for _, i in pairs(slots) do
          assert.is_nil(seen[i], kind)
          seen[i], n = true, n + 1
        end
        for i = 2, n + 1 do assert.is_true(seen[i], kind .. " slot " .. i) end
      end
    end)
  end)
end)
