package metadata

import (
	"fmt"
	"maps"
	"slices"
)

// brokerApplier replays broker registrations and their state changes
// (fence, unfence, controlled shutdown).
type brokerApplier struct {
	img     *Image
	owned   bool
	touched map[int32]bool
}

func (a *brokerApplier) own() {
	if !a.owned {
		m := make(map[int32]*BrokerRegistration, len(a.img.brokers)+1)
		maps.Copy(m, a.img.brokers)
		a.img.brokers = m
		a.owned = true
	}
}

func (a *brokerApplier) register(r *RegisterBroker) error {
	if r.BrokerID < 0 {
		return invalid("broker id %d", r.BrokerID)
	}
	if cur, ok := a.img.brokers[r.BrokerID]; ok && r.BrokerEpoch <= cur.Epoch {
		return fmt.Errorf("%w: broker %d registration epoch %d, current %d", ErrStaleBrokerEpoch, r.BrokerID, r.BrokerEpoch, cur.Epoch)
	}
	a.own()
	a.img.brokers[r.BrokerID] = &BrokerRegistration{
		ID: r.BrokerID, IncarnationID: r.IncarnationID, Epoch: r.BrokerEpoch,
		Endpoints: slices.Clone(r.Endpoints), Rack: r.Rack, Fenced: r.Fenced,
		InControlledShutdown: r.InControlledShutdown,
	}
	mark(&a.touched, r.BrokerID)
	return nil
}

func (a *brokerApplier) at(id int32, epoch int64) (*BrokerRegistration, error) {
	cur, ok := a.img.brokers[id]
	if !ok {
		return nil, fmt.Errorf("%w: broker %d", ErrUnknownBroker, id)
	}
	if cur.Epoch != epoch {
		return nil, fmt.Errorf("%w: broker %d epoch %d, current %d", ErrStaleBrokerEpoch, id, epoch, cur.Epoch)
	}
	return cur, nil
}

func (a *brokerApplier) unregister(r *UnregisterBroker) error {
	if _, err := a.at(r.BrokerID, r.BrokerEpoch); err != nil {
		return err
	}
	a.own()
	delete(a.img.brokers, r.BrokerID)
	mark(&a.touched, r.BrokerID)
	return nil
}

func (a *brokerApplier) change(id int32, epoch int64, f func(*BrokerRegistration)) error {
	cur, err := a.at(id, epoch)
	if err != nil {
		return err
	}
	next := *cur
	f(&next)
	a.own()
	a.img.brokers[id] = &next
	mark(&a.touched, id)
	return nil
}

// offlineReplicas sets a broker's offline replicas; the list must be
// sorted without duplicates, so an image has one form of it.
func (a *brokerApplier) offlineReplicas(r *OfflineReplicas) error {
	for i := 1; i < len(r.Replicas); i++ {
		if CompareReplicaRefs(r.Replicas[i-1], r.Replicas[i]) >= 0 {
			return invalid("offline replicas of broker %d not sorted or repeated", r.BrokerID)
		}
	}
	return a.change(r.BrokerID, r.BrokerEpoch, func(b *BrokerRegistration) {
		b.OfflineReplicas = nil
		if len(r.Replicas) > 0 {
			b.OfflineReplicas = slices.Clone(r.Replicas)
		}
	})
}

// diff fills the broker lists of d from the touched brokers.
func (a *brokerApplier) diff(old, next *Image, d *Delta) {
	for id := range a.touched {
		ob, oldOK := old.brokers[id]
		nb, newOK := next.brokers[id]
		if newOK && (!oldOK || ob.Epoch != nb.Epoch || ob.IncarnationID != nb.IncarnationID) {
			d.BrokersRegistered = append(d.BrokersRegistered, id)
		}
		if oldOK && !newOK {
			d.BrokersUnregistered = append(d.BrokersUnregistered, id)
		}
		if newOK && nb.Fenced && oldOK && !ob.Fenced {
			d.BrokersFenced = append(d.BrokersFenced, id)
		}
		if newOK && !nb.Fenced && (!oldOK || ob.Fenced) {
			d.BrokersUnfenced = append(d.BrokersUnfenced, id)
		}
		if newOK && nb.InControlledShutdown && (!oldOK || !ob.InControlledShutdown) {
			d.BrokersShuttingDown = append(d.BrokersShuttingDown, id)
		}
		if oldOK != newOK || (oldOK && !ob.equal(nb)) {
			d.BrokersChanged = append(d.BrokersChanged, id)
		}
	}
	for _, l := range []*[]int32{&d.BrokersRegistered, &d.BrokersUnregistered, &d.BrokersFenced, &d.BrokersUnfenced, &d.BrokersShuttingDown, &d.BrokersChanged} {
		slices.Sort(*l)
	}
}
