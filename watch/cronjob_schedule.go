package watch

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	// Named time zones (a CronJob's spec.timeZone) must resolve on images
	// without a zoneinfo directory, as kube-state-metrics embeds them too.
	_ "time/tzdata"
)

// A CronJob schedule parsed and evaluated exactly as kube-state-metrics
// v2.20.0 does it for kube_cronjob_next_schedule_time and
// kube_cronjob_schedule_invalid: with github.com/netresearch/go-cron v0.15.1
// (cron.ParseStandard and Schedule.Next). That parser differs from the
// API server's (robfig/cron) in ways that show in the series:
//   - day of month and day of week must both match (AND, not cron's OR);
//   - a step must be smaller than its range ("*/60" is invalid);
//   - ranges may wrap around ("22-2"), "?" means "*", 7 is Sunday;
//   - a schedule with no time in the next five years gives the zero time,
//     which kube-state-metrics exports as -62135596800;
//   - @triggered, @manual and @none parse, and never run (zero time).

// cronMaxSpec is the longest spec go-cron accepts, time zone prefix included.
const cronMaxSpec = 1024

// cronSearchYears is how far ahead Next looks before giving up.
const cronSearchYears = 5

// cronSchedule is a parsed schedule.
type cronSchedule interface {
	// next returns the first activation after t, or the zero time.
	next(t time.Time) time.Time
}

// cronField is the bounds and names of one field of a cron spec.
type cronField struct {
	min, max uint
	names    map[string]uint
}

var (
	cronMinutes = cronField{min: 0, max: 59}
	cronHours   = cronField{min: 0, max: 23}
	cronDoms    = cronField{min: 1, max: 31}
	cronMonths  = cronField{min: 1, max: 12, names: map[string]uint{
		"jan": 1, "feb": 2, "mar": 3, "apr": 4, "may": 5, "jun": 6,
		"jul": 7, "aug": 8, "sep": 9, "oct": 10, "nov": 11, "dec": 12,
	}}
	// cronDows has 7 for Sunday too; it is folded onto 0 after parsing.
	cronDows = cronField{min: 0, max: 7, names: map[string]uint{
		"sun": 0, "mon": 1, "tue": 2, "wed": 3, "thu": 4, "fri": 5, "sat": 6,
	}}
)

// parseCronSchedule parses a CronJob's schedule in its time zone (nil for
// the zone of the times it is evaluated at), as kube-state-metrics does: by
// prefixing CRON_TZ=<zone> to the schedule.
func parseCronSchedule(schedule string, timeZone *string) (cronSchedule, error) {
	spec := schedule
	if timeZone != nil {
		spec = "CRON_TZ=" + *timeZone + " " + schedule
	}
	if spec == "" {
		return nil, errors.New("empty spec")
	}
	if len(spec) > cronMaxSpec {
		return nil, fmt.Errorf("spec too long: %d > %d", len(spec), cronMaxSpec)
	}
	loc, spec, err := cronTimeZone(spec)
	if err != nil {
		return nil, err
	}
	if strings.HasPrefix(spec, "@") {
		return cronDescriptor(spec, loc)
	}
	return parseCronFields(strings.Fields(spec), loc)
}

// cronTimeZone splits a leading TZ=<zone> or CRON_TZ=<zone> off spec. A nil
// location stands for the zone of the evaluated time (no prefix, or Local).
func cronTimeZone(spec string) (*time.Location, string, error) {
	if !strings.HasPrefix(spec, "TZ=") && !strings.HasPrefix(spec, "CRON_TZ=") {
		return nil, spec, nil
	}
	sp := strings.Index(spec, " ")
	if sp < 0 {
		return nil, "", fmt.Errorf("missing fields after time zone in spec %q", spec)
	}
	name := spec[strings.Index(spec, "=")+1 : sp]
	if n := len(name); n >= 2 && (name[0] == '"' || name[0] == '\'') && name[n-1] == name[0] {
		name = name[1 : n-1]
	}
	if !validCronTimeZone(name) {
		return nil, "", fmt.Errorf("invalid time zone %q", name)
	}
	loc, err := cronLocation(name)
	if err != nil {
		return nil, "", err
	}
	rest := strings.TrimSpace(spec[sp:])
	if rest == "" {
		return nil, "", fmt.Errorf("missing fields after time zone %q", name)
	}
	if loc == time.Local {
		loc = nil
	}
	return loc, rest, nil
}

// cronZones caches the zones cronLocation loaded, by name: time.LoadLocation
// reads the zone database on every call, and every render parses schedules.
var cronZones sync.Map

// cronLocation is time.LoadLocation, cached.
func cronLocation(name string) (*time.Location, error) {
	if loc, ok := cronZones.Load(name); ok {
		return loc.(*time.Location), nil
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, fmt.Errorf("unknown time zone %q: %w", name, err)
	}
	cronZones.Store(name, loc)
	return loc, nil
}

