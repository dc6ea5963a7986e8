package metadata

import (
	"errors"
	"math"
	"testing"
)

func user(n string) QuotaEntityPart   { return QuotaEntityPart{Type: QuotaEntityUser, Name: n} }
func client(n string) QuotaEntityPart { return QuotaEntityPart{Type: QuotaEntityClientID, Name: n} }

var (
	defUser   = QuotaEntityPart{Type: QuotaEntityUser, Default: true}
	defClient = QuotaEntityPart{Type: QuotaEntityClientID, Default: true}
)

func TestNormalizeQuotaEntity(t *testing.T) {
	e, err := NormalizeQuotaEntity([]QuotaEntityPart{user("a"), client("c")})
	if err != nil || e[0].Type != QuotaEntityClientID {
		t.Fatalf("%v %v", e, err)
	}
	for name, parts := range map[string][]QuotaEntityPart{
		"empty":         nil,
		"unknown type":  {{Type: "group", Name: "g"}},
		"twice":         {user("a"), user("b")},
		"ip and user":   {{Type: QuotaEntityIP, Name: "1.2.3.4"}, user("a")},
		"named default": {{Type: QuotaEntityUser, Name: "x", Default: true}},
	} {
		if _, err := NormalizeQuotaEntity(parts); !errors.Is(err, ErrInvalidRequest) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestValidateClientQuota(t *testing.T) {
	u := QuotaEntity{user("a")}
	ip := QuotaEntity{{Type: QuotaEntityIP, Name: "127.0.0.1"}}
	cases := []struct {
		e     QuotaEntity
		key   string
		value float64
		ok    bool
	}{
		{u, QuotaProducerByteRate, 1024, true},
		{u, QuotaConsumerByteRate, 1, true},
		{u, QuotaRequestPercentage, 12.5, true},
		{u, QuotaControllerMutationRate, 0.5, true},
		{ip, QuotaConnectionCreationRate, 10, true},
		{u, QuotaConnectionCreationRate, 10, false},
		{ip, QuotaProducerByteRate, 10, false},
		{u, "bogus", 1, false},
		{u, QuotaProducerByteRate, 1.5, false},
		{u, QuotaProducerByteRate, 0, false},
		{u, QuotaProducerByteRate, -1, false},
		{u, QuotaRequestPercentage, math.NaN(), false},
		{u, QuotaRequestPercentage, math.Inf(1), false},
	}
	for _, c := range cases {
		if err := ValidateClientQuota(c.e, c.key, c.value); (err == nil) != c.ok {
			t.Errorf("%v %s=%v: %v", c.e, c.key, c.value, err)
		}
	}
}

// Kafka's precedence: the most specific entity that sets the key wins.
func TestResolveQuota(t *testing.T) {
	set := func(v float64, parts ...QuotaEntityPart) Record {
		e, err := NormalizeQuotaEntity(parts)
		if err != nil {
			t.Fatal(err)
		}
		return &ClientQuota{Entity: e, Key: QuotaProducerByteRate, Value: v}
	}
	levels := []Record{
		set(8, defClient), set(7, client("c")), set(6, defUser), set(5, defClient, defUser),
		set(4, client("c"), defUser), set(3, user("u")), set(2, defClient, user("u")), set(1, client("c"), user("u")),
	}
	// Adding levels from the least specific, each one must take over.
	img := NewImage()
	for i, r := range levels {
		var d *Delta
		img, d = img.Apply([]Record{r})
		if len(d.Skipped) != 0 || !d.QuotasChanged {
			t.Fatalf("level %d: %+v", i, d.Skipped)
		}
		q, ok := img.ResolveQuota("u", "c", QuotaProducerByteRate)
		if !ok || q.Value != r.(*ClientQuota).Value {
			t.Fatalf("after level %d: %+v %v", i, q, ok)
		}
	}
	// Another user and client fall to the defaults.
	if q, _ := img.ResolveQuota("v", "d", QuotaProducerByteRate); q.Value != 5 {
		t.Fatalf("other client: %+v", q)
	}
	if _, ok := img.ResolveQuota("u", "c", QuotaConsumerByteRate); ok {
		t.Fatal("a key nobody set resolved")
	}
	// Two clients of one user-level quota share its entity.
	img2, _ := NewImage().Apply([]Record{set(9, user("u"))})
	a, _ := img2.ResolveQuota("u", "c1", QuotaProducerByteRate)
	b, _ := img2.ResolveQuota("u", "c2", QuotaProducerByteRate)
	if a.Entity != b.Entity || a.Value != 9 {
		t.Fatalf("%+v %+v", a, b)
	}
	// Removal, and snapshots.
	again, _ := NewImage().Apply(img.Records())
	if !again.Equal(img) {
		t.Fatal("snapshot round trip")
	}
	rm := *levels[7].(*ClientQuota)
	rm.Remove, rm.Value = true, 0
	next, d := img.Apply([]Record{&rm})
	if len(d.Skipped) != 0 {
		t.Fatal(d.Skipped)
	}
	if q, _ := next.ResolveQuota("u", "c", QuotaProducerByteRate); q.Value != 2 {
		t.Fatalf("after removal: %+v", q)
	}
	if q, _ := img.ResolveQuota("u", "c", QuotaProducerByteRate); q.Value != 1 {
		t.Fatal("the old image changed")
	}
	// Invalid records are skipped.
	_, d = next.Apply([]Record{&rm, &ClientQuota{Entity: QuotaEntity{user("x")}, Key: "bogus", Value: 1}, &ClientQuota{}})
	if len(d.Skipped) != 3 || d.QuotasChanged {
		t.Fatalf("skipped %d", len(d.Skipped))
	}
}
