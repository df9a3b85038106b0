local cron = require "zever.cron"

local floor = math.floor

-- Unix seconds of a UTC civil time "YYYY-MM-DD HH:MM[:SS[.f]]", computed here (not by the core)
-- with the day count of the proleptic Gregorian calendar.
local function utc(s)
  local y, mo, d, h, mi, sec = s:match("^(%d+)-(%d+)-(%d+) (%d+):(%d+):?([%d%.]*)$")
  assert(y, "bad time " .. s)
  y, mo, d = tonumber(y), tonumber(mo), tonumber(d)
  local days = 0
  local function leap(yy) return (yy % 4 == 0 and yy % 100 ~= 0) or yy % 400 == 0 end
  local dim = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 }
  if y >= 1970 then
    for yy = 1970, y - 1 do days = days + (leap(yy) and 366 or 365) end
  else
    for yy = y, 1969 do days = days - (leap(yy) and 366 or 365) end
  end
  for m = 1, mo - 1 do days = days + dim[m] + ((m == 2 and leap(y)) and 1 or 0) end
  days = days + d - 1
  return days * 86400 + tonumber(h) * 3600 + tonumber(mi) * 60 + (tonumber(sec) or 0)
end

local function show(t)
  return os.date("!%Y-%m-%d %H:%M %a", t)
end

