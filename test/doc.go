// Package test holds black-box tests that run real raftka processes on
// loopback ports and talk to them with real Kafka clients. Nothing imports it.
//
//arch:imports std
//arch:importers none
package test
