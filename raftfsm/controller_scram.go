package raftfsm

import (
	"errors"
	"fmt"
	"time"

	"github.com/raftka/raftka/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// AlterUserScramCredentials: upsertions carry a salted password, from which
// the controller derives the stored and server keys (the password itself
// never reaches the broker); deletions remove one mechanism of a user.
// Kafka's rules (ScramControlManager): every operation of a user succeeds
// or the user's whole set fails; a user may be named once per mechanism in
// the request; deleting a missing credential is RESOURCE_NOT_FOUND.
func decideAlterUserScramCredentials(req *kmsg.AlterUserSCRAMCredentialsRequest) decideFunc {
	return func(c *controller, img *metadata.Image, now time.Time) decision {
		type userOps struct {
			recs []metadata.Record
			err  error
		}
		byUser := map[string]*userOps{}
		var order []string
		user := func(name string) *userOps {
			u := byUser[name]
			if u == nil {
				u = &userOps{}
				byUser[name] = u
				order = append(order, name)
			}
			return u
		}
		seen := map[string]bool{}
		dup := func(u *userOps, name string, m int8) bool {
			k := fmt.Sprintf("%d/%s", m, name)
			if seen[k] {
				u.err = fmt.Errorf("%w: a user credential cannot be altered twice in the same request", errDuplicateResource)
				return true
			}
			seen[k] = true
			return false
		}
		for _, d := range req.Deletions {
			u := user(d.Name)
			if u.err != nil || dup(u, d.Name, d.Mechanism) {
				continue
			}
			m := metadata.ScramMechanism(d.Mechanism)
			switch {
			case d.Name == "":
				u.err = fmt.Errorf("%w: username must not be empty", metadata.ErrUnacceptableCredential)
			case m.Hash() == nil:
				u.err = fmt.Errorf("%w: unknown SCRAM mechanism %d", metadata.ErrUnsupportedSaslMechanism, d.Mechanism)
			default:
				if _, ok := img.ScramCredential(d.Name, m); !ok {
					u.err = fmt.Errorf("%w: attempt to delete a user credential that does not exist", errResourceNotFound)
				} else {
					u.recs = append(u.recs, &metadata.RemoveUserScramCredential{Name: d.Name, Mechanism: m})
				}
			}
		}
		for _, up := range req.Upsertions {
			u := user(up.Name)
			if u.err != nil || dup(u, up.Name, up.Mechanism) {
				continue
			}
			rec, err := metadata.NewScramCredential(up.Name, metadata.ScramMechanism(up.Mechanism), up.Salt, up.SaltedPassword, up.Iterations)
			if err != nil {
				u.err = err
				continue
			}
			u.recs = append(u.recs, rec)
		}
		resp := req.ResponseKind().(*kmsg.AlterUserSCRAMCredentialsResponse)
		var recs []metadata.Record
		for _, name := range order {
			u := byUser[name]
			r := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
			r.User = name
			if u.err != nil {
				r.ErrorCode, r.ErrorMessage = scramErrCode(u.err), errMsg(u.err)
			} else {
				recs = append(recs, u.recs...)
			}
			resp.Results = append(resp.Results, r)
		}
		return decision{recs: recs, resp: resp}
	}
}

var (
	errDuplicateResource = errors.New("duplicate resource")
	errResourceNotFound  = errors.New("resource not found")
)

func scramErrCode(err error) int16 {
	switch {
	case errors.Is(err, errDuplicateResource):
		return kerr.DuplicateResource.Code
	case errors.Is(err, errResourceNotFound):
		return kerr.ResourceNotFound.Code
	}
	return errCode(err)
}
