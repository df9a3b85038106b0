local ffi = require "ffi"
local duration = require "zever.duration"
local alloc = require "spec.support.alloc"

-- An int64 as its decimal text, so that rows compare exact nanoseconds.
local function text(ns)
  return (tostring(ns):gsub("U?LL$", ""))
end

local function int64(s)
  local neg = s:sub(1, 1) == "-"
  local v = ffi.new("int64_t", 0)
  for i = neg and 2 or 1, #s do v = v * 10 + (s:byte(i) - 48) end
  return neg and -v or v
end

local BACKENDS = { "ffi", "classic" }

describe("zever.duration", function()
  -- Go's own time.ParseDuration table (Go 1.19, time_test.go), plus fractions and signs that
  -- were checked against Go 1.19: { input, nanoseconds }.
  local go_rows = {
    { "0", "0" }, { "5s", "5000000000" }, { "30s", "30000000000" }, { "1478s", "1478000000000" },
    { "-5s", "-5000000000" }, { "+5s", "5000000000" }, { "-0", "0" }, { "+0", "0" },
    { "5.0s", "5000000000" }, { "5.6s", "5600000000" }, { "5.s", "5000000000" },
    { ".5s", "500000000" }, { "1.0s", "1000000000" }, { "1.00s", "1000000000" },
    { "1.004s", "1004000000" }, { "1.0040s", "1004000000" }, { "100.00100s", "100001000000" },
    { "10ns", "10" }, { "11us", "11000" }, { "12\194\181s", "12000" }, { "12\206\188s", "12000" },
    { "13ms", "13000000" }, { "14s", "14000000000" }, { "15m", "900000000000" },
    { "16h", "57600000000000" }, { "3h30m", "12600000000000" }, { "10.5s4m", "250500000000" },
    { "-2m3.4s", "-123400000000" }, { "1h2m3s4ms5us6ns", "3723004005006" },
    { "39h9m14.425s", "140954425000000" }, { "52763797000ns", "52763797000" },
    { "0.3333333333333333333h", "1200000000000" }, { "9007199254740993ns", "9007199254740993" },
    { "9223372036854775807ns", "9223372036854775807" },
    { "9223372036854775.807us", "9223372036854775807" },
    { "9223372036s854ms775us807ns", "9223372036854775807" },
    { "-9223372036854775808ns", "-9223372036854775808" },
    { "-9223372036854775.808us", "-9223372036854775808" },
    { "-9223372036s854ms775us808ns", "-9223372036854775808" },
    { "-2562047h47m16.854775808s", "-9223372036854775808" },
    { "0.100000000000000000000h", "360000000000" },
    { "0.830103483285477580700h", "2988372539827" },
    -- the issue's examples, fractions truncated below the nanosecond, leading zeros
    { "1h30m", "5400000000000" }, { "1.5h", "5400000000000" }, { "300ms", "300000000" },
    { "2us", "2000" }, { "2\194\181s", "2000" }, { "15ns", "15" }, { "-2m", "-120000000000" },
    { "0.0000000001s", "0" }, { "0.9999999999s", "999999999" }, { "1.0000000019s", "1000000001" },
    { "0.5ns", "0" }, { "1.999ns", "1" }, { "-1.5ns", "-1" }, { "007s", "7000000000" },
    { "00h1m", "60000000000" }, { "1.h", "3600000000000" },
    -- long fractions: Go keeps 63 bits of digits and a float64 scale (leading zeros count)
    { ".011234567890123456789012h", "40444444404" }, { "15.009223372036854775807h", "54033204139332" },
    { "12.009223372036854775808m", "720553402322" }, { "1.000000000000000000000000000001s", "1000000000" },
  }

  local iso_rows = {
    { "PT1H30M", "5400000000000" }, { "PT0.5S", "500000000" }, { "-PT1M", "-60000000000" },
    { "+PT1M", "60000000000" }, { "P1DT2H", "93600000000000" }, { "P1D", "86400000000000" },
    { "PT0S", "0" }, { "P0D", "0" }, { "PT36H", "129600000000000" }, { "PT1.5H", "5400000000000" },
    { "PT0,5S", "500000000" }, { "PT1M0.000000001S", "60000000001" }, { "PT0.0000000009S", "0" },
    { "PT1H30M15.5S", "5415500000000" }, { "P1.5D", "129600000000000" },
    { "PT00H01M", "60000000000" }, { "P1DT0.5S", "86400500000000" },
    { "PT2562047H47M16.854775807S", "9223372036854775807" },
    { "-PT2562047H47M16.854775808S", "-9223372036854775808" },
    { "P106751DT23H47M16.854775807S", "9223372036854775807" },
  }

  local nano_rows = {
    { "1500000000", "1500000000" }, { "-1500000000", "-1500000000" }, { "+15", "15" },
    { "007", "7" }, { "9223372036854775807", "9223372036854775807" },
    { "-9223372036854775808", "-9223372036854775808" },
  }

  local day_rows = {
    { "1d12h", "129600000000000" }, { "1d", "86400000000000" }, { "0.5d", "43200000000000" },
    { "-1d1ns", "-86400000000001" }, { "106751d23h47m16.854775807s", "9223372036854775807" },
  }

  -- Edges of the one-pass reader (session 10), written down from the reader before it: the
  -- largest value of each unit, fractions of every unit, 11- and 12-component inputs of 31-32
  -- bytes, the minimum through days and iso8601, digit runs past 18 digits (read again with Go's
  -- checks), iso8601 and nano forms.
  local edge_rows = {
    { "9223372036854775us", "9223372036854775000" }, { "9223372036854ms", "9223372036854000000" },
    { "9223372036s", "9223372036000000000" }, { "153722867m", "9223372020000000000" },
    { "2562047h", "9223369200000000000" }, { "106751d", "9223286400000000000" }, { "1.5ns", "1" },
    { "1.5us", "1500" }, { "1.5ms", "1500000" }, { "1.5s", "1500000000" },
    { "1.5m", "90000000000" }, { "1.5h", "5400000000000" }, { "1.5d", "129600000000000" },
    { "0.123456789123s", "123456789" }, { "1.000001ms", "1000001" }, { "2.999999us", "2999" },
    { "1h2m3.5s4ms5us6ns7h8m9s10ms11us", "29412514016006" },
    { "12h34m56.789012345s6ms7us8ns9h", "77696795019353" },
    { "-106751d23h47m16.854775808s", "-9223372036854775808" },
    { "-P106751DT23H47M16.854775808S", "-9223372036854775808" }, { "PT1,5S", "1500000000" },
    { "P1DT1H1M1.123456789S", "90061123456789" }, { "PT0.000000001S", "1" },
    { "P1DT0S", "86400000000000" }, { "PT1M1.5S", "61500000000" },
    { "+9223372036854775807", "9223372036854775807" }, { "-0", "0" },
    { "0000000000000000000001", "1" },
    { "00000000000000000000000000009223372036854775807", "9223372036854775807" },
    { "0000000000000000000001h", "3600000000000" },
    { "123456789012345678.9ns", "123456789012345678" },
    { "9223372036854775807.9ns", "9223372036854775807" },
    { "0.1234567890123456789h", "444444440444" }, { "1.123456789012345678901234m", "67407407340" },
    { "1d.5h", "88200000000000" }, { "PT1H30M15.5S", "5415500000000" },
    { "1.99999999999999999999999999s", "2000000000" },
  }

  -- { name, input, cause } for duration.parse (every format, days allowed).
  local invalid_rows = {
    { "empty input", "", "empty input" },
    { "a sign alone", "-", "expected a number at end of input" },
    { "a unit alone", "s", [[expected a number at "s"]] },
    { "a point alone", ".", [[expected a number at "."]] },
    { "a signed point", "-.", [[expected a number at "."]] },
    { "a point and a unit", ".s", [[expected a number at ".s"]] },
    { "a signed point and a unit", "+.s", [[expected a number at ".s"]] },
    { "an unknown unit", "1x", [[unknown unit "x"]] },
    { "a unit glued to a sign, as Go reads it", "1h-2m", [[unknown unit "h-"]] },
    { "a longer unit", "1hs", [[unknown unit "hs"]] },
    { "two points", "1.5.5h", [[missing unit after "1.5"]] },
    { "invalid UTF-8", "\133\133", [[expected a number at "\x85\x85"]] },
    { "U+FFFD", "\239\191\189", "expected a number at \"\239\191\189\"" },
    { "an upper-case unit", "1H", [[unknown unit "H"]] },
    { "a leading space", " 1h", "whitespace is not allowed" },
    { "a trailing space", "1h ", "whitespace is not allowed" },
    { "an inner space", "1h 30m", "whitespace is not allowed" },
    { "a tab", "\t1h", "whitespace is not allowed" },
    { "a newline after iso8601", "PT1H\n", "whitespace is not allowed" },
    { "a space after nano", "5 ", "whitespace is not allowed" },
    { "hello world", "hello \255ff world", "whitespace is not allowed" },
    { "units past 2^63 - 1", "9223372036854775808ns", "out of range of int64 nanoseconds" },
    { "units past 2^63 by one", "9223372036854775810ns", "out of range of int64 nanoseconds" },
    { "units below -2^63", "-9223372036854775809ns", "out of range of int64 nanoseconds" },
    { "microseconds past 2^63", "9223372036854776us", "out of range of int64 nanoseconds" },
    { "hours past 2^63 ns", "3000000h", "out of range of int64 nanoseconds" },
    { "a fraction past 2^63", "9223372036854775.808us", "out of range of int64 nanoseconds" },
    { "a sum past 2^63", "9223372036854ms775us808ns", "out of range of int64 nanoseconds" },
    { "a sum that Go wraps to 0", "9223372036854775808ns9223372036854775808ns",
      "out of range of int64 nanoseconds" },
    { "the max plus one in the form Go writes", "2562047h47m16.854775808s",
      "out of range of int64 nanoseconds" },
    { "nano past 2^63 - 1", "9223372036854775808", "out of range of int64 nanoseconds" },
    { "nano below -2^63", "-9223372036854775809", "out of range of int64 nanoseconds" },
    { "nano far past", "99999999999999999999", "out of range of int64 nanoseconds" },
    { "iso8601 past 2^63 - 1", "PT2562047H47M16.854775808S", "out of range of int64 nanoseconds" },
    { "iso8601 days past 2^63", "P106752D", "out of range of int64 nanoseconds" },
    { "a bare P", "P", [[missing a component after "P"]] },
    { "a bare PT", "PT", [[missing a component after "T"]] },
    { "a T with nothing after it", "P1DT", [[missing a component after "T"]] },
    { "years", "P1Y", [[unsupported designator "Y" (years, months and weeks)]] },
    { "months", "P1M", [[unsupported designator "M" (years, months and weeks)]] },
    { "weeks", "P1W", [[unsupported designator "W" (years, months and weeks)]] },
    { "minutes before hours", "PT1M1H", [[unit "H" out of place]] },
    { "a repeated component", "PT1H1H", [[unit "H" out of place]] },
    { "hours without T", "P1H", [[unit "H" out of place]] },
    { "days after T", "PT1D", [[unit "D" out of place]] },
    { "a second T", "PT1HT1M", [[unit "T" out of place]] },
    { "a fraction before the last component", "PT1.5H30M",
      "only the last component may have a fraction" },
    { "a number without designator", "PT5", [[missing unit after "5"]] },
    { "an unknown designator", "PT5X", [[unknown unit "X"]] },
    { "a negative component", "PT-1H", [[expected a number at "-1H"]] },
    { "a lower-case iso8601", "pt1h", [[expected a number at "pt1h"]] },
    { "milliseconds past 2^63", "9223372036855ms", "out of range of int64 nanoseconds" },
    { "seconds past 2^63", "9223372037s", "out of range of int64 nanoseconds" },
    { "minutes past 2^63", "153722868m", "out of range of int64 nanoseconds" },
    { "hours past 2^63 by one hour", "2562048h", "out of range of int64 nanoseconds" },
    { "days past 2^63", "106752d", "out of range of int64 nanoseconds" },
    { "a 32-byte input without its last unit", "1h2m3.5s4ms5us6ns7h8m9s10ms11us9",
      [[missing unit after "9"]] },
    { "days below -2^63", "-106751d23h47m16.854775809s", "out of range of int64 nanoseconds" },
    { "a fraction in days before hours", "P0.5DT1H",
      "only the last component may have a fraction" },
    { "21 digits of nanoseconds", "123456789012345678901ns", "out of range of int64 nanoseconds" },
    { "20 digits of hours", "12345678901234567890h", "out of range of int64 nanoseconds" },
    { "a unit with a letter after it", "1hx", "unknown unit \"hx\"" },
    { "a micro sign without s", "1\194\181", "unknown unit \"\194\181\"" },
    { "a number after us without unit", "1us5", "missing unit after \"5\"" },
    { "a number after m without unit", "1m5", "missing unit after \"5\"" },
    { "ms with an s after it", "1mss", "unknown unit \"mss\"" },
    -- One byte that names no unit, followed by a digit, a point or the end (read inline).
    { "an unknown one-byte unit before a number", "1x2h", [[unknown unit "x"]] },
    { "an unknown one-byte unit before a point", "1x.5h", [[unknown unit "x"]] },
    { "an unknown one-byte unit after a fraction", "1.5x", [[unknown unit "x"]] },
    { "an unknown unit after a known one", "2h1y", [[unknown unit "y"]] },
    { "a lone UTF-8 lead byte as the unit", "1\194", [[unknown unit "\xc2"]] },
    { "a point after the last unit", "1ms.", "expected a number at \".\"" },
    { "a number after a fraction unit", "1.h2", "missing unit after \"2\"" },
    { "an iso8601 number without designator", "PT1H2", "missing unit after \"2\"" },
    { "an iso8601 fraction without designator", "PT1.5", "missing unit after \"1.5\"" },
    { "a component after a fraction", "P1DT1H1M1.123456789S1",
      "only the last component may have a fraction" },
    { "an exponent", "1e3s", "unknown unit \"e\"" },
    { "26 digits of seconds", "99999999999999999999999999s", "out of range of int64 nanoseconds" },
  }

  describe("parse", function()
    for _, backend in ipairs(BACKENDS) do
      local d = duration.with_backend(backend)
      describe("through the " .. backend .. " backend", function()
        local groups = {
          units = go_rows, iso8601 = iso_rows, nano = nano_rows, days = day_rows, edge = edge_rows,
        }
        for group, rows in pairs(groups) do
          it("reads the " .. group .. " golden rows to exact nanoseconds", function()
            for _, row in ipairs(rows) do
              local ns, err = d.parse_ns(row[1])
              assert.are.equal(row[2], ns and text(ns), ("%q: %s"):format(row[1], tostring(err)))
              assert.is_true(ffi.istype("int64_t", ns))
              assert.are.equal(tonumber(ns) / 1e9, d.parse(row[1]))
            end
          end)
        end

        for _, row in ipairs(invalid_rows) do
          it("rejects " .. row[1] .. " with the cause " .. row[3], function()
            local v, err = d.parse(row[2])
            assert.is_nil(v)
            assert.are.equal(row[3], err.cause)
            local ns, err2 = d.parse_ns(row[2])
            assert.is_nil(ns)
            assert.are.equal(row[3], err2.cause)
          end)
        end
      end)
    end

    it("returns seconds as a Lua number", function()
      assert.are.equal(5400, duration.parse("1h30m"))
      assert.are.equal(0.5, duration.parse("PT0.5S"))
      assert.are.equal(1.5, duration.parse("1500000000"))
      assert.are.equal("number", type(duration.parse("15ns")))
    end)

    it("reads a Lua number as integer nanoseconds", function()
      assert.are.equal(1.5, duration.parse(1500000000))
      assert.are.equal("1500000000", text(duration.parse_ns(1500000000)))
      assert.are.equal("9007199254740992", text(duration.parse_ns(2 ^ 53)))
      assert.are.equal("-9007199254740992", text(duration.parse_ns(-2 ^ 53)))
    end)

    it("rejects a Lua number that is not an exact integer", function()
      local rows = {
        { 1.5, "not an integer number of nanoseconds" },
        { 0 / 0, "not an integer number of nanoseconds" },
        { 2 ^ 53 + 2, "beyond 2^53, a Lua number is not exact (use a string or int64)" },
        { -2 ^ 60, "beyond 2^53, a Lua number is not exact (use a string or int64)" },
        { math.huge, "beyond 2^53, a Lua number is not exact (use a string or int64)" },
      }
      for _, row in ipairs(rows) do
        local v, err = duration.parse(row[1])
        assert.is_nil(v)
        assert.are.equal(row[2], err.cause)
      end
      local _, err = duration.parse(1.5)
      assert.are.equal("invalid duration 1.5: want units or iso8601 or nano", tostring(err))
    end)

    it("reads int64 and uint64 cdata as exact nanoseconds", function()
      local max = int64("9223372036854775807")
      assert.are.equal(max, duration.parse_ns(max))
      assert.are.equal("123", text(duration.parse_ns(ffi.new("uint64_t", 123))))
      local v, err = duration.parse_ns(ffi.new("uint64_t", 2) ^ 63)
      assert.is_nil(v)
      assert.are.equal("out of range of int64 nanoseconds", err.cause)
      assert.are.equal("invalid duration 9223372036854775808: want units or iso8601 or nano",
        tostring(err))
    end)

    it("raises on a value that is neither a string nor a number", function()
      assert.has_error(function() duration.parse(nil) end,
        "bad argument #1 to 'parse' (string or number expected, got nil)")
      assert.has_error(function() duration.parse_ns({}) end,
        "bad argument #1 to 'parse_ns' (string or number expected, got table)")
      assert.has_error(function() duration.parse(true) end)
    end)
  end)

  describe("format", function()
    -- { ns, units (Go's Duration.String, checked against Go 1.19), iso8601 }
    local rows = {
      { "0", "0s", "PT0S" }, { "1", "1ns", "PT0.000000001S" }, { "999", "999ns", "PT0.000000999S" },
      { "1000", "1\194\181s", "PT0.000001S" }, { "1500", "1.5\194\181s", "PT0.0000015S" },
      { "999999", "999.999\194\181s", "PT0.000999999S" }, { "1000000", "1ms", "PT0.001S" },
      { "1500000", "1.5ms", "PT0.0015S" }, { "999999999", "999.999999ms", "PT0.999999999S" },
      { "1000000000", "1s", "PT1S" }, { "1500000000", "1.5s", "PT1.5S" },
      { "60000000000", "1m0s", "PT1M" }, { "90000000000", "1m30s", "PT1M30S" },
      { "3600000000000", "1h0m0s", "PT1H" }, { "5400000000000", "1h30m0s", "PT1H30M" },
      { "5400500000000", "1h30m0.5s", "PT1H30M0.5S" }, { "86400000000000", "24h0m0s", "PT24H" },
      { "93600000000000", "26h0m0s", "PT26H" }, { "-1", "-1ns", "-PT0.000000001S" },
      { "-60000000000", "-1m0s", "-PT1M" }, { "-5400000000000", "-1h30m0s", "-PT1H30M" },
      { "9223372036854775807", "2562047h47m16.854775807s", "PT2562047H47M16.854775807S" },
      { "-9223372036854775808", "-2562047h47m16.854775808s", "-PT2562047H47M16.854775808S" },
      { "16000000001", "16.000000001s", "PT16.000000001S" }, { "100000000", "100ms", "PT0.1S" },
      { "300000000", "300ms", "PT0.3S" },
      -- fractions with inner and trailing zeros at every width, carries at 60 s and 60 m
      { "1050", "1.05\194\181s", "PT0.00000105S" }, { "1001000", "1.001ms", "PT0.001001S" },
      { "1000001", "1.000001ms", "PT0.001000001S" }, { "1100000000", "1.1s", "PT1.1S" },
      { "1010000000", "1.01s", "PT1.01S" }, { "1000000010", "1.00000001s", "PT1.00000001S" },
      { "59999999999", "59.999999999s", "PT59.999999999S" },
      { "60000000001", "1m0.000000001s", "PT1M0.000000001S" },
      { "3599999999999", "59m59.999999999s", "PT59M59.999999999S" },
      { "3600000000001", "1h0m0.000000001s", "PT1H0.000000001S" },
      { "360000000000000", "100h0m0s", "PT100H" },
      { "8999999999999999999", "2499999h59m59.999999999s", "PT2499999H59M59.999999999S" },
      { "-8999999999999999999", "-2499999h59m59.999999999s", "-PT2499999H59M59.999999999S" },
      { "100", "100ns", "PT0.0000001S" }, { "10", "10ns", "PT0.00000001S" },
    }
    for _, backend in ipairs(BACKENDS) do
      local d = duration.with_backend(backend)
      it("writes the golden rows in every format through the " .. backend .. " backend", function()
        for _, row in ipairs(rows) do
          local ns = int64(row[1])
          assert.are.equal(row[2], d.format(ns))
          assert.are.equal(row[2], d.format(ns, "units"))
          assert.are.equal(row[3], d.format(ns, "iso8601"))
          assert.are.equal(row[1], d.format(ns, "nano"))
        end
      end)
    end

    it("writes days only through a codec that has them", function()
      local written = {
        { "86400000000000", "1d0h0m0s", "P1D" }, { "93600000000000", "1d2h0m0s", "P1DT2H" },
        { "86400500000000", "1d0h0m0.5s", "P1DT0.5S" }, { "3600000000000", "1h0m0s", "PT1H" },
        { "-129600000000000", "-1d12h0m0s", "-P1DT12H" },
        { "9223372036854775807", "106751d23h47m16.854775807s", "P106751DT23H47M16.854775807S" },
      }
      local units = duration.codec { write = "units", days = true }
      local iso = duration.codec { write = "iso8601", days = true }
      for _, row in ipairs(written) do
        assert.are.equal(row[2], units:encode(int64(row[1])))
        assert.are.equal(row[3], iso:encode(int64(row[1])))
      end
      assert.are.equal("24h0m0s", duration.format(86400))
    end)

    it("writes seconds given as a Lua number, rounded to the nanosecond", function()
      assert.are.equal("1h30m0s", duration.format(5400))
      assert.are.equal("PT0.5S", duration.format(0.5, "iso8601"))
      assert.are.equal("100ms", duration.format(0.1))
      assert.are.equal("1ns", duration.format(0.6e-9))
      assert.are.equal("-1.1s", duration.format(-1.1))
      assert.are.equal("1100000000", duration.format(1.1, "nano"))
    end)

    it("returns an error for seconds outside int64 nanoseconds", function()
      for _, x in ipairs { 1e300, -1e300, 9223372037, 0 / 0, math.huge } do
        local s, err = duration.format(x)
        assert.is_nil(s)
        assert.are.equal("invalid", err.code)
        assert.are.equal("out of range of int64 nanoseconds", err.cause)
      end
      local _, err = duration.format(1e300)
      assert.are.equal("cannot write duration 1e+300: out of range of int64 nanoseconds",
        tostring(err))
      assert.are.equal("-PT2562047H47M16.854775808S", duration.format(-9223372036.854775808,
        "iso8601"))
    end)

    it("raises on an unknown format or a value that is not a duration", function()
      assert.has_error(function() duration.format(1, "iso") end,
        [[unknown duration format "iso" in format (want iso8601, units or nano)]])
      assert.has_error(function() duration.format("1h") end,
        "bad argument #1 to 'format' (number or int64 expected, got string)")
    end)
  end)

  describe("round trips", function()
    local formats = { "iso8601", "units", "nano" }

    -- Seeded random int64s: full range, small magnitudes, and whole units.
    local function samples(n)
      math.randomseed(20240605)
      local out = { int64("9223372036854775807"), int64("-9223372036854775808"), int64("0") }
      for i = 1, n do
        local v = ffi.new("int64_t", 0)
        local kind = i % 3
        if kind == 0 then
          for _ = 1, 4 do v = v * 65536 + math.random(0, 65535) end
        elseif kind == 1 then
          v = ffi.new("int64_t", math.random(-1e9, 1e9)) * math.random(1, 1e6)
        else
          v = ffi.new("int64_t", math.random(-1e6, 1e6)) * ({ 1000, 1e6, 1e9, 6e10, 3.6e12, 8.64e13 })[
            math.random(1, 6)]
        end
        out[#out + 1] = v
      end
      return out
    end

    it("brings every int64 back exactly through every format, with and without days", function()
      for _, v in ipairs(samples(3000)) do
        for _, fmt in ipairs(formats) do
          for _, days in ipairs { false, true } do
            local c = duration.codec { write = fmt, days = days }
            local s = c:encode(v)
            local back, err = c:decode_ns(s)
            assert.are.equal(text(v), back and text(back), ("%s %s: %s"):format(fmt, s,
              tostring(err)))
          end
          assert.are.equal(v, duration.parse_ns(duration.format(v, fmt)))
        end
      end
    end)

    it("agrees between the two backends", function()
      local f, c = duration.with_backend("ffi"), duration.with_backend("classic")
      for _, v in ipairs(samples(500)) do
        for _, fmt in ipairs(formats) do
          local s = f.format(v, fmt)
          assert.are.equal(s, c.format(v, fmt))
          assert.are.equal(f.parse(s), c.parse(s))
          assert.are.equal(f.parse_ns(s), c.parse_ns(s))
        end
      end
    end)
  end)

  describe("codec", function()
    it("returns the same codec for the same arguments, in any order of accept", function()
      local a = duration.codec { write = "iso8601", accept = { "units", "nano" }, days = true }
      local b = duration.codec { write = "iso8601", accept = { "nano", "units" }, days = true }
      local c = duration.codec { days = true, accept = { "nano", "iso8601", "units" }, write = "iso8601" }
      assert.are.equal(a, b)
      assert.are.equal(a, c)
      assert.are_not.equal(a, duration.codec { write = "iso8601", accept = { "units", "nano" } })
      assert.are_not.equal(a, duration.codec { write = "units", accept = { "iso8601", "nano" },
        days = true })
      assert.are.equal(duration.default, duration.codec { write = "units",
        accept = { "iso8601", "nano" }, days = true })
    end)

    it("describes itself", function()
      local c = duration.codec { write = "iso8601", accept = { "nano", "units" }, days = true }
      assert.are.equal("iso8601", c.write)
      assert.are.same({ "iso8601", "units", "nano" }, c.accept)
      assert.is_true(c.days)
      local u = duration.codec {}
      assert.are.equal("units", u.write)
      assert.are.same({ "units" }, u.accept)
      assert.is_false(u.days)
    end)

    it("allocates nothing when it finds an existing codec", function()
      local codec = duration.codec
      local opts = { write = "iso8601", accept = { "units", "nano" }, days = true }
      local function hoisted(n) for _ = 1, n do codec(opts) end end
      -- The option tables are built in the loop; LuaJIT sinks them once the loop is compiled.
      local function inline(n)
        for _ = 1, n do codec { write = "iso8601", accept = { "units", "nano" }, days = true } end
      end
      for _, fn in ipairs { hoisted, inline } do
        local grown = alloc.settled(function() fn(100000) end, { below = 16 })
        assert.is_true(grown < 16, ("grew by %.1f KB over 100000 lookups"):format(grown))
      end
    end)

    it("raises at construction on an unknown format or a bad option", function()
      assert.has_error(function() duration.codec { write = "iso" } end,
        [[unknown duration format "iso" in write (want iso8601, units or nano)]])
      assert.has_error(function() duration.codec { accept = { "units", "nanos" } } end,
        [[unknown duration format "nanos" in accept (want iso8601, units or nano)]])
      assert.has_error(function() duration.codec { accept = "units" } end,
        "bad option 'accept' to 'codec' (table expected, got string)")
      assert.has_error(function() duration.codec("units") end,
        "bad argument #1 to 'codec' (table expected, got string)")
    end)

    it("decodes only the formats it accepts, and days only when asked", function()
      local iso = duration.codec { write = "iso8601" }
      assert.are.equal(5400, iso:decode("PT1H30M"))
      local rows = {
        { iso, "1h", "units is not accepted", [[invalid duration "1h": want iso8601]] },
        { iso, "1500", "nano is not accepted", [[invalid duration "1500": want iso8601]] },
        { iso, "P1D", [[days ("D") are not allowed]], [[invalid duration "P1D": want iso8601]] },
        { iso, "1x", [[expected "P" at "1x"]], [[invalid duration "1x": want iso8601]] },
        { duration.codec { write = "units" }, "PT1S", "iso8601 is not accepted",
          [[invalid duration "PT1S": want units]] },
        { duration.codec { write = "units" }, "3", [[nano is not accepted]],
          [[invalid duration "3": want units]] },
        { duration.codec { write = "units" }, "1d", [[days ("d") are not allowed]],
          [[invalid duration "1d": want units]] },
        { duration.codec { write = "nano", accept = { "units" } }, "1.5", [[missing unit after "1.5"]],
          [[invalid duration "1.5": want nano or units]] },
        { duration.codec { write = "nano" }, "1s", [[units is not accepted]],
          [[invalid duration "1s": want nano]] },
        { duration.codec { write = "nano" }, 1.5e9, "1500000000", nil },
      }
      for _, row in ipairs(rows) do
        local v, err = row[1]:decode(row[2])
        if row[4] == nil then
          assert.are.equal(tonumber(row[3]) / 1e9, v)
        else
          assert.is_nil(v, row[2])
          assert.are.equal(row[3], err.cause)
          assert.are.equal(row[4], tostring(err))
        end
      end
      local _, err = duration.codec { write = "units" }:decode(15)
      assert.are.equal("nano is not accepted", err.cause)
    end)

    it("encodes seconds and int64 in its written format", function()
      local c = duration.codec { write = "iso8601", accept = { "units", "nano" }, days = true }
      assert.are.equal("P1DT12H", c:encode(129600))
      assert.are.equal("PT1H30M", c:encode(int64("5400000000000")))
      assert.are.equal(129600, c:decode("1d12h"))
      assert.are.equal("P1DT12H", c:encode(c:decode_ns("129600000000000")))
    end)
  end)

  describe("errors", function()
    it("name the accepted formats, the written one first, then the others in canonical order",
      function()
        local c = duration.codec { write = "iso8601", accept = { "units", "nano" }, days = true }
        local v, err = c:decode("1x")
        assert.is_nil(v)
        assert.are.equal([[invalid duration "1x": want iso8601 or units or nano]], tostring(err))
        assert.are.equal([[unknown unit "x"]], err.cause)
        local _, err2 = duration.codec { write = "nano", accept = { "iso8601", "units" } }:decode("x")
        assert.are.equal([[invalid duration "x": want nano or iso8601 or units]], tostring(err2))
        local _, err3 = duration.parse("1x")
        assert.are.equal([[invalid duration "1x": want units or iso8601 or nano]], tostring(err3))
      end)

    it("carry a code, the input and a reason", function()
      local _, err = duration.parse("1x")
      assert.are.equal("invalid", err.code)
      assert.are.equal("1x", err.input)
      assert.are.equal("unit", err.reason)
      assert.are.equal(err.message, tostring(err))
    end)

    it("build their message only when it is read", function()
      local _, err = duration.parse("1x")
      assert.is_nil(rawget(err, "message"))
      assert.is_nil(rawget(err, "cause"))
      local msg = tostring(err)
      assert.are.equal(msg, rawget(err, "message"))
    end)

    it("quote the input as Go does and cut a long one", function()
      local _, err = duration.parse('a"b\\\n\1')
      assert.are.equal([[invalid duration "a\"b\\\n\x01": want units or iso8601 or nano]],
        tostring(err))
      local _, long = duration.parse(("9"):rep(200) .. "x")
      assert.are.equal('invalid duration "' .. ("9"):rep(96) .. '"...: want units or iso8601 or nano',
        tostring(long))
      local _, empty = duration.parse("")
      assert.are.equal([[invalid duration "": want units or iso8601 or nano]], tostring(empty))
    end)
  end)

  describe("zever.duration_core", function()
    it("names the formats and causes the module relies on", function()
      local core = require "zever.duration_core"
      assert.are.same({ 1, 2, 4, 7 }, { core.ISO8601, core.UNITS, core.NANO, core.ALL })
      assert.are.equal(1, core.format_id("iso8601"))
      assert.are.equal(4, core.format_id("nano"))
      assert.is_nil(core.format_id("nanos"))
      assert.are.equal("NONE", core.causes[0])
      assert.are.equal([[unknown unit "x"]], core.cause_text(4, 0, 1, 1, "1x"))
      assert.are.equal("units is not accepted", core.cause_text(14, 2, 0, 0))
      assert.are.equal("invalid duration 30: want nano or units", core.message("30", false, 4, 6))
    end)
  end)

  describe("hot path", function()
    -- The link types of the traces LuaJIT completes while fn runs, from a flushed trace cache.
    -- A loop that compiled whole ends in a "loop" trace (or a "root" one that joins a trace of
    -- the function it calls); a call LuaJIT cannot compile (a classic C function) splits it into
    -- "stitch" traces, as resty-core's specs look for in the trace log. Function traces that
    -- return to the interpreter may come first: they are LuaJIT warming up, not the loop.
    local function links(fn)
      local util = require "jit.util"
      local out, seen = {}, {}
      local function on_trace(what, tr)
        if what == "stop" then
          local kind = util.traceinfo(tr).linktype
          out[#out + 1] = kind
          seen[kind] = true
        end
      end
      jit.flush()
      jit.attach(on_trace, "trace")
      fn()
      jit.attach(on_trace)
      return seen, table.concat(out, ",")
    end

    local function grown_kb(fn)
      return (alloc.settled(function() fn(100000) end, { below = 16 }))
    end

    it("parses without allocating once LuaJIT has compiled the loop", function()
      local parse = duration.parse
      local sink = 0
      local grown = grown_kb(function(n) for _ = 1, n do sink = sink + parse("1h30m") end end)
      assert.is_true(sink > 0)
      assert.is_true(grown < 16, ("grew by %.1f KB over 100000 calls"):format(grown))
    end)

    local loops = {
      { "parse", function(d)
        local parse, sink = d.parse, 0
        for _ = 1, 20000 do sink = sink + parse("PT1H30M") end
      end },
      { "parse_ns", function(d)
        local parse_ns, sink = d.parse_ns, 0
        for _ = 1, 20000 do if parse_ns("1h30m") then sink = sink + 1 end end
      end },
      { "format", function(d)
        local format, sink = d.format, 0
        for i = 1, 20000 do sink = sink + #format(i % 8) end
      end },
      { "a rejection", function(d)
        local parse, sink = d.parse, 0
        for _ = 1, 20000 do if parse("1x") == nil then sink = sink + 1 end end
      end },
      { "codec lookup", function(d)
        local codec, sink = d.codec, 0
        for _ = 1, 20000 do
          if codec { write = "iso8601", accept = { "units", "nano" } } then sink = sink + 1 end
        end
      end },
      { "codec decode and encode", function(d)
        local c, sink = d.codec { write = "iso8601", accept = { "units" } }, 0
        for _ = 1, 20000 do sink = sink + c:decode("1h30m") + #c:encode(5400) end
      end },
    }
    for _, row in ipairs(loops) do
      it("compiles a loop of " .. row[1] .. " into one trace", function()
        local d = duration.with_backend("ffi")
        local seen, all = links(function() row[2](d) end)
        assert.is_true(seen.loop or seen.root, all)
        assert.is_nil(seen.stitch, all)
      end)
    end

    it("cannot compile the classic backend into the loop, which is why the FFI one is used",
      function()
        local parse = duration.with_backend("classic").parse
        local seen, all = links(function()
          local sink = 0
          for _ = 1, 2000 do sink = sink + parse("PT1H30M") end
        end)
        assert.is_true(seen.stitch, all)
      end)
  end)
end)
