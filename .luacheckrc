std = "luajit"
max_line_length = 110
codes = true
files["spec/"] = { std = "+busted", max_line_length = 130 }
exclude_files = { "build/", "bin/", "bench/http/vendor/", "spec/fixtures/broken.lua" }
