package metadata

import (
	"fmt"
	"maps"
)

// clusterApplier replays the cluster-wide singletons: the cluster id, the
// feature levels and the producer id block. Each is one value of the image,
// so its Delta entry is a flag set as the record applies.
type clusterApplier struct {
	img           *Image
	delta         *Delta
	featuresOwned bool
	votersOwned   bool
}

func (a *clusterApplier) voterDirectory(r *VoterDirectory) error {
	if r.NodeID < 0 {
		return invalid("voter directory of node %d", r.NodeID)
	}
	if !r.Remove && r.DirectoryID == ([16]byte{}) {
		return invalid("voter %d: zero directory id", r.NodeID)
	}
	if !a.votersOwned {
		a.img.voterDirs = maps.Clone(a.img.voterDirs)
		if a.img.voterDirs == nil {
			a.img.voterDirs = make(map[int32][16]byte)
		}
		a.votersOwned = true
	}
	if r.Remove {
		delete(a.img.voterDirs, r.NodeID)
	} else {
		a.img.voterDirs[r.NodeID] = r.DirectoryID
	}
	a.delta.VotersChanged = true
	return nil
}

func (a *clusterApplier) clusterID(r *ClusterID) error {
	switch {
	case r.ID == "":
		return invalid("empty cluster id")
	case a.img.clusterID == r.ID:
		return nil
	case a.img.clusterID != "":
		return fmt.Errorf("%w: have %q, record has %q", ErrClusterIDMismatch, a.img.clusterID, r.ID)
	}
	a.img.clusterID = r.ID
	a.delta.ClusterIDChanged = true
	return nil
}

func (a *clusterApplier) featureLevel(r *FeatureLevel) error {
	if r.Name == "" || r.Level < 0 {
		return invalid("feature %q level %d", r.Name, r.Level)
	}
	if !a.featuresOwned {
		a.img.features = maps.Clone(a.img.features)
		if a.img.features == nil {
			a.img.features = make(map[string]int16)
		}
		a.featuresOwned = true
	}
	if r.Level == 0 {
		delete(a.img.features, r.Name)
	} else {
		a.img.features[r.Name] = r.Level
	}
	a.delta.FeaturesChanged = true
	return nil
}

func (a *clusterApplier) producerIDs(r *ProducerIds) error {
	if r.NextProducerID <= a.img.producerIDs.NextProducerID {
		return fmt.Errorf("%w: producer id block %d, next is already %d", ErrStaleRecord, r.NextProducerID, a.img.producerIDs.NextProducerID)
	}
	a.img.producerIDs = *r
	a.delta.ProducerIDsChanged = true
	return nil
}
