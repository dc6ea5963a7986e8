package share

import (
	"testing"
	"time"
)

func TestParseReset(t *testing.T) {
	ok := []struct {
		in   string
		want Reset
	}{
		{"latest", Reset{Kind: ResetLatest}},
		{"EARLIEST", Reset{Kind: ResetEarliest}},
		{"by_duration:PT1H", Reset{ResetByDuration, time.Hour}},
		{"by_duration:P1DT2H3M4.5S", Reset{ResetByDuration, 26*time.Hour + 3*time.Minute + 4500*time.Millisecond}},
		{"by_duration:P2D", Reset{ResetByDuration, 48 * time.Hour}},
		{"by_duration:PT0S", Reset{ResetByDuration, 0}},
	}
	for _, c := range ok {
		got, err := ParseReset(c.in)
		if err != nil || got != c.want {
			t.Errorf("ParseReset(%q) = %+v, %v; want %+v", c.in, got, err, c.want)
		}
	}
	for _, in := range []string{"", "none", "by_duration:", "by_duration:P", "by_duration:PT", "by_duration:-PT1H", "by_duration:PT1H2", "by_duration:1H", "by_duration:P1DT", "by_duration:PT99999999999999999999H"} {
		if got, err := ParseReset(in); err == nil {
			t.Errorf("ParseReset(%q) = %+v, want an error", in, got)
		}
	}
}

type fakeLog struct{ start, hw, byTime int64 }

func (l fakeLog) LogStartOffset() int64             { return l.start }
func (l fakeLog) HighWatermark() int64              { return l.hw }
func (l fakeLog) OffsetForTimestamp(ms int64) int64 { return l.byTime }

func TestResetStartOffset(t *testing.T) {
	log := fakeLog{start: 10, hw: 100, byTime: 42}
	if got := (Reset{Kind: ResetLatest}).StartOffset(log, t0); got != 100 {
		t.Errorf("latest %d", got)
	}
	if got := (Reset{Kind: ResetEarliest}).StartOffset(log, t0); got != 10 {
		t.Errorf("earliest %d", got)
	}
	if got := (Reset{Kind: ResetByDuration, Duration: time.Hour}).StartOffset(log, t0); got != 42 {
		t.Errorf("by_duration %d", got)
	}
}

func FuzzParseReset(f *testing.F) {
	for _, s := range []string{"latest", "earliest", "by_duration:P1DT2H3M4.5S", "by_duration:", "by_duration:PT99999999999999999999H"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseReset(s)
		if err == nil && r.Duration < 0 {
			t.Fatalf("%q parsed to a negative duration", s)
		}
	})
}
