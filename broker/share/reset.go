package share

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// ResetKind is share.auto.offset.reset's strategy.
type ResetKind int8

const (
	ResetLatest ResetKind = iota
	ResetEarliest
	ResetByDuration
)

// Reset is where a share-partition with no stored state starts
// (share.auto.offset.reset; latest by default).
type Reset struct {
	Kind     ResetKind
	Duration time.Duration // ResetByDuration only
}

// isoDuration is the subset of ISO-8601 durations Java's Duration.parse
// reads: days, hours, minutes and (fractional) seconds, no sign.
var isoDuration = regexp.MustCompile(`^[Pp](?:(\d+)[Dd])?(?:[Tt](?:(\d+)[Hh])?(?:(\d+)[Mm])?(?:(\d+)(?:\.(\d{1,9}))?[Ss])?)?$`)

// ParseReset reads a share.auto.offset.reset value: latest, earliest or
// by_duration:PnDTnHnMn.nS (not negative), as Kafka's
// ShareGroupAutoOffsetResetStrategy accepts them.
func ParseReset(s string) (Reset, error) {
	v := strings.TrimSpace(s)
	switch strings.ToLower(v) {
	case "latest":
		return Reset{Kind: ResetLatest}, nil
	case "earliest":
		return Reset{Kind: ResetEarliest}, nil
	}
	const prefix = "by_duration:"
	if len(v) <= len(prefix) || !strings.EqualFold(v[:len(prefix)], prefix) {
		return Reset{}, fmt.Errorf("share.auto.offset.reset %q: want latest, earliest or by_duration:PnDTnHnMn.nS", s)
	}
	iso := v[len(prefix):]
	m := isoDuration.FindStringSubmatch(iso)
	if m == nil || iso == "P" || strings.EqualFold(iso, "PT") || strings.HasSuffix(strings.ToUpper(iso), "T") {
		return Reset{}, fmt.Errorf("share.auto.offset.reset %q: %q is not an ISO-8601 duration PnDTnHnMn.nS", s, iso)
	}
	var d time.Duration
	units := []time.Duration{24 * time.Hour, time.Hour, time.Minute, time.Second}
	for i, u := range units {
		if m[i+1] == "" {
			continue
		}
		n, err := strconv.ParseInt(m[i+1], 10, 64)
		if err != nil || n > int64((1<<63-1)/u) {
			return Reset{}, fmt.Errorf("share.auto.offset.reset %q: duration out of range", s)
		}
		d += time.Duration(n) * u
	}
	if frac := m[5]; frac != "" {
		ns, _ := strconv.ParseInt((frac + "000000000")[:9], 10, 64)
		d += time.Duration(ns)
	}
	if d < 0 {
		return Reset{}, fmt.Errorf("share.auto.offset.reset %q: duration out of range", s)
	}
	return Reset{Kind: ResetByDuration, Duration: d}, nil
}

func (r Reset) String() string {
	switch r.Kind {
	case ResetEarliest:
		return "earliest"
	case ResetByDuration:
		return "by_duration:" + r.Duration.String()
	}
	return "latest"
}

// Log is what resolving a reset reads of the partition.
type Log interface {
	// LogStartOffset is the first offset still in the log.
	LogStartOffset() int64
	// HighWatermark is the latest offset a share group may start at.
	HighWatermark() int64
	// OffsetForTimestamp is the first offset whose timestamp is at or
	// after ms, or the high watermark when there is none.
	OffsetForTimestamp(ms int64) int64
}

// StartOffset is the SPSO a new share-partition starts at.
func (r Reset) StartOffset(log Log, now time.Time) int64 {
	switch r.Kind {
	case ResetEarliest:
		return log.LogStartOffset()
	case ResetByDuration:
		return max(log.OffsetForTimestamp(now.Add(-r.Duration).UnixMilli()), log.LogStartOffset())
	}
	return log.HighWatermark()
}
