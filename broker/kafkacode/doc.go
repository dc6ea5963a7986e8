// Package kafkacode is the one mapping from raftka's error kinds to Kafka
// error codes: storage's and metadata's sentinel errors, context errors,
// and *kerr.Error values passed through. The root broker's handlers,
// broker/replica's serve helpers and raftfsm's controller all answer with
// it, so a kind means the same code on every path.
//
// Of is for a broker request: a kind it does not know is a bug here and
// answers UNKNOWN_SERVER_ERROR. OfDecision is for the controller's
// decisions, which fail only on what a request asked for: a kind it does
// not know answers INVALID_REQUEST, as Kafka's controller answers a request
// its validation rejects. Both read the same table.
//
// A kind of a package that cannot be imported here (raftfsm imports this
// package) carries its code itself by wrapping a *kerr.Error:
// raftfsm.ErrNotController unwraps to NOT_CONTROLLER.
//
// # Imports
//
// It imports metadata, storage (their sentinel errors only) and kerr, and
// must not import any other raftka package. It has no state: raftfsm may
// import it, and it is the only package under broker that raftfsm may
// import.
//
//arch:imports std storage metadata github.com/twmb/franz-go/pkg/kerr
//arch:importers broker broker/replica raftfsm
package kafkacode
