// Package deploy holds raftka's deployment material, not Go code: a
// FROM-scratch Dockerfile and build-image.sh, a three-node docker compose
// cluster with its server.properties files (config/), a systemd unit
// (systemd/), Kubernetes manifests (k8s/), a Grafana dashboard (grafana/) and
// Prometheus alert rules with their promtool unit tests (prometheus/). See
// README.md.
//
// Its tests check that material: manifests_test.go parses the compose file,
// the node configs and the Kubernetes manifests and checks they agree with
// each other and with raftka's config rules; deploy_test.go builds the image
// and runs the compose cluster under Docker with a real Kafka client;
// monitoring_test.go checks the rules and the dashboard's queries with
// promtool and the dashboard's JSON model.
//
// Nothing imports this package. Its tests import broker/config (to validate
// the shipped server.properties with the same code the server runs) and
// storage (to check cluster ids), and no other raftka package.
//
//arch:imports std
//arch:importers none
package deploy