// validCronTimeZone is go-cron's guard before time.LoadLocation: 1 to 64
// characters among letters, digits and /_-+:.
func validCronTimeZone(name string) bool {
	if name == "" || len(name) > 64 {
		return false
	}
	for _, r := range name {
		ok := r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || strings.ContainsRune("/_-+:", r)
		if !ok {
			return false
		}
	}
	return true
}

// cronDescriptor parses the @-schedules of go-cron's standard parser. They
// are matched exactly, so are case-sensitive.
func cronDescriptor(spec string, loc *time.Location) (cronSchedule, error) {
	const (
		first = 1 // bit 0: the first minute, hour or weekday
		all   = ^uint64(0)
	)
	day := func(dom, month, dow uint64) cronSchedule {
		return &cronSpec{minute: first, hour: first, dom: dom, month: month, dow: dow, loc: loc}
	}
	switch spec {
	case "@yearly", "@annually":
		return day(1<<1, 1<<1, all), nil
	case "@monthly":
		return day(1<<1, all, all), nil
	case "@weekly":
		return day(all, all, first), nil
	case "@daily", "@midnight":
		return day(all, all, all), nil
	case "@hourly":
		return &cronSpec{minute: first, hour: all, dom: all, month: all, dow: all, loc: loc}, nil
	case "@triggered", "@manual", "@none":
		return cronNever{}, nil
	}
	d, ok := strings.CutPrefix(spec, "@every ")
	if !ok {
		return nil, fmt.Errorf("unrecognized descriptor %q", spec)
	}
	every, err := time.ParseDuration(d)
	if err != nil {
		return nil, fmt.Errorf("parsing duration %q: %w", spec, err)
	}
	if every < time.Second {
		return nil, fmt.Errorf("@every duration must be at least 1s: %q", spec)
	}
	return cronEvery(every - every%time.Second), nil
}

// parseCronFields parses the five fields minute, hour, day of month, month
// and day of week.
func parseCronFields(fields []string, loc *time.Location) (cronSchedule, error) {
	if len(fields) != 5 {
		return nil, fmt.Errorf("expected exactly 5 fields, found %d: %s", len(fields), fields)
	}
	// go-cron rejects its extensions (L and W in the day of month, # in the
	// day of week) before parsing, so "*-L" is not read as "*".
	if strings.ContainsAny(fields[2], "LWlw") || strings.Contains(fields[4], "#") {
		return nil, fmt.Errorf("extended day syntax is not enabled: %s", fields)
	}
	s := &cronSpec{loc: loc}
	for i, f := range []struct {
		bits  *uint64
		field cronField
	}{{&s.minute, cronMinutes}, {&s.hour, cronHours}, {&s.dom, cronDoms}, {&s.month, cronMonths}, {&s.dow, cronDows}} {
		bits, err := cronFieldBits(fields[i], f.field)
		if err != nil {
			return nil, err
		}
		*f.bits = bits
	}
	if s.dow&(1<<7) != 0 {
		s.dow = s.dow&^(1<<7) | 1
	}
	return s, nil
}

// cronFieldBits returns the values a comma-separated list of ranges selects,
// as a bit set. Empty list items are skipped, so "," selects nothing.
func cronFieldBits(field string, f cronField) (uint64, error) {
	var bits uint64
	for _, expr := range strings.FieldsFunc(field, func(r rune) bool { return r == ',' }) {
		b, err := cronRangeBits(expr, f)
		if err != nil {
			return 0, err
		}
		bits |= b
	}
	return bits, nil
}

// cronRangeBits parses one range: "*" or "?", n, n-m, either with "/step",
// where "n/step" means n-max/step and n > m wraps around the field.
func cronRangeBits(expr string, f cronField) (uint64, error) {
	rangeAndStep := strings.Split(expr, "/")
	lowHigh := strings.Split(rangeAndStep[0], "-")
	start, end := f.min, f.max
	// go-cron looks no further than a leading wildcard: "*-5" is "*".
	if lowHigh[0] != "*" && lowHigh[0] != "?" {
		var err error
		if start, err = f.value(lowHigh[0]); err != nil {
			return 0, err
		}
		switch len(lowHigh) {
		case 1:
			end = start
		case 2:
			if end, err = f.value(lowHigh[1]); err != nil {
				return 0, err
			}
		default:
			return 0, fmt.Errorf("too many hyphens: %q", expr)
		}
	}
	step := uint(1)
	switch len(rangeAndStep) {
	case 1:
	case 2:
		var err error
		if step, err = cronNumber(rangeAndStep[1]); err != nil {
			return 0, err
		}
		if len(lowHigh) == 1 {
			end = f.max
		}
	default:
		return 0, fmt.Errorf("too many slashes: %q", expr)
	}
	if start < f.min || end > f.max {
		return 0, fmt.Errorf("range out of bounds [%d,%d]: %q", f.min, f.max, expr)
	}
	size := f.max - f.min + 1
	span := end - start + 1
	if start > end {
		span = size - (start - end) + 1
	}
	if step == 0 || step > 1 && step >= span {
		return 0, fmt.Errorf("step must be positive and less than the range size (%d): %q", span, expr)
	}
	if start > end {
		end += size
	}
	var bits uint64
	for v := start; v <= end; v += step {
		bits |= 1 << ((v-f.min)%size + f.min)
	}
	return bits, nil
}

