package broker

// SaslHandshake (key 17) v0-1 and SaslAuthenticate (key 36) v0-2, as Kafka
// 4.1 serves them.
//
// On a SASL listener both are answered by the authentication exchange
// (auth_sasl.go), before any request reaches this table. A request that
// does reach it came on a listener without SASL or after the connection
// authenticated; Kafka answers both ILLEGAL_SASL_STATE (KafkaApis), and so
// do we. Re-authentication (KIP-368) on a session with a lifetime is taken
// before the table (auth_reauth.go); a SaslHandshake that reaches it is one
// on a session without a lifetime, or within a second of the last
// re-authentication.
//
// Version notes: SaslHandshake v1 means the tokens follow in
// SaslAuthenticate requests (v0: bare frames); SaslAuthenticate v1 adds
// SessionLifetimeMs, v2 is flexible.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(apiEntry{
		key:           saslHandshakeKey,
		advertisedMin: 0, min: 0, max: 1,
		concurrent: true,
		handle: func(_ context.Context, _ *request, kreq kmsg.Request) (kmsg.Response, error) {
			req := kreq.(*kmsg.SASLHandshakeRequest)
			resp := req.ResponseKind().(*kmsg.SASLHandshakeResponse)
			resp.ErrorCode = kerr.IllegalSaslState.Code
			return resp, nil
		},
	})
	register(apiEntry{
		key:           saslAuthenticateKey,
		advertisedMin: 0, min: 0, max: 2,
		concurrent: true,
		handle: func(_ context.Context, _ *request, kreq kmsg.Request) (kmsg.Response, error) {
			req := kreq.(*kmsg.SASLAuthenticateRequest)
			resp := req.ResponseKind().(*kmsg.SASLAuthenticateResponse)
			resp.ErrorCode = kerr.IllegalSaslState.Code
			resp.ErrorMessage = kmsg.StringPtr("SaslAuthenticate request received after successful authentication, or on a listener without SASL")
			return resp, nil
		},
	})
}
