// Package metadata owns the cluster metadata model: the immutable Image, the
// Records that change it, the Delta between two images, and the pure decisions
// the controller makes (replica placement, leader election, ISR rules, topic
// names and topic configs).
//
// It is pure: standard library only, no I/O, no goroutines, no clocks (time is
// a parameter) and no logging. It must not import any other raftka package.
package metadata
