package broker

// DescribeUserScramCredentials (key 50) v0 and AlterUserScramCredentials
// (key 51) v0, as Kafka 4.1 serves them (KIP-554).
//
// Describe reads this broker's metadata image (Kafka's KRaft brokers answer
// from their metadata cache): no users, or an empty list, describes every
// user with a credential; a user named twice is DUPLICATE_RESOURCE, an
// unknown one RESOURCE_NOT_FOUND. Only mechanisms and iterations are
// shown, never salts or keys.
//
// Alter is forwarded to the active controller (raftfsm's
// controller_scram.go decides, Kafka's ScramControlManager rules), and
// returns once this broker's image has the change.
//
// Describe needs DESCRIBE on the CLUSTER (else CLUSTER_AUTHORIZATION_FAILED
// for the request), Alter ALTER on it (else on every user), as KafkaApis.

import (
	"context"
	"fmt"

	"github.com/raftka/raftka/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ScramAdmin forwards AlterUserScramCredentials to the active controller.
// *raftfsm.ControllerClient satisfies it.
type ScramAdmin interface {
	AlterUserScramCredentials(ctx context.Context, req *kmsg.AlterUserSCRAMCredentialsRequest) (*kmsg.AlterUserSCRAMCredentialsResponse, error)
}

func init() {
	register(apiEntry{
		key:           50,
		advertisedMin: 0, min: 0, max: 0,
		concurrent: true,
		handle:     handleDescribeUserScramCredentials,
	})
	register(apiEntry{
		key:           51,
		advertisedMin: 0, min: 0, max: 0,
		concurrent: false, // a login right after must see the credential
		handle:     handleAlterUserScramCredentials,
	})
}

func handleDescribeUserScramCredentials(ctx context.Context, rc *request, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.DescribeUserSCRAMCredentialsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeUserSCRAMCredentialsResponse)
	srv := rc.conn.srv
	if !rc.authorizeCluster(opDescribe) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return resp, nil
	}
	img := metadata.NewImage()
	if srv.deps.Metadata != nil {
		img, _ = srv.deps.Metadata.Current()
	}
	result := func(u metadata.ScramUser) kmsg.DescribeUserSCRAMCredentialsResponseResult {
		r := kmsg.NewDescribeUserSCRAMCredentialsResponseResult()
		r.User = u.Name
		for i, m := range u.Mechanisms {
			ci := kmsg.NewDescribeUserSCRAMCredentialsResponseResultCredentialInfo()
			ci.Mechanism, ci.Iterations = int8(m), u.Iterations[i]
			r.CredentialInfos = append(r.CredentialInfos, ci)
		}
		return r
	}
	users := img.ScramUsers()
	if len(req.Users) == 0 {
		for _, u := range users {
			resp.Results = append(resp.Results, result(u))
		}
		return resp, nil
	}
	byName := map[string]metadata.ScramUser{}
	for _, u := range users {
		byName[u.Name] = u
	}
	count := map[string]int{}
	for _, u := range req.Users {
		count[u.Name]++
	}
	answered := map[string]bool{}
	for _, ru := range req.Users {
		if answered[ru.Name] {
			continue
		}
		answered[ru.Name] = true
		u, ok := byName[ru.Name]
		switch {
		case count[ru.Name] > 1:
			r := kmsg.NewDescribeUserSCRAMCredentialsResponseResult()
			r.User, r.ErrorCode = ru.Name, kerr.DuplicateResource.Code
			r.ErrorMessage = kmsg.StringPtr(fmt.Sprintf("Cannot describe SCRAM credentials for the same user twice in a single request: %s", ru.Name))
			resp.Results = append(resp.Results, r)
		case !ok:
			r := kmsg.NewDescribeUserSCRAMCredentialsResponseResult()
			r.User, r.ErrorCode = ru.Name, kerr.ResourceNotFound.Code
			r.ErrorMessage = kmsg.StringPtr(fmt.Sprintf("Attempt to describe a user credential that does not exist: %s", ru.Name))
			resp.Results = append(resp.Results, r)
		default:
			resp.Results = append(resp.Results, result(u))
		}
	}
	return resp, nil
}

func handleAlterUserScramCredentials(ctx context.Context, rc *request, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.AlterUserSCRAMCredentialsRequest)
	srv := rc.conn.srv
	failAll := func(code int16, msg *string) kmsg.Response {
		resp := req.ResponseKind().(*kmsg.AlterUserSCRAMCredentialsResponse)
		seen := map[string]bool{}
		add := func(name string) {
			if !seen[name] {
				seen[name] = true
				r := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
				r.User, r.ErrorCode, r.ErrorMessage = name, code, msg
				resp.Results = append(resp.Results, r)
			}
		}
		for _, d := range req.Deletions {
			add(d.Name)
		}
		for _, u := range req.Upsertions {
			add(u.Name)
		}
		return resp
	}
	if !rc.authorizeCluster(opAlter) {
		return failAll(kerr.ClusterAuthorizationFailed.Code, nil), nil
	}
	if srv.deps.Scram == nil {
		return failAll(adminUnreachable.Code, kmsg.StringPtr("no controller reachable from this broker")), nil
	}
	cctx, cancel := forwardContext(ctx, 0)
	defer cancel()
	cresp, err := srv.deps.Scram.AlterUserScramCredentials(cctx, req)
	if err != nil {
		code, msg := forwardFailure(err)
		return failAll(code, msg), nil
	}
	clearTags(&cresp.UnknownTags)
	return cresp, nil
}
