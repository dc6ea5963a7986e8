// Package chaos holds the long fault runs behind the `long` build tag (make
// test-long): issue 5's failover scenario with 50 rounds, and a soak that
// SIGKILLs, SIGSTOPs and SIGTERMs random nodes under load, and issue 12's
// transactions with their coordinators and partition leaders SIGKILLed in
// 50 rounds. The judges are
// test/invariants' checkers, as in test/e2e. Nothing imports it.
//
//arch:imports std
//arch:importers none
package chaos
