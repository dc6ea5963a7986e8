package group

// MemberDescription is one member in DescribeGroups.
type MemberDescription struct {
	MemberID, InstanceID, ClientID, ClientHost string
	Metadata, Assignment                       []byte
}

// Description is a group as DescribeGroups shows it.
type Description struct {
	State        State
	ProtocolType string
	Protocol     string
	Members      []MemberDescription
	// NotClassic is set, with the GROUP_ID_NOT_FOUND error, for a
	// consumer-protocol group: Kafka's DescribeGroups describes classic
	// groups only, even one with classic members on the upgrade path
	// (ConsumerGroupDescribe shows those, MemberType 0), and names the
	// reason in its error message.
	NotClassic bool
}

// Describe summarizes the group. Like Kafka, only a Stable group shows the
// protocol and each member's metadata and assignment.
func (g *Group) Describe() Description {
	d := Description{State: g.state, ProtocolType: g.protoType}
	stable := g.state == Stable
	if stable {
		d.Protocol = g.protocol
	}
	for _, id := range g.order {
		m := g.members[id]
		md := MemberDescription{MemberID: id, InstanceID: m.instanceID, ClientID: m.clientID, ClientHost: m.clientHost}
		if stable {
			md.Metadata, md.Assignment = m.metadataFor(g.protocol), m.assignment
		}
		d.Members = append(d.Members, md)
	}
	return d
}

// SubscriptionMetadata returns each member's metadata for the selected
// protocol (for OffsetDelete's subscription check); ok is false when no
// protocol is selected.
func (g *Group) SubscriptionMetadata() (md [][]byte, ok bool) {
	if g.protocol == "" {
		return nil, false
	}
	for _, id := range g.order {
		md = append(md, g.members[id].metadataFor(g.protocol))
	}
	return md, true
}
