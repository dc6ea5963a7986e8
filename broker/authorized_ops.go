package broker

import (
	"net"
	"strconv"
	"strings"

	"github.com/raftka/raftka/metadata"
)

// Authorization: every handler asks request.authorize (or one of its
// siblings below) with Kafka's operation and resource, and answers Kafka's
// code when it says no, as KafkaApis does. The decision is
// metadata.Authorizer's (StandardAuthorizer's rules) over this broker's
// current image, for the connection's principal and client address. A
// server without an authorizer (authorizer.class.name empty, Kafka's
// default) allows everything.

// authorizedOpsUnset is Kafka's "not requested" value (Integer.MIN_VALUE).
const authorizedOpsUnset = -2147483648

// Short names for the codes handlers use most.
const (
	opRead            = metadata.ACLOpRead
	opWrite           = metadata.ACLOpWrite
	opCreate          = metadata.ACLOpCreate
	opDelete          = metadata.ACLOpDelete
	opAlter           = metadata.ACLOpAlter
	opDescribe        = metadata.ACLOpDescribe
	opClusterAction   = metadata.ACLOpClusterAction
	opDescribeConfigs = metadata.ACLOpDescribeConfigs
	opAlterConfigs    = metadata.ACLOpAlterConfigs
	opIdempotentWrite = metadata.ACLOpIdempotentWrite

	resTopic   = metadata.ACLResourceTopic
	resGroup   = metadata.ACLResourceGroup
	resCluster = metadata.ACLResourceCluster
	resTxnID   = metadata.ACLResourceTransactionalID
)

func opSet(ops ...metadata.ACLOperation) int32 {
	var s int32
	for _, o := range ops {
		s |= 1 << o
	}
	return s
}

// The authorized-operations sets without an authorizer: every operation of
// the resource type.
var (
	topicOps   = opSet(metadata.ACLOperationsOf(resTopic)...)
	clusterOps = opSet(metadata.ACLOperationsOf(resCluster)...)
)

// aclHost is Kafka's host of a connection for ACLs: the client's IP
// address as Java's InetAddress.getHostAddress writes it, which ACL hosts
// are compared with as text: dotted IPv4 (an IPv4-mapped address too),
// IPv6 as eight uncompressed hex groups ("0:0:0:0:0:0:0:1", not "::1").
// "" when unknown, which only a "*" host matches.
func aclHost(a net.Addr) string {
	var ip net.IP
	switch x := a.(type) {
	case *net.TCPAddr:
		ip = x.IP
	case nil:
		return ""
	default:
		host, _, err := net.SplitHostPort(a.String())
		if err != nil {
			return ""
		}
		ip = net.ParseIP(host)
	}
	return javaHostAddress(ip)
}

func javaHostAddress(ip net.IP) string {
	if v4 := ip.To4(); v4 != nil {
		return v4.String()
	}
	if len(ip) != net.IPv6len {
		return ""
	}
	groups := make([]string, 8)
	for i := range groups {
		groups[i] = strconv.FormatUint(uint64(ip[2*i])<<8|uint64(ip[2*i+1]), 16)
	}
	return strings.Join(groups, ":")
}

func (r *request) authImage() *metadata.Image {
	if m := r.conn.srv.deps.Metadata; m != nil {
		img, _ := m.Current()
		return img
	}
	return metadata.NewImage()
}

// authorize reports whether the request's principal may perform op on the
// resource. Cheap without an authorizer; with one, one image load and an
// index lookup.
func (r *request) authorize(op metadata.ACLOperation, rt metadata.ACLResourceType, name string) bool {
	a := r.conn.srv.authorizer
	if a == nil {
		return true
	}
	return a.Authorize(r.authImage(), r.conn.principal, r.conn.host, op, rt, name)
}

// authorizeCluster is authorize on the CLUSTER resource.
func (r *request) authorizeCluster(op metadata.ACLOperation) bool {
	return r.authorize(op, resCluster, metadata.ClusterResourceName)
}

// authorizeByResourceType is Kafka's authorizeByResourceType: op allowed on
// at least one resource of the type.
func (r *request) authorizeByResourceType(op metadata.ACLOperation, rt metadata.ACLResourceType) bool {
	a := r.conn.srv.authorizer
	if a == nil {
		return true
	}
	return a.AuthorizeByResourceType(r.authImage(), r.conn.principal, r.conn.host, op, rt)
}

// authorizedOps is a resource's KIP-430 set for the request's principal.
func (r *request) authorizedOps(rt metadata.ACLResourceType, name string) int32 {
	a := r.conn.srv.authorizer
	if a == nil {
		return opSet(metadata.ACLOperationsOf(rt)...)
	}
	return a.AuthorizedOperations(r.authImage(), r.conn.principal, r.conn.host, rt, name)
}

// authorizer builds the server's authorizer from its options: Options.Authorizer
// if set, else the config's authorizer.class.name, super.users and
// allow.everyone.if.no.acl.found; nil for none.
func (o *Options) authorizer() *metadata.Authorizer {
	if o.Authorizer != nil {
		return o.Authorizer
	}
	if o.Config == nil || !o.Config.AuthorizerEnabled {
		return nil
	}
	return &metadata.Authorizer{
		SuperUsers:           metadata.ParseSuperUsers(o.Config.SuperUsers),
		AllowEveryoneIfNoACL: o.Config.AllowEveryoneIfNoACLFound,
	}
}
