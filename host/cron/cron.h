/*
 * cron.h: cron schedules: parse a 5-field spec or an @descriptor into bit sets, and find the next
 * fire time after a given second, in UTC.
 *
 *   zv_cron_t (24 bytes, no pointers: copy it freely)
 *   +-----------------+-------------+------------+--------------+-----------+-------+
 *   | minute bits 0-59 | hour 0-23   | dom 1-31   | month 1-12   | dow 0-6   | flags |
 *   +-----------------+-------------+------------+--------------+-----------+-------+
 *
 * Fields: minute hour day-of-month month day-of-week, separated by blanks. Each field is a list
 * (`,`) of items; an item is `*`, a value `5`, a range `1-5`, any of those with a step `/n`, or
 * `a/n` (a to the field's maximum, every n). Months take jan-dec and days sun-sat (any case);
 * day-of-week 7 is Sunday, as 0 is. Descriptors: @yearly @annually @monthly @weekly @daily
 * @midnight @hourly.
 *
 * The days rule (Vixie cron): when day-of-month and day-of-week are both restricted, a day
 * matches if either matches; when one is `*`, the other alone decides. A field counts as
 * restricted unless it is exactly `*` or a star with step 1: a star with a larger step restricts
 * (Vixie's own code looks only at the first character; we follow the rule as crontab(5) states
 * it, as robfig/cron does).
 *
 * This module must not know time zones, clocks or Lua: times are Unix seconds, UTC.
 */
#ifndef ZV_CRON_H
#define ZV_CRON_H

#include <stddef.h>
#include <stdint.h>

#define ZV_CRON_DOM_STAR 1u /* day-of-month is unrestricted */
#define ZV_CRON_DOW_STAR 2u /* day-of-week is unrestricted */

/* The earliest and latest t that zv_cron_next accepts: years 1 to 9999 (UTC). */
#define ZV_CRON_TIME_MIN (-62135596800LL)
#define ZV_CRON_TIME_MAX 253402300799LL

/* Room for a parse error message: "day-of-month: range 30-2 is backwards" and the like. */
#define ZV_CRON_ERRSIZE 160

typedef struct {
  uint64_t minute; /* bit m: minute m, 0-59 */
  uint32_t hour;   /* bit h: hour h, 0-23 */
  uint32_t dom;    /* bit d: day d of the month, 1-31 */
  uint16_t month;  /* bit m: month m, 1-12 */
  uint8_t dow;     /* bit d: weekday d, 0 = Sunday .. 6 = Saturday */
  uint8_t flags;   /* ZV_CRON_DOM_STAR | ZV_CRON_DOW_STAR */
} zv_cron_t;

/*
 * Parses spec[0..len) (need not be NUL-terminated) into *out. Returns 0, or ZV_ESYNTAX with a
 * NUL-terminated message in err (when errsize > 0) naming the field and the reason, e.g.
 * "minute: 61 is out of range 0-59". A spec whose day-of-month can never occur in its months
 * ("0 0 30 2 *") is rejected too, so zv_cron_next always finds a time. Allocates nothing.
 */
int zv_cron_parse(const char *spec, size_t len, zv_cron_t *out, char *err, size_t errsize);

/*
 * The first minute strictly after t that the schedule matches, in *out (a multiple of 60).
 * Returns 0; ZV_ERANGE when t is outside [ZV_CRON_TIME_MIN, ZV_CRON_TIME_MAX] or the next time
 * would be after the year 9999. Allocates nothing; runs in bounded time (it skips whole months,
 * days and hours that cannot match).
 */
int zv_cron_next(const zv_cron_t *c, int64_t t, int64_t *out);

/* 1 when the minute containing t matches the schedule, else 0 (t must be in the range above). */
int zv_cron_match(const zv_cron_t *c, int64_t t);

/* Days since 1970-01-01 of a proleptic Gregorian date, and back (any year within int32). */
int64_t zv_cron_days_from_civil(int64_t y, unsigned m, unsigned d);
void zv_cron_civil_from_days(int64_t z, int64_t *y, unsigned *m, unsigned *d);

#endif