// value parses a number or a name of the field.
func (f cronField) value(s string) (uint, error) {
	if v, ok := f.names[strings.ToLower(s)]; ok {
		return v, nil
	}
	return cronNumber(s)
}

// cronNumber parses a non-negative decimal number, as strconv.Atoi reads it.
func cronNumber(s string) (uint, error) {
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("parsing %q: %w", s, err)
	}
	if n < 0 {
		return 0, fmt.Errorf("negative number %q", s)
	}
	return uint(n), nil
}

// cronSpec is a parsed five-field schedule as bit sets, second 0 implied.
type cronSpec struct {
	minute, hour, dom, month, dow uint64
	// loc is the zone the schedule is evaluated in; nil for the zone of
	// the time given to next.
	loc *time.Location
}

// next follows go-cron's SpecSchedule.Next step by step (and time operation
// by time operation, so that DST gaps and odd zone offsets come out the
// same): find the month, then the day, hour, minute and second, restarting
// from the month whenever a field wraps.
func (s *cronSpec) next(t time.Time) time.Time {
	if s.minute == 0 || s.hour == 0 || s.dom == 0 || s.month == 0 || s.dow == 0 {
		return time.Time{} // nothing ever matches: what the search ends with
	}
	orig, loc := t.Location(), t.Location()
	if s.loc != nil {
		loc = s.loc
		t = t.In(loc)
	}
	t = t.Add(time.Second - time.Duration(t.Nanosecond()))
	reset := false // whether t was moved to the start of a field
	limit := t.Year() + cronSearchYears
search:
	for t.Year() <= limit {
		for !bitSet(s.month, int(t.Month())) {
			if !reset {
				reset = true
				t = time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, loc)
			}
			if t = t.AddDate(0, 1, 0); t.Month() == time.January {
				continue search
			}
		}
		for !bitSet(s.dom, t.Day()) || !bitSet(s.dow, int(t.Weekday())) {
			if !reset {
				reset = true
				t = time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, loc)
			}
			if t = cronMidnight(t.AddDate(0, 0, 1)); t.Day() == 1 {
				continue search
			}
		}
		for !bitSet(s.hour, t.Hour()) {
			if !reset {
				reset = true
				t = time.Date(t.Year(), t.Month(), t.Day(), t.Hour(), 0, 0, 0, loc)
			}
			prev := t
			t = t.Add(time.Hour)
			// Spring forward skipped an hour the schedule wanted: run now,
			// as ISC cron does.
			if t.Hour()-prev.Hour() == 2 && bitSet(s.hour, t.Hour()-1) {
				break
			}
			if t.Hour() == 0 {
				continue search
			}
		}
		for !bitSet(s.minute, t.Minute()) {
			if !reset {
				reset = true
				t = t.Truncate(time.Minute)
			}
			if t = t.Add(time.Minute); t.Minute() == 0 {
				continue search
			}
		}
		for t.Second() != 0 {
			if !reset {
				reset = true
				t = t.Truncate(time.Second)
			}
			if t = t.Add(time.Second); t.Second() == 0 {
				continue search
			}
		}
		return t.In(orig)
	}
	return time.Time{}
}

// cronMidnight moves a day that DST made start after midnight back (or
// forward, past noon) to its midnight hour, as go-cron does.
func cronMidnight(t time.Time) time.Time {
	switch h := t.Hour(); {
	case h == 0:
		return t
	case h > 12:
		return t.Add(time.Duration(24-h) * time.Hour)
	default:
		return t.Add(-time.Duration(h) * time.Hour)
	}
}

func bitSet(bits uint64, v int) bool { return bits&(1<<uint(v)) != 0 }

// cronEvery is an @every schedule: a fixed delay, in whole seconds.
type cronEvery time.Duration

func (d cronEvery) next(t time.Time) time.Time {
	return t.Add(time.Duration(d) - time.Duration(t.Nanosecond()))
}

// cronNever is @triggered, @manual or @none: never activated by time.
type cronNever struct{}

func (cronNever) next(time.Time) time.Time { return time.Time{} }
