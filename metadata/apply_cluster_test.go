package metadata

import "testing"

// Voter directory ids: set, replaced by a new incarnation, removed, kept
// by snapshots (Records), refused when malformed.
func TestVoterDirectory(t *testing.T) {
	d1, d2 := [16]byte{1}, [16]byte{2}
	img, d0 := NewImage().Apply([]Record{&VoterDirectory{NodeID: 1, DirectoryID: d1}, &VoterDirectory{NodeID: 3, DirectoryID: d1}})
	if len(d0.Skipped) != 0 {
		t.Fatal(d0.Skipped)
	}
	next, delta := img.Apply([]Record{&VoterDirectory{NodeID: 3, Remove: true}, &VoterDirectory{NodeID: 3, DirectoryID: d2}})
	if len(delta.Skipped) != 0 {
		t.Fatal(delta.Skipped)
	}
	if !delta.VotersChanged {
		t.Fatal("delta does not say the voters changed")
	}
	if d, ok := next.VoterDirectory(3); !ok || d != d2 {
		t.Fatalf("node 3: %v %v", d, ok)
	}
	if d, _ := img.VoterDirectory(3); d != d1 {
		t.Fatal("applying changed the old image")
	}
	if back, _ := NewImage().Apply(next.Records()); !back.Equal(next) {
		t.Fatal("snapshot round trip lost the voters' directory ids")
	}
	gone, _ := next.Apply([]Record{&VoterDirectory{NodeID: 1, Remove: true}})
	if _, ok := gone.VoterDirectory(1); ok || len(gone.VoterDirectories()) != 1 {
		t.Fatalf("after removing 1: %v", gone.VoterDirectories())
	}
	for _, bad := range []*VoterDirectory{{NodeID: -1, DirectoryID: d1}, {NodeID: 2}} {
		if _, d := img.Apply([]Record{bad}); len(d.Skipped) != 1 {
			t.Errorf("%+v applied", bad)
		}
	}
}
