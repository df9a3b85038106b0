return {
  up = function(db)
    db:exec([[CREATE TABLE bookmarks (
      id INTEGER PRIMARY KEY,
      owner TEXT NOT NULL,
      url TEXT NOT NULL,
      title TEXT
    )]])
    db:exec("CREATE INDEX bookmarks_owner ON bookmarks (owner, id)")
  end,
  down = function(db) db:exec("DROP TABLE bookmarks") end,
}