describe("zever.cron", function()
  describe("next", function()
    -- { name, spec, from (UTC), expected next fire (UTC, with its weekday) }.
    -- Derived by hand from a calendar (2024-01-01 is a Monday; 2024 is a leap year, 2100 is
    -- not); a few derivations:
    --  * "0 0 13 * fri" from 2024-01-01: both day fields are restricted, so the OR rule applies;
    --    the first Friday (Jan 5) comes before the 13th: 2024-01-05.
    --  * "0 0 1 * mon" from 2024-01-29 (a Monday, at 00:00, so not strictly after): the next
    --    Monday is Feb 5, but Feb 1 matches the day-of-month: 2024-02-01 (a Thursday).
    --  * "0 12 29 2 *" from 2096-03-01: 2100 is divisible by 100 and not 400, so Feb 29 is next in
    --    2104; 2104-02-29 is a Friday (2104-01-01 is a Tuesday, + 59 days = 8 weeks + 3).
    --  * "0 0 */10 * 0": "*/10" restricts the day-of-month ({1, 11, 21, 31}), so OR applies:
    --    from Monday 2024-01-01 00:00, Sunday Jan 7 comes before the 11th.
    --  * "0 0 * * 5-7" from Saturday 2024-01-06: 7 is Sunday, so 5-7 is Fri, Sat, Sun; the next
    --    midnight is Sunday 2024-01-07.
    --  * "* * * * *" from 1969-12-31 23:59:30 (t = -30): the next minute is t = 0.
    local rows = {
      { "a step from inside an interval", "*/5 * * * *", "2024-01-01 10:07:30",
        "2024-01-01 10:10 Mon" },
      { "strictly after an exact slot", "*/5 * * * *", "2024-01-01 10:10", "2024-01-01 10:15 Mon" },
      { "a fraction of a second before the minute", "* * * * *", "2024-01-01 00:00:59.5",
        "2024-01-01 00:01 Mon" },
      { "the last minute of a day carries into the next day", "59 23 * * *", "2024-01-31 23:59",
        "2024-02-01 23:59 Thu" },
      { "the first of the month after a month end", "0 0 1 * *", "2024-01-31 12:00",
        "2024-02-01 00:00 Thu" },
      { "the 31st skips a 30-day month", "0 0 31 * *", "2024-04-01 00:00", "2024-05-31 00:00 Fri" },
      { "@yearly across the year end", "@yearly", "2024-12-31 23:59:59", "2025-01-01 00:00 Wed" },
      { "the last minute of the year", "59 23 31 12 *", "2024-06-01 00:00",
        "2024-12-31 23:59 Tue" },
      { "Feb 29 in a leap year", "0 12 29 2 *", "2024-01-01 00:00", "2024-02-29 12:00 Thu" },
      { "Feb 29 four years on", "0 12 29 2 *", "2024-02-29 12:00", "2028-02-29 12:00 Tue" },
      { "Feb 29 skips 2100 (not a leap year)", "0 12 29 2 *", "2096-03-01 00:00",
        "2104-02-29 12:00 Fri" },
      { "Vixie OR: a Friday before the 13th", "0 0 13 * fri", "2024-01-01 00:00",
        "2024-01-05 00:00 Fri" },
      { "Vixie OR: the 1st before the next Monday", "0 0 1 * mon", "2024-01-29 00:00",
        "2024-02-01 00:00 Thu" },
      { "Vixie OR: a Monday before the 1st", "0 0 1 * mon", "2024-01-02 00:00",
        "2024-01-08 00:00 Mon" },
      { "a stepped star restricts the day-of-month (OR)", "0 0 */10 * 0", "2024-01-01 00:00",
        "2024-01-07 00:00 Sun" },
      { "day-of-month alone when day-of-week is *", "0 0 15 * *", "2024-01-01 00:00",
        "2024-01-15 00:00 Mon" },
      { "weekdays skip the weekend", "0 9 * * 1-5", "2024-03-01 09:00", "2024-03-04 09:00 Mon" },
      { "Sunday is 7", "0 0 * * 7", "2024-01-01 00:00", "2024-01-07 00:00 Sun" },
      { "Sunday is 0", "0 0 * * 0", "2024-01-01 00:00", "2024-01-07 00:00 Sun" },
      { "a range ending at 7 includes Sunday", "0 0 * * 5-7", "2024-01-06 00:00",
        "2024-01-07 00:00 Sun" },
      { "names of months and days in any case", "30 4 * FEB-mar Mon", "2024-01-01 00:00",
        "2024-02-05 04:30 Mon" },
      { "lists of minutes and hours", "0,30 8,20 * * *", "2024-01-01 08:30",
        "2024-01-01 20:00 Mon" },
      { "a range with a step carries into the next hour", "1-30/5 * * * *", "2024-01-01 10:26",
        "2024-01-01 11:01 Mon" },
      { "a value with a step runs to the maximum", "5/20 * * * *", "2024-01-01 10:45",
        "2024-01-01 11:05 Mon" },
      { "@hourly", "@hourly", "2024-01-01 10:00", "2024-01-01 11:00 Mon" },
      { "@weekly is Sunday midnight", "@weekly", "2024-01-06 23:59", "2024-01-07 00:00 Sun" },
      { "@monthly", "@monthly", "2024-02-15 08:00", "2024-03-01 00:00 Fri" },
      { "@daily and @midnight", "@midnight", "2024-02-28 23:00", "2024-02-29 00:00 Thu" },
      { "months in a list wrap into the next year", "0 0 1 jan,jul *", "2024-07-01 00:00",
        "2025-01-01 00:00 Wed" },
      { "a time before 1970", "0 0 * * *", "1969-12-31 12:00", "1970-01-01 00:00 Thu" },
      { "half a minute before the epoch", "* * * * *", "1969-12-31 23:59:30",
        "1970-01-01 00:00 Thu" },
      { "blanks around and between fields", "  0\t0  *  * *  ", "2024-01-01 00:00",
        "2024-01-02 00:00 Tue" },
    }
    for _, row in ipairs(rows) do
      local name, spec, from, want = row[1], row[2], row[3], row[4]
      it("finds " .. name .. " (" .. spec .. ")", function()
        local t = assert(cron.next(spec, utc(from)))
        assert.are.equal(want, show(t))
        local s = assert(cron.parse(spec))
        assert.are.equal(t, s:next(utc(from)))
        assert.is_true(s:matches(t))
      end)
    end

    it("checks the row helper against known epoch values", function()
      assert.are.equal(0, utc("1970-01-01 00:00"))
      assert.are.equal(1709164800, utc("2024-02-29 00:00"))
      assert.are.equal(-86400, utc("1969-12-31 00:00"))
    end)

    it("returns nil and a message past the year 9999", function()
      local t, err = cron.next("@yearly", utc("9999-06-01 00:00"))
      assert.is_nil(t)
      assert.are.equal("cron: time out of range (years 1-9999)", err)
      assert.is_nil((cron.next("* * * * *", 1 / 0)))
      assert.is_nil((cron.next("* * * * *", 0 / 0)))
    end)

    it("always lands on a matching minute after t, and next(next(t) - 1) is next(t)", function()
      local specs = { "*/7 3-5 * * *", "0 0 13 * fri", "15 10 29 2 *", "0 0 30 2 mon",
        "1-59/13 */5 1,15 jan-jun mon-fri", "@weekly", "0 0 31 * *" }
      math.randomseed(7)
      for _, spec in ipairs(specs) do
        local s = cron.parse(spec)
        if s then
          for _ = 1, 200 do
            local t = floor(math.random() * 4e9) - 5e8
            local n = assert(s:next(t))
            assert.is_true(n > t and n % 60 == 0 and s:matches(n))
            assert.are.equal(n, s:next(n - 1))
            assert.are.equal(n, s:next(t + (n - t) / 2))
          end
        end
      end
    end)

    it("agrees with a minute-by-minute scan over two months", function()
      local s = assert(cron.parse("*/20 0,13 1-3,28 * sat"))
      local t = utc("2024-01-30 00:00")
      local stop = utc("2024-04-01 00:00")
      local n = s:next(t - 1)
      while t < stop do
        if s:matches(t) then
          assert.are.equal(show(t), show(n))
          n = s:next(t)
        end
        t = t + 60
      end
    end)
  end)

  describe("parse", function()
    -- { spec, the exact message }
    local bad = {
      { "61 * * * *", "minute: 61 is out of range 0-59" },
      { "* 24 * * *", "hour: 24 is out of range 0-23" },
      { "* * 0 * *", "day-of-month: 0 is out of range 1-31" },
      { "* * 32 * *", "day-of-month: 32 is out of range 1-31" },
      { "* * * 13 *", "month: 13 is out of range 1-12" },
      { "* * * * 8", "day-of-week: 8 is out of range 0-7" },
      { "*/0 * * * *", "minute: step 0 is out of range 1-60" },
      { "* */25 * * *", "hour: step 25 is out of range 1-24" },
      { "30-10 * * * *", "minute: range 30-10 is backwards" },
      { "* * * * fri-mon", "day-of-week: range 5-1 is backwards" },
      { "1,,2 * * * *", "minute: empty list item" },
      { "1, * * * *", "minute: empty list item" },
      { "5x * * * *", 'minute: "5x" is not a number' },
      { "* * * foo *", 'month: "foo" is not a number or a month name (jan-dec)' },
      { "* * * * monday", 'day-of-week: "monday" is not a number or a day name (sun-sat)' },
      { "* mon * * *", 'hour: "mon" is not a number' },
      { "1-2-3 * * * *", 'minute: unexpected "-"' },
      { "5- * * * *", "minute: a value is missing" },
      { "*/ * * * *", 'minute: a step is missing after "/"' },
      { "*/x * * * *", 'minute: unexpected "x"' },
      { "* * * *", "cron: expected 5 fields (minute hour day-of-month month day-of-week) or an "
        .. "@descriptor, got 4" },
      { "* * * * * *", "cron: expected 5 fields (minute hour day-of-month month day-of-week) or "
        .. "an @descriptor, got 6" },
      { "", "cron: expected 5 fields (minute hour day-of-month month day-of-week) or an "
        .. "@descriptor, got 0" },
      { "@reboot", 'cron: unknown descriptor "@reboot" (want @yearly, @annually, @monthly, '
        .. "@weekly, @daily, @midnight or @hourly)" },
      { "0 0 30 2 *", "day-of-month: no selected day occurs in the selected months" },
      { "0 0 31 apr,jun,sep,nov *", "day-of-month: no selected day occurs in the selected months" },
    }
    for _, row in ipairs(bad) do
      it(string.format("rejects %q with the field and the reason", row[1]), function()
        local s, err = cron.parse(row[1])
        assert.is_nil(s)
        assert.are.equal(row[2], err)
      end)
    end

    it("accepts Feb 30 when the day-of-week may match instead (the OR rule)", function()
      assert.is_truthy(cron.parse("0 0 30 2 mon"))
    end)

    it("accepts descriptors in any case", function()
      assert.is_truthy(cron.parse("@Daily"))
      assert.is_truthy(cron.parse(" @annually "))
    end)

    it("raises when the spec is not a string", function()
      assert.has_error(function() cron.parse({}) end)
      assert.has_error(function() cron.next("* * * * *", "x") end)
    end)
  end)
end)
